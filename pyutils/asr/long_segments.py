"""Split recordings longer than Whisper's 30 s window at pauses, and join their hypotheses back.

``pyutils.asr.decode_dir`` decodes with an ESPnet model whose encoder sees at most 30 s
(fine-tuned Whisper) -- the rest of a longer input used to be dropped. Instead, a
recording longer than ``max_s`` (28 s: a margin for the dump's padding) becomes Kaldi
``segments`` of at most ``max_s`` seconds, cut where the audio is quietest:

- frame energy ``E_t = 10 log10(mean(x^2) + 1e-10)`` over 25 ms frames every 10 ms,
  smoothed by a 200 ms moving average (a pause, not one quiet frame);
- from the current start ``s``, the next cut is the frame of least smoothed energy
  within ``[s + max_s - search_s, s + max_s]`` (``search_s`` = 8 s), so that no part is
  longer than ``max_s`` and a word is cut only when there is no pause in 8 s.

Segment ids are ``<recording>__part<NNN>`` (never an existing id); a recording that
fits keeps its id as a whole segment (``end = -1``: to the end, as
``pyutils.asr.dump_audio`` reads it). After decoding, :func:`join_hypotheses` puts each
recording's parts back together in time order.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Tuple

import numpy as np

MAX_S = 28.0
SEARCH_S = 8.0
PART_SEP = "__part"


def smoothed_energy(x: np.ndarray, sr: int, hop_s: float = 0.01, win_s: float = 0.025,
                    smooth_s: float = 0.2) -> np.ndarray:
    """dB energy of the frame starting at each hop, smoothed (see the module docstring)."""
    hop, win = max(1, int(hop_s * sr)), max(1, int(win_s * sr))
    c = np.concatenate([[0.0], np.cumsum(np.asarray(x, np.float64) ** 2)])
    starts = np.arange(0, max(1, len(x) - win + 1), hop)
    power = (c[np.minimum(starts + win, len(x))] - c[starts]) / win
    e = 10 * np.log10(power + 1e-10)
    k = max(1, int(round(smooth_s / hop_s)))
    return np.convolve(e, np.ones(k) / k, mode="same")


def plan_cuts(x: np.ndarray, sr: int, max_s: float = MAX_S, search_s: float = SEARCH_S) -> List[Tuple[float, float]]:
    """``[(start, end)]`` seconds covering ``x``, each at most ``max_s`` long, cut at pauses."""
    dur = len(x) / sr
    if dur <= max_s:
        return [(0.0, dur)]
    hop_s = 0.01
    e = smoothed_energy(x, sr, hop_s)
    parts, start = [], 0.0
    while dur - start > max_s:
        lo = int((start + max_s - search_s) / hop_s)
        hi = max(lo + 1, int((start + max_s) / hop_s))
        cut = (lo + int(np.argmin(e[lo:hi]))) * hop_s + 0.0125 if lo < len(e) else start + max_s
        cut = min(cut, start + max_s)  # the frame's centre
        parts.append((start, cut))
        start = cut
    parts.append((start, dur))
    return parts


def segments_for(durations: Mapping[str, float], audio_of, max_s: float = MAX_S) -> Dict[str, Tuple[str, float, float]]:
    """``{segment id: (recording, start, end)}`` for every recording (``end = -1``: whole).

    ``audio_of(rec) -> (mono samples, rate)`` is called only for recordings longer than ``max_s``.
    """
    out: Dict[str, Tuple[str, float, float]] = {}
    for rec, dur in durations.items():
        if dur <= max_s:
            out[rec] = (rec, 0.0, -1.0)
            continue
        x, sr = audio_of(rec)
        for k, (s, e) in enumerate(plan_cuts(x, sr, max_s)):
            seg = f"{rec}{PART_SEP}{k:03d}"
            if seg in durations:
                raise ValueError(f"segment id {seg!r} of {rec!r} is already a recording id")
            out[seg] = (rec, s, e)
    return out


def join_hypotheses(hyps: Mapping[str, str], segments: Mapping[str, Tuple[str, float, float]]) -> Dict[str, str]:
    """``{recording: text}``: the parts' texts in time order, joined by a space (missing -> empty)."""
    by_rec: Dict[str, List[Tuple[float, str]]] = {}
    for seg, (rec, start, _) in segments.items():
        by_rec.setdefault(rec, []).append((start, hyps.get(seg, "").strip()))
    return {rec: " ".join(t for _, t in sorted(parts) if t) for rec, parts in by_rec.items()}
