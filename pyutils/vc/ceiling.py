"""How high the VC Score can go when the WER listener is the pretrained judge.

The Score's WER term is the judge's (pretrained Whisper base) WER on the converted
speech. The judge also transcribes the *source recordings*; a converter whose output
were exactly as intelligible to the judge as the sources would get that WER, no lower.
This module turns the measured components of a run into that bound:

- ``as_sources``: the run's own SIM gain and MOS, with the judge's per-pair WER on the
  source recordings in place of the one on the outputs;
- ``wer_for_target``: the per-pair WER the Score needs to reach ``--target`` with the
  run's SIM gain and MOS.

All averages are over pairs, as ``chorus-score vc`` averages (the Score is linear).

CLI::

    python -m pyutils.vc.ceiling --components exp/vc_default/eval_test/components.tsv \
        --judge-sources exp/vc_default/eval_test/judge/test_pairs_src/text [--target 40]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, List, Optional

from pyutils.io import atomic_write
from pyutils.scoring.vc import combine
from pyutils.vc.evaluate import _read_text, wer_percent
from pyutils.vc.report import read_components


def read_scored_rows(path: str) -> List[Dict[str, str]]:
    """Rows of a ``components.tsv`` of :mod:`pyutils.vc.evaluate`, checked for the columns the ceiling needs
    (ref_text among them)."""
    rows = read_components(path)
    need = {"utt_id", "sim_ref_out", "sim_src_out", "mos", "wer", "ref_text"}
    if not rows or not need <= set(rows[0]):
        raise ValueError(f"{path}: expected a components.tsv with columns {', '.join(sorted(need))}")
    return rows


def _mean(values: List[float]) -> float:
    return sum(values) / len(values)


def ceiling(rows: List[Dict[str, str]], judge_src: Dict[str, str], target: float = 40.0) -> Dict[str, float]:
    """The bounds of the module docstring from per-pair components and judge transcripts."""
    missing = [r["utt_id"] for r in rows if r["utt_id"] not in judge_src]
    if missing:
        raise KeyError(f"no judge transcript of the source for {len(missing)} pair(s): {' '.join(missing)}")
    gain = _mean([float(r["sim_ref_out"]) - float(r["sim_src_out"]) for r in rows])
    mos = _mean([float(r["mos"]) for r in rows])
    wer_out = _mean([float(r["wer"]) for r in rows])
    wer_src = _mean([wer_percent(r["ref_text"], judge_src[r["utt_id"]]) for r in rows])
    out = {
        "pairs": len(rows), "SIM_gain": gain, "MOS": mos,
        "WER_outputs": wer_out, "WER_sources": wer_src,
        "Score": combine(gain, 0.0, mos, wer_out),
        "as_sources": combine(gain, 0.0, mos, wer_src),
        "target": target,
        # 0.4 G + 0.3 M + 0.3 (100 - W) = target  ->  W
        "wer_for_target": 100.0 - (target - 0.4 * gain - 0.3 * mos) / 0.3,
    }
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--components", required=True, help="components.tsv of pyutils.vc.evaluate")
    ap.add_argument("--judge-sources", required=True, help="judge transcripts of the source recordings (Kaldi text)")
    ap.add_argument("--target", type=float, default=40.0)
    ap.add_argument("--output-json", default=None)
    args = ap.parse_args(argv)
    try:
        rows = read_scored_rows(args.components)
        judge = _read_text(args.judge_sources)
        res = ceiling(rows, judge, args.target)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for k, v in res.items():
        print(f"{k}\t{v:.2f}" if isinstance(v, float) else f"{k}\t{v}")
    if args.output_json:
        with atomic_write(args.output_json) as handle:
            json.dump(res, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
