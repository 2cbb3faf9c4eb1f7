"""Token list for ESPnet TTS (stage 3): ``<blank>``, ``<unk>``, tokens by
frequency, ``<sos/eos>``. All 16 challenge tags and the punctuation tokens are
always listed, so a tag unseen in training still has its own embedding (an
untrained one) instead of becoming ``<unk>``."""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Iterable, List

from pyutils.tts.frontend import PUNCT_TOKENS, WORD_SEP, tag_tokens


def build_token_list(token_lines: Iterable[str]) -> List[str]:
    counts: collections.Counter = collections.Counter()
    for line in token_lines:
        parts = line.split()
        counts.update(parts[1:])
    for extra in tag_tokens() + sorted(PUNCT_TOKENS) + [WORD_SEP]:
        counts.setdefault(extra, 0)
    ordered = sorted(counts, key=lambda t: (-counts[t], t))
    return ["<blank>", "<unk>"] + [t for t in ordered if t not in ("<blank>", "<unk>", "<sos/eos>")] + ["<sos/eos>"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("token_text", help="Kaldi text of space-separated tokens (stage 2 output)")
    p.add_argument("out", help="token list, one token per line")
    a = p.parse_args(argv)
    with open(a.token_text, encoding="utf-8") as f:
        toks = build_token_list(f)
    with open(a.out + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(toks) + "\n")
    import os

    os.replace(a.out + ".tmp", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
