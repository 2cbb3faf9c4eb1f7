"""Merged ESPnet 1-best -> official Track 1 transcripts, one for every utterance.

    python -m pyutils.asr.postprocess repair --lang en [--nvv-tags true] --keys WAV_SCP IN_TEXT OUT_TEXT
    python -m pyutils.asr.postprocess jsonl --lang en TEXT OUT.jsonl

``repair``: internal tags mapped back (``[throat_clearing]`` -> ``[throat clearing]``),
unsupported or malformed tags and ESPnet special tokens removed, spacing of no-space
languages restored, and an empty transcript for every key of ``--keys`` that the
decoder did not output (crashed job, empty audio). The output always passes
``chorus-score validate-track1``.
``jsonl``: Kaldi text -> rows ``{"utt_id","language","text_with_nvvs"}`` (the
reference/hypothesis format of ``chorus-score track1``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Tuple

from pyutils.asr import tags_text, text_norm
from pyutils.cli_types import str2bool
from pyutils.io import atomic_write_lines, read_text


def read_keys(path: str) -> List[str]:
    keys = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split(maxsplit=1)
            if parts:
                keys.append(parts[0])
    return keys


def clean_hypothesis(raw: str, lang: str, nvv_tags: bool = True) -> str:
    text = tags_text.repair(raw)
    if not nvv_tags:
        text = tags_text.strip_tags(text)
    if text_norm.char_units(lang):
        text = text_norm.remove_cjk_spaces(text)
    return text


def repair_file(keys: List[str], hyps: Dict[str, str], lang: str, nvv_tags: bool) -> Tuple[List[str], dict]:
    lines, stats = [], {"utts": len(keys), "missing": 0, "changed": 0, "empty": 0}
    for k in keys:
        if k not in hyps:
            stats["missing"] += 1
        raw = hyps.get(k, "")
        fixed = clean_hypothesis(raw, lang, nvv_tags)
        # Spacing changes (around tags, CJK) are not counted as repairs.
        if "".join(fixed.split()) != "".join(tags_text.from_internal(raw).split()):
            stats["changed"] += 1
        if not fixed:
            stats["empty"] += 1
        lines.append(f"{k} {fixed}".rstrip() + "\n")
    return lines, stats


def text_to_jsonl(text: Dict[str, str], lang: str) -> List[str]:
    return [json.dumps({"utt_id": k, "language": lang, "text_with_nvvs": v}, ensure_ascii=False) + "\n"
            for k, v in text.items()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("repair")
    s.add_argument("--lang", required=True)
    s.add_argument("--nvv-tags", type=str2bool, default=True)
    s.add_argument("--keys", required=True, help="file whose first column lists every utterance")
    s.add_argument("src")
    s.add_argument("dst")
    s = sub.add_parser("jsonl")
    s.add_argument("--lang", required=True)
    s.add_argument("src")
    s.add_argument("dst")
    a = p.parse_args(argv)
    if a.cmd == "repair":
        hyps = read_text(a.src) if os.path.exists(a.src) else {}
        lines, st = repair_file(read_keys(a.keys), hyps, a.lang, a.nvv_tags)
        atomic_write_lines(a.dst, lines)
        print(f"postprocess: {a.dst}: {st['utts']} utterances, {st['missing']} missing in decoder "
              f"output (empty), {st['changed']} repaired, {st['empty']} empty", file=sys.stderr)
    else:
        atomic_write_lines(a.dst, text_to_jsonl(read_text(a.src), a.lang))
    return 0


if __name__ == "__main__":
    sys.exit(main())
