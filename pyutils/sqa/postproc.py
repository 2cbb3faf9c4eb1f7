"""Frame probabilities -> fault intervals, and the grid search that tunes it.

Per fault, with parameters ``(median, threshold, merge_gap, min_dur, utt_threshold)``:

1. median-smooth the 20 ms probabilities over ``median`` frames (odd);
2. keep frames with ``p >= threshold``;
3. fill holes shorter than ``merge_gap`` seconds between two kept runs;
4. drop runs shorter than ``min_dur`` seconds;
5. if the utterance-level presence probability is below ``utt_threshold``,
   drop all runs (``utt_threshold = 0`` disables this gate).

Then, across noise and distortion (:data:`REGION_FAULTS`), with a region threshold
``t > 0`` (``region_threshold`` in ``postproc.json``; 0 or absent: off):

6. a *region* is a run of frames where noise or distortion survived steps 1-5;
   each of the two gets the whole region iff its mean probability over the region
   is >= ``t``, else none of it.  The class is decided once per region, from
   probabilities pooled over it, not frame by frame (an unseen kind of fault is
   split between the two classes frame by frame).

A fault is reported present iff at least one interval survives, so a present
fault always carries intervals. Each fault's F1 and IoU depend only on its own
parameters, so :func:`tune` picks, per fault, the parameters maximising
``F1 + IoU`` as measured by :func:`pyutils.scoring.sqa.score_sqa` on dev
(coordinate search over :data:`GRID`); :func:`tune_region` then picks ``t`` from
:data:`REGION_GRID` (0 included) by noise + distortion F1 + IoU on dev.
:func:`sweep` (CLI ``sweep``) shows how Final and one fault's F1 / IoU move when one
tuned parameter of a ``postproc.json`` varies, on any split.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from typing import Dict, List, Sequence

import numpy as np
from scipy.ndimage import median_filter

from pyutils.sqa.common import FAULTS, FRAME_SHIFT, SCORE_MAX, SCORE_MIN, frames_to_intervals

DEFAULT_PARAMS = {"median": 5, "threshold": 0.5, "merge_gap": 0.1, "min_dur": 0.1, "utt_threshold": 0.0}

GRID = {
    "median": [1, 5, 9],
    "threshold": [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
    "merge_gap": [0.0, 0.1, 0.3],
    "min_dur": [0.0, 0.06, 0.12, 0.24, 0.4],
    "utt_threshold": [0.0, 0.3, 0.5, 0.7],
}

QUICK_GRID = {"median": [1, 5], "threshold": [0.2, 0.35, 0.5, 0.65], "merge_gap": [0.0, 0.1],
              "min_dur": [0.0, 0.12], "utt_threshold": [0.0, 0.5]}   # the ci preset's and the benchmarks'
REGION_FAULTS = ("noise", "distortion")
REGION_GRID = [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]


def _runs(mask: np.ndarray):
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(padded)
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def smooth_and_threshold(probs: np.ndarray, median: int, threshold: float, merge_gap: float,
                         min_dur: float) -> np.ndarray:
    """Steps 1-4 above on one fault's (N,) probabilities -> boolean (N,) mask."""
    p = np.asarray(probs, dtype=np.float32)
    if median > 1 and len(p) > 1:
        p = median_filter(p, size=int(median), mode="nearest")
    mask = p >= threshold
    gap = int(round(merge_gap / FRAME_SHIFT))
    if gap > 0 and mask.any():
        starts, ends = _runs(mask)
        for e, s in zip(ends[:-1], starts[1:]):
            if s - e < gap:
                mask[e:s] = True
    min_frames = int(round(min_dur / FRAME_SHIFT))
    if min_frames > 1 and mask.any():
        starts, ends = _runs(mask)
        for s, e in zip(starts, ends):
            if e - s < min_frames:
                mask[s:e] = False
    return mask


def fault_mask(probs: np.ndarray, params: dict, utt_prob: float = 1.0) -> np.ndarray:
    """One fault: (N,) probabilities -> boolean (N,) frame mask (steps 1-5)."""
    if params.get("utt_threshold", 0.0) > 0 and utt_prob < params["utt_threshold"]:
        return np.zeros(len(probs), dtype=bool)
    return smooth_and_threshold(probs, int(params["median"]), float(params["threshold"]),
                                float(params["merge_gap"]), float(params["min_dur"]))


def mask_to_intervals(mask: np.ndarray, duration: float | None = None) -> List[List[float]]:
    """Frame mask -> ``[[start, end], ...]`` seconds, cut at ``duration``."""
    ivs = frames_to_intervals(mask)
    if duration is not None:
        ivs = [[s, round(min(e, duration), 3)] for s, e in ivs if s < duration]
        ivs = [iv for iv in ivs if iv[1] > iv[0]]
    return ivs


def decide_regions(masks: np.ndarray, probs: np.ndarray, threshold: float) -> np.ndarray:
    """Step 6: (N, K) masks and probabilities of K classes -> (N, K) masks where each
    region (run of frames with any class on) goes whole to every class whose mean
    probability over it is >= ``threshold`` (``threshold <= 0``: masks unchanged)."""
    masks = np.array(masks, dtype=bool)
    if threshold <= 0 or not masks.any():
        return masks
    starts, ends = _runs(masks.any(axis=1))
    for s, e in zip(starts, ends):
        masks[s:e] = np.asarray(probs[s:e], dtype=np.float64).mean(axis=0) >= threshold - 1e-9
    return masks


def make_row(utt: str, score: float, frame_probs: np.ndarray, utt_probs: Sequence[float],
             params: Dict[str, dict], duration: float | None = None, region_threshold: float = 0.0) -> dict:
    """Submission row ``{"utt_id", "score", "faults": {...}}`` from model outputs (steps 1-6)."""
    masks = np.stack([fault_mask(frame_probs[:, j], params[name], float(utt_probs[j]))
                      for j, name in enumerate(FAULTS)], axis=1)
    if region_threshold > 0:
        idx = [FAULTS.index(f) for f in REGION_FAULTS]
        masks[:, idx] = decide_regions(masks[:, idx], frame_probs[:, idx], region_threshold)
    faults = {name: mask_to_intervals(masks[:, j], duration) for j, name in enumerate(FAULTS)}
    score = float(np.clip(score, SCORE_MIN, SCORE_MAX))
    return {"utt_id": utt, "score": round(score, 4), "faults": faults}


def load_outputs(path: str) -> dict:
    """Model outputs saved by :mod:`pyutils.sqa.infer` (npz) -> dict of arrays per utt."""
    data = np.load(path, allow_pickle=False)
    utts = [str(u) for u in data["utts"]]
    offsets = data["offsets"]
    out = {}
    for i, u in enumerate(utts):
        out[u] = {"frame_probs": data["frame_probs"][offsets[i]:offsets[i + 1]],
                  "utt_probs": data["utt_probs"][i], "score": float(data["scores"][i]),
                  "duration": float(data["durations"][i])}
    return out


def rows_from_outputs(outputs: dict, params: Dict[str, dict], region_threshold: float = 0.0) -> List[dict]:
    return [make_row(u, o["score"], o["frame_probs"], o["utt_probs"], params, o["duration"], region_threshold)
            for u, o in sorted(outputs.items())]


def with_reference(outputs: dict, ref_rows: List[dict]) -> dict:
    """The outputs of the recordings that ``ref_rows`` has a reference for."""
    ref_ids = {r["utt_id"] for r in ref_rows}
    return {u: o for u, o in outputs.items() if u in ref_ids}


def read_postproc(path: str) -> tuple:
    """``postproc.json`` -> (params per fault, region threshold); ValueError naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        params = data["params"]
        if not isinstance(params, dict):
            raise TypeError("'params' is not an object")
        region = data.get("region_threshold", 0.0)
        if isinstance(region, bool) or not isinstance(region, (int, float)) or not 0.0 <= region <= 1.0:
            raise TypeError(f"'region_threshold' must be a number in [0, 1], got {region!r}")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a post-processing file from the SQA recipe ({e})")
    return params, float(region)


def fault_metrics(result: dict, fault: str) -> tuple:
    """(F1, IoU) of one fault from a ``score_sqa`` result."""
    per = result["per_fault"][fault]
    iou = per["IoU"]  # None when the fault never occurs in the reference set
    return float(per["F1"]), float(iou) if iou is not None else 0.0


def tune(outputs: dict, ref_rows: List[dict], grid: dict | None = None, passes: int = 2,
         region_threshold: float = 0.0) -> tuple:
    """Coordinate search per fault maximising F1 + IoU on dev; returns (params, table).

    Each fault's F1 and IoU depend only on its own parameters, so one scorer call
    evaluates a candidate for all three faults at once. Parameters are searched
    in groups (threshold x median, then merge_gap x min_dur, then the utterance
    gate), ``passes`` times; a full product grid costs ~15x more scorer calls.
    """
    from pyutils.scoring.sqa import score_sqa

    grid = grid or GRID
    outputs = with_reference(outputs, ref_rows)
    current = {f: {k: (DEFAULT_PARAMS[k] if DEFAULT_PARAMS[k] in grid[k] else grid[k][0]) for k in grid}
               for f in FAULTS}
    best_val = {f: -1.0 for f in FAULTS}
    groups = [("threshold", "median"), ("merge_gap", "min_dur"), ("utt_threshold",)]
    table = []
    for _ in range(passes):
        for group in groups:
            cands = []
            for values in itertools.product(*(grid[k] for k in group)):
                params = {f: {**current[f], **dict(zip(group, values))} for f in FAULTS}
                res = score_sqa(ref_rows, rows_from_outputs(outputs, params, region_threshold))
                for f in FAULTS:
                    f1, iou = fault_metrics(res, f)
                    table.append({**params[f], "fault": f, "f1": f1, "iou": iou})
                    cands.append((f, f1 + iou, params[f]))
            for f in FAULTS:
                for ff, val, prm in cands:
                    if ff == f and val > best_val[f] + 1e-12:
                        best_val[f], current[f] = val, prm
    return current, table


def _region_setup(outputs: dict, ref_rows: List[dict], grid: Sequence[float] | None) -> tuple:
    """The dev outputs that have a reference, and the step-6 thresholds to try (0 = off first)."""
    thresholds = sorted(set([0.0, *(grid if grid is not None else REGION_GRID)]))
    return with_reference(outputs, ref_rows), thresholds


def _region_value(outputs: dict, ref_rows: List[dict], params: Dict[str, dict], threshold: float) -> float:
    """Noise + distortion F1 + IoU on dev under step-6 ``threshold``."""
    from pyutils.scoring.sqa import score_sqa

    res = score_sqa(ref_rows, rows_from_outputs(outputs, params, threshold))
    return sum(sum(fault_metrics(res, f)) for f in REGION_FAULTS)


def _best_region(values: Dict[float, float]) -> float:
    """The threshold of the best value; off (0) unless one does strictly better."""
    best = 0.0
    for t, v in values.items():
        if v > values[best] + 1e-9:
            best = t
    return best


def tune_region(outputs: dict, ref_rows: List[dict], params: Dict[str, dict],
                grid: Sequence[float] | None = None) -> tuple:
    """Step 6's threshold maximising noise + distortion F1 + IoU on dev, with ``params`` fixed;
    off (0) unless a threshold does strictly better.  Returns (threshold, {threshold: value})."""
    outputs, thresholds = _region_setup(outputs, ref_rows, grid)
    values = {t: _region_value(outputs, ref_rows, params, t) for t in thresholds}
    return _best_region(values), values


def sweep(outputs: dict, ref_rows: List[dict], params: Dict[str, dict], region_threshold: float,
          fault: str, param: str, values: Sequence[float]) -> List[dict]:
    """Final and the fault's F1 / IoU with one parameter of one fault set to each value.

    Everything else stays as in ``params`` (a model's ``postproc.json``): how much a
    figure depends on one choice that dev made, e.g. on a split dev does not resemble.
    """
    from pyutils.scoring.sqa import score_sqa

    if fault not in FAULTS:
        raise ValueError(f"fault {fault!r}: not one of {FAULTS}")
    if param not in DEFAULT_PARAMS:
        raise ValueError(f"parameter {param!r}: not one of {sorted(DEFAULT_PARAMS)}")
    outputs = with_reference(outputs, ref_rows)
    rows = []
    for v in values:
        prm = {f: dict(params[f]) for f in FAULTS}
        prm[fault][param] = int(v) if param == "median" else float(v)
        res = score_sqa(ref_rows, rows_from_outputs(outputs, prm, region_threshold))
        f1, iou = fault_metrics(res, fault)
        rows.append({"value": prm[fault][param], "Final": float(res["Final"]), "PCC": float(res["PCC"]),
                     "F1": f1, "IoU": iou, "tuned": prm[fault][param] == params[fault][param]})
    return rows


def _sweep_main(args) -> int:
    from pyutils.io import read_jsonl

    try:
        values = [float(v) for v in args.values.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"--values {args.values!r}: give numbers separated by commas")
    if not values:
        raise SystemExit("--values: give at least one number")
    try:
        params, region = read_postproc(args.postproc)
        outputs, refs = load_outputs(args.outputs), read_jsonl(args.ref)
        rows = sweep(outputs, refs, params, region, args.fault, args.param, values)
    except (OSError, ValueError, KeyError) as e:   # the messages name the file (or the key)
        raise SystemExit(f"postproc sweep: {e}")
    print(f"{args.fault} {args.param} (other parameters from {args.postproc}; * = the tuned value)")
    print(f"{'value':>8} {'Final':>8} {'F1':>7} {'IoU':>7}")
    for r in rows:
        print(f"{r['value']:>8g} {r['Final']:>8.4f} {r['F1']:>7.4f} {r['IoU']:>7.4f}" + (" *" if r["tuned"] else ""))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.postproc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="search post-processing parameters on dev outputs")
    t.add_argument("--outputs", required=True, help="outputs.npz of pyutils.sqa.infer on dev")
    t.add_argument("--ref", required=True, help="dev reference JSONL")
    t.add_argument("--out", required=True, help="postproc.json to write (saved with the model)")
    t.add_argument("--quick", action="store_true", help="a smaller grid (ci preset)")
    t.add_argument("--region", choices=("after", "off"), default="after",
                   help="step 6 (the noise/distortion class per detected region): its threshold tuned after "
                        "steps 1-5 (default), or off")
    w = sub.add_parser("sweep", help="Final and one fault's F1/IoU as one tuned parameter varies")
    w.add_argument("--postproc", required=True, help="the model's postproc.json (all other parameters)")
    w.add_argument("--outputs", required=True, help="outputs.npz of pyutils.sqa.infer on the split")
    w.add_argument("--ref", required=True, help="the split's reference JSONL")
    w.add_argument("--fault", required=True, choices=FAULTS)
    w.add_argument("--param", required=True, choices=sorted(DEFAULT_PARAMS))
    w.add_argument("--values", required=True, help="comma-separated values, e.g. 0,0.5,0.7,0.8,0.9")
    args = p.parse_args(argv)
    if args.cmd == "sweep":
        return _sweep_main(args)
    from pyutils.io import atomic_write, read_jsonl

    grid = QUICK_GRID if args.quick else GRID
    outputs, refs = load_outputs(args.outputs), read_jsonl(args.ref)
    region, region_values = 0.0, {}
    params, table = tune(outputs, refs, grid)
    calls = len(table) // len(FAULTS)
    if args.region == "after":
        region, region_values = tune_region(outputs, refs, params)
        calls += len(region_values)
    from pyutils.scoring.sqa import score_sqa

    res = score_sqa(refs, rows_from_outputs(with_reference(outputs, refs), params, region))
    dev = {f: dict(zip(("f1", "iou"), fault_metrics(res, f))) for f in FAULTS}
    for f in FAULTS:
        print(f"{f}: F1 {dev[f]['f1']:.4f} IoU {dev[f]['iou']:.4f} with {params[f]}", flush=True)
    if region_values:
        print("region: threshold " + (f"{region}" if region > 0 else "off") + " (dev noise + distortion F1 + IoU: "
              + ", ".join(f"{t}: {v:.4f}" for t, v in region_values.items()) + ")", flush=True)
    with atomic_write(args.out) as fh:
        json.dump({"params": params, "region_threshold": region, "dev": dev, "scorer_calls": calls}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
