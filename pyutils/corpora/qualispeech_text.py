"""Read fault time spans out of QualiSpeech's free-text descriptions.

QualiSpeech gives fault times only inside sentences, in many phrasings::

    "There is sound similar to wind in the audio from 0-1.7s"
    "a cheer noise 0-1s"          "bell sound from 0 to 4.8 seconds"
    "pitch distortion ... from 0-3.6s"     "3-3.6s"      "at 2.3s"
    "between 0.5 and 1 s"         "0-1.7s and 3-4s"      "1.2s-2.5s"

and says "no fault" in many ways ("Not noticeable", "not distorted", "Very
smooth", "None", "No noise"). :func:`parse_fault` classifies one description:

``timed``     one or more spans were found (ranges, points, "first/last N s",
              "from N s to the end");
``whole``     the text says the fault lasts the whole clip ("throughout",
              "the entire audio"): span ``[0, duration]``;
``none``      a negative or empty description: no fault;
``untimed``   a fault is described without any time;
``failed``    times are mentioned but could not be read (e.g. an inverted
              range ``3-1s``); no span is produced, the case is reported.

:func:`resolve` turns a parse into ``[[start, end], ...]`` seconds for a clip
of known duration. Policies (documented defaults):

* untimed fault: ``untimed="whole"`` (default) marks the whole clip, as a
  listener who notices a fault but cannot place it hears it overall;
  ``untimed="drop"`` writes no span for it.
* a point ``at 2.3s`` becomes the window ``[t - 0.25, t + 0.25]``
  (``point_halfwidth``), clipped to the clip.
* spans are clipped to ``[0, duration]``, sorted, and overlaps merged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

NUM = r"(\d+(?:\.\d+)?)"
UNIT = r"(?:\s*(ms|milliseconds?|s|secs?|seconds?)\b)"
_B = r"(?<![\w.])"  # number not glued to a word (e.g. 'sys02tts')

END = math.inf  # "until the end of the clip"

_RANGE_BETWEEN = re.compile(rf"\bbetween\s+{_B}{NUM}{UNIT}?\s+and\s+{NUM}{UNIT}?")
_FROM_TO_END = re.compile(rf"\bfrom\s+{_B}{NUM}{UNIT}?\s+(?:to|until|till)\s+the\s+end\b")
_FROM_START_TO = re.compile(
    rf"\bfrom\s+the\s+(?:very\s+)?(?:beginning|start)\s+(?:to|until|till|up\s+to)\s+{NUM}{UNIT}?")
_RANGE = re.compile(
    rf"(\bfrom\s+)?{_B}{NUM}{UNIT}?\s*(?:-|~|\bto\b|\buntil\b|\btill\b|\bthrough\b)\s*{NUM}(?![\d.]){UNIT}?")
_FIRST = re.compile(rf"\b(?:first|initial|opening|beginning)\s+{NUM}{UNIT}")
_LAST = re.compile(rf"\b(?:last|final|closing)\s+{NUM}{UNIT}")
_POINT = re.compile(
    rf"\b(?:at|around|near|about|approximately|roughly)\s+(?:the\s+)?{_B}{NUM}{UNIT}?"
    rf"((?:\s*(?:,|and|&)\s*{NUM}{UNIT}?)*)")
_POINT_MARK = re.compile(rf"{_B}{NUM}{UNIT}\s+mark\b")
_ANY_TIME = re.compile(rf"{_B}\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?)\b")
_LIST_NUM = re.compile(rf"{NUM}{UNIT}?")

_WHOLE = re.compile(
    r"\b(throughout|entire|whole|all (?:the )?(?:way|time|along)|from (?:the )?beginning to "
    r"(?:the )?end|start to finish|continuous(?:ly)?|constant(?:ly)?|persistent(?:ly)?)\b")
_NEGATIVE = [
    re.compile(r"^(?:none|no|nan|n/?a|null|nil|nothing|clean|smooth|fluent|natural|normal|"
               r"good|fine|ok|okay|(?:very\s+|quite\s+)?continuous)[.!]?$"),
    re.compile(r"\bnot\s+(?:very\s+|really\s+|at\s+all\s+)?(?:noticeable|obvious|distorted|"
               r"present|perceptible|audible|detected|detectable|noticed|apparent|noisy)\b"),
    re.compile(r"^(?:there\s+(?:is|are|was|were)\s+)?(?:no|none|nothing)\b"),
    re.compile(r"^(?:very|quite|fairly|relatively|pretty|totally|completely|perfectly|"
               r"overall)?\s*(?:smooth|clean|fluent|natural)\b"),
    re.compile(r"\b(?:no|without(?:\s+any)?)\s+(?:obvious\s+|noticeable\s+|significant\s+|"
               r"apparent\s+|audible\s+|perceptible\s+|any\s+)?(?:background\s+)?"
               r"(?:noise|distortions?|pauses?|unnatural\s+pauses?|faults?|problems?|issues?)\b"),
    re.compile(r"\b(?:imperceptible|inaudible|undistorted|noiseless|noise-free)\b"),
]


@dataclass
class FaultParse:
    status: str                                   # timed | whole | none | untimed | failed
    spans: List[Tuple[float, float]] = field(default_factory=list)   # END allowed as end
    points: List[float] = field(default_factory=list)
    last: List[float] = field(default_factory=list)                  # "last N s"
    note: str = ""


def _sec(value: str, unit: Optional[str]) -> float:
    v = float(value)
    if unit and unit.startswith("m"):
        v /= 1000.0
    return v


def normalise(text: str) -> str:
    t = text.strip().lower()
    t = re.sub(r"[\u2010-\u2015\u2212\uff0d]", "-", t)  # dashes
    t = t.replace("\uff5e", "~").replace("～", "~")
    t = re.sub(r"(\d),(\d)", r"\1.\2", t)  # decimal comma "1,5s"
    t = re.sub(r"(?<=\d)\s*(?:sec\.|s\.)(?=\s|$)", "s ", t)
    return t


def parse_fault(text: Optional[str]) -> FaultParse:
    """Classify one description; see the module docstring."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return FaultParse("none", note="empty")
    t = normalise(str(text))
    if not t or t in ("-", "--"):
        return FaultParse("none", note="empty")
    has_unit = bool(_ANY_TIME.search(t)) or bool(re.search(r"\bseconds?\b", t))
    mask = list(t)
    res = FaultParse("timed")
    bad = []

    def take(m: re.Match) -> None:
        for i in range(m.start(), m.end()):
            mask[i] = " "

    def masked() -> str:
        return "".join(mask)

    for m in _FROM_TO_END.finditer(masked()):
        res.spans.append((_sec(m.group(1), m.group(2)), END))
        take(m)
    for m in _FROM_START_TO.finditer(masked()):
        res.spans.append((0.0, _sec(m.group(1), m.group(2))))
        take(m)
    for m in _RANGE_BETWEEN.finditer(masked()):
        u = m.group(2) or m.group(4)
        res.spans.append((_sec(m.group(1), m.group(2) or u), _sec(m.group(3), m.group(4) or u)))
        take(m)
    for m in _RANGE.finditer(masked()):
        has_from = bool(m.group(1))
        u1, u2 = m.group(3), m.group(5)
        if not (has_from or u1 or u2 or has_unit):
            continue  # "1-2" without any time context: not a time range
        unit = u2 or u1
        a, b = _sec(m.group(2), u1 or unit), _sec(m.group(4), unit)
        if b < a:
            bad.append(m.group(0))
        else:
            res.spans.append((a, b))
        take(m)
    for m in _FIRST.finditer(masked()):
        res.spans.append((0.0, _sec(m.group(1), m.group(2))))
        take(m)
    for m in _LAST.finditer(masked()):
        res.last.append(_sec(m.group(1), m.group(2)))
        take(m)
    for m in _POINT.finditer(masked()):
        unit_seen = m.group(2)
        nums = [(m.group(1), m.group(2))] + [(n.group(1), n.group(2)) for n in
                                             _LIST_NUM.finditer(m.group(3) or "")]
        if not (unit_seen or any(u for _, u in nums) or has_unit):
            continue  # "at 3 places": not a time
        unit = next((u for _, u in reversed(nums) if u), None)
        res.points.extend(_sec(v, u or unit) for v, u in nums)
        take(m)
    for m in _POINT_MARK.finditer(masked()):
        res.points.append(_sec(m.group(1), m.group(2)))
        take(m)

    if res.spans or res.points or res.last:
        if bad:
            res.note = "ignored unreadable range(s): " + "; ".join(bad)
        return res
    if bad:
        return FaultParse("failed", note="inverted range: " + "; ".join(bad))
    if _WHOLE.search(t) and not any(p.search(t) for p in _NEGATIVE):
        return FaultParse("whole")
    if any(p.search(t) for p in _NEGATIVE):
        return FaultParse("none")
    if _ANY_TIME.search(masked()):
        return FaultParse("failed", note="time mentioned but not understood")
    return FaultParse("untimed")


def resolve(parse: FaultParse, duration: Optional[float], untimed: str = "whole",
            point_halfwidth: float = 0.25) -> List[List[float]]:
    """Spans ``[[s, e], ...]`` (seconds, 3 decimals) for a clip of ``duration``.

    ``duration`` None: spans are not clipped and whole-clip faults cannot be
    placed (they yield no span).
    """
    if untimed not in ("whole", "drop"):
        raise ValueError("untimed must be 'whole' or 'drop'")
    spans: List[Tuple[float, float]] = []
    if parse.status == "whole" or (parse.status == "untimed" and untimed == "whole"):
        if duration is not None:
            spans.append((0.0, duration))
    elif parse.status == "timed":
        for s, e in parse.spans:
            if e == END:
                if duration is None:
                    continue
                e = duration
            spans.append((s, e))
        for p in parse.points:
            spans.append((max(0.0, p - point_halfwidth), p + point_halfwidth))
        for n in parse.last:
            if duration is not None:
                spans.append((max(0.0, duration - n), duration))
    out: List[List[float]] = []
    for s, e in sorted(spans):
        if duration is not None:
            s, e = max(0.0, min(s, duration)), max(0.0, min(e, duration))
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [[round(s, 3), round(e, 3)] for s, e in out]
