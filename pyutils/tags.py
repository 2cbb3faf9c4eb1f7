"""NVV tag inventories (challenge, NV-Bench) and corpus label mappings.

Everything is read from ``conf/nvv_tags.yaml`` so that one file defines tags.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Dict, List, Optional

import yaml

from pyutils import CONF_DIR

TAGS_YAML = CONF_DIR / "nvv_tags.yaml"
TAG_RE = re.compile(r"\[([^\[\]]*)\]")


@functools.lru_cache(maxsize=None)
def load_inventory(path: str = str(TAGS_YAML)) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def normalize_tag_label(label: str) -> str:
    """Official Track 1 tag normalisation: NFKC, lower-case, collapse whitespace, strip."""
    return " ".join(unicodedata.normalize("NFKC", label).lower().split())


def challenge_tags() -> List[str]:
    return list(load_inventory()["challenge"])


def nvbench_tags(lang: Optional[str] = None) -> List[str]:
    inv = load_inventory()["nvbench"]
    if lang is not None:
        return list(inv[lang])
    seen: Dict[str, None] = {}
    for labels in inv.values():
        for label in labels:
            seen.setdefault(label, None)
    return list(seen)


def _mapping_key(label: str) -> str:
    return " ".join(re.sub(r"[_\-]", " ", normalize_tag_label(label)).split())


def map_label(corpus: str, label: str) -> Optional[str]:
    """Map a source corpus label to a challenge tag; None when it has no counterpart.

    Raises KeyError for a label the mapping file does not list at all, so that a
    new label in a corpus is noticed instead of silently dropped.
    """
    table = load_inventory()["mapping"][corpus]
    if table == "identity":
        norm = normalize_tag_label(label)
        if norm not in challenge_tags():
            raise KeyError(f"{label!r} is not a challenge tag")
        return norm
    key = _mapping_key(label)
    if key not in table:
        raise KeyError(f"label {label!r} of corpus {corpus!r} is not in {TAGS_YAML}")
    return table[key]


def tag_token(tag: str) -> str:
    """The atomic token written in transcripts, e.g. ``[throat clearing]``."""
    return f"[{tag}]"
