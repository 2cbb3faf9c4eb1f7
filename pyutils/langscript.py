"""Which script a language is written in, and whether that script uses spaces.

Lexical units follow the Track 1 protocol's en/zh split, generalised by
script: languages written with spaces between words count words, languages
written without them (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan) count
characters. The script of a language is CLDR's likely script
(``supplemental/likelySubtags.xml`` of the Debian package ``unicode-cldr-core``,
the same data ICU uses) when that file is installed, else a small built-in
table; a language in neither is assumed to be written with spaces.

Python's ``unicodedata`` has no script property and the ``regex`` module is
not a pinned dependency, so the no-space scripts are recognised by their
Unicode blocks (a short, fixed list below).
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
import xml.etree.ElementTree as ET
from typing import Optional

#: Default location of the CLDR data of the Debian package ``unicode-cldr-core``.
CLDR_DIR_DEFAULT = "/usr/share/unicode/cldr/common"

#: ISO 15924 codes of scripts written without spaces between words.
NO_SPACE_SCRIPTS = frozenset({"Hani", "Hans", "Hant", "Jpan", "Hira", "Kana", "Thai", "Laoo",
                              "Khmr", "Mymr", "Tibt", "Yiii"})

# Fallback when CLDR is not installed: languages usually written in a no-space script.
_NO_SPACE_LANGS_FALLBACK = {"zh": "Hans", "cmn": "Hans", "ja": "Jpan", "yue": "Hant", "wuu": "Hans",
                            "hak": "Hans", "nan": "Hans", "th": "Thai", "lo": "Laoo", "km": "Khmr",
                            "my": "Mymr", "bo": "Tibt", "dz": "Tibt", "shn": "Mymr", "ii": "Yiii"}

# Unicode blocks of the no-space scripts (CJK ideographs and their extensions, kana,
# Thai, Lao, Tibetan, Myanmar, Khmer, Yi, CJK compatibility ideographs, half-width kana).
_NO_SPACE_RANGES = (
    (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF),
    (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF),
    (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x323AF),
)
NO_SPACE_CHAR_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _NO_SPACE_RANGES)
_NO_SPACE_RE = re.compile(f"[{NO_SPACE_CHAR_CLASS}]")


def cldr_dir() -> str:
    """CLDR ``common/`` folder (``$CHORUS_CLDR_DIR`` overrides the Debian location)."""
    return os.environ.get("CHORUS_CLDR_DIR", CLDR_DIR_DEFAULT)


def base_language(lang: str) -> str:
    """``pt_br`` / ``pt-BR`` -> ``pt``."""
    return re.split(r"[_-]", lang.strip().lower(), maxsplit=1)[0]


@functools.lru_cache(maxsize=1)
def _likely_subtags() -> dict:
    path = os.path.join(cldr_dir(), "supplemental", "likelySubtags.xml")
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    return {e.get("from"): e.get("to") for e in root.iter("likelySubtag")}


_CODE_SHAPE = re.compile(r"[a-z]{2,3}([_-][a-z0-9]{2,8})*", re.IGNORECASE)


def language_problem(lang: str) -> Optional[str]:
    """Why ``lang`` is not a language code (``en``, ``zh-CN``, ``yue``, ``pt_br``), or None.

    The code must have the BCP 47 shape (a 2-3 letter language, then subtags)
    and its language must be one CLDR knows (likely subtags or a locale file);
    without CLDR on the machine only the shape is checked.
    """
    if not _CODE_SHAPE.fullmatch(lang.strip()):
        return "is not a language code (like en, zh, zh-CN, yue)"
    base = base_language(lang)
    likely = _likely_subtags()
    if likely and base not in likely and not os.path.isfile(os.path.join(cldr_dir(), "main", f"{base}.xml")):
        return f"names no language CLDR knows ({base!r})"
    return None


def script_of(lang: str) -> Optional[str]:
    """ISO 15924 script of ``lang`` (``ja`` -> ``Jpan``), or None when unknown.

    An explicit script subtag wins (``sr_Latn`` -> ``Latn``); then CLDR's likely
    subtags for the full code and for the base language; then the fallback table.
    """
    parts = re.split(r"[_-]", lang.strip())
    for p in parts[1:]:
        if len(p) == 4 and p.isalpha():
            return p.title()
    likely = _likely_subtags()
    for key in ("_".join(parts).lower(), "_".join([parts[0].lower()] + [p.upper() for p in parts[1:]]),
                parts[0].lower()):
        to = likely.get(key)
        if to:
            for p in to.split("_")[1:]:
                if len(p) == 4:
                    return p
    return _NO_SPACE_LANGS_FALLBACK.get(parts[0].lower())


def writes_without_spaces(lang: str) -> bool:
    """True when ``lang``'s lexical units are characters (its script has no word spaces)."""
    return script_of(lang) in NO_SPACE_SCRIPTS


#: Scripts whose letters a language's G2P reads as words (unicodedata name prefixes).
#: Anything else would be spelt out by espeak-ng in English ("chinese letter") or
#: dropped by pypinyin, i.e. a silent wrong synthesis: such text is refused instead.
#: Languages not listed (forked recipes) are not checked.
G2P_SCRIPTS = {
    "en": ("LATIN",),
    "vi": ("LATIN",),
    "zh": ("CJK", "LATIN", "FULLWIDTH LATIN"),
}


def foreign_letters(text: str, lang: str) -> str:
    """Characters of plain ``text`` (NFC) outside ``lang``'s inventory, each once: letters of
    another script (:data:`G2P_SCRIPTS`) and pictographic symbols (emoji, ``☃``: Unicode
    category So); digits, punctuation and other symbols do not count."""
    scripts = G2P_SCRIPTS.get(lang)
    bad = []
    for ch in unicodedata.normalize("NFC", text):
        cat = unicodedata.category(ch)
        foreign = cat == "So" or (scripts is not None and cat.startswith("L")
                                  and not unicodedata.name(ch, "").startswith(scripts))
        if foreign and ch not in bad:
            bad.append(ch)
    return "".join(bad)


def to_simplified(text: str) -> str:
    """Traditional -> simplified Chinese (OpenCC ``t2s``); Whisper mixes both."""
    return _opencc().convert(text)


@functools.lru_cache(maxsize=1)
def _opencc():
    import opencc

    return opencc.OpenCC("t2s")


def is_no_space_char(ch: str) -> bool:
    """True for a character of a script written without spaces (Han, kana, Thai, ...)."""
    return bool(_NO_SPACE_RE.match(ch))
