"""Small waveform helpers shared by the synthesisers (16 kHz mono float32)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf

from pyutils.synth import SAMPLE_RATE


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)) + 1e-20))


def db_to_amp(db: float) -> float:
    return float(10.0 ** (db / 20.0))


def frame_power(x: np.ndarray, sr: int = SAMPLE_RATE, frame_s: float = 0.02) -> np.ndarray:
    """Mean square (float64) of each whole ``frame_s`` frame; a short tail is dropped."""
    n = max(1, int(frame_s * sr))
    m = len(x) // n
    return np.mean(np.square(x[: m * n].reshape(m, n), dtype=np.float64), axis=1)


def active_rms(x: np.ndarray, sr: int = SAMPLE_RATE, frame_s: float = 0.02) -> float:
    """RMS over the frames within 30 dB of the loudest one (speech-activity level)."""
    if len(x) < max(1, int(frame_s * sr)):
        return rms(x)
    fr = np.sqrt(frame_power(x, sr, frame_s) + 1e-20)
    keep = fr > fr.max() * db_to_amp(-30)
    return float(np.sqrt(np.mean(fr[keep] ** 2)))


def trim_silence(x: np.ndarray, sr: int = SAMPLE_RATE, thresh_db: float = -40.0,
                 margin_s: float = 0.01) -> np.ndarray:
    """Cut leading/trailing audio whose 5 ms frame energy is ``thresh_db`` below the peak frame."""
    n = max(1, int(0.005 * sr))
    m = len(x) // n
    if m == 0:
        return x
    fr = np.sqrt(np.mean(np.square(x[: m * n].reshape(m, n), dtype=np.float64), axis=1))
    on = np.nonzero(fr > fr.max() * db_to_amp(thresh_db))[0]
    if len(on) == 0:
        return x[:0]
    margin = int(margin_s * sr)
    a = max(0, on[0] * n - margin)
    b = min(len(x), (on[-1] + 1) * n + margin)
    return x[a:b]


def fade(x: np.ndarray, sr: int = SAMPLE_RATE, fade_s: float = 0.005) -> np.ndarray:
    """Short raised-cosine fade in/out so concatenation does not click."""
    n = min(int(fade_s * sr), len(x) // 2)
    if n <= 0:
        return x
    y = x.copy()
    w = 0.5 - 0.5 * np.cos(np.linspace(0, np.pi, n))
    y[:n] *= w
    y[-n:] *= w[::-1]
    return y


def to_pcm16(x: np.ndarray) -> np.ndarray:
    return np.round(np.clip(x, -1.0, 32767 / 32768) * 32768).astype(np.int16)


def write_wav(path: str | os.PathLike, x: np.ndarray, sr: int = SAMPLE_RATE) -> None:
    """Write 16-bit PCM mono WAV atomically (temp file, then rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    sf.write(str(tmp), to_pcm16(x), sr, subtype="PCM_16", format="WAV")
    os.replace(tmp, path)


def read_wav(path: str | os.PathLike) -> tuple[np.ndarray, int]:
    x, sr = sf.read(str(path), dtype="float32", always_2d=False)
    if x.ndim > 1:
        x = x.mean(axis=1)
    return x, sr


def silence(dur_s: float, sr: int = SAMPLE_RATE) -> np.ndarray:
    return np.zeros(int(round(dur_s * sr)), dtype=np.float32)
