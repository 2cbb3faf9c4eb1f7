"""Dump a Kaldi wav.scp (+ optional segments) as 16 kHz mono PCM16 wav files.

Replaces ESPnet's ``format_wav_scp.py`` (a recipe script, not in the espnet wheel).
Accepts every entry a Kaldi/ESPnet wav.scp may hold: a path in any format libsndfile
reads (wav, flac, ogg, mp3 ...; others go through ffmpeg), or a command ending in
``|`` whose stdout is audio. Any rate and channel count: channels are averaged,
the rate converted with soxr (high quality).

    python -m pyutils.asr.dump_audio --fs 16000 [--segments SEG] [--on-error fail|silence]
        [--min-dur 0] WAV_SCP OUT_DIR

writes ``OUT_DIR/wav/<utt>.wav``, ``OUT_DIR/wav.scp`` and ``OUT_DIR/utt2dur``.
``--on-error silence`` (used for test sets) writes 1 s of silence for an entry that
cannot be read, with a warning naming it, so every utterance still gets a hypothesis.
``--min-dur`` pads shorter audio with trailing silence (the encoder's subsampling needs
a few frames).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import soundfile as sf

from pyutils.datadir.io import AudioReadError, read_kv, run_pipe
from pyutils.io import atomic_write


class AudioError(RuntimeError):
    pass


def _decode_bytes(data: bytes, what: str) -> Tuple[np.ndarray, int]:
    try:
        x, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        return x, sr
    except Exception:
        pass
    # Formats libsndfile cannot read: let ffmpeg decode to wav.
    if shutil.which("ffmpeg") is None:
        raise AudioError(f"{what}: unreadable audio and no ffmpeg to decode it")
    r = subprocess.run(["ffmpeg", "-v", "error", "-i", "pipe:0", "-f", "wav", "pipe:1"],
                       input=data, capture_output=True)
    if r.returncode != 0 or not r.stdout:
        raise AudioError(f"{what}: cannot decode audio: {r.stderr.decode(errors='replace').strip()[:200]}")
    x, sr = sf.read(io.BytesIO(r.stdout), dtype="float32", always_2d=True)
    return x, sr


def read_entry(value: str) -> Tuple[np.ndarray, int]:
    """Audio of one wav.scp value as (samples, channels) float32 and its rate."""
    value = value.strip()
    if value.endswith("|"):
        try:  # a wav.scp pipe is trusted input, as in Kaldi
            data = run_pipe(value)
        except AudioReadError as e:
            raise AudioError(str(e)) from None
        return _decode_bytes(data, f"pipe '{value}'")
    if not os.path.isfile(value):
        raise AudioError(f"no such file: {value}")
    try:
        x, sr = sf.read(value, dtype="float32", always_2d=True)
        return x, sr
    except Exception:
        with open(value, "rb") as f:
            return _decode_bytes(f.read(), value)


def to_mono_fs(x: np.ndarray, sr: int, fs: int) -> np.ndarray:
    y = x.mean(axis=1) if x.ndim == 2 else x
    if sr != fs:
        import soxr

        y = soxr.resample(y, sr, fs, quality="HQ")
    y = np.nan_to_num(y.astype(np.float32))
    peak = float(np.abs(y).max()) if y.size else 0.0
    if peak > 1.0:  # float input beyond full scale: scale instead of clipping
        y = y / peak
    return y


def read_segments(path: str) -> Dict[str, List[Tuple[str, float, float]]]:
    by_rec: Dict[str, List[Tuple[str, float, float]]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise SystemExit(f"{path}:{n}: expected '<utt> <rec> <start> <end>'")
            by_rec.setdefault(parts[1], []).append((parts[0], float(parts[2]), float(parts[3])))
    return by_rec


def dump(wav_scp: str, out_dir: str, fs: int, segments: Optional[str] = None,
         on_error: str = "fail", min_dur: float = 0.0) -> Tuple[int, int]:
    """Dump every entry; returns (written, replaced_by_silence)."""
    wav_dir = os.path.join(out_dir, "wav")
    os.makedirs(wav_dir, exist_ok=True)
    entries = list(read_kv(wav_scp).items())
    segs = read_segments(segments) if segments else None
    scp_lines, dur_lines = [], []
    bad = 0

    def emit(utt: str, y: np.ndarray) -> None:
        if len(y) < int(min_dur * fs):
            y = np.concatenate([y, np.zeros(int(min_dur * fs) - len(y), np.float32)])
        path = os.path.abspath(os.path.join(wav_dir, f"{utt}.wav"))
        sf.write(path, y, fs, subtype="PCM_16")
        scp_lines.append(f"{utt} {path}\n")
        dur_lines.append(f"{utt} {len(y) / fs:.3f}\n")

    for n, (key, value) in enumerate(entries, 1):
        targets = segs.get(key, []) if segs is not None else [(key, 0.0, -1.0)]
        try:
            x, sr = read_entry(value)
            y = to_mono_fs(x, sr, fs)
        except AudioError as e:
            if on_error != "silence":
                raise SystemExit(f"{wav_scp}:{n}: {key}: {e}")
            print(f"dump_audio: WARNING: {wav_scp}:{n}: {key}: {e}; writing 1 s of silence",
                  file=sys.stderr)
            bad += 1
            y = np.zeros(fs, np.float32)
        for utt, start, end in targets:
            seg = y[int(start * fs): (int(end * fs) if end >= 0 else len(y))]
            emit(utt, seg)
        if n % 200 == 0:
            print(f"dump_audio: {n}/{len(entries)} recordings", file=sys.stderr)
    for name, lines in (("wav.scp", scp_lines), ("utt2dur", dur_lines)):
        with atomic_write(os.path.join(out_dir, name)) as f:
            f.writelines(lines)
    return len(scp_lines), bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fs", type=int, default=16000)
    p.add_argument("--segments", default=None)
    p.add_argument("--on-error", choices=["fail", "silence"], default="fail")
    p.add_argument("--min-dur", type=float, default=0.0, help="pad shorter audio (seconds)")
    p.add_argument("wav_scp")
    p.add_argument("out_dir")
    a = p.parse_args(argv)
    n, bad = dump(a.wav_scp, a.out_dir, a.fs, a.segments, a.on_error, a.min_dur)
    print(f"dump_audio: wrote {n} utterances to {a.out_dir}"
          + (f" ({bad} unreadable, replaced by silence)" if bad else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
