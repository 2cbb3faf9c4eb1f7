"""Speech-quality-assessment score: PCC, fault F1 and frame IoU.

Rows: ``{"utt_id", "score": float in [1, 5], "faults": {"noise": [[s, e], ...],
"distortion": [...], "pause": [...]}}`` with times in seconds, ``0 <= s < e``.
A missing fault key, an empty list (or ``null``) means the fault is absent; a
missing (or ``null``) ``faults`` object means no faults.

- ``PCC``: Pearson correlation of reference and predicted scores over
  recordings; 0 when either side is constant or there are fewer than 2.
- ``F1`` per fault at utterance level (present = non-empty list):
  ``2TP / (2TP + FP + FN)``, 0 when ``TP + FP + FN = 0``;
  ``F1_macro`` = mean over the 3 faults (noise, distortion, pause).
- Frame IoU on a 20 ms grid: frame k = [0.02k, 0.02(k+1)) s is faulty when an
  interval [s, e) contains its centre c_k = (2k+1)/100, i.e. ``s <= c_k < e``.
  c_k is computed as the float division ``(2k+1)/100``, the double nearest to the
  exact decimal; so an interval bound written as the same decimal (e.g.
  ``0.03``) compares exactly as in decimal arithmetic. Frames: enough to
  cover the largest end time of both sides (more frames would be non-faulty
  on both sides and change nothing). Per recording whose reference has the
  fault: ``|P n G| / (|P u G| + 1e-8)``; per-fault IoU = mean over those
  recordings; ``IoU_macro`` = mean over the faults that occur in the
  reference set (0 if none).
- ``Final = 0.40 PCC + 0.30 F1_macro + 0.30 IoU_macro``.

Invalid input (exit 2): INVALID_JSON, INVALID_JSONL_RECORD,
MISSING_REQUIRED_FIELD, INVALID_FIELD_TYPE, EMPTY_REQUIRED_FIELD,
INVALID_SCORE (not a finite number), SCORE_OUT_OF_RANGE, INVALID_FAULTS
(``faults`` not an object), UNKNOWN_FAULT, INVALID_INTERVAL (also an end
after ``MAX_TIME_S`` = 24 h),
DUPLICATE_UTT_ID, MISSING_SAMPLES, UNKNOWN_SAMPLES, ID_SET_MISMATCH.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pyutils.scoring.errors import ScoringError
from pyutils.scoring.io import check_id_sets, iter_jsonl, require_field

FAULTS = ("noise", "distortion", "pause")
FRAME_S = 0.02
#: latest interval end accepted (seconds): no recording is longer than a day
MAX_TIME_S = 86400.0
IOU_EPS = 1e-8
WEIGHTS = {"PCC": 0.40, "F1_macro": 0.30, "IoU_macro": 0.30}

Intervals = List[Tuple[float, float]]


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def parse_row(obj: Mapping[str, Any], path: Optional[str], line: Optional[int]) -> Tuple[str, float, Dict[str, Intervals]]:
    utt_id = require_field(obj, "utt_id", path, line, nonempty=True).strip()
    if "score" not in obj:
        raise ScoringError("MISSING_REQUIRED_FIELD", "missing required field 'score'", path, line)
    score = obj["score"]
    if not _is_number(score) or not math.isfinite(score):
        raise ScoringError("INVALID_SCORE", f"score must be a finite number, got {score!r}", path, line)
    if not 1.0 <= score <= 5.0:
        raise ScoringError("SCORE_OUT_OF_RANGE", f"score {score!r} is outside [1, 5]", path, line)
    faults: Dict[str, Intervals] = {f: [] for f in FAULTS}
    raw = obj.get("faults")
    if raw is None:  # missing or null: no faults
        return utt_id, float(score), faults
    if not isinstance(raw, dict):
        raise ScoringError("INVALID_FAULTS", f"'faults' must be an object, got {type(raw).__name__}", path, line)
    for name, intervals in raw.items():
        if name not in faults:
            raise ScoringError("UNKNOWN_FAULT", f"unknown fault {name!r} (expected one of {', '.join(FAULTS)})",
                               path, line)
        if intervals is None:  # null = absent, like a missing key
            continue
        if not isinstance(intervals, list):
            raise ScoringError("INVALID_INTERVAL", f"faults.{name} must be a list of [start, end] pairs",
                               path, line)
        for k, iv in enumerate(intervals):
            where = f"faults.{name}[{k}]"
            if not isinstance(iv, list) or len(iv) != 2 or not all(_is_number(x) for x in iv):
                raise ScoringError("INVALID_INTERVAL", f"{where} must be a 2-element numeric list, got {iv!r}",
                                   path, line)
            s, e = float(iv[0]), float(iv[1])
            if not (math.isfinite(s) and math.isfinite(e)):
                raise ScoringError("INVALID_INTERVAL", f"{where} has a non-finite time {iv!r}", path, line)
            if s < 0:
                raise ScoringError("INVALID_INTERVAL", f"{where} starts before 0 s: {iv!r}", path, line)
            if s >= e:
                raise ScoringError("INVALID_INTERVAL", f"{where} needs start < end, got {iv!r}", path, line)
            if e > MAX_TIME_S:
                raise ScoringError("INVALID_INTERVAL", f"{where} ends after {MAX_TIME_S:g} s (24 h, the "
                                   f"longest recording the scorer accepts): {iv!r}", path, line)
            faults[name].append((s, e))
    return utt_id, float(score), faults


def load_rows(rows, path: Optional[str]) -> Dict[str, Tuple[float, Dict[str, Intervals], int]]:
    out: Dict[str, Tuple[float, Dict[str, Intervals], int]] = {}
    for line, obj in rows:
        utt_id, score, faults = parse_row(obj, path, line)
        if utt_id in out:
            raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt_id!r} (first on line {out[utt_id][2]})",
                               path, line)
        out[utt_id] = (score, faults, line)
    return out


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson r; 0 when n < 2 or either side is constant."""
    n = len(x)
    if n < 2:
        return 0.0
    mx = math.fsum(x) / n
    my = math.fsum(y) / n
    dx = [a - mx for a in x]
    dy = [b - my for b in y]
    sxx = math.fsum(a * a for a in dx)
    syy = math.fsum(b * b for b in dy)
    if sxx == 0.0 or syy == 0.0 or len(set(x)) < 2 or len(set(y)) < 2:
        return 0.0
    r = math.fsum(a * b for a, b in zip(dx, dy)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


def first_frame_from(t: float) -> int:
    """Smallest k >= 0 whose centre (2k+1)/100 is >= t (exact float comparisons)."""
    k = max(0, int(math.ceil(t * 50.0 - 0.5)) - 1)
    while (2 * k + 1) / 100 < t:
        k += 1
    while k > 0 and (2 * (k - 1) + 1) / 100 >= t:
        k -= 1
    return k


def frame_ranges(intervals: Intervals) -> List[Tuple[int, int]]:
    """Faulty frames as sorted, merged half-open index ranges [k0, k1).

    Frame k is faulty when some ``s <= (2k+1)/100 < e`` (the module docstring), found in
    O(intervals) memory and time whatever the durations: one interval of hours costs the
    same as one of 20 ms.
    """
    ranges = sorted((first_frame_from(s), first_frame_from(e)) for s, e in intervals)
    merged: List[Tuple[int, int]] = []
    for k0, k1 in ranges:
        if k1 <= k0:
            continue  # covers no frame centre
        if merged and k0 <= merged[-1][1]:
            if k1 > merged[-1][1]:
                merged[-1] = (merged[-1][0], k1)
        else:
            merged.append((k0, k1))
    return merged


def _overlap(a: List[Tuple[int, int]], b: List[Tuple[int, int]]) -> int:
    """Number of frames in both merged range lists (two-pointer sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def frame_iou(ref: Intervals, hyp: Intervals) -> Tuple[float, int, int]:
    """(IoU, |intersection|, |union|) of the frame masks of one recording,
    computed from frame ranges (no per-frame allocation)."""
    g, p = frame_ranges(ref), frame_ranges(hyp)
    inter = _overlap(g, p)
    union = sum(b - a for a, b in g) + sum(b - a for a, b in p) - inter
    return inter / (union + IOU_EPS), inter, union


def score_loaded(refs, hyps, hyp_path: Optional[str] = None) -> Dict[str, Any]:
    check_id_sets(refs.keys(), hyps.keys(), hyp_path)
    ids = sorted(refs)
    pcc = pearson([refs[u][0] for u in ids], [hyps[u][0] for u in ids])
    per_fault: Dict[str, Dict[str, Any]] = {}
    for fault in FAULTS:
        tp = fp = fn = tn = 0
        ious: List[float] = []
        for u in ids:
            g = refs[u][1][fault]
            p = hyps[u][1][fault]
            if g and p:
                tp += 1
            elif p:
                fp += 1
            elif g:
                fn += 1
            else:
                tn += 1
            if g:
                ious.append(frame_iou(g, p)[0])
        denom = 2 * tp + fp + fn
        per_fault[fault] = {
            "F1": (2 * tp / denom) if denom else 0.0,
            "IoU": (sum(ious) / len(ious)) if ious else None,
            "counts": {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "reference": tp + fn, "prediction": tp + fp},
            "iou_num_recordings": len(ious),
        }
    f1_macro = sum(per_fault[f]["F1"] for f in FAULTS) / len(FAULTS)
    occurring = [f for f in FAULTS if per_fault[f]["IoU"] is not None]
    iou_macro = sum(per_fault[f]["IoU"] for f in occurring) / len(occurring) if occurring else 0.0
    final = WEIGHTS["PCC"] * pcc + WEIGHTS["F1_macro"] * f1_macro + WEIGHTS["IoU_macro"] * iou_macro
    return {
        "num_recordings": len(ids),
        "PCC": pcc,
        "F1_macro": f1_macro,
        "IoU_macro": iou_macro,
        "Final": final,
        "final_definition": "0.40*PCC + 0.30*F1_macro + 0.30*IoU_macro",
        "iou_faults_in_reference": occurring,
        "per_fault": per_fault,
        **{f"F1_{f}": per_fault[f]["F1"] for f in FAULTS},
        **{f"IoU_{f}": per_fault[f]["IoU"] for f in FAULTS},
        "frame_s": FRAME_S,
    }


def _numbered(rows):
    rows = list(rows)
    if rows and isinstance(rows[0], tuple):
        return rows
    return [(i, r) for i, r in enumerate(rows, start=1)]


def score_sqa(ref_rows, hyp_rows, *, ref_path: Optional[str] = None, hyp_path: Optional[str] = None) -> Dict[str, Any]:
    """Score SQA predictions from rows (dicts or ``(line, dict)``); raises ScoringError."""
    refs = load_rows(_numbered(ref_rows), ref_path)
    hyps = load_rows(_numbered(hyp_rows), hyp_path)
    return score_loaded(refs, hyps, hyp_path)


def score_sqa_files(ref_path: str, hyp_path: str) -> Dict[str, Any]:
    refs = load_rows(list(iter_jsonl(ref_path)), ref_path)
    hyps = load_rows(list(iter_jsonl(hyp_path)), hyp_path)
    return score_loaded(refs, hyps, hyp_path)


def summary_lines(r: Mapping[str, Any]) -> List[str]:
    lines = [f"SQA score over {r['num_recordings']} recordings"]
    lines.append(f"  PCC       = {r['PCC']:.4f}")
    for f in FAULTS:
        c = r["per_fault"][f]
        iou = "n/a (absent in reference)" if c["IoU"] is None else f"{c['IoU']:.4f} over {c['iou_num_recordings']} recs"
        k = c["counts"]
        lines.append(f"  {f:<10} F1={c['F1']:.4f} (TP/FP/FN={k['tp']}/{k['fp']}/{k['fn']})  IoU={iou}")
    lines.append(f"  F1_macro  = {r['F1_macro']:.4f}")
    lines.append(f"  IoU_macro = {r['IoU_macro']:.4f}  (faults in reference: {', '.join(r['iou_faults_in_reference']) or 'none'})")
    lines.append(f"  Final     = {r['Final']:.4f}   [{r['final_definition']}]")
    return lines
