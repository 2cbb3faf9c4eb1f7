"""Token list for ESPnet TTS (stage 3): ``<blank>``, ``<unk>``, tokens by
frequency, ``<sos/eos>``. All 16 challenge tags and the punctuation tokens are
always listed, so a tag unseen in training still has its own embedding (an
untrained one) instead of becoming ``<unk>``; when the training text splits tags
into parts (``[laugh]~2``, front-end ``--tag-parts``), every tag's parts are listed too."""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Iterable, List

from pyutils.tts.frontend import PUNCT_TOKENS, WORD_SEP, tag_part_of, tag_part_token, tag_tokens


def build_token_list(token_lines: Iterable[str]) -> List[str]:
    counts: collections.Counter = collections.Counter()
    for line in token_lines:
        parts = line.split()
        counts.update(parts[1:])
    n_parts = max([tag_part_of(t)[1] for t in counts] + [1])
    tags = [p for t in tag_tokens() for p in [t] + [tag_part_token(t, k) for k in range(2, n_parts + 1)]]
    for extra in tags + sorted(PUNCT_TOKENS) + [WORD_SEP]:
        counts.setdefault(extra, 0)
    ordered = sorted(counts, key=lambda t: (-counts[t], t))
    return ["<blank>", "<unk>"] + [t for t in ordered if t not in ("<blank>", "<unk>", "<sos/eos>")] + ["<sos/eos>"]


def check_inventory(token_text: str, token_list: str) -> List[str]:
    """Problems of a token text against the model's inventory, one ``file: utt: message`` each.

    A token outside the list would silently become ``<unk>`` inside ESPnet, and an
    utterance made only of pauses (``|`` / punctuation) would give an empty-sounding
    WAV: both are reported by utterance id instead.
    """
    with open(token_list, encoding="utf-8") as f:
        known = {t.strip() for t in f if t.strip()}
    pauses = set(PUNCT_TOKENS) | {WORD_SEP}
    problems = []
    with open(token_text, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            uid, toks = parts[0], parts[1:]
            unknown = sorted({t for t in toks if t not in known})
            if unknown:
                problems.append(f"{token_text}:{lineno}: {uid}: tokens outside the model's inventory "
                                f"({len(known)} tokens): {' '.join(unknown)}")
            elif not [t for t in toks if t not in pauses]:
                problems.append(f"{token_text}:{lineno}: {uid}: nothing to say (only pauses/punctuation)")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("token_text", help="Kaldi text of space-separated tokens (stage 2 output)")
    p.add_argument("out", nargs="?", help="token list, one token per line")
    p.add_argument("--check", metavar="TOKEN_LIST",
                   help="instead of writing a list: check token_text against this list; exit 2 on problems")
    a = p.parse_args(argv)
    if a.check:
        problems = check_inventory(a.token_text, a.check)
        for msg in problems:
            print(f"error: {msg}", file=sys.stderr)
        return 2 if problems else 0
    if not a.out:
        p.error("the output token list is required (or use --check)")
    with open(a.token_text, encoding="utf-8") as f:
        toks = build_token_list(f)
    from pyutils.io import atomic_write_text

    atomic_write_text(a.out, "\n".join(toks) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
