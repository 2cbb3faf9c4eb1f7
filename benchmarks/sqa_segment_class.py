#!/usr/bin/env python3
"""SQA: decide a detected region's fault class per segment instead of per frame (offline).

The fault head of ``pyutils.sqa`` decides noise / distortion per 20 ms frame; an
unseen fault family then gets split between the two classes.  This benchmark
re-runs only the post-processing on a trained model's stored frame posteriors
(``infer_<set>/outputs.npz``, no retraining) with the dev-tuned ``postproc.json``
and one of these per-segment rules added after it, and scores each with
``chorus-score sqa``:

* ``seg_threshold t``: a run of a fault is kept only if its mean (unsmoothed)
  posterior over the whole run is >= t (a segment-level threshold on top of the
  frame threshold);
* ``region r[A]``: a *region* is a run of frames where noise or distortion is on;
  a class keeps its frames in the region only if its mean posterior over the
  region is >= r times the larger of the two (r = 1: the region's argmax); with
  ``A`` the winner also takes the frames the other class had;
* ``union t``: over the same regions, each class gets the whole region iff its mean
  posterior over the region is >= t, else none of it (the recipe's step 6,
  ``pyutils.sqa.postproc.decide_regions``, where t is tuned on dev);
* ``cues w`` (with ``--cues-dump``): the region's class is the one a logistic
  regression on the physical cues of :mod:`pyutils.sqa.cues` pooled over the
  region (mean and standard deviation) picks, mixed with the posterior share
  (weight w on the cues); the loser's frames go to the winner.  The classifier is
  fitted on the reference noise / distortion intervals of the corpus' train
  recordings that do not contain ``--exclude`` (the family the model never saw).

``dev`` is the set the rule would be tuned on: the table marks the variant with
the best dev noise + distortion F1 + IoU, the one the recipe's grid would pick.

    python benchmarks/sqa_segment_class.py --model-dir egs/sqa/exp/sqa_default \\
        --set dev=egs/sqa/dump/dev/ref.jsonl --set test=egs/sqa/dump/test/ref.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from pyutils.sqa.common import FAULTS, frames_to_intervals  # noqa: E402
from pyutils.io import atomic_write_text as write_text_atomic, read_jsonl  # noqa: E402
from pyutils.sqa.postproc import decide_regions, fault_mask, load_outputs  # noqa: E402

CLASSES = ("noise", "distortion")   # the two classes an unseen family is split between
UNION_GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def runs(mask: np.ndarray):
    """(starts, ends) of the runs of True in a boolean vector."""
    d = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def drop_weak_segments(mask: np.ndarray, probs: np.ndarray, seg_threshold: float) -> np.ndarray:
    """Keep only the runs of ``mask`` whose mean probability is >= ``seg_threshold``."""
    mask = np.asarray(mask, dtype=bool).copy()
    p = np.asarray(probs, dtype=np.float64)
    for s, e in zip(*runs(mask)):
        if p[s:e].mean() < seg_threshold - 1e-12:
            mask[s:e] = False
    return mask


def segment_classes(masks: np.ndarray, probs: np.ndarray, ratio: float, absorb: bool = False) -> np.ndarray:
    """(N, K) masks of K competing classes -> new masks decided per region (see ``region`` above)."""
    masks = np.asarray(masks, dtype=bool).copy()
    for s, e in zip(*runs(masks.any(axis=1))):
        means = np.asarray(probs[s:e], dtype=np.float64).mean(axis=0)
        masks[s:e, means < ratio * means.max() - 1e-12] = False
        if absorb:
            masks[s:e, int(np.argmax(means))] = True
    return masks


def pooled_cues(cues: np.ndarray) -> np.ndarray:
    """Cue columns of a span -> one vector: per-column mean and standard deviation."""
    c = np.asarray(cues, dtype=np.float64)
    return np.concatenate([c.mean(0), c.std(0)])


def cue_regions(masks: np.ndarray, probs: np.ndarray, cues: np.ndarray, clf, weight: float) -> np.ndarray:
    """Each region goes to one class: ``weight`` x P(noise | pooled cues) + (1 - weight) x the
    posterior share of noise, >= 0.5 -> noise; the other class loses its frames there.
    ``cues`` are on the 10 ms grid (two rows per 20 ms frame)."""
    masks = np.asarray(masks, dtype=bool).copy()
    for s, e in zip(*runs(masks.any(axis=1))):
        m = np.asarray(probs[s:e], dtype=np.float64).mean(axis=0)
        share = m[0] / max(m.sum(), 1e-9)
        c = cues[2 * s:2 * e]
        q = clf.predict_proba(pooled_cues(c)[None])[0, 1] if len(c) >= 3 else share
        win = 0 if weight * q + (1 - weight) * share >= 0.5 else 1
        masks[s:e, 1 - win] = False
        masks[s:e, win] = True
    return masks


def rows(outputs: dict, params: dict, variant: tuple, cues: dict | None = None, clf=None) -> list:
    """Submission rows of ``outputs`` with the recipe's post-processing plus ``variant``."""
    kind, value = variant[0], variant[1]
    idx = [FAULTS.index(c) for c in CLASSES]
    out = []
    for u, o in sorted(outputs.items()):
        fp, n = o["frame_probs"], len(o["frame_probs"])
        masks = np.stack([fault_mask(fp[:, j], params[f], float(o["utt_probs"][j]))
                          for j, f in enumerate(FAULTS)], axis=1)
        if kind == "seg_threshold":
            for j in idx:
                masks[:, j] = drop_weak_segments(masks[:, j], fp[:, j], value)
        elif kind == "region":
            masks[:, idx] = segment_classes(masks[:, idx], fp[:, idx], value, variant[2])
        elif kind == "union":
            masks[:, idx] = decide_regions(masks[:, idx], fp[:, idx], value)
        elif kind == "cues":
            masks[:, idx] = cue_regions(masks[:, idx], fp[:, idx], cues[u], clf, value)
        faults = {}
        for j, f in enumerate(FAULTS):
            ivs = [[s, round(min(e, o["duration"]), 3)] for s, e in frames_to_intervals(masks[:n, j])
                   if s < o["duration"]]
            faults[f] = [iv for iv in ivs if iv[1] > iv[0]]
        out.append({"utt_id": u, "score": float(np.clip(o["score"], 1.0, 5.0)), "faults": faults})
    return out


def fit_cue_classifier(dump: str, corpus: str, exclude: str):
    """Logistic regression noise-vs-distortion on pooled cues of the train split's reference
    intervals, recordings containing the family ``exclude`` left out; and the cues of every set."""
    import kaldiio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pyutils.sqa.cues import NUM_CUES
    from pyutils.synth.faults import FAMILIES

    cues = {}
    for s in ("train", "dev", "test", "test_real"):
        scp = os.path.join(dump, s, "feats.scp")
        if os.path.exists(scp):
            cues.update({u: m[:, -NUM_CUES:] for u, m in kaldiio.load_scp_sequential(scp)})
    x, y = [], []
    for r in read_jsonl(os.path.join(corpus, "faults", "train.jsonl")):
        if r["utt_id"] not in cues or any(FAMILIES[d["kind"]] == exclude for d in r["details"]):
            continue
        for d in r["details"]:
            a, b = int(d["start"] / 0.01), int(np.ceil(d["end"] / 0.01))
            if d["type"] in CLASSES and b - a >= 5:
                x.append(pooled_cues(cues[r["utt_id"]][a:b]))
                y.append(d["type"] == "noise")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=3000)).fit(np.array(x), np.array(y))
    return clf, cues


def family_intervals_as_noise(clf, cues: dict, corpus: str, family: str) -> tuple:
    """(share of ``family``'s reference intervals outside dev that ``clf`` calls noise, count)."""
    from pyutils.synth.faults import FAMILIES

    calls = []
    for split in ("train", "test", "test_real"):
        path = os.path.join(corpus, "faults", f"{split}.jsonl")
        for r in read_jsonl(path) if os.path.exists(path) else []:
            for d in r["details"]:
                a, b = int(d["start"] / 0.01), int(np.ceil(d["end"] / 0.01))
                if FAMILIES[d["kind"]] == family and r["utt_id"] in cues and b - a >= 5:
                    calls.append(clf.predict_proba(pooled_cues(cues[r["utt_id"]][a:b])[None])[0, 1] >= 0.5)
    return float(np.mean(calls)) if calls else float("nan"), len(calls)


def step6_table(sets: dict, grid: dict) -> str:
    """The recipe's tuning on the first set (dev) with step 6 off / ``after`` / ``joint`` and the
    Final of every other set under each: markdown rows."""
    from pyutils.scoring.sqa import score_sqa
    from pyutils.sqa.postproc import rows_from_outputs, tune, tune_joint, tune_region

    (dev_refs, dev_outs), out = next(iter(sets.values())), []
    p0, _ = tune(dev_outs, dev_refs, grid)
    t1, _ = tune_region(dev_outs, dev_refs, p0)
    pj, tj, _, _ = tune_joint(dev_outs, dev_refs, grid)
    for name, (refs, outs) in list(sets.items())[1:]:
        res = [score_sqa(refs, rows_from_outputs(outs, p, t)) for p, t in ((p0, 0.0), (p0, t1), (pj, tj))]
        out.append(f"| {name} | {len(refs)} | {res[0]['Final']:.4f} | {res[1]['Final']:.4f} ({t1 or 'off'}) | "
                   f"{res[2]['Final']:.4f} ({tj or 'off'}) | {res[1]['F1_macro']:.3f} / {res[1]['IoU_macro']:.3f} | "
                   f"{res[2]['F1_macro']:.3f} / {res[2]['IoU_macro']:.3f} | {res[0]['PCC']:.3f} |")
    return ("| test | n | Final step 6 off | after (t) | joint (t) | F1 / IoU after | F1 / IoU joint | PCC |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(out) + "\n")


def main(argv=None) -> int:
    from pyutils.scoring.sqa import score_sqa

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", required=True, help="dir with postproc.json and infer_<set>/outputs.npz")
    p.add_argument("--set", action="append", required=True, metavar="NAME=REF.jsonl",
                   help="a set to score (its outputs: MODEL_DIR/infer_NAME/outputs.npz); the first is dev")
    p.add_argument("--cues-dump", help="a dump made with --cue-feature true (cue variants)")
    p.add_argument("--corpus", help="the corpus dir (faults/train.jsonl) for the cue classifier")
    p.add_argument("--exclude", default="", help="family the model never saw (left out of the classifier)")
    p.add_argument("--out", help="markdown table to write")
    p.add_argument("--step6", choices=("quick", "full"),
                   help="instead: re-tune the post-processing on dev (the --quick grid, as the generalisation "
                        "benchmark does, or the recipe's full grid) with step 6 off / after / joint and score")
    a = p.parse_args(argv)
    with open(os.path.join(a.model_dir, "postproc.json"), encoding="utf-8") as f:
        params = json.load(f)["params"]
    sets = {}
    for spec in a.set:
        name, ref = spec.split("=", 1)
        refs = read_jsonl(ref)
        ids = {r["utt_id"] for r in refs}
        outs = load_outputs(os.path.join(a.model_dir, f"infer_{name}", "outputs.npz"))
        sets[name] = (refs, {u: o for u, o in outs.items() if u in ids})
    if a.step6:
        from pyutils.sqa.postproc import GRID, QUICK_GRID

        text = step6_table(sets, QUICK_GRID if a.step6 == "quick" else GRID)
        print(text)
        if a.out:
            write_text_atomic(a.out, text)
        return 0
    variants = [("off", 0.0)] + [("seg_threshold", t) for t in (0.4, 0.45, 0.5, 0.6)] \
        + [("region", r, ab) for r in (0.5, 0.7, 1.0) for ab in (False, True)] \
        + [("union", t) for t in UNION_GRID]
    clf = cues = None
    if a.cues_dump:
        clf, cues = fit_cue_classifier(a.cues_dump, a.corpus, a.exclude)
        if a.exclude:
            share, n = family_intervals_as_noise(clf, cues, a.corpus, a.exclude)
            print(f"cue classifier fitted without {a.exclude}: {share:.2f} of its {n} intervals called noise")
        variants += [("cues", w) for w in (0.5, 0.75, 1.0)]
    dev = next(iter(sets))
    table, best = [], (None, -1.0)
    for v in variants:
        label = " ".join(str(x) for x in v[:2]) + (" A" if v[0] == "region" and v[2] else "")
        cells = []
        for name, (refs, outs) in sets.items():
            r = score_sqa(refs, rows(outs, params, v, cues, clf))
            cells.append(f"{r['Final']:.4f} ({r['F1_macro']:.3f} / {r['IoU_macro']:.3f})")
            if name == dev:
                val = sum(r["per_fault"][c]["F1"] + (r["per_fault"][c]["IoU"] or 0.0) for c in CLASSES)
                if val > best[1] + 1e-9:
                    best = (label, val)
        table.append((label, cells))
    md = ["| rule | " + " | ".join(f"{n}: Final (F1 / IoU)" for n in sets) + " |",
          "|---|" + "---|" * len(sets)]
    md += [f"| {lab}{' (dev pick)' if lab == best[0] else ''} | " + " | ".join(c) + " |" for lab, c in table]
    text = "\n".join(md) + "\n"
    print(text)
    if a.out:
        write_text_atomic(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
