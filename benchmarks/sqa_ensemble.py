#!/usr/bin/env python3
"""SQA: is the mean of several trained models better than each of them? (offline, no training)

Every member is a model dir of ``pyutils.sqa`` (or of ``benchmarks/sqa_generalisation.py``)
holding the stored outputs of one and the same split: ``infer_dev/outputs.npz`` and
``infer_<test>/outputs.npz`` (per 20 ms frame the three fault posteriors, per recording
the presence posteriors and the score).  The ensemble averages them (arithmetic mean of
the posteriors and of the scores), then post-processing is tuned on the averaged dev
outputs exactly as the benchmark tunes a single model (``pyutils.sqa.postproc``: the quick
grid, or with ``--full-grid`` the recipe's own, then the step-6 region threshold) and every test set is scored with
``chorus-score sqa``.  Each member is re-tuned and re-scored by the same code, so the
table compares like with like.

    python benchmarks/sqa_ensemble.py --dev-ref exp/gen/lofo_babble/dev/ref.jsonl \\
        --test with_babble=exp/gen/lofo_babble/test_with_babble/ref.jsonl \\
        --member s0=exp/gen/lofo_babble/model --member s1=exp/gen_seed1/lofo_babble/model
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from pyutils.scoring.sqa import score_sqa  # noqa: E402
from pyutils.io import read_jsonl  # noqa: E402
from pyutils.sqa.postproc import GRID, QUICK_GRID, load_outputs, rows_from_outputs, tune, tune_region  # noqa: E402


def mean_outputs(members: dict) -> dict:
    """Average the outputs of several models over the same recordings; ValueError naming the mismatch."""
    names = list(members)
    first = members[names[0]]
    out = {}
    for utt, o in first.items():
        parts = []
        for name in names:
            other = members[name].get(utt)
            if other is None:
                raise ValueError(f"member {name} has no output for {utt}")
            if other["frame_probs"].shape != o["frame_probs"].shape:
                raise ValueError(f"member {name}: {utt} has {other['frame_probs'].shape[0]} frames, "
                                 f"member {names[0]} {o['frame_probs'].shape[0]}")
            parts.append(other)
        out[utt] = {"frame_probs": np.mean([p["frame_probs"] for p in parts], axis=0),
                    "utt_probs": np.mean([p["utt_probs"] for p in parts], axis=0),
                    "score": float(np.mean([p["score"] for p in parts])),
                    "duration": o["duration"]}
    return out


def tuned_scores(dev_out: dict, dev_ref: list, tests: dict, grid: dict = QUICK_GRID) -> dict:
    """Tune on dev as the benchmark does; {test: score_sqa result} plus the chosen region threshold."""
    params, _ = tune(dev_out, dev_ref, grid)
    region, _ = tune_region(dev_out, dev_ref, params)
    res = {"_region": region}
    for name, (out, ref) in tests.items():
        ids = {r["utt_id"] for r in ref}
        res[name] = score_sqa(ref, rows_from_outputs({u: o for u, o in out.items() if u in ids}, params, region))
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--member", action="append", required=True, metavar="NAME=MODEL_DIR")
    p.add_argument("--dev-ref", required=True, help="dev ref.jsonl the members were tuned on")
    p.add_argument("--test", action="append", required=True, metavar="NAME=REF_JSONL",
                   help="a test set; its outputs are <model dir>/infer_NAME/outputs.npz")
    p.add_argument("--no-members", action="store_true", help="score only the ensemble")
    p.add_argument("--full-grid", action="store_true",
                   help="tune with the recipe's full grid (as stage 5 does) instead of the benchmark's quick one")
    a = p.parse_args(argv)
    members = dict(m.split("=", 1) for m in a.member)
    tests = dict(t.split("=", 1) for t in a.test)
    dev_ref = read_jsonl(a.dev_ref)
    refs = {t: read_jsonl(path) for t, path in tests.items()}

    def load(name: str, mdir: str, split: str) -> dict:
        path = os.path.join(mdir, f"infer_{split}", "outputs.npz")
        if not os.path.exists(path):
            raise SystemExit(f"sqa_ensemble: member {name}: {path} not found")
        return load_outputs(path)

    dev = {n: load(n, d, "dev") for n, d in members.items()}
    test = {t: {n: load(n, d, t) for n, d in members.items()} for t in tests}
    grid = GRID if a.full_grid else QUICK_GRID
    rows = []
    if not a.no_members:
        for n in members:
            r = tuned_scores(dev[n], dev_ref, {t: (test[t][n], refs[t]) for t in tests}, grid)
            rows.append((n, r))
    ens = tuned_scores(mean_outputs(dev), dev_ref, {t: (mean_outputs(test[t]), refs[t]) for t in tests}, grid)
    rows.append(("mean of " + "+".join(members), ens))
    print("| model | test | n | Final | PCC | F1_macro | IoU_macro | region |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        for t in tests:
            s = r[t]
            print(f"| {name} | {t} | {len(refs[t])} | {s['Final']:.4f} | {s['PCC']:.4f} | {s['F1_macro']:.4f} "
                  f"| {s['IoU_macro']:.4f} | {r['_region'] or 'off'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
