"""Per-language text normalisation applied to training/reference text before tokenising.

>>> FORK HOOK <<<  A new-language recipe (utils/fork_recipe.sh) only needs a function
here: register it with ``@register("xx")``. Until then ``generic`` is used (NFKC,
lower-case, punctuation removed, whitespace collapsed), which is fine for most
alphabetic scripts. Tags (``[laugh]``) are protected: normalisers see only the text
between tags.

The same normaliser runs on training text and is harmless on hypotheses, so the
model learns the normalised form; the Track 1 scorer normalises both sides itself.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable, Dict

from pyutils.asr.tags_text import BRACKET_RE

Normaliser = Callable[[str], str]
_REGISTRY: Dict[str, Normaliser] = {}

# Characters written without spaces between words.
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff"
_CJK_RE = re.compile(f"[{_CJK}]")


def register(lang: str) -> Callable[[Normaliser], Normaliser]:
    def deco(fn: Normaliser) -> Normaliser:
        _REGISTRY[lang] = fn
        return fn

    return deco


def _drop_punct(text: str, keep: str = "") -> str:
    return "".join(
        " " if unicodedata.category(c).startswith(("P", "S")) and c not in keep else c
        for c in text
    )


@register("generic")
def generic(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_drop_punct(text, keep="'").split())


@register("en")
def english(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'")
    text = _drop_punct(text, keep="'")
    # Apostrophes only inside words (don't, it's); quotes around words go.
    text = re.sub(r"(?<![a-z0-9])'|'(?![a-z0-9])", " ", text)
    return " ".join(text.split())


@register("zh")
def mandarin(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = " ".join(_drop_punct(text).split())
    return remove_cjk_spaces(text)


@register("vi")
def vietnamese(text: str) -> str:
    # NFC keeps precomposed tone marks (NFKC would too, but be explicit).
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFKC", text)).lower()
    return " ".join(_drop_punct(text, keep="'").split())


def remove_cjk_spaces(text: str) -> str:
    """Drop spaces next to CJK characters or tags; keep them between Latin words."""
    tokens = re.split(r"(\s+)", text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.isspace():
            left = tokens[i - 1] if i > 0 else ""
            right = tokens[i + 1] if i + 1 < len(tokens) else ""
            l_c, r_c = left[-1:] , right[:1]
            if _CJK_RE.match(l_c or "a") or _CJK_RE.match(r_c or "a") or l_c == "]" or r_c == "[":
                continue
            out.append(" ")
        else:
            out.append(tok)
    return "".join(out).strip()


def get(lang: str) -> Normaliser:
    """The normaliser of ``lang`` (falls back to ``generic``)."""
    return _REGISTRY.get(lang, _REGISTRY["generic"])


def normalise(text: str, lang: str) -> str:
    """Normalise the text between tags; tags are kept verbatim with one space around."""
    fn = get(lang)
    parts = []
    pos = 0
    for m in BRACKET_RE.finditer(text):
        parts.append(fn(text[pos:m.start()]))
        parts.append(m.group(0))
        pos = m.end()
    parts.append(fn(text[pos:]))
    joined = " ".join(p for p in parts if p)
    if lang in NO_SPACE_LANGS:
        return remove_cjk_spaces(joined)
    return joined


NO_SPACE_LANGS = {"zh", "ja", "yue"}
