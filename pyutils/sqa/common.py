"""Constants and the 20 ms label grid shared by every SQA module.

Grid rule (the same as ``chorus-score sqa``): frame ``i`` covers
``[i*0.02, (i+1)*0.02)`` and takes the label of an interval ``[s, e)`` when its
centre ``c_i = (2i + 1) / 100`` (computed exactly like the scorer, as that float
division) satisfies ``s <= c_i < e``.
"""

from __future__ import annotations

import math
from typing import Iterable, List, Sequence

import numpy as np


FAULTS = ("noise", "distortion", "pause")
FRAME_SHIFT = 0.02  # seconds, the scoring grid
SAMPLE_RATE = 16000
SCORE_MIN, SCORE_MAX = 1.0, 5.0


def num_grid_frames(duration: float) -> int:
    """Number of 20 ms frames covering ``duration`` seconds (last one partial)."""
    return max(1, int(math.ceil(round(duration / FRAME_SHIFT, 6))))


def rasterise(intervals: Iterable[Sequence[float]], n_frames: int) -> np.ndarray:
    """0/1 vector of ``n_frames`` whose frames have their centre in an interval."""
    out = np.zeros(n_frames, dtype=np.float32)
    centres = (2.0 * np.arange(n_frames) + 1.0) / 100.0  # == scorer's (2k+1)/100
    for s, e in intervals:
        out[(centres >= float(s)) & (centres < float(e))] = 1.0
    return out


def frames_to_intervals(mask: np.ndarray) -> List[List[float]]:
    """Runs of ones in a 0/1 frame vector -> ``[[start, end], ...]`` in seconds."""
    mask = np.asarray(mask).astype(bool)
    if not mask.any():
        return []
    padded = np.concatenate([[False], mask, [False]])
    diff = np.diff(padded.astype(np.int8))
    starts = np.flatnonzero(diff == 1)
    ends = np.flatnonzero(diff == -1)
    return [[round(s * FRAME_SHIFT, 3), round(e * FRAME_SHIFT, 3)] for s, e in zip(starts, ends)]
