"""Token inventories that keep the 16 NVV tags atomic.

- English (``bpe``): a sentencepiece model trained with the Python trainer (the wheel
  has no ``spm_train``) with the internal tags as ``user_defined_symbols``, so
  ``[laugh]`` is always one piece.
- Mandarin (``char``): ESPnet's char tokenizer splits every character unless the tag
  is listed in ``--non_linguistic_symbols``; ``nlsyms`` writes that list.

Subcommands::

    python -m pyutils.asr.tokens nlsyms OUT                       # one tag per line
    python -m pyutils.asr.tokens train-bpe --text T --vocab-size N --model-prefix P [--nvv-tags true]
    python -m pyutils.asr.tokens check --token-list L --token-type bpe|char [--bpemodel M] [--nvv-tags true]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List

from pyutils.cli_types import str2bool
from pyutils.asr.tags_text import internal_tokens
from pyutils.io import atomic_write_text


def write_nlsyms(path: str) -> None:
    atomic_write_text(path, "".join(t + "\n" for t in internal_tokens()))


def train_bpe(text: str, vocab_size: int, model_prefix: str, nvv_tags: bool = True,
              model_type: str = "bpe", character_coverage: float = 1.0) -> str:
    """Train sentencepiece on ``text`` (one sentence per line, no utt ids).

    ``hard_vocab_limit=False`` lets a small corpus end below ``vocab_size`` instead of
    failing. Tags are user-defined symbols (always single pieces, never merged).
    """
    import sentencepiece as spm

    os.makedirs(os.path.dirname(os.path.abspath(model_prefix)), exist_ok=True)
    spm.SentencePieceTrainer.train(
        input=text,
        model_prefix=model_prefix,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        input_sentence_size=100_000_000,
        user_defined_symbols=internal_tokens() if nvv_tags else [],
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        num_threads=1,
        minloglevel=1,
    )
    return model_prefix + ".model"


def bpe_pieces(bpemodel: str, text: str) -> List[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=bpemodel)
    return sp.encode(text, out_type=str)


def char_tokens(text: str, nlsyms: List[str], space: str = "<space>") -> List[str]:
    """Same rule as ESPnet's CharTokenizer: a listed symbol at the cursor is one token."""
    out = []
    i = 0
    while i < len(text):
        for s in nlsyms:
            if text.startswith(s, i):
                out.append(s)
                i += len(s)
                break
        else:
            c = text[i]
            out.append(space if c == " " else c)
            i += 1
    return out


def check(token_list: str, token_type: str, bpemodel: str = "", nvv_tags: bool = True) -> List[str]:
    """Problems with a token list (empty list = fine).

    Checks: ESPnet's special tokens sit where ESPnet expects them (``<blank>`` first,
    ``<sos/eos>`` last), no duplicates, and — with tags — each tag is one token of the
    list and tokenises to exactly that token.
    """
    with open(token_list, encoding="utf-8") as f:
        toks = [line.rstrip("\n") for line in f]
    problems = []
    if not toks or toks[0] != "<blank>":
        problems.append(f"{token_list}: first token must be <blank>")
    if not toks or toks[-1] != "<sos/eos>":
        problems.append(f"{token_list}: last token must be <sos/eos>")
    if "<unk>" not in toks:
        problems.append(f"{token_list}: <unk> missing")
    dup = {t for t in toks if toks.count(t) > 1}
    if dup:
        problems.append(f"{token_list}: duplicate tokens {sorted(dup)[:5]}")
    if nvv_tags:
        tokset = set(toks)
        for tag in internal_tokens():
            if tag not in tokset:
                problems.append(f"{token_list}: tag {tag} is not a token")
            sample = f"a {tag} b"
            pieces = (bpe_pieces(bpemodel, sample) if token_type == "bpe"
                      else char_tokens(sample, internal_tokens()))
            if tag not in pieces:
                problems.append(f"tag {tag} is split by the {token_type} tokenizer: {pieces}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("nlsyms", help="write the internal tag tokens, one a line")
    s.add_argument("out")
    s = sub.add_parser("train-bpe", help="train a sentencepiece model with atomic tags")
    s.add_argument("--text", required=True, help="training sentences, one a line")
    s.add_argument("--vocab-size", type=int, required=True)
    s.add_argument("--model-prefix", required=True)
    s.add_argument("--model-type", default="bpe", choices=["bpe", "unigram"])
    s.add_argument("--nvv-tags", type=str2bool, default=True)
    s = sub.add_parser("check", help="check a token list (tags atomic, specials)")
    s.add_argument("--token-list", required=True)
    s.add_argument("--token-type", required=True, choices=["bpe", "char"])
    s.add_argument("--bpemodel", default="")
    s.add_argument("--nvv-tags", type=str2bool, default=True)
    a = p.parse_args(argv)
    if a.cmd == "nlsyms":
        write_nlsyms(a.out)
    elif a.cmd == "train-bpe":
        model = train_bpe(a.text, a.vocab_size, a.model_prefix, a.nvv_tags, a.model_type)
        import sentencepiece as spm

        n = spm.SentencePieceProcessor(model_file=model).get_piece_size()
        print(f"tokens: trained {model} ({n} pieces, asked {a.vocab_size})", file=sys.stderr)
    else:
        problems = check(a.token_list, a.token_type, a.bpemodel, a.nvv_tags)
        with open(a.token_list, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if problems:
            for pr in problems:
                print(f"tokens: ERROR: {pr}", file=sys.stderr)
            return 1
        print(f"tokens: {a.token_list}: {n} tokens, ok"
              + (" (16 tags atomic)" if a.nvv_tags else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
