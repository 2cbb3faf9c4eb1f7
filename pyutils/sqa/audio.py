"""Audio loading for SQA: mono float32 at 16 kHz, with clear errors.

Every loader raises :class:`AudioError` (never a bare library exception) so
callers can skip a bad recording, count it and go on.
"""

from __future__ import annotations

import numpy as np
import soundfile as sf

from pyutils.sqa.common import SAMPLE_RATE

MIN_DURATION = 0.1  # seconds; shorter recordings are skipped as "too short"


class AudioError(Exception):
    """A recording that cannot be used (unreadable, empty, too short)."""


def _to_mono_16k(x: np.ndarray, sr: int, sample_rate: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if sr != sample_rate:
        import soxr  # high-quality resampler already pinned in tools/requirements.txt

        x = soxr.resample(x, sr, sample_rate).astype(np.float32)
    return x


def load_audio(entry: str, sample_rate: int = SAMPLE_RATE,
               min_duration: float = MIN_DURATION, name: str | None = None) -> np.ndarray:
    """Read a wav.scp value (a path, or a Kaldi pipe ``cmd |``) as mono float32.

    Raises :class:`AudioError` naming the recording when it cannot be read,
    is empty, is not finite, or lasts less than ``min_duration`` seconds.
    """
    label = name or entry
    try:
        if entry.rstrip().endswith("|"):
            x, sr = _read_pipe(entry)
        else:
            x, sr = sf.read(entry, dtype="float32", always_2d=False)
    except AudioError:
        raise
    except Exception as exc:  # soundfile raises several types (LibsndfileError, RuntimeError, OSError)
        raise AudioError(f"{label}: unreadable audio ({type(exc).__name__}: {exc})") from exc
    if x.size == 0:
        raise AudioError(f"{label}: empty audio (0 samples)")
    x = _to_mono_16k(x, sr, sample_rate)
    if not np.all(np.isfinite(x)):
        raise AudioError(f"{label}: audio contains NaN/Inf samples")
    if len(x) < min_duration * sample_rate:
        raise AudioError(f"{label}: too short ({len(x) / sample_rate:.3f} s < {min_duration} s)")
    return x


def _read_pipe(entry: str):
    """Kaldi-style ``command |`` entry: prefer the shared reader, else run it."""
    try:
        from pyutils.datadir import read_wav_scp_entry  # foundation helper (if present)
    except ImportError:
        read_wav_scp_entry = None
    if read_wav_scp_entry is not None:
        out = read_wav_scp_entry(entry)
        if isinstance(out, tuple) and len(out) == 2:
            a, b = out
            return (a, b) if isinstance(b, (int, np.integer)) else (b, a)
    import io

    from pyutils.datadir.io import AudioReadError, run_pipe

    try:  # a wav.scp pipe is trusted input, as in Kaldi
        data = run_pipe(entry)
    except AudioReadError as e:
        raise AudioError(str(e)) from None
    return sf.read(io.BytesIO(data), dtype="float32", always_2d=False)
