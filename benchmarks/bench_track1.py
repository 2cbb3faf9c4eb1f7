#!/usr/bin/env python3
"""Speed of ``chorus-score track1`` vs a plain pure-Python implementation.

Generates N bilingual utterances with recognition-like errors (word and tag
substitutions, deletions, insertions, moved tags; seed fixed), scores them
with :func:`pyutils.scoring.track1.score_track1` and with the unoptimised
reference in ``tests/scoring_reference.py`` (full DP matrices, no rapidfuzz),
asserts that every reported number is identical, and prints both times
(process CPU time and wall time, best of R interleaved runs, so that load from
other processes hits both alike) and the ratio (goal: >= 5x).
``--with-gc-share`` also times the scorer with the cyclic GC left on.

    tools/venv/bin/python benchmarks/bench_track1.py [--utts 20000] [--repeat 3] [--with-gc-share]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import scoring_reference as plain  # noqa: E402
from pyutils.scoring.track1 import score_track1  # noqa: E402
from pyutils.tags import challenge_tags  # noqa: E402

KEYS = ("F1_micro", "precision", "recall", "mNTD", "tagged_transcript_error", "Track1Score")


def timed(fn):
    """(wall seconds, CPU seconds of this process, result)."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--utts", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3, help="best of R interleaved runs for each implementation")
    ap.add_argument("--error-rate", type=float, default=0.08)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--with-gc-share", action="store_true",
                    help="also time the scorer with the cyclic GC left on (shows what pausing it brings)")
    args = ap.parse_args()

    challenge_tags()  # load conf/nvv_tags.yaml once, outside the timings
    ref, hyp = plain.generate(args.utts, seed=args.seed, rate=args.error_rate)
    n_events = sum(r["text_with_nvvs"].count("[") for r in ref)
    print(f"data: {args.utts} utterances (en+zh), {n_events} reference events, error rate {args.error_rate}")
    # Interleave the two implementations and keep the best of R runs of each,
    # so that load from other processes hits both alike.
    fast_w = fast_c = plain_w = plain_c = float("inf")
    for _ in range(args.repeat):
        w, c, fast = timed(lambda: score_track1(ref, hyp))
        fast_w, fast_c = min(fast_w, w), min(fast_c, c)
        w, c, slow = timed(lambda: plain.score(ref, hyp))
        plain_w, plain_c = min(plain_w, w), min(plain_c, c)
    for lang in ("en", "zh"):
        for key in KEYS:
            assert fast[lang][key] == slow[lang][key], (lang, key, fast[lang][key], slow[lang][key])
    assert fast["FinalTrack1Score"] == slow["FinalTrack1Score"]
    print(f"FinalTrack1Score = {fast['FinalTrack1Score']} (EN {fast['Track1Score_EN']}, ZH {fast['Track1Score_ZH']})"
          " -- identical in both implementations")
    print(f"{'':20s} {'wall s':>9s} {'CPU s':>9s} {'CPU us/utt':>11s}")
    print(f"{'chorus-score track1':20s} {fast_w:9.3f} {fast_c:9.3f} {1e6 * fast_c / args.utts:11.1f}")
    print(f"{'plain reference':20s} {plain_w:9.3f} {plain_c:9.3f} {1e6 * plain_c / args.utts:11.1f}")
    print(f"speed-up: {plain_c / fast_c:.2f}x CPU time, {plain_w / fast_w:.2f}x wall time (goal >= 5x; "
          f"best of {args.repeat} interleaved runs each)")
    if args.with_gc_share:
        # How much of the speed-up is the paused cyclic GC (see track1._cyclic_gc_paused)?
        import pyutils.scoring.track1 as t1
        saved = t1._cyclic_gc_paused
        t1._cyclic_gc_paused = contextlib.nullcontext
        try:
            gc_c = min(timed(lambda: score_track1(ref, hyp))[1] for _ in range(args.repeat))
        finally:
            t1._cyclic_gc_paused = saved
        print(f"with the cyclic GC left on: {gc_c:.3f} s CPU -> {plain_c / gc_c:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
