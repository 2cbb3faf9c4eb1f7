"""Read one audio file of any length as 16 kHz mono windows, in flat memory.

:func:`scan` is a cheap first pass over the file in blocks (no resampling):
sample rate, channels, duration, peak, DC offset, share of samples at the rail,
non-finite samples.  :func:`windows` is the second pass: blocks are mixed to
mono, resampled with ``soxr``'s streaming resampler and cut into windows of
``core`` seconds plus ``ctx`` seconds of context each side, so the model sees
the same neighbourhood in the middle of a 1 h file as in a short one, while
only one window is held in memory.
"""

from __future__ import annotations

import os

from dataclasses import dataclass
from typing import Iterator, Tuple

import numpy as np
import soundfile as sf

from pyutils.sqa.audio import AudioError
from pyutils.sqa.common import SAMPLE_RATE

BLOCK_S = 10.0
RAIL = 0.999        # |x| at or above this (of full scale) counts as "at the rail"


@dataclass
class Scan:
    samplerate: int
    channels: int
    frames: int
    peak: float
    dc: float           # mean over all samples and channels
    rail_frac: float    # share of samples with |x| >= RAIL
    ac_peak: float      # peak after removing the DC offset

    @property
    def duration(self) -> float:
        return self.frames / float(self.samplerate)


def _open(path: str) -> sf.SoundFile:
    try:
        return sf.SoundFile(os.fsencode(path))  # bytes: a file name that is not UTF-8 opens too
    except Exception as exc:  # LibsndfileError, RuntimeError, OSError
        raise AudioError(f"{path}: unreadable audio ({type(exc).__name__}: {exc})") from exc


def _blocks(f: sf.SoundFile, sr: int) -> Iterator[np.ndarray]:
    n = int(BLOCK_S * sr)
    while True:
        try:
            b = f.read(n, dtype="float32", always_2d=True)
        except Exception as exc:
            raise AudioError(f"{f.name}: read error after {f.tell() / sr:.1f} s ({exc})") from exc
        if len(b) == 0:
            return
        yield b


def scan(path: str) -> Scan:
    """First pass; raises :class:`AudioError` for unreadable, empty or non-finite audio."""
    with _open(path) as f:
        sr, ch = f.samplerate, f.channels
        peak, total, count, rail = 0.0, 0.0, 0, 0
        lo, hi = np.inf, -np.inf
        for b in _blocks(f, sr):
            bad = ~np.isfinite(b)
            if bad.any():
                first = int(np.argmax(bad.any(axis=1))) + count // ch
                raise AudioError(f"{path}: {int(bad.sum())} NaN/Inf sample(s) in the block starting "
                                 f"near {(count // ch) / sr:.1f} s (first at {first / sr:.3f} s); "
                                 f"the file is corrupt")
            a = np.abs(b)
            peak = max(peak, float(a.max()))
            rail += int((a >= RAIL).sum())
            total += float(b.sum(dtype=np.float64))
            count += b.size
            lo, hi = min(lo, float(b.min())), max(hi, float(b.max()))
    if count == 0:
        raise AudioError(f"{path}: empty audio (0 samples)")
    dc = total / count
    return Scan(sr, ch, count // ch, peak, dc, rail / count, max(hi - dc, dc - lo))


def windows(path: str, core_s: float, ctx_s: float, remove_dc: float = 0.0
            ) -> Iterator[Tuple[np.ndarray, int, int]]:
    """``(audio, core_offset, core_len)`` per window, in 16 kHz samples.

    ``audio`` holds the window (core plus up to ``ctx_s`` s each side);
    ``core_offset`` is where the core starts inside it.  Cores tile the file
    without gaps or overlap; the last one may be shorter.
    """
    import soxr

    core, ctx = int(core_s * SAMPLE_RATE), int(ctx_s * SAMPLE_RATE)
    with _open(path) as f:
        sr = f.samplerate
        rs = soxr.ResampleStream(sr, SAMPLE_RATE, 1, dtype="float32") if sr != SAMPLE_RATE else None
        buf = np.zeros(0, dtype=np.float32)   # 16 kHz samples from buf_start on
        buf_start, core_start = 0, 0
        eof = False
        blocks = _blocks(f, sr)
        while True:
            need = core_start + core + ctx
            while not eof and buf_start + len(buf) < need:
                try:
                    b = next(blocks)
                except StopIteration:
                    eof = True
                    y = rs.resample_chunk(np.zeros(0, np.float32), last=True) if rs is not None else None
                else:
                    m = (b.mean(axis=1) - remove_dc).astype(np.float32)
                    y = rs.resample_chunk(m) if rs is not None else m
                if y is not None and len(y):
                    buf = np.concatenate([buf, np.asarray(y, dtype=np.float32).reshape(-1)])
            end = buf_start + len(buf)
            if core_start >= end:
                return
            w0 = max(buf_start, core_start - ctx)
            w1 = min(end, core_start + core + ctx)
            core_len = min(core, end - core_start)
            yield buf[w0 - buf_start:w1 - buf_start].copy(), core_start - w0, core_len
            core_start += core_len
            drop = max(0, core_start - ctx - buf_start)
            buf, buf_start = buf[drop:], buf_start + drop
