"""NVV class recognition on labelled clips of speakers the namer never heard: per-class
precision/recall, macro recall and the confusion matrix of each namer.

    PYTHONPATH=. tools/venv/bin/python benchmarks/bench_nvv_naming.py --test data/deeply/test \\
        [--train data/deeply/train --train data/deeply/dev] [--work W] [--no-whisper]

Clips: Kaldi data dirs whose ``text`` is one challenge tag (``chorus-prep deeply_nvv`` writes
them, split by speaker), each clip's event span from the preparer's events file
(:func:`pyutils.nvv_detect.naming.labelled_clips`). The evidence (YAMNet tag scores and
embeddings, Whisper's label log-likelihoods) is computed once per clip and cached in ``W``.
Namers: YAMNet alone, Whisper alone, the zero-shot fusion (the default of the recipe), and with
``--train``, a namer fitted on the train clips (logistic regression on the evidence; with and
without the YAMNet embeddings). Prediction is over all 16 tags (a clip named with a tag the
corpus does not have counts against that class's recall, and in no precision).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pyutils.nvv_detect.naming import Evidence, Namer, fit, labelled_clips
from pyutils.tags import challenge_tags


def evidence(dirs, ev: Evidence, cache: Path):
    """(features dict, labels) of the clips of ``dirs``, cached as npz of plain arrays."""
    if cache.is_file():
        z = np.load(cache, allow_pickle=False)
        return {"log_y": z["log_y"], "w": z["w"], "emb": z["emb"]}, [str(t) for t in z["y"]]
    rows = list(labelled_clips([Path(d) for d in dirs], ev.tags))
    feats = ev.features([r[1] for r in rows])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, log_y=feats["log_y"], w=feats["w"], emb=feats["emb"], y=np.array([r[2] for r in rows]))
    return feats, [r[2] for r in rows]


def report(name: str, pred, ref, classes):
    """Per-class P/R, macro recall, confusion rows (reference class -> predicted tag counts)."""
    per = {}
    for c in classes:
        tp = sum(p == r == c for p, r in zip(pred, ref))
        n_pred, n_ref = sum(p == c for p in pred), sum(r == c for r in ref)
        per[c] = {"precision": round(tp / n_pred, 3) if n_pred else None,
                  "recall": round(tp / n_ref, 3) if n_ref else None, "n": n_ref}
    macro = float(np.mean([v["recall"] for v in per.values() if v["recall"] is not None]))
    acc = float(np.mean([p == r for p, r in zip(pred, ref)]))
    confusion = {c: {} for c in classes}
    for p, r in zip(pred, ref):
        confusion[r][p] = confusion[r].get(p, 0) + 1
    print(f"\n## {name}: macro recall {macro:.3f}, accuracy {acc:.3f} ({len(ref)} clips)")
    print("| class | n | precision | recall | named as |")
    print("| --- | ---: | ---: | ---: | --- |")
    for c in classes:
        v = per[c]
        conf = ", ".join(f"{t} {n}" for t, n in sorted(confusion[c].items(), key=lambda kv: -kv[1]))
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        print(f"| {c} | {v['n']} | {fmt(v['precision'])} | {fmt(v['recall'])} | {conf} |")
    return {"macro_recall": round(macro, 4), "accuracy": round(acc, 4), "per_class": per, "confusion": confusion}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--test", action="append", required=True, help="labelled data dir(s) to score")
    ap.add_argument("--train", action="append", default=[], help="labelled data dir(s) to fit a namer on")
    ap.add_argument("--work", type=Path, default=Path("bench_out/nvv_naming"))
    ap.add_argument("--l2", type=float, default=0.03)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    tags = challenge_tags()
    ev = Evidence(tags, embed=True, threads=a.threads)
    test, ref = evidence(a.test, ev, a.work / "test_evidence.npz")
    classes = sorted(set(ref))
    results = {}
    zero = Namer(tags)
    lone = {"YAMNet alone": test["log_y"], "Whisper labels alone": test["w"],
            "zero-shot fusion (default)": zero.logits({**test, "emb": None})}
    for name, z in lone.items():
        results[name] = report(name, [tags[i] for i in z.argmax(axis=1)], ref, classes)
    if a.train:
        train, y_tr = evidence(a.train, ev, a.work / "train_evidence.npz")
        y = np.array([tags.index(t) for t in y_tr])
        for name, emb in (("fitted on train speakers", False), ("fitted, + YAMNet embeddings", True)):
            namer = Namer(tags)
            tr = {**train, "emb": train["emb"] if emb else None}
            te = {**test, "emb": test["emb"] if emb else None}
            namer.W, namer.b, namer.mu, namer.sigma = fit(namer.design(tr), y, len(tags), a.l2)
            results[name] = report(name, [tags[i] for i in namer.logits(te).argmax(axis=1)], ref, classes)
    out = a.work / "naming_report.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"\nreport -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
