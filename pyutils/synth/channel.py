"""Benign recording channels: what a clean *real* recording carries that is not a fault.

A real recording is never the pristine waveform of a synthesiser. The microphone
colours it, a rumble filter and the recorder's anti-alias filter limit its band,
and the room and the electronics leave a steady noise floor far under the speech.
Fault labels (the simulator's, and those of real test sets built by adding faults
to real recordings) call all of this clean. :func:`apply_channel` draws one such
channel; SQA training uses it as a label-preserving augmentation
(``channel_prob``), so that the fault detector does not learn "not pristine =
faulty" from a corpus of synthetic voices.

Ranges, chosen from what recording chains do and kept clear of the fault kinds
(not tuned on any test split):

- high-pass: 2nd-order Butterworth at 40-150 Hz (rumble filter, small membrane);
- colouring: two peaking filters, centre 200 Hz-6 kHz (log-uniform), gain +-6 dB,
  Q 0.7-2 (microphone and placement); a high shelf above 2-4 kHz, +-4 dB (tilt);
- band: with probability 0.5 a 4th-order low-pass at 5.5-7.8 kHz (recorders at
  11-16 kHz); the ``bandlimit`` fault cuts at 0.6-3.5 kHz;
- floor: stationary white/pink/brown noise 30-65 dB under the active speech level
  (noise faults: 0-25 dB), where the quality score's noise penalty
  ``2.4 * clip((30 - SNR) / 30, 0, 1)`` is 0: the simulator's own severity model
  calls such a floor harmless.

No reverberation and no codec: both are fault families (and held out in the
leave-one-family-out benchmark).
"""

from __future__ import annotations

import numpy as np
from scipy import fft, signal

from pyutils.synth.audio import SAMPLE_RATE, active_rms, db_to_amp
from pyutils.synth.faults import make_noise

FLOOR_DB = (30.0, 65.0)          # noise floor under the active speech level
LOWPASS_HZ = (5500.0, 7800.0)
HIGHPASS_HZ = (40.0, 150.0)


def peaking_sos(f0: float, gain_db: float, q: float, sr: int) -> np.ndarray:
    """One peaking-EQ biquad as an SOS row (RBJ Audio EQ Cookbook).

    scipy has resonators (``iirpeak``) but no parametric EQ with a gain, hence these lines.
    """
    a = 10.0 ** (gain_db / 40.0)
    w0 = 2.0 * np.pi * f0 / sr
    alpha = np.sin(w0) / (2.0 * q)
    b = np.array([1 + alpha * a, -2 * np.cos(w0), 1 - alpha * a])
    den = np.array([1 + alpha / a, -2 * np.cos(w0), 1 - alpha / a])
    return np.concatenate([b / den[0], den / den[0]])[None, :]


def high_shelf_sos(f0: float, gain_db: float, sr: int) -> np.ndarray:
    """High-shelf biquad (RBJ Audio EQ Cookbook, shelf slope 1) as an SOS row."""
    a = 10.0 ** (gain_db / 40.0)
    w0 = 2.0 * np.pi * f0 / sr
    alpha = np.sin(w0) / 2.0 * np.sqrt(2.0)
    c, sa = np.cos(w0), 2.0 * np.sqrt(a) * alpha
    b = np.array([a * ((a + 1) + (a - 1) * c + sa), -2 * a * ((a - 1) + (a + 1) * c),
                  a * ((a + 1) + (a - 1) * c - sa)])
    den = np.array([(a + 1) - (a - 1) * c + sa, 2 * ((a - 1) - (a + 1) * c), (a + 1) - (a - 1) * c - sa])
    return np.concatenate([b / den[0], den / den[0]])[None, :]


def draw_channel(rng: np.random.Generator, floor_db: tuple = FLOOR_DB) -> dict:
    """The parameters of one random channel (see the module docstring for the ranges;
    ``floor_db``: the range of the floor under the speech, dB)."""
    return {
        "highpass_hz": float(rng.uniform(*HIGHPASS_HZ)),
        "peaks": [(float(np.exp(rng.uniform(np.log(200.0), np.log(6000.0)))), float(rng.uniform(-6, 6)),
                   float(rng.uniform(0.7, 2.0))) for _ in range(2)],
        "shelf": (float(rng.uniform(2000.0, 4000.0)), float(rng.uniform(-4, 4))),
        "lowpass_hz": float(rng.uniform(*LOWPASS_HZ)) if rng.random() < 0.5 else None,
        "floor_db": float(rng.uniform(*floor_db)),
        "floor_kind": str(rng.choice(["white", "pink", "brown"])),
    }


def apply_channel(x: np.ndarray, rng: np.random.Generator, sr: int = SAMPLE_RATE,
                  params: dict | None = None, floor_db: tuple = FLOOR_DB) -> np.ndarray:
    """``x`` through one benign channel (drawn from ``rng`` unless ``params`` is given).

    The speech level is kept: the output is scaled to the input's peak, then the
    floor is added at ``floor_db`` under the input's active speech level.
    """
    p = params if params is not None else draw_channel(rng, floor_db)
    x64 = np.asarray(x, dtype=np.float64)
    sos = [signal.butter(2, p["highpass_hz"], btype="highpass", fs=sr, output="sos")]
    sos += [peaking_sos(f, g, q, sr) for f, g, q in p["peaks"] if f < 0.45 * sr]
    sos.append(high_shelf_sos(p["shelf"][0], p["shelf"][1], sr))
    if p["lowpass_hz"] is not None and p["lowpass_hz"] < 0.48 * sr:
        sos.append(signal.butter(4, p["lowpass_hz"], btype="lowpass", fs=sr, output="sos"))
    y = signal.sosfilt(np.concatenate(sos), x64)
    peak_in, peak_out = np.abs(x64).max(), np.abs(y).max()
    if peak_out > 0:
        y *= peak_in / peak_out
    level = active_rms(x64, sr)
    if level > 0:
        # drawn at a fast FFT length and cut to the recording: pink noise of a length with
        # large prime factors costs ~10x more, and a stationary floor is the same either way
        m = fft.next_fast_len(len(y), real=True)
        y += make_noise(p["floor_kind"], m, rng, sr)[: len(y)] * level * db_to_amp(-p["floor_db"])
    return y.astype(np.float32)
