#!/usr/bin/env python3
"""Speed of ``chorus-score track1`` vs a plain pure-Python implementation.

Generates N bilingual utterances with recognition-like errors (word and tag
substitutions, deletions, insertions, moved tags; seed fixed), scores them
with :func:`pyutils.scoring.track1.score_track1` and with the unoptimised
reference in ``tests/scoring_reference.py`` (full DP matrices, no rapidfuzz),
asserts that every reported number is identical, and prints both times and
the ratio (goal: >= 5x).

    tools/venv/bin/python benchmarks/bench_track1.py [--utts 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import scoring_reference as plain  # noqa: E402
from pyutils.scoring.track1 import score_track1  # noqa: E402

KEYS = ("F1_micro", "precision", "recall", "mNTD", "tagged_transcript_error", "Track1Score")


def best_of(fn, repeat):
    best, out = None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--utts", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs for each implementation")
    ap.add_argument("--error-rate", type=float, default=0.08)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    ref, hyp = plain.generate(args.utts, seed=args.seed, rate=args.error_rate)
    n_events = sum(r["text_with_nvvs"].count("[") for r in ref)
    print(f"data: {args.utts} utterances (en+zh), {n_events} reference events, error rate {args.error_rate}")
    t_fast, fast = best_of(lambda: score_track1(ref, hyp), args.repeat)
    t_plain, slow = best_of(lambda: plain.score(ref, hyp), args.repeat)
    for lang in ("en", "zh"):
        for key in KEYS:
            assert fast[lang][key] == slow[lang][key], (lang, key, fast[lang][key], slow[lang][key])
    assert fast["FinalTrack1Score"] == slow["FinalTrack1Score"]
    print(f"FinalTrack1Score = {fast['FinalTrack1Score']} (EN {fast['Track1Score_EN']}, ZH {fast['Track1Score_ZH']})"
          " -- identical in both implementations")
    print(f"chorus-score track1 : {t_fast:8.3f} s  ({1e6 * t_fast / args.utts:7.1f} us/utt)")
    print(f"plain reference     : {t_plain:8.3f} s  ({1e6 * t_plain / args.utts:7.1f} us/utt)")
    print(f"speed-up            : {t_plain / t_fast:8.2f} x  (goal >= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
