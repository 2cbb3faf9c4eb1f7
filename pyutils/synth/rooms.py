"""Room impulse responses from a shoebox image-source model plus a diffuse tail.

No room-acoustics package is installed, and the simulator only needs plausible
reverberation with a known RT60, so this is a compact model (numpy):

* early part: image sources of a random shoebox room (walls 3-10 m, height
  2.5-4 m), orders up to 3 (up to 343 images), each delayed by its distance
  (c = 343 m/s, fractional delays rounded to the sample), attenuated by
  ``1 / distance`` and by the wall reflection coefficient ``beta`` per bounce,
  with ``beta`` from Sabine's formula for the requested RT60;
* late part: Gaussian noise under an ``exp(-6.9 t / RT60)`` envelope (-60 dB at
  RT60), starting after the early part, at the energy the early decay reaches.
"""

from __future__ import annotations

import itertools

import numpy as np

from pyutils.synth import SAMPLE_RATE

C = 343.0


def room_ir(rt60: float, rng: np.random.Generator, sr: int = SAMPLE_RATE, order: int = 3) -> np.ndarray:
    """Impulse response (direct path first, peak-normalised to 1) of a random room with ``rt60`` s."""
    rt60 = float(np.clip(rt60, 0.1, 3.0))
    L = np.array([rng.uniform(3, 10), rng.uniform(3, 8), rng.uniform(2.5, 4)])
    src = L * rng.uniform(0.2, 0.8, 3)
    mic = L * rng.uniform(0.2, 0.8, 3)
    vol, area = float(np.prod(L)), 2 * (L[0] * L[1] + L[0] * L[2] + L[1] * L[2])
    alpha = float(np.clip(0.161 * vol / (rt60 * area), 0.02, 0.99))   # Sabine: absorption
    beta = np.sqrt(1 - alpha)                                       # pressure reflection
    n = int(rt60 * sr * 1.1) + 1
    h = np.zeros(n)
    d0 = max(float(np.linalg.norm(src - mic)), 0.3)
    t0 = d0 / C
    rng_o = range(-order, order + 1)
    for nx, ny, nz in itertools.product(rng_o, rng_o, rng_o):
        bounces = 0
        img = np.empty(3)
        for k, m in enumerate((nx, ny, nz)):
            # images at 2 m L +/- src; |2m| or |2m-1| wall hits
            if m % 2 == 0:
                img[k] = m * L[k] + src[k]
            else:
                img[k] = (m + 1) * L[k] - src[k]
            bounces += abs(m)
        d = max(float(np.linalg.norm(img - mic)), 0.3)
        i = int(round((d / C - t0) * sr))
        if i < n:
            h[i] += (beta ** bounces) * d0 / d
    # diffuse tail after the early reflections
    t_tail = 2 * order * float(np.min(L)) / C / 2
    i_tail = min(n - 1, max(1, int(t_tail * sr)))
    t = np.arange(n) / sr
    env = np.exp(-6.9 * t / rt60)
    # tail level at its start = the energy density of the last early reflections
    level = np.sqrt(np.mean(h[i_tail // 2:i_tail] ** 2)) if i_tail > 1 else 0.0
    level = max(level, 0.02 * env[i_tail])
    tail = rng.standard_normal(n) * env * (level / env[i_tail])
    tail[:i_tail] = 0.0
    h = h + tail
    return h / (np.max(np.abs(h)) + 1e-12)


def reverberate(x: np.ndarray, rt60: float, rng: np.random.Generator, sr: int = SAMPLE_RATE) -> np.ndarray:
    """``x`` convolved with :func:`room_ir` (same length, same RMS as the input)."""
    from scipy import signal

    h = room_ir(rt60, rng, sr)
    y = signal.fftconvolve(np.asarray(x, dtype=np.float64), h)[: len(x)]
    rx, ry = np.sqrt(np.mean(np.square(x, dtype=np.float64))), np.sqrt(np.mean(y ** 2))
    return y * (rx / ry) if ry > 0 else y
