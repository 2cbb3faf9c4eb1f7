"""Log-mel filterbank features for SQA, dumping to ark/scp, and global stats.

Features: power STFT (25 ms Hann window, 10 ms hop, 512-point FFT, centred
frames) -> ``n_mels`` triangular mel filters (Slaney, 0-8 kHz) ->
``log(max(mel, 1e-10))``; optionally (``--pitch``) two more columns, the pitch
contour of :func:`pyutils.sqa.cues.pitch_track`. Frame ``j`` is centred at
``j * 10 ms``; the model's stride 2 brings two frames onto one 20 ms scoring frame.

CLI (one job of a ``${train_cmd} JOB=1:nj`` array)::

    python -m pyutils.sqa.features dump --wav-scp split/wav.3.scp \
        --outdir dump/test --job 3
    python -m pyutils.sqa.features stats --feats-scp dump/train/feats.scp \
        --out exp/sqa_stats/feats_stats.npz
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np
import scipy.fft
import soundfile as sf

from pyutils.sqa.audio import AudioError, load_checked
from pyutils.sqa.common import SAMPLE_RATE
from pyutils.io import atomic_write, atomic_write_lines, read_scp

WIN, HOP, NFFT = 400, 160, 512


@functools.lru_cache(maxsize=4)
def _mel_matrix(n_mels: int, sr: int = SAMPLE_RATE) -> np.ndarray:
    import librosa

    return librosa.filters.mel(sr=sr, n_fft=NFFT, n_mels=n_mels, fmin=0.0, fmax=sr / 2).astype(np.float32)


def windowed_frames(x: np.ndarray) -> np.ndarray:
    """(T, 400) Hann-windowed 25 ms frames every 10 ms, centred (``T = 1 + len(x) // 160``)."""
    x = np.asarray(x, dtype=np.float32)
    padded = np.pad(x, (WIN // 2, WIN // 2), mode="constant")
    n_frames = 1 + len(x) // HOP
    need = (n_frames - 1) * HOP + WIN
    if len(padded) < need:
        padded = np.pad(padded, (0, need - len(padded)))
    frames = np.lib.stride_tricks.sliding_window_view(padded, WIN)[::HOP][:n_frames]
    return frames * np.hanning(WIN + 1)[:-1].astype(np.float32)


def fbank(x: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """(T, n_mels) log-mel features, ``T = 1 + len(x) // 160``."""
    # scipy.fft on the float32 frames and |X|^2 as re^2 + im^2: 2-3x faster than
    # numpy's rfft and abs()**2 (benchmark: `git show 7383fd3:benchmarks/bench_sqa_fbank.py`), equal to float32 rounding
    spec = scipy.fft.rfft(windowed_frames(x), n=NFFT)
    power = spec.real ** 2 + spec.imag ** 2
    mel = power.astype(np.float32) @ _mel_matrix(n_mels).T
    return np.log(np.maximum(mel, 1e-10)).astype(np.float32)


# feature columns of earlier dumps that were measured and not adopted (egs/sqa/RESULTS.md):
# a feats_config.json may name them switched off; a model or dump that used them is refused
RETIRED_FEATURES = ("vad", "cues", "cue_context")


def check_config(cfg: dict) -> dict:
    """``cfg`` (a dump's ``feats_config.json``) with the defaults filled in; ``ValueError`` when it
    names a retired column switched on (those features can no longer be made)."""
    cfg = {"n_mels": 80, **(cfg or {})}
    used = [k for k in RETIRED_FEATURES if cfg.get(k)]
    if int(cfg.get("pitch_rate", 16000)) != 16000:   # the 8 kHz pitch analysis (not adopted)
        used.append(f"pitch_rate {cfg['pitch_rate']}")
    if used:
        raise ValueError(f"feature config {cfg}: made with {', '.join(used)}, columns this version "
                         f"no longer computes (not adopted: egs/sqa/RESULTS.md); dump and train again")
    return cfg


def extract(x: np.ndarray, cfg: dict | None = None) -> np.ndarray:
    """Model input features of ``cfg`` (``{"n_mels": 80, "pitch": False}``, a dump's
    ``feats_config.json``): the log-mel, then with ``pitch`` the two columns of
    :func:`pyutils.sqa.cues.pitch_track`."""
    cfg = check_config(cfg)
    feats = fbank(x, int(cfg["n_mels"]))
    if cfg.get("pitch"):
        from pyutils.sqa.cues import pitch_track

        feats = np.concatenate([feats, pitch_track(x, feats.shape[0])], axis=1)
    return feats


def _is_plain_16k_mono(entry: str) -> bool:
    if entry.rstrip().endswith("|"):
        return False
    try:
        info = sf.info(entry)
    except Exception:
        return False
    return info.samplerate == SAMPLE_RATE and info.channels == 1


def dump(wav_scp: str, outdir: str, job: str, n_mels: int = 80, pitch: bool = False) -> int:
    """Extract features of one wav.scp piece; returns the number skipped.

    Writes ``feats.JOB.{ark,scp}``, ``wav.JOB.scp`` (16 kHz mono; resampled
    copies go to ``wav/``), ``utt2num_frames.JOB``, ``utt2dur.JOB`` and
    ``bad.JOB`` (``<utt> <reason>`` of every skipped recording), and
    ``feats_config.json`` (what :func:`extract` needs to reproduce them).
    """
    import json

    import kaldiio

    cfg = {"n_mels": n_mels}
    if pitch:
        cfg["pitch"] = True
    cfg_path = os.path.join(outdir, "feats_config.json")
    os.makedirs(outdir, exist_ok=True)
    with atomic_write(cfg_path) as f:
        json.dump(cfg, f)
    os.makedirs(os.path.join(outdir, "wav"), exist_ok=True)
    entries = list(read_scp(wav_scp))
    ark = os.path.join(outdir, f"feats.{job}.ark")
    scp = os.path.join(outdir, f"feats.{job}.scp")
    wav_lines, nf_lines, dur_lines, bad_lines = [], [], [], []
    t0 = time.time()
    with kaldiio.WriteHelper(f"ark,scp:{ark},{scp}") as writer:
        for k, (utt, entry) in enumerate(entries, 1):
            try:
                x = load_checked(entry, name=f"{utt} ({entry})")
            except AudioError as exc:
                print(f"WARNING: skipping {exc}", file=sys.stderr)
                bad_lines.append(f"{utt} {str(exc).splitlines()[0]}")
                continue
            if _is_plain_16k_mono(entry):
                wav_path = os.path.abspath(entry)
            else:
                wav_path = os.path.abspath(os.path.join(outdir, "wav", f"{utt}.wav"))
                tmp = wav_path + ".tmp.wav"
                sf.write(tmp, x, SAMPLE_RATE, subtype="PCM_16")
                os.replace(tmp, wav_path)
            feats = extract(x, cfg)
            writer(utt, feats)
            wav_lines.append(f"{utt} {wav_path}")
            nf_lines.append(f"{utt} {feats.shape[0]}")
            dur_lines.append(f"{utt} {len(x) / SAMPLE_RATE:.4f}")
            if k % 200 == 0:
                print(f"{k}/{len(entries)} recordings, {time.time() - t0:.1f} s", file=sys.stderr)
    for name, lines in (("wav", wav_lines), ("utt2num_frames", nf_lines),
                        ("utt2dur", dur_lines), ("bad", bad_lines)):
        path = os.path.join(outdir, f"{name}.{job}.scp" if name == "wav" else f"{name}.{job}")
        atomic_write_lines(path, (line + "\n" for line in lines))
    print(f"dumped {len(wav_lines)} recordings, skipped {len(bad_lines)} "
          f"in {time.time() - t0:.1f} s", file=sys.stderr)
    return len(bad_lines)


def global_stats(feats_scp: str) -> dict:
    """Per-dimension mean and standard deviation over all frames (Welford-free: sums)."""
    import kaldiio

    total, sq, count = None, None, 0
    for _, mat in kaldiio.load_scp_sequential(feats_scp):
        mat = mat.astype(np.float64)
        if total is None:
            total, sq = np.zeros(mat.shape[1]), np.zeros(mat.shape[1])
        total += mat.sum(0)
        sq += (mat ** 2).sum(0)
        count += mat.shape[0]
    if count == 0:
        raise ValueError(f"{feats_scp}: no frames to compute statistics from")
    mean = total / count
    std = np.sqrt(np.maximum(sq / count - mean ** 2, 1e-8))
    return {"mean": mean.astype(np.float32), "std": std.astype(np.float32), "count": count}


def main(argv=None) -> int:

    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.features", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="extract features of one wav.scp piece")
    d.add_argument("--wav-scp", required=True)
    d.add_argument("--outdir", required=True)
    d.add_argument("--job", default="1")
    d.add_argument("--n-mels", type=int, default=80)
    d.add_argument("--pitch", action="store_true", help="append the pitch contour (pyutils.sqa.cues.pitch_track)")
    s = sub.add_parser("stats", help="global mean/std of a feats.scp")
    s.add_argument("--feats-scp", required=True)
    s.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "dump":
        dump(args.wav_scp, args.outdir, args.job, args.n_mels, args.pitch)
        return 0
    stats = global_stats(args.feats_scp)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp.npz"
    np.savez(tmp, **stats)
    os.replace(tmp, args.out)
    print(f"stats over {stats['count']} frames -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
