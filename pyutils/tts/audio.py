"""Small data/audio steps of the TTS recipe (called from local/nvv_tts.sh).

Sub-commands:
  check-scp     every wav readable; resample/mix down to the model rate when needed
  utt2sid       speaker ids for ESPnet from spk2sid and utt2spk
  split-scp     split a key file into N parts (keys kept in sorted order)
  postprocess   synthesised wavs -> 16 kHz mono PCM16 at a fixed loudness (new wav.scp)
  to-submission convert synthesised wavs to the Track 2 format (16 kHz mono PCM16 <utt_id>.wav)
  text-to-jsonl Kaldi tagged ``text`` -> Track 2 reference JSONL
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict

import numpy as np
import soundfile as sf

from pyutils.audio import resample
from pyutils.io import atomic_write_lines, read_scp

SUBMISSION_SR = 16000


def to_submission_audio(x: np.ndarray, sr: int) -> np.ndarray:
    """Any float/int audio (time[, channel]) -> 16 kHz mono int16, peak-safe.

    Mono = channel mean; resampling by polyphase filtering; values clipped to
    [-1, 1) before quantisation so nothing wraps around.
    """
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.integer):
        x = x.astype(np.float64) / float(np.iinfo(x.dtype).max + 1)
    x = x.astype(np.float64)
    if x.ndim == 2:
        x = x.mean(axis=1)
    x = resample(x, sr, SUBMISSION_SR)
    x = np.nan_to_num(x)
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)


def active_rms(x: np.ndarray, sr: int, frame_s: float = 0.02, floor_db: float = 40.0) -> float:
    """RMS over 20 ms frames within ``floor_db`` of the loudest frame (speech-active level)."""
    n = max(1, int(frame_s * sr))
    m = len(x) // n
    if m == 0:
        return float(np.sqrt(np.mean(x ** 2) + 1e-20))
    fr = np.sqrt(np.mean(x[: m * n].reshape(m, n) ** 2, axis=1) + 1e-20)
    keep = fr > fr.max() * 10 ** (-floor_db / 20)
    return float(np.sqrt(np.mean(fr[keep] ** 2)))


def normalise_loudness(x: np.ndarray, sr: int, target_db: float = -23.0, peak_db: float = -1.0) -> np.ndarray:
    """Scale to ``target_db`` dBFS active RMS, then down if the peak would pass ``peak_db``.

    Griffin-Lim output of a young model can be 60 dB too quiet; the validator
    then flags the file as silent although it holds the model's output.
    """
    x = np.asarray(x, dtype=np.float64)
    if not np.any(x):
        return x
    g = 10 ** (target_db / 20) / active_rms(x, sr)
    peak = np.max(np.abs(x)) * g
    if peak > 10 ** (peak_db / 20):
        g *= 10 ** (peak_db / 20) / peak
    return x * g


def postprocess_scp(scp: str, out_dir: str, out_scp: str, target_db: float = -23.0,
                    expect_keys: str | None = None) -> int:
    """Loudness-normalised 16 kHz mono PCM16 copies of ``scp`` into ``out_dir``; writes ``out_scp``.

    A synthesis that is empty or all zeros, or (with ``expect_keys``, a Kaldi file whose
    first column lists the requested utterances) an utterance without a wav, is an error
    naming the utterance: never a silent file in the output.
    """
    rows = read_scp(scp)
    if expect_keys:
        have = {u for u, _ in rows}
        missing = [u for u, _ in read_scp(expect_keys) if u not in have]
        if missing:
            raise ValueError(f"{scp}: no synthesis for {len(missing)} requested utterance(s): "
                             f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    os.makedirs(out_dir, exist_ok=True)
    lines = []
    for uid, path in rows:
        x, sr = sf.read(path, dtype="float64", always_2d=True)
        if x.size == 0 or not np.any(x):
            raise ValueError(f"{scp}: utterance {uid}: the synthesis {path} is empty or silent")
        y = resample(x.mean(axis=1), sr, SUBMISSION_SR)
        y = normalise_loudness(y, SUBMISSION_SR, target_db)
        dst = os.path.abspath(os.path.join(out_dir, f"{uid}.wav"))
        sf.write(dst, to_submission_audio(y, SUBMISSION_SR), SUBMISSION_SR, subtype="PCM_16")
        lines.append(f"{uid} {dst}\n")
    atomic_write_lines(out_scp, lines)
    return len(lines)


def convert_to_submission(scp: str, out_dir: str) -> int:
    """Write ``out_dir/<utt_id>.wav`` for each ``<utt_id> <path>`` of ``scp``, then remove the
    other ``.wav`` files of ``out_dir`` (left by an earlier run of a larger set: the
    submission must hold exactly this set)."""
    os.makedirs(out_dir, exist_ok=True)
    written = set()
    for uid, path in read_scp(scp):
        x, sr = sf.read(path, always_2d=False)
        y = to_submission_audio(x, sr)
        dst = os.path.join(out_dir, f"{uid}.wav")
        tmp = dst + ".tmp.wav"
        sf.write(tmp, y, SUBMISSION_SR, subtype="PCM_16")
        os.replace(tmp, dst)
        written.add(f"{uid}.wav")
    stale = sorted(name for name in os.listdir(out_dir)
                   if name.endswith(".wav") and name not in written
                   and os.path.isfile(os.path.join(out_dir, name)))
    for name in stale:
        os.remove(os.path.join(out_dir, name))
    if stale:
        print(f"to-submission: removed {len(stale)} wav file(s) of an earlier run from {out_dir} "
              f"(first: {stale[0]})", file=sys.stderr)
    return len(written)


def check_scp(scp: str, fs: int, fix_dir: str) -> int:
    """Check every file of ``scp`` is readable audio; files not at ``fs`` mono are
    converted into ``fix_dir`` and ``scp`` is rewritten to point at them."""
    rows = read_scp(scp)
    out, fixed = [], 0
    for lineno, (uid, path) in enumerate(rows, 1):
        if path.rstrip().endswith("|"):
            # a command writing audio (e.g. chorus-prep's ffmpeg/sox pipes): ESPnet's "sound"
            # reader needs files, so materialise it at the model rate
            import io

            from pyutils.datadir.io import AudioReadError, run_pipe

            try:  # a wav.scp pipe is trusted input, as in Kaldi
                data = run_pipe(path)
            except AudioReadError as e:
                raise ValueError(f"{scp}:{lineno}: {uid}: {e}") from None
            x, sr = sf.read(io.BytesIO(data), always_2d=True)
            os.makedirs(fix_dir, exist_ok=True)
            path = os.path.abspath(os.path.join(fix_dir, f"{uid}.wav"))
            sf.write(path, resample(x.mean(axis=1), sr, fs).astype(np.float32), fs, subtype="PCM_16")
            fixed += 1
            out.append(f"{uid} {path}\n")
            continue
        try:
            info = sf.info(path)
        except Exception as e:  # noqa: BLE001 - report any unreadable file the same way
            raise ValueError(f"{scp}:{lineno}: {uid}: cannot read {path}: {e}") from None
        if info.samplerate != fs or info.channels != 1:
            x, sr = sf.read(path, always_2d=True)
            y = resample(x.mean(axis=1), sr, fs)
            os.makedirs(fix_dir, exist_ok=True)
            path = os.path.abspath(os.path.join(fix_dir, f"{uid}.wav"))
            sf.write(path, y.astype(np.float32), fs, subtype="PCM_16")
            fixed += 1
        out.append(f"{uid} {path}\n")
    atomic_write_lines(scp, out)
    print(f"{scp}: {len(rows)} entries readable, {fixed} converted/materialised at {fs} Hz mono", file=sys.stderr)
    return fixed


def make_utt2sid(spk2sid: str, utt2spk: str, out: str) -> None:
    table: Dict[str, str] = dict(read_scp(spk2sid))
    default = next(iter(table.values()))
    lines, unknown = [], set()
    for uid, spk in read_scp(utt2spk):
        if spk not in table:
            unknown.add(spk)
        lines.append(f"{uid} {table.get(spk, default)}\n")
    if unknown:
        print(f"warning: {utt2spk}: speakers {sorted(unknown)} unseen in training; using sid {default}",
              file=sys.stderr)
    atomic_write_lines(out, lines)


def split_scp(path: str, prefix: str, n: int) -> None:
    """``prefix.1.scp`` .. ``prefix.n.scp`` with contiguous, near-equal chunks."""
    with open(path, encoding="utf-8") as f:
        lines = [ln for ln in f if ln.strip()]
    for i, chunk in enumerate(np.array_split(np.arange(len(lines)), n), 1):
        atomic_write_lines(f"{prefix}.{i}.scp", [lines[j] for j in chunk])


def text_to_jsonl(text: str, out: str, lang: str) -> None:
    rows = read_scp(text)
    atomic_write_lines(out, [json.dumps({"utt_id": u, "language": lang, "text_with_nvvs": t},
                                        ensure_ascii=False) + "\n" for u, t in rows])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("check-scp"); a.add_argument("scp"); a.add_argument("--fs", type=int, default=16000)
    a.add_argument("--fix-dir", required=True)
    a = sub.add_parser("utt2sid"); a.add_argument("spk2sid"); a.add_argument("utt2spk"); a.add_argument("out")
    a = sub.add_parser("split-scp"); a.add_argument("scp"); a.add_argument("prefix"); a.add_argument("n", type=int)
    a = sub.add_parser("postprocess"); a.add_argument("scp"); a.add_argument("out_dir"); a.add_argument("out_scp")
    a.add_argument("--target-db", type=float, default=-23.0)
    a.add_argument("--expect-keys", help="Kaldi file (e.g. text) of the utterances that must all have a wav")
    a = sub.add_parser("to-submission"); a.add_argument("scp"); a.add_argument("out_dir")
    a = sub.add_parser("text-to-jsonl"); a.add_argument("text"); a.add_argument("out"); a.add_argument("--lang", default="en")
    args = p.parse_args(argv)
    try:
        if args.cmd == "check-scp":
            check_scp(args.scp, args.fs, args.fix_dir)
        elif args.cmd == "utt2sid":
            make_utt2sid(args.spk2sid, args.utt2spk, args.out)
        elif args.cmd == "split-scp":
            split_scp(args.scp, args.prefix, args.n)
        elif args.cmd == "postprocess":
            n = postprocess_scp(args.scp, args.out_dir, args.out_scp, args.target_db, args.expect_keys)
            print(f"{n} files -> {args.out_dir} (16 kHz mono PCM16, {args.target_db} dBFS)", file=sys.stderr)
        elif args.cmd == "to-submission":
            n = convert_to_submission(args.scp, args.out_dir)
            print(f"{n} files -> {args.out_dir} (16 kHz mono PCM16)", file=sys.stderr)
        elif args.cmd == "text-to-jsonl":
            text_to_jsonl(args.text, args.out, args.lang)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
