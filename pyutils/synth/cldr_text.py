"""Words and phrases of (almost) any language from Unicode CLDR, offline.

Source: the Debian package ``unicode-cldr-core`` (CLDR 41, XML under
``/usr/share/unicode/cldr/common``; ``$CHORUS_CLDR_DIR`` overrides), installed by
``tools/install_system_packages.sh``. Why CLDR: it is the one offline text source
that covers nearly every language espeak-ng speaks (about 700 locales, each in its
own script) with everyday words and phrases written by native speakers: day and
month names, "yesterday / today / tomorrow / next week", names of countries, the
short names of ~1,900 emoji ("dog", "apple", "bicycle") and the language's own
way of writing a list ("A, B und C", "A、B、C", "A, B और C"). Alternatives
considered: Debian word lists (``wngerman``, ``wfrench``, ...) cover ~20 mostly
European languages with bare words; espeak-ng ships only compiled dictionaries
(no readable text); the PyPI package ``babel`` carries the same CLDR data but is
not a dependency here and stores it as pickles.

What is taken (see :func:`vocabulary`):

* ``time``  relative day/week/month/year phrases, weekday and month names;
* ``noun``  emoji names of a fixed list of concrete things (fruit, animals,
  vehicles, household objects): the spoken (``tts``) name when short, else the
  shortest keyword that is part of it;
* ``place`` names of a fixed list of countries;
* the list pattern (separators and the final "and") and the full stop.

Nothing here decides what espeak-ng can pronounce: :mod:`pyutils.synth.langs`
filters the items through the language's espeak-ng voice.
"""

from __future__ import annotations

import functools
import os
import unicodedata
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional

from pyutils.langscript import cldr_dir, writes_without_spaces

# Concrete things (emoji code points as CLDR writes them, without variation selectors).
NOUN_EMOJI = (
    "🍎 🍐 🍊 🍋 🍌 🍉 🍇 🍓 🍒 🍑 🍍 🥕 🌽 🍅 🥔 🍞 🧀 🥚 🍚 🍰 🥛 ☕ 🍵 🍯 🥜 🍄 🌰 🥥 🥝 🥒 "
    "🐶 🐱 🐭 🐰 🦊 🐻 🐼 🐯 🦁 🐮 🐷 🐸 🐵 🐔 🐧 🐦 🦆 🦉 🐴 🐝 🐟 🐬 🐳 🐢 🐍 🐘 🦒 🐪 🐑 🐐 "
    "🚲 🚗 🚌 🚂 🚢 🏠 🌳 🌸 🌹 ⭐ 🌙 🔑 📚 📱 💻 ⌚ 🎸 🥁 🎈 🎁 ⚽ 🧸 👓 👟 👒 ☂ 🧦 🪑 🛏 🚪 "
    "🕯 🧺 🪣 🧹 🔨 🪓 🧲 📷 📻 🔔"
).split()

# Countries (CLDR territory codes), spread over the continents.
PLACE_TERRITORIES = ("FR", "DE", "IT", "ES", "PT", "GB", "IE", "NL", "PL", "GR", "SE", "NO", "FI", "RU",
                     "TR", "EG", "MA", "KE", "NG", "ZA", "IN", "CN", "JP", "KR", "VN", "TH", "ID", "AU",
                     "NZ", "CA", "US", "MX", "BR", "AR", "CL", "PE")

_DAY_KEYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class CldrMissing(LookupError):
    """No CLDR data for the language (or CLDR not installed)."""


def locale_chain(lang: str) -> List[str]:
    """CLDR locale names to read, most specific first: ``pt_pt`` -> ``[pt_PT, pt]``."""
    parts = lang.replace("-", "_").split("_")
    base = parts[0].lower()
    chain = []
    if len(parts) > 1:
        rest = [p.title() if len(p) == 4 else p.upper() for p in parts[1:]]
        chain.append("_".join([base] + rest))
    chain.append(base)
    return chain


@functools.lru_cache(maxsize=16)
def _parse(path: str) -> Optional[ET.Element]:
    try:
        return ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None


def _roots(kind: str, lang: str) -> List[ET.Element]:
    """Parsed ``common/<kind>/<locale>.xml`` files along the locale chain (existing ones)."""
    out = []
    for loc in locale_chain(lang):
        root = _parse(os.path.join(cldr_dir(), kind, f"{loc}.xml"))
        if root is not None:
            out.append(root)
    return out


def _texts(elems) -> List[str]:
    return [unicodedata.normalize("NFC", e.text.strip()) for e in elems
            if e is not None and e.text and e.text.strip() and e.get("alt") is None]


def _first(roots: List[ET.Element], path: str) -> List[str]:
    """Texts at ``path`` in the first locale of the chain that has any."""
    for r in roots:
        t = _texts(r.findall(path))
        if t:
            return t
    return []


def _names(roots, path_fmt: str, keys) -> List[str]:
    out = []
    for k in keys:
        t = _first(roots, path_fmt.format(k))
        if t:
            out.append(t[0])
    return out


def time_phrases(roots) -> List[str]:
    out = []
    for field in ("day", "week", "month", "year"):
        for rel in ("-1", "0", "1"):
            out += _first(roots, f"dates/fields/field[@type='{field}']/relative[@type='{rel}']")[:1]
    cal = "dates/calendars/calendar[@type='gregorian']"
    for ctx in ("stand-alone", "format"):
        days = _names(roots, cal + f"/days/dayContext[@type='{ctx}']/dayWidth[@type='wide']/day[@type='{{}}']",
                      _DAY_KEYS)
        if len(days) == 7:
            out += days
            break
    for ctx in ("stand-alone", "format"):
        months = _names(roots, cal + f"/months/monthContext[@type='{ctx}']/monthWidth[@type='wide']"
                        "/month[@type='{}']", [str(i) for i in range(1, 13)])
        if len(months) == 12:
            out += months
            break
    return out


def place_names(roots) -> List[str]:
    return _names(roots, "localeDisplayNames/territories/territory[@type='{}']", PLACE_TERRITORIES)


def _short(s: str, no_space: bool) -> bool:
    if any(c in s for c in ",;:()|/"):
        return False
    return len(s) <= 8 if no_space else (len(s.split()) <= 2 and len(s) <= 24)


def noun_names(lang: str) -> List[str]:
    """One short name per emoji of :data:`NOUN_EMOJI` (tts name, else a keyword inside it)."""
    roots = _roots("annotations", lang)
    no_space = writes_without_spaces(lang)
    out = []
    for cp in NOUN_EMOJI:
        tts = _first(roots, f"annotations/annotation[@cp='{cp}'][@type='tts']")
        kw = []
        for r in roots:
            for e in r.findall(f"annotations/annotation[@cp='{cp}']"):
                if e.get("type") is None and e.text:
                    kw = [k.strip() for k in e.text.split("|") if k.strip()]
                    break
            if kw:
                break
        cands = []
        if tts:
            cands.append(tts[0])
            inside = sorted((k for k in kw if k in tts[0] and k != tts[0]), key=len, reverse=True)
            cands += inside
        cands += sorted((k for k in kw if k not in cands), key=len)
        cands = [unicodedata.normalize("NFC", c) for c in cands if _short(c, no_space)]
        if cands:
            out.append(cands)  # alternatives, best first (langs.py keeps the first speakable one)
    return out


def list_pattern(roots) -> Dict[str, str]:
    """CLDR's standard list pattern parts: ``start``, ``middle``, ``end``, ``2``."""
    parts = {}
    for r in roots:
        for lp in r.findall("listPatterns/listPattern"):
            if lp.get("type") is None:
                for p in lp.findall("listPatternPart"):
                    if p.text and p.get("type") not in parts:
                        parts[p.get("type")] = p.text
    parts.setdefault("2", "{0}, {1}")
    parts.setdefault("end", parts["2"])
    parts.setdefault("start", "{0}, {1}")
    parts.setdefault("middle", parts["start"])
    return parts


def full_stop(roots) -> str:
    punct = "".join(_first(roots, "characters/exemplarCharacters[@type='punctuation']"))
    for stop in ("。", "।", "۔", "።", "။", "།"):
        if stop in punct:
            return stop
    return "."


def vocabulary(lang: str) -> dict:
    """Raw CLDR material of ``lang``: ``time``/``place`` lists, ``noun`` alternatives,
    list ``pattern`` and ``stop``. Raises :class:`CldrMissing` without a locale file."""
    roots = _roots("main", lang)
    if not roots:
        raise CldrMissing(f"no CLDR locale for {lang!r} under {cldr_dir()}/main")
    return {"time": time_phrases(roots), "place": place_names(roots), "noun": noun_names(lang),
            "pattern": list_pattern(roots), "stop": full_stop(roots)}


def format_list(items: List[str], pattern: Dict[str, str]) -> str:
    """Join items with the language's list pattern (CLDR algorithm)."""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return pattern["2"].replace("{0}", items[0]).replace("{1}", items[1])
    acc = pattern["end"].replace("{0}", items[-2]).replace("{1}", items[-1])
    for i in range(len(items) - 3, 0, -1):
        acc = pattern["middle"].replace("{0}", items[i]).replace("{1}", acc)
    return pattern["start"].replace("{0}", items[0]).replace("{1}", acc)
