"""WER/CER of a decode for recipes outside Track 1 scoring (``--nvv_tags false``, or a
language the Track 1 scorer does not know, e.g. Vietnamese for the VC recipe).

Both sides go through ``text_norm.normalise(lang)``; tags are removed unless
``--nvv-tags true`` (then each tag counts as one unit). Units: characters for
languages written without spaces (zh), words otherwise.

    error rate = sum_utt Levenshtein(ref_units, hyp_units) / sum_utt len(ref_units)

    python -m pyutils.asr.wer --lang vi --ref data/test/text --hyp decode/test/text [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List

from rapidfuzz.distance import Levenshtein

from pyutils.asr import tags_text, text_norm
from pyutils.cli_types import str2bool

from pyutils.io import atomic_write, read_text


def units(text: str, lang: str, nvv_tags: bool) -> List[str]:
    text = text_norm.normalise(tags_text.from_internal(text), lang)
    if not nvv_tags:
        text = tags_text.strip_tags(text)
    if text_norm.char_units(lang):
        out, i = [], 0
        while i < len(text):
            m = tags_text.BRACKET_RE.match(text, i)
            if m:
                out.append(m.group(0))
                i = m.end()
            else:
                if not text[i].isspace():
                    out.append(text[i])
                i += 1
        return out
    return text.split()


def error_rate(ref: dict, hyp: dict, lang: str, nvv_tags: bool) -> dict:
    edits = n_ref = 0
    for k, r in ref.items():
        ru = units(r, lang, nvv_tags)
        hu = units(hyp.get(k, ""), lang, nvv_tags)
        edits += Levenshtein.distance(ru, hu)
        n_ref += len(ru)
    name = "CER" if text_norm.char_units(lang) else "WER"
    return {"name": name, "utts": len(ref), "missing_hyp": sum(1 for k in ref if k not in hyp),
            "edits": edits, "ref_units": n_ref,
            "error_rate_pct": round(100.0 * edits / n_ref, 2) if n_ref else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lang", required=True)
    p.add_argument("--nvv-tags", type=str2bool, default=False)
    p.add_argument("--ref", required=True)
    p.add_argument("--hyp", required=True)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    res = error_rate(read_text(a.ref), read_text(a.hyp), a.lang, a.nvv_tags)
    print(f"{res['name']}: {res['error_rate_pct']} % ({res['edits']} edits / {res['ref_units']} units, "
          f"{res['utts']} utterances)")
    if a.json:
        with atomic_write(a.json) as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
