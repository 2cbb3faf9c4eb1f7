#!/usr/bin/env python3
"""Time and peak memory of ``chorus-score track1`` vs the plain implementation.

Generates N bilingual utterances with recognition-like errors (word and tag
substitutions, deletions, insertions, moved tags; seed fixed), writes them as
reference/submission JSONL files, and scores them in separate processes:

- ``chorus-score track1`` (``python -m pyutils.scoring.cli track1``), the way
  users run it;
- the unoptimised reference in ``tests/scoring_reference.py`` (full DP
  matrices, no rapidfuzz), which stands for the official script: it reads the
  JSONL files the way the official evaluator does (every row into memory) and
  scores them.

Each process is measured on its own (``os.wait4``): wall time, CPU time
(user + system) and peak resident memory (``ru_maxrss``). The two are run
interleaved R times (best time of R, so that load from other processes hits
both alike); every reported number must be identical. Goals: >= 10x faster
(CPU time) and a peak RSS no larger than the plain implementation's.
``--per-utt-report`` also runs ``chorus-score track1 --per-utt-report``;
``--also-root DIR`` also runs the scorer of another checkout (its result
JSON must be byte-identical), e.g. a commit unpacked with ``git archive``.

    tools/venv/bin/python benchmarks/bench_track1.py [--utts 20000] [--repeat 3] [--per-utt-report]
        [--shuffle-hyp] [--also-root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

KEYS = ("F1_micro", "precision", "recall", "mNTD", "tagged_transcript_error", "Track1Score")


def run_plain(ref_path: str, hyp_path: str, out_path: str) -> int:
    """Child process: the plain implementation, reading JSONL like the official script."""
    import scoring_reference as plain

    def rows(path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    result = plain.score(rows(ref_path), rows(hyp_path))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


def generate(n_utts: int, seed: int, rate: float, shuffle_hyp: bool, folder: str) -> int:
    """Child process: write ref.jsonl / hyp.jsonl; prints the number of reference events."""
    import scoring_reference as plain

    ref, hyp = plain.generate(n_utts, seed=seed, rate=rate)
    if shuffle_hyp:
        random.Random(seed).shuffle(hyp)
    write_jsonl(Path(folder) / "ref.jsonl", ref)
    write_jsonl(Path(folder) / "hyp.jsonl", hyp)
    print(sum(r["text_with_nvvs"].count("[") for r in ref))
    return 0


def child_env(root: Path = ROOT) -> dict:
    return dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def measured(cmd, root: Path = ROOT):
    """Run ``cmd``; -> (wall s, CPU s, peak RSS MiB) of that process alone.

    This process stays small on purpose (the data are generated in a child):
    Linux gives a child started by vfork/posix_spawn + exec, as subprocess
    does, a ``ru_maxrss`` of at least the parent's own peak RSS at that
    moment, which would hide a child smaller than the parent.
    """
    w0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=child_env(root), cwd=str(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - w0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[2:4]} failed ({proc.returncode}): {err.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0  # ru_maxrss: KiB on Linux


def write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--utts", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved runs of each implementation (best time)")
    ap.add_argument("--error-rate", type=float, default=0.08)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffle-hyp", action="store_true",
                    help="write the submission rows in random order (the reference stays sorted)")
    ap.add_argument("--per-utt-report", action="store_true", help="also run chorus-score with --per-utt-report")
    ap.add_argument("--also-root", metavar="DIR", type=Path,
                    help="also run chorus-score track1 from another checkout (e.g. an older commit, unpacked "
                         "with `git archive`), for before/after figures")
    ap.add_argument("--run-plain", nargs=3, metavar=("REF", "HYP", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--generate-into", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_plain:
        return run_plain(*args.run_plain)
    if args.generate_into:
        return generate(args.utts, args.seed, args.error_rate, args.shuffle_hyp, args.generate_into)

    with tempfile.TemporaryDirectory(prefix="bench_track1.") as tmp:
        d = Path(tmp)
        gen = [sys.executable, str(Path(__file__).resolve()), "--utts", str(args.utts), "--seed", str(args.seed),
               "--error-rate", str(args.error_rate), "--generate-into", str(d)] + (["--shuffle-hyp"] * args.shuffle_hyp)
        n_events = int(subprocess.run(gen, check=True, capture_output=True, text=True, env=child_env()).stdout)
        size = sum((d / f).stat().st_size for f in ("ref.jsonl", "hyp.jsonl")) / 2 ** 20
        print(f"data: {args.utts} utterances (en+zh), {n_events} reference events, error rate {args.error_rate}, "
              f"{size:.1f} MiB of JSONL{' (submission shuffled)' if args.shuffle_hyp else ''}")
        py = sys.executable
        runs = {
            "chorus-score track1": [py, "-m", "pyutils.scoring.cli", "track1", "--ref", str(d / "ref.jsonl"),
                                    "--hyp", str(d / "hyp.jsonl"), "--output-json", str(d / "fast.json")],
            "plain reference": [py, str(Path(__file__).resolve()), "--run-plain", str(d / "ref.jsonl"),
                                str(d / "hyp.jsonl"), str(d / "plain.json")],
        }
        if args.per_utt_report:
            runs["  + --per-utt-report"] = runs["chorus-score track1"] + ["--output-json", str(d / "fast_r.json"),
                                                                        "--per-utt-report", str(d / "per_utt.txt")]
        roots = {name: ROOT for name in runs}
        if args.also_root:
            name = f"chorus-score ({args.also_root.name})"
            runs[name] = runs["chorus-score track1"][:-1] + [str(d / "other.json")]
            roots[name] = args.also_root.resolve()
        best = {name: [float("inf"), float("inf"), 0.0] for name in runs}
        for _ in range(args.repeat):  # interleaved, so that load from other processes hits both alike
            for name, cmd in runs.items():
                wall, cpu, rss = measured(cmd, roots[name])
                b = best[name]
                b[0], b[1], b[2] = min(b[0], wall), min(b[1], cpu), max(b[2], rss)
        fast = json.loads((d / "fast.json").read_text(encoding="utf-8"))
        slow = json.loads((d / "plain.json").read_text(encoding="utf-8"))
        if args.per_utt_report:
            assert json.loads((d / "fast_r.json").read_text(encoding="utf-8")) == fast
        if args.also_root:
            assert (d / "other.json").read_bytes() == (d / "fast.json").read_bytes(), "other checkout differs"
    for lang in ("en", "zh"):
        for key in KEYS:
            assert fast[lang][key] == slow[lang][key], (lang, key, fast[lang][key], slow[lang][key])
    assert fast["FinalTrack1Score"] == slow["FinalTrack1Score"]
    print(f"FinalTrack1Score = {fast['FinalTrack1Score']} (EN {fast['Track1Score_EN']}, ZH {fast['Track1Score_ZH']})"
          " -- identical in both implementations")
    print(f"{'(separate processes)':22s} {'wall s':>8s} {'CPU s':>8s} {'CPU us/utt':>11s} {'peak RSS MiB':>13s}")
    for name, (wall, cpu, rss) in best.items():
        print(f"{name:22s} {wall:8.2f} {cpu:8.2f} {1e6 * cpu / args.utts:11.1f} {rss:13.1f}")
    f, p = best["chorus-score track1"], best["plain reference"]
    print(f"speed-up: {p[1] / f[1]:.2f}x CPU time, {p[0] / f[0]:.2f}x wall time (goal >= 10x); "
          f"peak RSS {f[2] / p[2]:.2f}x the plain implementation's (goal <= 1x); best of {args.repeat} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
