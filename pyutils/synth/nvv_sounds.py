"""Procedural non-verbal vocalisations, one small recipe per challenge tag.

Each ``_tag`` function draws its own random duration, pitch, timing and
colour from ``rng`` so that a model has to learn the *class*, never one
waveform.  The building blocks are a source-filter model:

* voiced source: a band-limited glottal pulse train with an f0 contour
  (phase accumulation, harmonics with -12 dB/octave roll-off), plus jitter;
* noise source: white noise shaped by Butterworth band-pass filters;
* formants: two-pole resonators (centre frequency, bandwidth);
* envelopes: attack/decay curves and per-burst raised-cosine windows.

:func:`synthesize` returns float32 at 16 kHz, peak-normalised to a
per-class loudness (randomised ±4 dB), without silent padding at either
end so that an inserted event's interval is exactly its audio.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Sequence

import numpy as np
from scipy import signal

from pyutils.synth import SAMPLE_RATE

SR = SAMPLE_RATE


# ----------------------------------------------------------------- primitives
def _voiced(f0: np.ndarray, sr: int, rng: np.random.Generator, jitter: float = 0.01,
            n_harm: int = 30, tilt_db: float = 12.0) -> np.ndarray:
    """Harmonic source following the f0 track ``f0`` (Hz per sample)."""
    f0 = f0 * (1.0 + jitter * rng.standard_normal(len(f0)).cumsum() / np.sqrt(len(f0) + 1))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    out = np.zeros(len(f0))
    for k in range(1, n_harm + 1):
        amp = 10 ** (-tilt_db * np.log2(k) / 20)
        alias = (k * f0) < sr / 2 - 200
        out += amp * np.sin(k * phase) * alias
    return out


def _noise(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n)


def _band(x: np.ndarray, lo: float, hi: float, sr: int, order: int = 4) -> np.ndarray:
    hi = min(hi, sr / 2 - 100)
    sos = signal.butter(order, [lo, hi], btype="band", fs=sr, output="sos")
    return signal.sosfilt(sos, x)


def _lowpass(x: np.ndarray, fc: float, sr: int, order: int = 4) -> np.ndarray:
    sos = signal.butter(order, fc, btype="low", fs=sr, output="sos")
    return signal.sosfilt(sos, x)


def _formants(x: np.ndarray, freqs: Sequence[float], bws: Sequence[float], sr: int) -> np.ndarray:
    """Parallel bank of two-pole resonators (Klatt-style), summed."""
    y = np.zeros_like(x)
    for f, bw in zip(freqs, bws):
        r = np.exp(-np.pi * bw / sr)
        a = [1.0, -2 * r * np.cos(2 * np.pi * f / sr), r * r]
        y += signal.lfilter([1.0 - r], a, x)
    return y


def _env(n: int, attack: float, release: float, sr: int, shape: float = 1.0) -> np.ndarray:
    """Linear-ish attack, sustain 1, exponential-shaped release (times in s)."""
    e = np.ones(n)
    a = min(n, max(1, int(attack * sr)))
    r = min(n - a, max(1, int(release * sr)))
    e[:a] = np.linspace(0, 1, a) ** shape
    if r > 0:
        e[n - r:] = np.linspace(1, 0, r) ** shape
    return e


def _hann_burst(n: int) -> np.ndarray:
    return np.hanning(max(n, 3))[:n]


def _place(total: int, parts: List[tuple]) -> np.ndarray:
    """Mix ``(offset_samples, array)`` parts into a buffer of ``total`` samples."""
    y = np.zeros(total)
    for off, p in parts:
        end = min(total, off + len(p))
        y[off:end] += p[: end - off]
    return y


def _u(rng, lo, hi):
    return float(rng.uniform(lo, hi))


# -------------------------------------------------------------------- recipes
def _breath(rng, sr):
    """breath: band-passed (400-2800 Hz) noise with a slow rise-and-fall envelope, 0.4-0.9 s, soft."""
    dur = _u(rng, 0.4, 0.9)
    n = int(dur * sr)
    x = _band(_noise(n, rng), _u(rng, 300, 500), _u(rng, 2300, 3200), sr, 2)
    x = x + 0.5 * _formants(_noise(n, rng), [_u(rng, 900, 1400)], [400], sr)
    return x * np.hanning(n) ** _u(rng, 0.8, 1.5)


def _sniff(rng, sr):
    """sniff: 1-3 short (70-160 ms) inhaled high-band (2-6 kHz) noise bursts, rising envelope, sharp stop."""
    k = int(rng.integers(1, 4))
    parts, off = [], 0
    for _ in range(k):
        d = int(_u(rng, 0.07, 0.16) * sr)
        b = _band(_noise(d, rng), _u(rng, 1800, 2500), _u(rng, 5500, 7000), sr, 3)
        parts.append((off, b * np.linspace(0.2, 1, d) ** 2 * _env(d, 0.01, 0.008, sr)))
        off += d + int(_u(rng, 0.05, 0.12) * sr)
    return _place(off, parts)


def _laugh(rng, sr):
    """laugh: 3-6 voiced "ha" pulses at 4-6 Hz, each with an aspirated onset, f0 200-320 Hz declining, /a/ formants."""
    k = int(rng.integers(3, 7))
    rate = _u(rng, 4.0, 6.0)
    f0_start = _u(rng, 200, 320)
    period = int(sr / rate)
    parts = []
    for i in range(k):
        d = int(period * _u(rng, 0.55, 0.75))
        f0 = np.full(d, f0_start * (1 - 0.04 * i)) * np.linspace(1.05, 0.95, d)
        v = _formants(_voiced(f0, sr, rng, 0.02), [_u(rng, 750, 900), _u(rng, 1150, 1350), 2500],
                      [90, 120, 200], sr)
        h = _band(_noise(d, rng), 500, 4000, sr, 2) * np.exp(-np.arange(d) / (0.025 * sr))
        pulse = (v / (np.abs(v).max() + 1e-9) + 0.6 * h / (np.abs(h).max() + 1e-9)) * _hann_burst(d)
        parts.append((i * period, pulse * (1 - 0.08 * i)))
    return _place((k - 1) * period + parts[-1][1].size, parts)


def _cry(rng, sr):
    """cry: 2-3 wavering voiced sobs (0.3-0.5 s), high f0 350-500 Hz with 6-9 Hz vibrato and a falling end, /e/ formants."""
    k = int(rng.integers(2, 4))
    parts, off = [], 0
    for _ in range(k):
        d = int(_u(rng, 0.3, 0.5) * sr)
        t = np.arange(d) / sr
        base = _u(rng, 350, 500)
        f0 = base * (1 + 0.08 * np.sin(2 * np.pi * _u(rng, 6, 9) * t)) * np.linspace(1.05, 0.8, d)
        v = _formants(_voiced(f0, sr, rng, 0.03), [_u(rng, 450, 600), _u(rng, 1900, 2300), 2900],
                      [100, 150, 250], sr)
        v = v / (np.abs(v).max() + 1e-9) + 0.15 * _band(_noise(d, rng), 1000, 5000, sr, 2)
        parts.append((off, v * _env(d, 0.04, 0.12, sr)))
        off += d + int(_u(rng, 0.05, 0.15) * sr)
    return _place(off, parts)


def _cough(rng, sr):
    """cough: 1-2 sharp-onset broadband (300-5000 Hz) noise bursts (60-120 ms) each with a short voiced tail (f0 ~130 Hz)."""
    k = int(rng.integers(1, 3))
    parts, off = [], 0
    for _ in range(k):
        d = int(_u(rng, 0.06, 0.12) * sr)
        b = _band(_noise(d, rng), 300, 5000, sr, 2) * np.exp(-np.arange(d) / (_u(rng, 0.02, 0.04) * sr))
        b = b / (np.abs(b).max() + 1e-9)
        dt = int(_u(rng, 0.08, 0.14) * sr)
        f0 = np.linspace(_u(rng, 120, 160), 90, dt)
        v = _formants(_voiced(f0, sr, rng, 0.05), [500, 1400], [150, 200], sr)
        v = 0.5 * v / (np.abs(v).max() + 1e-9) * np.linspace(1, 0, dt) ** 2
        parts += [(off, b), (off + int(0.6 * d), v)]
        off += int(0.6 * d) + dt + int(_u(rng, 0.12, 0.22) * sr)
    return _place(off - int(0.1 * sr), parts)


def _throat_clearing(rng, sr):
    """throat clearing: 2-3 rough low noisy bursts (150-250 ms): 100-900 Hz noise amplitude-modulated at 25-45 Hz."""
    k = int(rng.integers(2, 4))
    parts, off = [], 0
    for _ in range(k):
        d = int(_u(rng, 0.15, 0.25) * sr)
        t = np.arange(d) / sr
        rough = 0.5 + 0.5 * np.sign(np.sin(2 * np.pi * _u(rng, 25, 45) * t))
        x = _band(_noise(d, rng), 100, _u(rng, 700, 1000), sr, 3) * rough
        v = _voiced(np.full(d, _u(rng, 70, 100)), sr, rng, 0.08, n_harm=8)
        x = x / (np.abs(x).max() + 1e-9) + 0.3 * v / (np.abs(v).max() + 1e-9)
        parts.append((off, x * _env(d, 0.02, 0.06, sr)))
        off += d + int(_u(rng, 0.04, 0.1) * sr)
    return _place(off, parts)


def _sneeze(rng, sr):
    """sneeze: rising inhale ("ah-", 0.3-0.5 s noise whose level and centre frequency rise) then an explosive 2-8 kHz burst ("choo") with fast decay."""
    di = int(_u(rng, 0.3, 0.5) * sr)
    inh = _formants(_noise(di, rng), [_u(rng, 700, 900), 1800], [300, 500], sr)
    f0 = np.linspace(_u(rng, 250, 300), _u(rng, 380, 450), di)
    inh = inh / (np.abs(inh).max() + 1e-9) + 0.3 * _formants(_voiced(f0, sr, rng), [800, 1200], [100, 150], sr) / 20
    inh = 0.35 * inh * np.linspace(0, 1, di) ** 2
    db = int(_u(rng, 0.15, 0.25) * sr)
    burst = _band(_noise(db, rng), 2000, 7800, sr, 2)
    burst = burst / (np.abs(burst).max() + 1e-9) * np.exp(-np.arange(db) / (_u(rng, 0.04, 0.07) * sr))
    gap = int(_u(rng, 0.02, 0.06) * sr)
    return _place(di + gap + db, [(0, inh), (di + gap, burst)])


def _sigh(rng, sr):
    """sigh: 0.6-1.2 s exhale, voiced at the start (f0 ~180->110 Hz falling) cross-fading into breathy noise, decaying."""
    dur = _u(rng, 0.6, 1.2)
    n = int(dur * sr)
    f0 = np.linspace(_u(rng, 160, 220), _u(rng, 90, 120), n)
    v = _formants(_voiced(f0, sr, rng, 0.02), [_u(rng, 550, 700), _u(rng, 1000, 1200)], [120, 150], sr)
    h = _band(_noise(n, rng), 300, 3000, sr, 2)
    xf = np.linspace(1, 0, n) ** 1.5
    x = xf * v / (np.abs(v).max() + 1e-9) + (1 - xf) * 0.6 * h / (np.abs(h).max() + 1e-9)
    return x * _env(n, 0.08, 0.3 * dur, sr)


def _gasp(rng, sr):
    """gasp: fast inhale, 0.2-0.4 s of /a/-shaped noise (formants ~900/1500 Hz) with a very fast rise and an abrupt stop."""
    n = int(_u(rng, 0.2, 0.4) * sr)
    x = _formants(_noise(n, rng), [_u(rng, 800, 1000), _u(rng, 1400, 1700), 2600], [200, 250, 400], sr)
    x = x + 0.3 * _band(_noise(n, rng), 2500, 6000, sr, 2) * np.std(x)
    e = np.minimum(1, np.arange(n) / (0.03 * sr)) * np.linspace(1, 0.7, n)
    return x * e * _env(n, 0.001, 0.01, sr)


def _snore(rng, sr):
    """snore: 0.8-1.5 s low periodic rumble: 25-60 Hz pulse train through 80-600 Hz resonances, swelling envelope."""
    n = int(_u(rng, 0.8, 1.5) * sr)
    rate = _u(rng, 25, 60)
    src = _voiced(np.full(n, rate), sr, rng, 0.1, n_harm=20, tilt_db=3)
    x = _formants(src, [_u(rng, 120, 200), _u(rng, 400, 550)], [60, 120], sr)
    x = x / (np.abs(x).max() + 1e-9) + 0.2 * _lowpass(_noise(n, rng), 800, sr)
    return x * np.hanning(n) ** 0.7


def _yawn(rng, sr):
    """yawn: long (1.0-1.8 s) voiced glide, f0 rising then falling (e.g. 180->300->120 Hz), formants gliding /a/->/o/, breathy."""
    n = int(_u(rng, 1.0, 1.8) * sr)
    lo, hi, end = _u(rng, 150, 200), _u(rng, 260, 340), _u(rng, 100, 140)
    peak = int(n * _u(rng, 0.3, 0.45))
    f0 = np.concatenate([np.linspace(lo, hi, peak), np.linspace(hi, end, n - peak)])
    v = _voiced(f0, sr, rng, 0.02)
    half = n // 2
    a = _formants(v[:half], [850, 1250], [100, 130], sr)
    o = _formants(v[half:], [500, 850], [90, 120], sr)
    x = np.concatenate([a, o])
    x = x / (np.abs(x).max() + 1e-9) + 0.15 * _band(_noise(n, rng), 400, 3000, sr, 2)
    return x * _env(n, 0.15, 0.4, sr)


def _hum(rng, sr):
    """hum: nasal murmur, 0.5-1.2 s, f0 110-230 Hz on 2-3 held notes, strong fundamental (low-passed at ~500 Hz, 250 Hz formant)."""
    n = int(_u(rng, 0.5, 1.2) * sr)
    k = int(rng.integers(2, 4))
    base = _u(rng, 110, 230)
    notes = base * 2 ** (rng.integers(-3, 5, size=k) / 12)
    f0 = np.repeat(notes, int(np.ceil(n / k)))[:n]
    f0 = signal.lfilter([0.01], [1, -0.99], f0 - f0[0]) + f0[0]   # smooth note glides
    v = _voiced(f0, sr, rng, 0.005, n_harm=10, tilt_db=18)
    x = _lowpass(_formants(v, [250, _u(rng, 900, 1100)], [60, 200], sr), 600, sr)
    return x * _env(n, 0.05, 0.1, sr)


def _moan(rng, sr):
    """moan: low sustained voiced /o/ (500/850 Hz), 0.7-1.3 s, f0 85-140 Hz with a slow rise-fall contour."""
    n = int(_u(rng, 0.7, 1.3) * sr)
    base = _u(rng, 85, 140)
    t = np.linspace(0, 1, n)
    f0 = base * (1 + _u(rng, 0.1, 0.25) * np.sin(np.pi * t) ** 2 - 0.1 * t)
    v = _voiced(f0, sr, rng, 0.02, tilt_db=10)
    x = _formants(v, [_u(rng, 450, 550), _u(rng, 800, 950), 2400], [80, 100, 200], sr)
    return x * _env(n, 0.12, 0.3, sr)


def _hiss(rng, sr):
    """hiss: steady "sss"/"shh", 0.4-1.0 s of high-band (3.5-7.5 kHz) noise with flat sustain and short ramps."""
    n = int(_u(rng, 0.4, 1.0) * sr)
    lo = _u(rng, 3000, 4500)
    x = _band(_noise(n, rng), lo, _u(rng, 6500, 7800), sr, 4)
    return x * _env(n, 0.04, 0.06, sr)


def _lipsmack(rng, sr):
    """lipsmack: 2-4 clicks: 6-15 ms decaying 1-5 kHz impulses, 50-150 ms apart (lips parting)."""
    k = int(rng.integers(2, 5))
    parts, off = [], 0
    for i in range(k):
        d = int(_u(rng, 0.006, 0.015) * sr)
        c = _band(_noise(d + 64, rng), 900, 5000, sr, 2)[:d] * np.exp(-np.arange(d) / (0.002 * sr))
        c = c / (np.abs(c).max() + 1e-9) * _u(rng, 0.6, 1.0)
        parts.append((off, c))
        off += d + (int(_u(rng, 0.05, 0.15) * sr) if i < k - 1 else 0)
    return _place(off, parts)


def _burp(rng, sr):
    """burp: 0.25-0.6 s low voiced pulse (f0 60-95 Hz, strong jitter), abrupt onset, resonances ~300/700 Hz."""
    n = int(_u(rng, 0.25, 0.6) * sr)
    f0 = np.linspace(_u(rng, 70, 95), _u(rng, 55, 70), n)
    v = _voiced(f0, sr, rng, 0.15, n_harm=25, tilt_db=6)
    x = _formants(v, [_u(rng, 280, 350), _u(rng, 650, 800), 1600], [70, 100, 200], sr)
    return x * _env(n, 0.005, 0.12, sr)


RECIPES: Dict[str, Callable] = {
    "breath": _breath, "sniff": _sniff, "laugh": _laugh, "cry": _cry, "cough": _cough,
    "throat clearing": _throat_clearing, "sneeze": _sneeze, "sigh": _sigh, "gasp": _gasp,
    "snore": _snore, "yawn": _yawn, "hum": _hum, "moan": _moan, "hiss": _hiss,
    "lipsmack": _lipsmack, "burp": _burp,
}

#: Peak level (dBFS, before ±4 dB randomisation) of each tag; speech peaks near -3 dBFS.
PEAK_DB = {"breath": -16, "sniff": -14, "laugh": -5, "cry": -6, "cough": -4,
           "throat clearing": -7, "sneeze": -4, "sigh": -9, "gasp": -11, "snore": -9,
           "yawn": -7, "hum": -8, "moan": -8, "hiss": -15, "lipsmack": -9, "burp": -6}


def synthesize(tag: str, rng: np.random.Generator, sr: int = SAMPLE_RATE) -> np.ndarray:
    """One random instance of ``tag`` (a challenge tag), float32 mono at ``sr``."""
    if tag not in RECIPES:
        raise ValueError(f"no NVV recipe for tag {tag!r}; known: {sorted(RECIPES)}")
    x = np.asarray(RECIPES[tag](rng, sr), dtype=np.float64)
    x = x - x.mean()
    loud = np.nonzero(np.abs(x) > 1e-3 * np.abs(x).max())[0]
    x = x[loud[0]:loud[-1] + 1]               # no silent padding: the interval is the sound
    peak = np.abs(x).max() + 1e-12
    gain = 10 ** ((PEAK_DB[tag] + rng.uniform(-4, 4)) / 20) / peak
    y = (x * gain).astype(np.float32)
    n = min(int(0.003 * sr), len(y) // 2)       # 3 ms ramps: no clicks at the edges
    if n > 0:
        w = np.linspace(0, 1, n, dtype=np.float32)
        y[:n] *= w
        y[-n:] *= w[::-1]
    return y
