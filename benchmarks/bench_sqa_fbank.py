"""SQA log-mel speed: :func:`pyutils.sqa.features.fbank` against the plain numpy
formula it replaced (``np.abs(np.fft.rfft(...)) ** 2``), measured in the same run
on the same audio (process time per second of audio), with the largest
difference between the two (float32 rounding).  The training data worker calls
fbank once per re-made example, stage 2 once per recording.

    tools/venv/bin/python benchmarks/bench_sqa_fbank.py [--seconds 5.2] [--repeats 50]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pyutils.sqa.features import NFFT, _mel_matrix, fbank, windowed_frames


def numpy_reference(x: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """The spectrum formula before scipy.fft (kept here only as the yardstick)."""
    spec = np.abs(np.fft.rfft(windowed_frames(x), n=NFFT)) ** 2
    mel = spec.astype(np.float32) @ _mel_matrix(n_mels).T
    return np.log(np.maximum(mel, 1e-10)).astype(np.float32)


def per_audio_second(fn, x: np.ndarray, repeats: int) -> float:
    fn(x)
    t = time.process_time()
    for _ in range(repeats):
        fn(x)
    return (time.process_time() - t) / repeats / (len(x) / 16000.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.2, help="audio length (the mini corpus' mean)")
    ap.add_argument("--repeats", type=int, default=50)
    a = ap.parse_args()
    x = (np.random.default_rng(0).standard_normal(int(a.seconds * 16000)) * 0.1).astype(np.float32)
    ref = per_audio_second(numpy_reference, x, a.repeats)
    new = per_audio_second(fbank, x, a.repeats)
    diff = float(np.max(np.abs(fbank(x) - numpy_reference(x))))
    print(f"numpy reference: {ref * 1000:.2f} ms CPU per second of audio")
    print(f"fbank:           {new * 1000:.2f} ms CPU per second of audio ({ref / new:.2f}x faster)")
    print(f"largest difference in log-mel: {diff:.2e}")


if __name__ == "__main__":
    main()
