"""Wall-clock accounting of a recipe run: recipe overhead and decoding real-time factor.

The stage script appends one row per timed step to ``<expdir>/timing.tsv``::

    run_id <TAB> stage <TAB> kind <TAB> name <TAB> t_start <TAB> t_end

``kind`` is ``espnet`` (an ``espnet2.bin.*`` command, incl. its run.pl jobs),
``espnet_equiv`` (work an ESPnet recipe also does with its own tools: audio dump
= format_wav_scp.py, sentencepiece training = spm_train) or ``corpus`` (stage 0 corpus
generation, reported on its own). Everything else is recipe overhead:

    overhead = (T_run - T_espnet - T_equiv - T_corpus) / (T_espnet + T_equiv)

where T_run is the wall time of the stages 1.. of the run (from the first timed step
of stage >= 1 to the end). RTF = decoding time / audio duration, reported two ways:
``rtf_jobs`` = sum over decode jobs of their wall time (model loading included) / audio,
``rtf_decode`` = sum over jobs of (last - first utterance log timestamp) / audio.

    python -m pyutils.asr.timing overhead --timing exp/timing.tsv --run-id ID [--end T] [--json OUT]
    python -m pyutils.asr.timing rtf --logdir DIR --utt2dur FILE [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import time
from datetime import datetime
from typing import Dict, List

from pyutils.io import atomic_write

ACCOUNT_RE = re.compile(r"# Accounting: time=([0-9.]+)")
ESPNET_TS_RE = re.compile(r"^(?:\[[^\]]*\] )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def read_timing(path: str, run_id: str) -> List[dict]:
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 6 or parts[0] != run_id:
                continue
            rows.append({"stage": int(parts[1]), "kind": parts[2], "name": parts[3],
                         "t0": float(parts[4]), "t1": float(parts[5])})
    return rows


def overhead(rows: List[dict], t_run_start: float, t_end: float) -> dict:
    """Overhead of the recipe over the ESPnet (+ equivalent) commands it ran."""
    by_kind: Dict[str, float] = {}
    for r in rows:
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0.0) + (r["t1"] - r["t0"])
    espnet = by_kind.get("espnet", 0.0)
    equiv = by_kind.get("espnet_equiv", 0.0)
    corpus = by_kind.get("corpus", 0.0)
    total = t_end - t_run_start
    rest = max(0.0, total - espnet - equiv - corpus)
    work = espnet + equiv
    stages = sorted({r["stage"] for r in rows})
    steps: Dict[str, float] = {}
    for r in rows:
        steps[r["name"]] = round(steps.get(r["name"], 0.0) + r["t1"] - r["t0"], 2)
    return {
        "steps_s": steps,
        "stages": stages,
        "wall_total_s": round(total, 2),
        "corpus_s": round(corpus, 2),
        "espnet_s": round(espnet, 2),
        "espnet_equiv_s": round(equiv, 2),
        "recipe_s": round(rest, 2),
        "overhead_pct": round(100.0 * rest / work, 2) if work > 0 else None,
        "overhead_vs_espnet_only_pct": round(100.0 * (rest + equiv) / espnet, 2) if espnet > 0 else None,
    }


def _ts(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def rtf(logdir: str, utt2dur: str, pattern: str = "asr_inference.*.log") -> dict:
    audio = 0.0
    with open(utt2dur, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                audio += float(parts[1])
    jobs_wall, decode_only, njobs = 0.0, 0.0, 0
    for log in sorted(glob.glob(os.path.join(logdir, pattern))):
        njobs += 1
        first = last = None
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = ACCOUNT_RE.search(line)
                if m:
                    jobs_wall += float(m.group(1))
                m = ESPNET_TS_RE.match(line)
                if m:
                    t = _ts(m.group(1))
                    if first is None and "speech length" in line:
                        first = t
                    if first is not None:
                        last = t
        if first is not None and last is not None:
            decode_only += last - first
    return {
        "audio_s": round(audio, 2),
        "jobs": njobs,
        "jobs_wall_s": round(jobs_wall, 2),
        "rtf_jobs": round(jobs_wall / audio, 4) if audio else None,
        "decode_only_s": round(decode_only, 2),
        "rtf_decode": round(decode_only / audio, 4) if audio else None,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("overhead")
    s.add_argument("--timing", required=True)
    s.add_argument("--run-id", required=True)
    s.add_argument("--start", type=float, default=None, help="run start (epoch s); default: first step")
    s.add_argument("--end", type=float, default=None, help="run end (epoch s); default: now")
    s.add_argument("--stages", default=None, help="label of the stages run, e.g. 0-8")
    s.add_argument("--json", default=None)
    s = sub.add_parser("rtf")
    s.add_argument("--logdir", required=True)
    s.add_argument("--utt2dur", required=True)
    s.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if a.cmd == "overhead":
        rows = read_timing(a.timing, a.run_id)
        end = a.end if a.end is not None else time.time()
        start = a.start if a.start is not None else (min(r["t0"] for r in rows) if rows else end)
        res = overhead(rows, start, end)   # subtracts the corpus time from the wall time
        if a.stages:
            res["stages"] = a.stages
        label = res["stages"] if isinstance(res["stages"], str) else ",".join(map(str, res["stages"]))
        msg = (f"recipe overhead (stages {label}): wall {res['wall_total_s']:.1f} s (of which corpus generation "
               f"{res['corpus_s']:.1f} s, not counted), "
               f"ESPnet commands {res['espnet_s']:.1f} s + ESPnet-equivalent steps {res['espnet_equiv_s']:.1f} s, "
               f"recipe {res['recipe_s']:.1f} s -> overhead {res['overhead_pct']} % "
               f"({res['overhead_vs_espnet_only_pct']} % vs espnet2.bin commands alone)")
    else:
        res = rtf(a.logdir, a.utt2dur)
        msg = (f"RTF: {res['rtf_jobs']} (decode jobs incl. model load: {res['jobs_wall_s']} s / "
               f"{res['audio_s']} s audio), {res['rtf_decode']} (decoding only)")
    print(msg)
    if a.json:
        res["message"] = msg
        with atomic_write(a.json) as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
