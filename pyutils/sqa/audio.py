"""Audio loading for SQA: a recording fit to be scored, mono float32 at 16 kHz, with clear errors.

Reading is :func:`pyutils.audio.load_audio`; :func:`load_checked` raises :class:`AudioError`
(never a bare library exception) so callers can skip a bad recording, count it and go on.
"""

from __future__ import annotations

import numpy as np

from pyutils.audio import load_audio, to_mono_16k
from pyutils.sqa.common import SAMPLE_RATE

MIN_DURATION = 0.1  # seconds; shorter recordings are skipped as "too short"


class AudioError(Exception):
    """A recording that cannot be used (unreadable, empty, too short)."""


def load_checked(entry: str, sample_rate: int = SAMPLE_RATE,
                 min_duration: float = MIN_DURATION, name: str | None = None) -> np.ndarray:
    """Read a wav.scp value (a path, or a Kaldi pipe ``cmd |``) as mono float32 at ``sample_rate``.

    Raises :class:`AudioError` naming the recording when it cannot be read,
    is empty, is not finite, or lasts less than ``min_duration`` seconds.
    """
    label = name or entry
    try:
        x, sr = load_audio(entry)
    except Exception as exc:  # readers raise several types (AudioReadError, LibsndfileError, OSError)
        raise AudioError(f"{label}: unreadable audio ({type(exc).__name__}: {exc})") from exc
    if x.size == 0:
        raise AudioError(f"{label}: empty audio (0 samples)")
    if not np.all(np.isfinite(x)):
        raise AudioError(f"{label}: audio contains NaN/Inf samples")
    x = to_mono_16k(x, sr, sample_rate)
    if len(x) < min_duration * sample_rate:
        raise AudioError(f"{label}: too short ({len(x) / sample_rate:.3f} s < {min_duration} s)")
    return x

