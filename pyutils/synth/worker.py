"""Render one shard of a ``chorus-synth`` plan (run by ``$cmd JOB=1:N ...``).

``python -m pyutils.synth.worker --plan DIR/plan/plan.JOB.jsonl --out DIR
--meta DIR/meta/meta.JOB.jsonl`` renders every item of the plan shard,
appends one progress line per item to ``<meta>.partial`` (the parent polls
it) and finally writes the metadata JSONL atomically.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from typing import Callable, Dict

from pyutils.io import read_jsonl, write_jsonl

KIND_MODULES = {"nvv": "pyutils.synth.nvv_corpus", "sqa": "pyutils.synth.sqa_corpus",
                "vc": "pyutils.synth.vc_corpus"}
_RENDER: Dict[str, Callable] = {}


def render_item(item: dict, out_dir: str) -> dict:
    kind = item["kind"]
    if kind not in _RENDER:
        _RENDER[kind] = importlib.import_module(KIND_MODULES[kind]).render
    try:
        return _RENDER[kind](item, out_dir)
    except Exception as e:  # name the utterance in the error
        raise RuntimeError(f"synthesis of {item.get('utt_id')} failed: {e}") from e


def run_shard(plan_path: str, out_dir: str, meta_path: str, log=sys.stderr) -> int:
    items = read_jsonl(plan_path)
    os.makedirs(os.path.dirname(os.path.abspath(meta_path)), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "wav"), exist_ok=True)
    partial = meta_path + ".partial"
    metas = []
    t0 = time.time()
    step = max(1, len(items) // 10)
    with open(partial, "w", encoding="utf-8") as pf:
        for i, item in enumerate(items, 1):
            metas.append(render_item(item, out_dir))
            pf.write(item["utt_id"] + "\n")
            pf.flush()
            if i % step == 0 or i == len(items):
                el = time.time() - t0
                print(f"worker: {i}/{len(items)} done ({i / max(el, 1e-9):.1f} utt/s)",
                      file=log, flush=True)
    write_jsonl(meta_path, metas)
    os.remove(partial)
    return len(metas)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", required=True, help="plan shard (JSONL, one item per line)")
    ap.add_argument("--out", required=True, help="corpus directory (wavs go to OUT/wav)")
    ap.add_argument("--meta", required=True, help="metadata JSONL written when the shard is done")
    a = ap.parse_args(argv)
    print(f"worker: {' '.join(sys.argv)}", file=sys.stderr)
    n = run_shard(a.plan, a.out, a.meta)
    print(f"worker: wrote {n} items to {a.meta}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
