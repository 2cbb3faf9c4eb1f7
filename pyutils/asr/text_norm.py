"""Per-language text normalisation applied to training/reference text before tokenising.

>>> FORK HOOK <<<  A new-language recipe (utils/fork_recipe.sh) only needs a function
here: register it with ``@register("xx")``. Until then ``generic`` is used, driven by
Unicode categories and the script alone: NFKC, lower-case, punctuation (P*) and
symbols (S*) removed, control/format characters (C*) removed except the zero-width
(non-)joiners that Persian and Indic spelling needs, combining marks (M*) kept (they
are part of Devanagari, Arabic, Thai... words), apostrophes kept inside words only,
whitespace collapsed, and no space next to a character of a script written without
spaces (Han, kana, Thai, ...). A language needs its own function when its spelling
has variants the model should not have to learn (numbers, abbreviations, optional
diacritics, traditional vs simplified characters, ...). Tags (``[laugh]``) are
protected: normalisers see only the text between tags.

Lexical units (:func:`char_units`) follow the Track 1 protocol's en/zh split by
script: characters for languages written without spaces, words otherwise
(``pyutils.langscript``).

The same normaliser runs on training text and is harmless on hypotheses, so the
model learns the normalised form; the Track 1 scorer normalises both sides itself.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable, Dict

from pyutils.asr.tags_text import BRACKET_RE
from pyutils.langscript import is_no_space_char, writes_without_spaces

Normaliser = Callable[[str], str]
_REGISTRY: Dict[str, Normaliser] = {}

_JOINERS = "\u200c\u200d"   # ZWNJ/ZWJ (category Cf) are spelling in Persian and Indic scripts


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


def _drop_controls(text: str) -> str:
    return "".join(c for c in text if not unicodedata.category(c).startswith("C") or c in _JOINERS
                   or c.isspace())


@register("generic")
def generic(text: str) -> str:
    """Any language: Unicode categories and script only (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u02bc", "'")
    text = _drop_punct(_drop_controls(text), keep="'")
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    return remove_cjk_spaces(" ".join(text.split()))


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
    """Drop spaces next to characters of no-space scripts (CJK, Thai, ...) or tags;
    keep them between words of other scripts."""
    tokens = re.split(r"(\s+)", text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.isspace():
            left = tokens[i - 1] if i > 0 else ""
            right = tokens[i + 1] if i + 1 < len(tokens) else ""
            l_c, r_c = left[-1:] , right[:1]
            if is_no_space_char(l_c or "a") or is_no_space_char(r_c or "a") or l_c == "]" or r_c == "[":
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
    if char_units(lang):
        return remove_cjk_spaces(joined)
    return joined


#: Languages with character units whatever CLDR says (kept for callers that test membership).
NO_SPACE_LANGS = {"zh", "ja", "yue"}


def char_units(lang: str) -> bool:
    """True when ``lang``'s lexical units are characters (script written without spaces)."""
    return lang in NO_SPACE_LANGS or writes_without_spaces(lang)
