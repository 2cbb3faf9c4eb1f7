"""Decoding real-time factor of a recipe run (the time per stage: ``<expdir>/stage_times.tsv``,
utils/stage_prelude.sh).

RTF = decoding time / audio duration, reported two ways:
``rtf_jobs`` = sum over decode jobs of their wall time (model loading included) / audio,
``rtf_decode`` = sum over jobs of (last - first utterance log timestamp) / audio.

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

from pyutils.io import atomic_write

ACCOUNT_RE = re.compile(r"# Accounting: time=([0-9.]+)")
ESPNET_TS_RE = re.compile(r"^(?:\[[^\]]*\] )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


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
    s = sub.add_parser("rtf")
    s.add_argument("--logdir", required=True)
    s.add_argument("--utt2dur", required=True)
    s.add_argument("--json", default=None)
    a = p.parse_args(argv)
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
