"""Events: frame probabilities -> timed events, event JSONL I/O, and event-level P/R/F1.

Event rows are the ``--events`` input of the Track 1 cascade
(``pyutils.asr.cascade``): ``{"utt_id", "tag", "start", "end", "score"}`` in seconds,
``tag`` one of the 16 challenge tags.

Frames to events (:func:`frame_runs_to_events`): per-frame tag posteriors and per-tag
thresholds -> runs of active frames with their own onsets and offsets.

Matching (:func:`match_counts`): per utterance and tag, predicted and reference events
are paired one to one, best score first, when their intervals overlap or their centres
are at most ``tol`` s apart (0.5 s); TP = pairs, FP = unpaired
predictions, FN = unpaired references; ``P = TP/(TP+FP)``, ``R = TP/(TP+FN)``,
``F1 = 2PR/(P+R)`` (0 when a denominator is 0).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

import numpy as np

TOL_S = 0.5


def read_events(path: str) -> Dict[str, List[dict]]:
    """Event JSONL -> ``{utt_id: [row]}``; a bad row raises ValueError naming ``path:line``."""
    out: Dict[str, List[dict]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                ok = (isinstance(row, dict) and isinstance(row.get("utt_id"), str)
                      and isinstance(row.get("tag"), str)
                      and all(isinstance(row.get(k), (int, float)) and math.isfinite(row[k])
                              for k in ("start", "end")))
            except ValueError as e:
                raise ValueError(f"{path}:{n}: not JSON: {e}") from e
            if not ok:
                raise ValueError(f"{path}:{n}: need utt_id, tag (strings) and finite start, end")
            out[row["utt_id"]].append(row)
    return dict(out)


def write_events(rows: Iterable[dict], path: str) -> None:
    from pyutils.datadir.io import atomic_write

    with atomic_write(path) as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _centre(e: Mapping) -> float:
    return 0.5 * (float(e["start"]) + float(e["end"]))


def _paired(p: Mapping, r: Mapping, tol: float) -> bool:
    overlap = min(p["end"], r["end"]) - max(p["start"], r["start"])
    return overlap > 0 or abs(_centre(p) - _centre(r)) <= tol


def match_counts(ref: Mapping[str, List[dict]], hyp: Mapping[str, List[dict]], utts: Iterable[str],
                 tol: float = TOL_S) -> Dict[str, List[int]]:
    """``{tag: [TP, FP, FN]}`` over ``utts`` (see the module docstring)."""
    counts: Dict[str, List[int]] = defaultdict(lambda: [0, 0, 0])
    for u in utts:
        r_all, h_all = ref.get(u, []), hyp.get(u, [])
        for tag in {e["tag"] for e in r_all} | {e["tag"] for e in h_all}:
            rs = [e for e in r_all if e["tag"] == tag]
            hs = sorted((e for e in h_all if e["tag"] == tag), key=lambda e: -float(e.get("score", 1.0)))
            used = [False] * len(rs)
            tp = 0
            for h in hs:
                cands = [(abs(_centre(h) - _centre(r)), i) for i, r in enumerate(rs)
                         if not used[i] and _paired(h, r, tol)]
                if cands:
                    used[min(cands)[1]] = True
                    tp += 1
            c = counts[tag]
            c[0] += tp
            c[1] += len(hs) - tp
            c[2] += len(rs) - tp
    return dict(counts)


def prf(tp: int, fp: int, fn: int) -> Tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def micro(counts: Mapping[str, Sequence[int]]) -> Tuple[float, float, float]:
    tp = sum(c[0] for c in counts.values())
    fp = sum(c[1] for c in counts.values())
    fn = sum(c[2] for c in counts.values())
    return prf(tp, fp, fn)


#: :func:`frame_runs_to_events`: inactive gaps of at most this many seconds inside a run are
#: closed; runs shorter than ``MIN_EVENT_S`` are dropped; a region longer than ``SPLIT_S`` is
#: cut where its dominant tag changes (a laugh followed by a cough stays two events)
GAP_S, MIN_EVENT_S, SPLIT_S = 0.16, 0.12, 2.0


def frame_runs_to_events(utt_id: str, starts: np.ndarray, probs: np.ndarray, tags: Sequence[str],
                         thresholds: Sequence[float], frame_s: float = 0.04, with_probs: bool = False) -> List[dict]:
    """Per-frame tag posteriors ``(T, K)`` (frame ``f`` spans ``[starts_f, starts_f + frame_s)``)
    -> event rows with the runs' own onsets and offsets.

    Frame ``f`` is active when ``r_f = max_k p_f(k) / theta(k) >= 1``; runs of active frames
    separated by at most ``GAP_S`` are joined into a region; a region of at most ``SPLIT_S``
    is one event of ``argmax_k sum_f p_f(k) / theta(k)`` over its frames, a longer one is cut
    into runs of the same ``argmax_k p_f(k) / theta(k)``; an event spans ``[starts_a, starts_b +
    frame_s)`` of its first and last active frame, is dropped when shorter than ``MIN_EVENT_S``,
    and scores ``max_f p_f(k)``. ``with_probs``: each event also carries ``probs``, the mean
    posterior of every tag over its frames (what :mod:`pyutils.nvv_detect.naming` reads)."""
    if len(starts) == 0:
        return []
    starts = np.asarray(starts, dtype=np.float64)
    ratio = probs / np.maximum(np.asarray(thresholds, dtype=np.float64), 1e-9)[None, :]
    act = np.flatnonzero(ratio.max(axis=1) >= 1.0)
    if len(act) == 0:
        return []
    gap = int(round(GAP_S / frame_s))
    regions, a = [], act[0]
    for prev, cur in zip(act[:-1], act[1:]):
        if cur - prev - 1 > gap:
            regions.append((a, prev))
            a = cur
    regions.append((a, act[-1]))
    out = []
    for a, b in regions:
        on = act[(act >= a) & (act <= b)]
        if (b - a + 1) * frame_s <= SPLIT_S:
            runs = [(a, b, int(ratio[on].sum(axis=0).argmax()))]
        else:
            lab = ratio[on].argmax(axis=1)
            runs, i = [], 0
            for j in range(1, len(on) + 1):
                if j == len(on) or lab[j] != lab[i]:
                    runs.append((on[i], on[j - 1], int(lab[i])))
                    i = j
        for s, e, k in runs:
            t0, t1 = float(starts[s]), float(starts[e]) + frame_s
            if t1 - t0 < MIN_EVENT_S - 1e-9:
                continue
            row = {"utt_id": utt_id, "tag": tags[k], "start": round(t0, 3), "end": round(t1, 3),
                   "score": round(float(probs[s:e + 1, k].max()), 4)}
            if with_probs:
                row["probs"] = {t: round(float(v), 4) for t, v in zip(tags, probs[s:e + 1].mean(axis=0))}
            out.append(row)
    return out
