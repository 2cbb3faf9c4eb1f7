"""Tagged transcripts: official form <-> ESPnet-internal form, and repair.

Official Track 1 text writes a non-verbal vocalisation (NVV) as ``[label]`` with one of
the 16 challenge labels, e.g. ``That was surprising. [laugh]``. Inside ESPnet a tag must
be one token; labels with a space (``[throat clearing]``) would be split by tokenizers,
so they are written with ``_`` instead (``[throat_clearing]``) and mapped back after
decoding.
"""

from __future__ import annotations

import functools
import re
from typing import Dict, Iterable, List, Optional

from pyutils.tags import challenge_tags, normalize_tag_label

BRACKET_RE = re.compile(r"\[([^\[\]]*)\]")
# ESPnet special tokens that may leak into a 1-best string.
SPECIAL_TOKENS = ("<blank>", "<unk>", "<sos/eos>", "<sos>", "<eos>", "<space>")


def internal_label(tag: str) -> str:
    """``throat clearing`` -> ``throat_clearing`` (one token inside ESPnet)."""
    return "_".join(normalize_tag_label(tag).split())


@functools.lru_cache(maxsize=None)
def _label_maps() -> tuple:
    tags = challenge_tags()
    to_int = {t: internal_label(t) for t in tags}
    # Lookup of any spelling (case, '_', '-', spaces) to the official label.
    lookup = {}
    for t in tags:
        lookup[_loose_key(t)] = t
    return to_int, lookup


def _loose_key(label: str) -> str:
    return " ".join(re.sub(r"[_\-]", " ", normalize_tag_label(label)).split())


def official_label(label: str) -> Optional[str]:
    """The challenge label for any spelling of it (``Throat_Clearing`` ...), else None."""
    return _label_maps()[1].get(_loose_key(label))


def internal_tokens() -> List[str]:
    """The 16 tags as ESPnet tokens, e.g. ``[laugh]``, ``[throat_clearing]``."""
    return [f"[{internal_label(t)}]" for t in challenge_tags()]


def to_internal(text: str, strict: bool = True) -> str:
    """Rewrite every challenge tag of ``text`` in its internal form.

    A bracketed label that is not a challenge tag raises ValueError when ``strict``
    (training text must be clean), else it is left as it is.
    """

    def sub(m: re.Match) -> str:
        label = official_label(m.group(1))
        if label is None:
            if strict:
                raise ValueError(f"[{m.group(1)}] is not one of the 16 challenge tags")
            return m.group(0)
        return f"[{internal_label(label)}]"

    return BRACKET_RE.sub(sub, text)


def from_internal(text: str) -> str:
    """Map internal tags back to the official form (``[throat_clearing]`` -> ``[throat clearing]``)."""

    def sub(m: re.Match) -> str:
        label = official_label(m.group(1))
        return f"[{label}]" if label is not None else m.group(0)

    return BRACKET_RE.sub(sub, text)


def strip_tags(text: str) -> str:
    """Remove every bracketed tag (for a tag-free ASR, ``--nvv_tags false``)."""
    return " ".join(BRACKET_RE.sub(" ", text).split())


def repair(text: str) -> str:
    """Make a decoded string a valid official Track 1 transcript.

    - internal tags and any spelling of a challenge label -> ``[label]``;
    - a bracketed label that is no challenge tag is dropped (the validator rejects it);
    - stray ``[`` / ``]`` and ESPnet special tokens are removed; whitespace collapsed;
    - consecutive duplicates of one tag are kept (they are legitimate events).
    The result may be empty (the model produced nothing usable): that is valid.
    """
    for tok in SPECIAL_TOKENS:
        text = text.replace(tok, " ")
    # Valid tags become placeholders, every other bracket goes, then tags come back.
    kept: List[str] = []

    def keep(m: re.Match) -> str:
        label = official_label(m.group(1))
        if label is None:
            return " "
        kept.append(f"[{label}]")
        return f" \x00{len(kept) - 1}\x00 "

    text = BRACKET_RE.sub(keep, text.replace("\x00", " "))
    text = text.replace("[", " ").replace("]", " ")
    text = re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)
    return " ".join(text.split())


def tags_in(text: str) -> List[str]:
    """Official labels of the challenge tags found in ``text``, in order."""
    found = []
    for m in BRACKET_RE.finditer(text):
        label = official_label(m.group(1))
        if label is not None:
            found.append(label)
    return found


def tag_counts(lines: Iterable[str]) -> Dict[str, int]:
    counts: Dict[str, int] = {t: 0 for t in challenge_tags()}
    for line in lines:
        for t in tags_in(line):
            counts[t] += 1
    return counts
