"""Tagged-transcript parsing and text normalisation of Track 1 (protocol v1.0.0).

A transcript such as ``"That was [Laugh] really, surprising."`` becomes

- lexical units   ``("that", "was", "really", "surprising")``
- tagged tokens   ``("that", "was", "[laugh]", "really", "surprising")``
- events          ``(Event(tag="laugh", position=2, order=0),)``

Rules (official evaluator):

- A tag is ``\\[([^\\[\\]]*)\\]`` on the raw text; its inside is NFKC-normalised,
  lower-cased, whitespace-collapsed and stripped (``pyutils.tags.normalize_tag_label``).
  Empty -> EMPTY_NVV_TAG; not one of the 16 challenge tags (``conf/nvv_tags.yaml``)
  -> UNSUPPORTED_NVV_TAG; a ``[`` or ``]`` left in the raw text between or after
  tags -> MALFORMED_NVV_TAG. Errors are found left to right.
- Each plain segment between tags is normalised on its own: NFKC, typographic
  apostrophes (U+2018 U+2019 U+201B U+2032 U+FF07) -> ``'``, lower-case.
  A character is *ignored* when it is whitespace or its Unicode category starts
  with P, S, Z or C; English keeps the apostrophe.
- English lexical units: ``[^\\W_]+(?:'[^\\W_]+)*`` over the segment with ignored
  characters turned into spaces. Mandarin lexical units: every character that is
  not ignored.
- An event's position = number of lexical units before it; ``order`` = index of
  the event within its utterance (0, 1, 2, ... in text order).

Decisions where the protocol text is silent (all identical to the official script):

- Digits are letters of a word in English (``"3pm"`` is one unit, ``"2026"`` too);
  the underscore is punctuation (category Pc), so ``"foo_bar"`` is two units.
  Combining marks (category M) are not ignored but are not word characters
  either, so in English they split a word; in Mandarin each one is a unit.
- In Mandarin the apostrophe (ASCII or typographic) is punctuation and ignored.
- A fullwidth bracket (``［laugh］``) is not a tag: the tag pattern runs on the
  raw text, NFKC then turns the brackets into punctuation, so ``laugh`` is text.
- ``lower()`` may lengthen a string (``"İ"`` -> ``"i̇"``); units are counted after it.

Implementation notes (each equivalence is tested against the literal
per-segment procedure, ``parse_tagged_segments``, on random tricky text):
for English, replacing ignored characters by spaces does not change what the
word pattern finds (no ignored character is a word character or the
apostrophe), so the pattern runs on the normalised text directly; the fast
path of :func:`parse_tagged` normalises the whole text once with every tag
replaced by a private-use marker (see there); the "ignored" test is cached
per character inside a ``str.translate`` table.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import accumulate
from typing import Dict, List, NamedTuple, Tuple

from pyutils.scoring.errors import ScoringError
from pyutils.tags import TAG_RE, challenge_tags, normalize_tag_label

LANGUAGES = ("en", "zh")
EN_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
APOSTROPHE_CHARS = "\u2018\u2019\u201b\u2032\uff07"  # mapped to ' before tokenisation
_IGNORED_CATEGORY_INITIALS = frozenset("PSZC")


class Event(NamedTuple):
    """One NVV event anchored at a lexical boundary (sorts by position, order)."""

    position: int
    order: int
    tag: str


class Parsed(NamedTuple):
    lexical: Tuple[str, ...]
    tagged: Tuple[str, ...]
    events: Tuple[Event, ...]


_IGNORED_CACHE: Dict[str, bool] = {}


def is_ignored_char(ch: str, keep_apostrophe: bool = False) -> bool:
    """Whitespace or Unicode category P*, S*, Z*, C* (the apostrophe kept for English)."""
    if keep_apostrophe and ch == "'":
        return False
    hit = _IGNORED_CACHE.get(ch)
    if hit is None:
        hit = ch.isspace() or unicodedata.category(ch)[0] in _IGNORED_CATEGORY_INITIALS
        _IGNORED_CACHE[ch] = hit
    return hit


class _DropIgnored(dict):
    """``str.translate`` table deleting ignored characters, filled on first sight.

    ``translate`` looks every code point up in C; a code point seen for the
    first time goes through ``__missing__`` once and is cached.
    """

    def __missing__(self, cp: int):
        value = None if is_ignored_char(chr(cp)) else cp
        self[cp] = value
        return value


_DROP_IGNORED = _DropIgnored()
_APOSTROPHE_RE = re.compile(f"[{APOSTROPHE_CHARS}]")
# ASCII bytes: letters/digits kept, everything else a space (for the fast path).
_ASCII_WORD_BYTES = bytes(c if chr(c).isalnum() and c < 128 else 32 for c in range(256))
_unicode_normalize = unicodedata.normalize
_is_normalized = unicodedata.is_normalized


class _NfkcChar(dict):
    """``str.translate`` table: code point -> NFKC of that character alone."""

    def __missing__(self, cp: int):
        value = _unicode_normalize("NFKC", chr(cp))
        self[cp] = value
        return value


_NFKC_CHAR = _NfkcChar()
# ASCII bytes: letters, digits, the apostrophe and \x01 kept, every other byte a space.
_ASCII_EN_BYTES = bytes(c if (c < 128 and chr(c).isalnum()) or c in (0x27, 0x01) else 0x20 for c in range(256))


# The blocks most transcripts are made of: ASCII and Latin-1, general punctuation, CJK
# symbols and punctuation, CJK ideographs, half- and full-width forms; tables of their
# characters (made here once, ~1 ms) give the fast paths of NFKC (below) and of deleting
# ignored characters (_drop_ignored). The ideographs are checked as one string: all
# letters, so none is ignored (else each is looked at); the NFKC table needs no such
# care (_nfkc_fast checks its result).
_COMMON_BLOCKS = ((0x0000, 0x00FF), (0x2000, 0x206F), (0x3000, 0x303F), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))
_SMALL_BLOCKS = [block for block in _COMMON_BLOCKS if block != (0x4E00, 0x9FFF)]
_IDEOGRAPHS_ARE_LETTERS = "".join(map(chr, range(0x4E00, 0xA000))).isalpha()


def _ranges_class(ranges, negate: bool = False) -> str:
    """A regex character class of code point ranges (first, last)."""
    body = "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    return f"[{'^' if negate else ''}{body}]"


def _char_class(code_points) -> str:
    """A regex character class of sorted code points (runs written as ranges)."""
    ranges = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return _ranges_class(ranges)


_OUTSIDE_COMMON = re.compile(_ranges_class(_COMMON_BLOCKS, negate=True))
_COMMON_NFKC = {c: n for a, b in _SMALL_BLOCKS for c in map(chr, range(a, b + 1))
                for n in (_unicode_normalize("NFKC", c),) if n != c}
_COMMON_NFKC_CHANGED = re.compile(_char_class(sorted(map(ord, _COMMON_NFKC))))


def _nfkc(text: str) -> str:
    # English: is_normalized is a quick check, normalize() is fast on Latin text
    return text if _is_normalized("NFKC", text) else _unicode_normalize("NFKC", text)


def _common_nfkc(match: "re.Match") -> str:
    return _COMMON_NFKC[match.group()]


def _nfkc_fast(text: str) -> str:
    """NFKC of ``text``; character by character when that is provably the same.

    With t = the concatenation of NFKC(c) over the characters c of s:
    NFKD(NFKC(c)) = NFKD(c), so NFKD(t) = NFKD(s) and NFKC(t) = NFKC(s); if t
    is already normalised, t = NFKC(t) = NFKC(s). Otherwise normalise s whole.
    t is made by one regex substitution of the few characters NFKC changes when
    the text is all in the common blocks (CJK text with full-width punctuation,
    English with typographic punctuation: several times faster than
    ``unicodedata.normalize``), else through a per-character translate table.
    """
    if _is_normalized("NFKC", text):
        return text
    if _OUTSIDE_COMMON.search(text) is None:
        t = _COMMON_NFKC_CHANGED.sub(_common_nfkc, text)
    else:
        t = text.translate(_NFKC_CHAR)
    return t if _is_normalized("NFKC", t) else _unicode_normalize("NFKC", text)


def lexical_units(segment: str, language: str) -> List[str]:
    """Lexical units of one plain (tag-free) segment."""
    if language == "en":
        if segment.isascii() and "'" not in segment:
            # Same result as the word pattern: in ASCII, [^\W_] is [A-Za-z0-9]
            # and NFKC/apostrophe mapping change nothing.
            return segment.lower().encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()
        return EN_WORD_RE.findall(_APOSTROPHE_RE.sub("'", _nfkc(segment)).lower())
    if language == "zh":
        # Apostrophes are ignored in Mandarin whatever their form, but the
        # mapping still matters before lower(): ``'`` is case-ignorable for the
        # final-sigma rule and the prime is not.
        return list(_drop_ignored(_APOSTROPHE_RE.sub("'", _nfkc_fast(segment)).lower()))
    raise ValueError(f"unsupported language {language!r}")


_CHALLENGE = None
_TAG_CACHE: Dict[str, object] = {}
_VALID_TAG: Dict[str, str] = {}  # the raw labels of _TAG_CACHE that are valid challenge tags


def _challenge_set() -> frozenset:
    global _CHALLENGE
    if _CHALLENGE is None:
        _CHALLENGE = frozenset(challenge_tags())
    return _CHALLENGE


def canonical_tag(raw: str, inventory: frozenset = None) -> str:
    """Normalised tag label; raises EMPTY_NVV_TAG / UNSUPPORTED_NVV_TAG."""
    if inventory is None:
        hit = _TAG_CACHE.get(raw)
        if hit is not None:
            if isinstance(hit, str):
                return hit
            raise ScoringError(*hit)
    tag = normalize_tag_label(raw)
    allowed = _challenge_set() if inventory is None else inventory
    if not tag:
        err = ("EMPTY_NVV_TAG", "empty NVV tag '[]' is not allowed")
    elif tag not in allowed:
        what = "one of the 16 challenge tags" if inventory is None else "in the selected tag inventory"
        err = ("UNSUPPORTED_NVV_TAG", f"tag [{tag}] is not {what}")
    else:
        err = None
    if inventory is None and len(_TAG_CACHE) < 100000:
        _TAG_CACHE[raw] = err or tag
        if not err:
            _VALID_TAG[raw] = tag
    if err:
        raise ScoringError(*err)
    return tag


class _DropIgnoredKeepMarker(_DropIgnored):
    def __missing__(self, cp: int):
        value = cp if cp == _MARKER_CP else super().__missing__(cp)
        self[cp] = value
        return value


_MARKER = "\ue000"  # private use (category Co): ignored, so never a lexical unit itself
_MARKER_CP = ord(_MARKER)
_DROP_KEEP_MARKER = _DropIgnoredKeepMarker()

# Deleting the ignored characters of a text made only of characters of the common blocks
# is one regex substitution (its class lists every ignored character of the blocks, by
# the rule of is_ignored_char), several times faster than ``str.translate`` through a
# dict; any other text uses the translate tables above.
_COMMON_IGNORED = re.compile(_char_class(
    [c for a, b in (_SMALL_BLOCKS if _IDEOGRAPHS_ARE_LETTERS else _COMMON_BLOCKS) for c in range(a, b + 1)
     if chr(c).isspace() or unicodedata.category(chr(c))[0] in "PSZC"]))
_OUTSIDE_COMMON_OR_MARKER = re.compile(_ranges_class(_COMMON_BLOCKS + ((_MARKER_CP, _MARKER_CP),), negate=True))


def _drop_ignored(text: str, keep_marker: bool = False) -> str:
    """``text`` without its ignored characters (the marker kept with ``keep_marker``)."""
    if (_OUTSIDE_COMMON_OR_MARKER if keep_marker else _OUTSIDE_COMMON).search(text) is None:
        return _COMMON_IGNORED.sub("", text)
    return text.translate(_DROP_KEEP_MARKER if keep_marker else _DROP_IGNORED)
_CAPITAL_SIGMA = "\u03a3"


def parse_tagged(text: str, language: str, inventory: frozenset = None) -> Parsed:
    """Parse and validate one tagged transcript (see module docstring).

    ``inventory``: allowed normalised labels (default: the 16 challenge tags).
    Raises :class:`ScoringError` without a location; callers add file:line.
    The work is done by :func:`parse_units`; this adds the tagged tokens and
    :class:`Event` objects.
    """
    lexical, positions, tags = parse_units(text, language, inventory)
    lexical = tuple(lexical)
    if not tags:
        return Parsed(lexical, lexical, ())
    new = tuple.__new__
    events = []
    tagged: List[str] = []
    done = 0
    for k, (pos, tag) in enumerate(zip(positions, tags)):
        events.append(new(Event, (pos, k, tag)))
        tagged += lexical[done:pos]
        tagged.append(f"[{tag}]")
        done = pos
    tagged += lexical[done:]
    return new(Parsed, (lexical, tuple(tagged), tuple(events)))


def _tag_names(labels: List[str], inventory: frozenset = None) -> List[str]:
    """Canonical names of raw tag labels (cached for the challenge tags); raises tag errors."""
    if inventory is None:
        tags = list(map(_VALID_TAG.get, labels))
        if None not in tags:
            return tags
    return [canonical_tag(label, inventory) for label in labels]


def _joined(parts: List[List[str]]):
    """Word lists of the segments between tags -> (all words, the tag positions)."""
    lexical = parts[0]
    positions = []
    for part in parts[1:]:
        positions.append(len(lexical))
        lexical += part
    return lexical, positions


def _units_of(parsed: Parsed):
    return list(parsed.lexical), [e.position for e in parsed.events], [e.tag for e in parsed.events]


def parse_units(text: str, language: str, inventory: frozenset = None):
    """``(lexical units, event positions, event tags)`` of one tagged transcript.

    :func:`parse_tagged` without building tagged tokens and events (the
    scorer's fast form): the units are a list of words (English) or a string
    of one-character units (Mandarin); the k-th event sits at boundary
    ``positions[k]`` (units before it). Same validation and errors.

    Fast path: ``TAG_RE.split`` gives segments and labels in one C call; the
    segments are joined with a private-use marker (category Co: ignored,
    combining class 0, composes with nothing), so NFKC of the joined text is
    the NFKC of each segment joined by markers, and lower-casing the whole is
    lower-casing each segment unless a capital sigma (the one context rule of
    ``str.lower``) is present. Texts holding the marker or a capital sigma use
    :func:`parse_tagged_segments`, the literal per-segment procedure.
    """
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}")
    if "[" not in text and "]" not in text:  # no tags at all
        return lexical_units(text, language), [], []
    if language == "en" and text.isascii() and "\x01" not in text:
        return _ascii_english_units(text, inventory)
    if _MARKER in text or _CAPITAL_SIGMA in text:
        return _units_of(parse_tagged_segments(text, language, inventory))
    pieces = TAG_RE.split(text)
    body = _MARKER.join(pieces[0::2])
    if "[" in body or "]" in body:
        # a stray bracket: find the first error in text order, as the official script
        return _units_of(parse_tagged_segments(text, language, inventory))
    tags = _tag_names(pieces[1::2], inventory)
    if language == "zh":
        units = _drop_ignored(_APOSTROPHE_RE.sub("'", _nfkc_fast(body)).lower(), keep_marker=True)
        parts = units.split(_MARKER)
        if len(parts) != len(tags) + 1:  # pragma: no cover - NFKC never creates or removes the marker
            return _units_of(parse_tagged_segments(text, language, inventory))
        # one character per unit
        return units.replace(_MARKER, ""), list(accumulate(map(len, parts[:-1]))), tags
    body = _APOSTROPHE_RE.sub("'", _nfkc(body)).lower()
    findall = EN_WORD_RE.findall
    ascii_body = body.replace(_MARKER, "\x01")
    if ascii_body.isascii() and "\x01" not in text:
        # ASCII: letters, digits, apostrophes and the \x01 marker kept, every
        # other byte a space (one C call); a part without an apostrophe then
        # splits on whitespace exactly into what the word pattern finds.
        ascii_body = ascii_body.encode("ascii").translate(_ASCII_EN_BYTES).decode("ascii")
        parts = [findall(part) if "'" in part else part.split() for part in ascii_body.split("\x01")]
    else:
        parts = [findall(part) for part in body.split(_MARKER)]
    if len(parts) != len(tags) + 1:  # pragma: no cover - NFKC never creates or removes the marker
        return _units_of(parse_tagged_segments(text, language, inventory))
    return _joined(parts) + (tags,)


def _ascii_english_units(text: str, inventory: frozenset = None):
    """:func:`parse_units` of an ASCII English text without ``\\x01``: NFKC and the
    apostrophe mapping change no ASCII character, and the segments are joined
    with ``\\x01`` (kept by the byte table, then split on) instead of the marker."""
    pieces = TAG_RE.split(text)
    body = "\x01".join(pieces[0::2])
    if "[" in body or "]" in body:
        return _units_of(parse_tagged_segments(text, "en", inventory))
    tags = _tag_names(pieces[1::2], inventory)
    findall = EN_WORD_RE.findall
    body = body.lower().encode("ascii").translate(_ASCII_EN_BYTES).decode("ascii")
    parts = [findall(part) if "'" in part else part.split() for part in body.split("\x01")]
    return _joined(parts) + (tags,)


def parse_tagged_segments(text: str, language: str, inventory: frozenset = None) -> Parsed:
    """The literal procedure: tag by tag, each segment normalised on its own."""
    lexical: List[str] = []
    tagged: List[str] = []
    events: List[Event] = []
    cursor = 0
    for match in TAG_RE.finditer(text):
        segment = text[cursor:match.start()]
        if "[" in segment or "]" in segment:
            raise ScoringError("MALFORMED_NVV_TAG", "stray, unmatched or nested square bracket before a tag")
        units = lexical_units(segment, language)
        lexical += units
        tagged += units
        tag = canonical_tag(match.group(1), inventory)
        events.append(Event(len(lexical), len(events), tag))
        tagged.append(f"[{tag}]")
        cursor = match.end()
    segment = text[cursor:]
    if "[" in segment or "]" in segment:
        raise ScoringError("MALFORMED_NVV_TAG", "stray or unmatched square bracket")
    units = lexical_units(segment, language)
    lexical += units
    tagged += units
    return Parsed(tuple(lexical), tuple(tagged), tuple(events))
