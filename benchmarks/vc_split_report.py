#!/usr/bin/env python3
"""Per-group figures of one vivc evaluation (stage 7), groups by the pair id's reference part.

    PYTHONPATH=. tools/venv/bin/python benchmarks/vc_split_report.py \
        --eval egs/vivc/exp/vc_knn_default/eval_real --groups vieneu=-to-vieneu_ corpus=-to-corpus_ \
        english=-to-ami_,-to-real_

Reads ``components.tsv`` (one row per pair: SIM by both encoders, MOS, per-pair WER, the
reference and judged texts) and ``judge/<set>_pairs_src/text`` (the judge on the sources)
and prints, per group: pairs; judge WER (corpus-level, %) on the outputs and on the sources
and their ratio; SIM_gain = mean SIM(ref,out) - SIM(src,out) and the share of pairs with a
gain > 0, for resemblyzer and the d-vector; MOS (DNSMOS on 0..100); DistillMOS; and the
Score ``0.4 SIM_gain + 0.3 MOS + 0.3 (100 - WER)`` averaged over the pairs (per-pair WER
capped at 100), as ``chorus-score vc`` computes it.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import sys

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", required=True, help="exp/vc_knn_<preset>/eval_<name>")
    ap.add_argument("--groups", nargs="+", required=True, help="name=substring[,substring...] of the pair id")
    args = ap.parse_args(argv)
    from pyutils.vc.evaluate import corpus_wer
    from pyutils.vc.kvio import read_kv

    with open(os.path.join(args.eval, "components.tsv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    src_text = glob.glob(os.path.join(args.eval, "judge", "*_pairs_src", "text"))
    if len(src_text) != 1:
        sys.exit(f"error: expected one judge/*_pairs_src/text under {args.eval}, found {len(src_text)}")
    judged_src = read_kv(src_text[0], allow_empty_value=True)
    for spec in args.groups:
        name, _, subs = spec.partition("=")
        group = [r for r in rows if any(s in r["utt_id"] for s in subs.split(","))]
        if not group:
            sys.exit(f"error: group {name}: no pair id holds {subs}")
        col = lambda c: np.array([float(r[c]) for r in group])
        ref = {r["utt_id"]: r["ref_text"] for r in group}
        wer_out = corpus_wer(ref, {r["utt_id"]: r["hyp_text"] for r in group})
        wer_src = corpus_wer(ref, {r["utt_id"]: judged_src.get(r["utt_id"], "") for r in group})
        gain, gain_d = col("sim_ref_out") - col("sim_src_out"), col("sim_ref_out_dvec") - col("sim_src_out_dvec")
        score = 0.4 * gain + 0.3 * col("mos") + 0.3 * (100 - np.minimum(col("wer"), 100))
        print(json.dumps(dict(group=name, pairs=len(group), wer_out=round(wer_out, 1),
                              wer_src=round(wer_src, 1), ratio=round(wer_out / max(wer_src, 1e-9), 2),
                              sim_gain=round(float(gain.mean()), 1), gain_pos=round(float((gain > 0).mean()), 2),
                              sim_gain_dvec=round(float(gain_d.mean()), 1),
                              gain_pos_dvec=round(float((gain_d > 0).mean()), 2),
                              mos=round(float(col("mos").mean()), 1),
                              mos_distill=round(float(col("mos_distill").mean()), 1),
                              score=round(float(score.mean()), 1)), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
