#!/usr/bin/env python3
"""Re-score an SQA mini corpus with faults of one type charged once per audible event.

The corpus reference (:func:`pyutils.synth.faults.quality_score`) charges every
fault it drew, also two noises or two clippings that overlap and sound like one.
This writes a copy of a recipe's reference files in which such faults are first
merged (:func:`pyutils.synth.faults.merge_audible_events`, faults of one type
under ``--gap`` s apart), keeping each recording's drawn jitter
(``score - quality_score(details)``, unless the score was clipped to 1 or 5).
The audio, intervals and every other field stay as they are, so a model can be
trained and scored on the new references from the same dump
(egs/sqa/RESULTS.md, "One event per audible fault in the reference").

    python benchmarks/sqa_merged_reference.py --corpus egs/sqa/corpus/sqa_mini3_default \\
        --gap 0.2 egs/sqa/data/test/ref.jsonl ...       # rewrites each file in place

Rewrite copies (``cp -r data dump`` into a scratch recipe dir), not the run's own files.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyutils.io import read_jsonl, write_jsonl  # noqa: E402
from pyutils.synth.faults import merge_audible_events, quality_score  # noqa: E402


def load_meta(corpus: str) -> dict:
    """utt_id -> the generator's record (details, dur) from ``corpus/meta/*.jsonl``."""
    meta = {}
    files = sorted(glob.glob(os.path.join(corpus, "meta", "*.jsonl")))
    if not files:
        raise SystemExit(f"{corpus}/meta: no *.jsonl (not a chorus-synth sqa corpus)")
    for path in files:
        try:
            rows = read_jsonl(path)
        except ValueError as e:
            raise SystemExit(str(e))
        for n, row in enumerate(rows, 1):
            try:
                meta[row["utt_id"]] = {"details": row["details"], "dur": float(row["dur"])}
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}: row {n}: bad meta row ({e})")
    return meta


def rescore(score: float, details: list, dur: float, gap: float) -> float:
    """The score with same-type faults under ``gap`` s apart charged as one, same jitter."""
    old = quality_score(details, dur)
    new = quality_score(merge_audible_events(details, gap), dur)
    if abs(new - old) < 1e-12:
        return score
    jitter = score - old if 1.0 < score < 5.0 else 0.0
    return round(float(np.clip(new + jitter, 1.0, 5.0)), 3)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="chorus-synth sqa corpus dir (has meta/*.jsonl)")
    p.add_argument("--gap", type=float, default=0.2, help="faults of one type closer than this (s) are one event")
    p.add_argument("refs", nargs="+", help="ref.jsonl files to rewrite in place (atomically)")
    a = p.parse_args(argv)
    meta = load_meta(a.corpus)
    for path in a.refs:
        try:
            rows = read_jsonl(path)
        except ValueError as e:
            raise SystemExit(str(e))
        changed = 0
        for n, row in enumerate(rows, 1):
            m = meta.get(row.get("utt_id"))
            if m is None:
                raise SystemExit(f"{path}:{n}: {row.get('utt_id')!r} is not in {a.corpus}/meta")
            new = rescore(float(row["score"]), m["details"], m["dur"], a.gap)
            changed += new != row["score"]
            row["score"] = new
        write_jsonl(path, rows)
        print(f"{path}: {changed} of {len(rows)} scores changed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
