"""Put timed NVV events into a timed transcript: the tag goes to the nearest unit boundary.

Track 1 scores an event by its *position*: the number of lexical units before it
(English: words, Mandarin: characters), counted by the official tokenisation
(:func:`pyutils.scoring.textnorm.lexical_units`, used here as is). So placing an event
means choosing a boundary ``k`` in ``0..N`` of the ``N`` lexical units of the transcript.

Method. Each recognised word ``w_i`` (text, start, end) holds ``n_i`` lexical units
(0 for punctuation, 2 for "twenty-five", one per character of a Mandarin token); its time
span is split into ``n_i`` equal parts, giving each unit ``j`` a span ``[s_j, e_j]``.
Boundary ``k`` owns the gap ``G_k = [e_{k-1}, s_k]`` (``G_0 = (-inf, s_0]``,
``G_N = [e_{N-1}, +inf)``; when timestamps overlap, ``e_{k-1} > s_k``, the gap is their
midpoint). An event ``(tag, start, end)`` is placed at

    k* = argmin_k dist(t, G_k),    t = (start + end) / 2,

the distance of a point to an interval being 0 inside it. So an event in a pause goes to
that pause; an event whose centre falls inside a unit goes to the nearer edge of that unit
(a tie goes to the boundary after it). Events at the same boundary keep their time order.
No words: every event at position 0.

Rendering: English tags are written with spaces around (``surprising. [laugh]``),
Mandarin ones without (``你好[laugh]世界``); a boundary inside one recognised word (a
Mandarin token of several characters, a hyphenated word) splits the word's text at the
first character offset whose prefix holds exactly the units before the boundary.
:func:`tagged_transcript` checks its result with the scorer's own parser
(:func:`pyutils.scoring.textnorm.parse_units`): every event is at the position chosen.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import List, Sequence, Tuple

from pyutils.asr.longform import Word
from pyutils.asr.nvv_words import Event
from pyutils.scoring.textnorm import lexical_units, parse_units

_INF = float("inf")


def unit_spans(words: Sequence[Word], lang: str) -> Tuple[List[int], List[Tuple[float, float]]]:
    """Units per word and the ``(start, end)`` of every lexical unit, in order."""
    counts, spans = [], []
    for w in words:
        n = len(lexical_units(w.text, lang))
        counts.append(n)
        step = (w.end - w.start) / n if n else 0.0
        spans.extend((w.start + j * step, w.start + (j + 1) * step) for j in range(n))
    return counts, spans


def place(words: Sequence[Word], events: Sequence[Event], lang: str) -> List[Tuple[int, Event]]:
    """``(position, event)`` for each event, in text order (position, then time)."""
    _, spans = unit_spans(words, lang)
    starts = [s for s, _ in spans]
    ordered = _is_sorted(starts)
    placed = [(_boundary(0.5 * (e.start + e.end), spans, starts, ordered), e) for e in events]
    return sorted(placed, key=lambda pe: (pe[0], pe[1].start, pe[1].end))


def _is_sorted(starts) -> bool:
    return all(a <= b for a, b in zip(starts, starts[1:]))


def _boundary(t: float, spans, starts, ordered: bool) -> int:
    n = len(spans)
    if n == 0:
        return 0
    if ordered:
        # sorted starts: only the gaps around the unit starting nearest t can win
        centre = bisect_left(starts, t)
        candidates = range(max(0, centre - 2), min(n, centre + 2) + 1)
    else:
        candidates = range(n + 1)
    best, best_d = 0, _INF
    for k in candidates:
        lo = spans[k - 1][1] if k > 0 else -_INF
        hi = spans[k][0] if k < n else _INF
        if lo > hi:
            lo = hi = (lo + hi) / 2
        d = 0.0 if lo <= t <= hi else min(abs(t - lo), abs(t - hi))
        if d < best_d or (d == best_d and k > best):
            best, best_d = k, d
    return best


def _split_at(text: str, m: int, lang: str) -> int:
    """First char offset ``j`` with ``units(text[:j]) == m`` and ``units(text[j:]) == rest``."""
    total = len(lexical_units(text, lang))
    for j in range(1, len(text)):
        if len(lexical_units(text[:j], lang)) == m and len(lexical_units(text[j:], lang)) == total - m:
            return j
    return len(text)


def render(words: Sequence[Word], placed: Sequence[Tuple[int, Event]], lang: str) -> str:
    """The tagged transcript: word texts joined, ``[tag]`` at each placed position."""
    counts, _ = unit_spans(words, lang)
    sep = " " if lang != "zh" else ""
    by_pos: dict = {}
    for k, e in placed:
        by_pos.setdefault(k, []).append(f"{sep}[{e.tag}]{sep}")
    pieces: List[str] = []
    done = 0  # units emitted so far
    prev = ""
    for w, n in zip(words, counts):
        text = w.text
        if prev and not text[:1].isspace() and len(lexical_units(prev + text, lang)) != \
                len(lexical_units(prev, lang)) + n:
            text = " " + text  # joined, the two words would merge into one unit ("don" + "t")
        prev = w.text
        inner = [k for k in sorted(by_pos) if done <= k < done + n]
        cut = 0
        for k in inner:
            j = cut + _split_at(text[cut:], k - done - len(lexical_units(text[:cut], lang)), lang) if k > done else 0
            pieces.append(text[cut:j])
            pieces.extend(by_pos.pop(k))
            cut = j
        pieces.append(text[cut:])
        done += n
    for k in sorted(by_pos):
        pieces.extend(by_pos[k])
    return " ".join("".join(pieces).split()) if lang != "zh" else "".join(pieces).strip()


def tagged_transcript(words: Sequence[Word], events: Sequence[Event], lang: str) -> str:
    """:func:`place` + :func:`render`, checked with the scorer's parser (AssertionError if not exact)."""
    unit_lang = lang if lang in ("zh", "en") else "en"
    placed = place(words, events, unit_lang)
    text = render(words, placed, unit_lang)
    _, positions, tags = parse_units(text, unit_lang)
    want = [(k, e.tag) for k, e in placed]
    if list(zip(positions, tags)) != want:
        raise AssertionError(f"placement check failed: {text!r} has {list(zip(positions, tags))}, wanted {want}")
    return text
