#!/usr/bin/env python3
"""Throughput of ``chorus-synth``: utterances per second with nj=1 vs nj=2.

    tools/venv/bin/python benchmarks/bench_synth.py [--kind nvv] [--lang en] [--num 60]

Each configuration generates the same corpus (same seed) into a fresh
temporary directory; the figures are utterances/s, audio seconds per wall
second, and the nj=2 / nj=1 speed-up measured in the same run.  The two
outputs are also compared byte for byte (determinism across --nj).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from pyutils.synth import cli


def _digest(out: Path) -> str:
    h = hashlib.sha256()
    for p in sorted((out / "wav").glob("*.wav")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def run_once(kind: str, lang: str, num: int, nj: int, cmd: str, root: Path) -> dict:
    out = root / f"{kind}_nj{nj}{'_cmd' if cmd else ''}"
    argv = [kind, "--preset", "ci", "--out", str(out), "--nj", str(nj)]
    if kind in ("nvv", "sqa"):
        argv += ["--num-train", str(num), "--num-dev", "0", "--num-test", "0"]
        if kind == "nvv":
            argv += ["--lang", lang]
    else:
        argv += ["--num-voices", "6", "--num-target-voices", "2",
                 "--utts-per-voice", str(max(3, num // 6)), "--num-pairs", "2"]
    if cmd:
        argv += ["--cmd", cmd]
    t0 = time.perf_counter()
    cli.main(argv)
    el = time.perf_counter() - t0
    summ = json.loads((out / "summary.json").read_text())
    n = sum(v for k, v in summ["counts"].items() if k != "pairs")
    return {"nj": nj, "cmd": cmd or "pool", "utts": n, "seconds": round(el, 2),
            "utt_per_s": round(n / el, 2), "audio_s_per_s": round(summ["hours"] * 3600 / el, 1),
            "digest": _digest(out)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=["nvv", "sqa", "vc"], default="nvv")
    ap.add_argument("--lang", choices=["en", "zh"], default="en")
    ap.add_argument("--num", type=int, default=60, help="utterances per configuration")
    ap.add_argument("--cmd", default="", help="also time this job backend (e.g. utils/run.pl) at nj=2")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_synth_") as tmp:
        root = Path(tmp)
        res = [run_once(a.kind, a.lang, a.num, 1, "", root),
               run_once(a.kind, a.lang, a.num, 2, "", root)]
        if a.cmd:
            res.append(run_once(a.kind, a.lang, a.num, 2, a.cmd, root))
    print(f"\nchorus-synth {a.kind} ({a.lang if a.kind == 'nvv' else ''}) throughput")
    print(f"{'config':>16} {'utts':>6} {'wall s':>8} {'utt/s':>8} {'audio s/s':>10}  digest")
    for r in res:
        print(f"{'nj=%d %s' % (r['nj'], r['cmd']):>16} {r['utts']:>6} {r['seconds']:>8} "
              f"{r['utt_per_s']:>8} {r['audio_s_per_s']:>10}  {r['digest']}")
    print(f"speed-up nj=2 vs nj=1: {res[1]['utt_per_s'] / res[0]['utt_per_s']:.2f}x "
          f"(reference: nj=1 in the same run)")
    same = len({r["digest"] for r in res}) == 1
    print(f"identical output across configurations: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
