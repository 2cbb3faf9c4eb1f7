"""The validated Track 1 reference, held as integer codes (the scorer keeps nothing else of it)."""

from __future__ import annotations

from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from pyutils.scoring.errors import ScoringError
from pyutils.scoring.textnorm import LANGUAGES, Event, Parsed, parse_units
from pyutils.scoring.track1_rows import check_reference_row, duplicate_error

UNKNOWN_CODE = 0xFFFFFFFF  # a submission token that is in no reference: equal to no reference code


class Vocabulary(dict):
    """token -> code; a token never seen in the reference looks up as UNKNOWN_CODE."""

    def __missing__(self, token: str) -> int:
        return UNKNOWN_CODE


class ReferenceTable:
    """The validated reference, held compactly: what scoring needs and no more.

    Per utterance only its lexical units as integer codes (one code per
    distinct unit, after 0..15 for the 16 tags in ``challenge_tags`` order)
    and its events as ``position * 16 + tag code``, each kind in one flat
    ``array``, its line and language stay in memory, plus the utt_id -> row
    map: about 0.3 KB an utterance instead of ~5 KB for parsed tuples of
    strings. Codes give the same edit distances and alignments as the
    strings: only reference-vs-submission token equality matters there, and
    two tokens are equal exactly when their codes are.
    """

    def __init__(self, tags: Sequence[str]) -> None:
        self.tags = list(tags)
        self.n_tags = len(self.tags)
        self.tag_code = {t: k for k, t in enumerate(self.tags)}
        self.vocab = Vocabulary((f"[{t}]", k) for k, t in enumerate(self.tags))
        self.index: Dict[str, int] = {}   # utt_id -> row (file order)
        self.lexical = array("I")
        self.lexical_starts = array("Q", [0])
        self.events = array("Q")
        self.event_starts = array("Q", [0])
        self.lines = array("Q")
        self.langs = bytearray()          # LANGUAGES index
        self.rank = array("Q")            # row -> position in scoring order (set by finish)
        self.n_by_lang = [0] * len(LANGUAGES)

    def load(self, rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]) -> Optional[ScoringError]:
        """Validate and keep every row (fields, language, duplicate, tags, in the official order).

        Returns the first row's error, or None; after an error the rest of the
        rows are still read (a JSON or encoding error further down is raised
        by the reader, and comes first). One loop with local names: it runs
        once per reference utterance.
        """
        vocab, index, lines, langs, n_by_lang = self.vocab, self.index, self.lines, self.langs, self.n_by_lang
        lexical, lexical_starts, events, event_starts = self.lexical, self.lexical_starts, self.events, self.event_starts
        nt, tag_code, lang_code = self.n_tags, self.tag_code, {lang: k for k, lang in enumerate(LANGUAGES)}
        for line, obj in rows:
            try:
                utt_id, lang, text = check_reference_row(obj, path, line)
                first = index.get(utt_id)
                if first is not None:
                    raise duplicate_error(utt_id, lines[first], path, line)
                try:
                    units, positions, tags = parse_units(text, lang)
                except ScoringError as exc:
                    raise exc.located(path, line)
            except ScoringError as exc:
                for _ in rows:
                    pass
                return exc
            codes = list(map(vocab.get, units))  # None for a unit not seen before (rare after a while)
            if None in codes:
                add = vocab.setdefault
                codes = [add(t, len(vocab)) for t in units]
            lexical.extend(codes)
            lexical_starts.append(len(lexical))
            if tags:
                events.extend([p * nt + tag_code[t] for p, t in zip(positions, tags)])
            event_starts.append(len(events))
            index[utt_id] = len(lines)
            lines.append(line)
            k = lang_code[lang]
            langs.append(k)
            n_by_lang[k] += 1
        return None

    def finish(self) -> None:
        """Fix the scoring order: English before Mandarin, utt_id ascending (as the official script)."""
        ids = list(self.index)
        by_id = sorted(range(len(ids)), key=ids.__getitem__)
        del ids
        self.rank = array("Q", [0]) * len(by_id)
        r = 0
        for k in range(len(LANGUAGES)):
            for row in by_id:
                if self.langs[row] == k:
                    self.rank[row] = r
                    r += 1

    def decode_events(self, lexical: List[int], a: int, b: int) -> Parsed:
        """An utterance as a :class:`Parsed` of codes (events carry tag names) from its
        lexical codes and its packed events ``self.events[a:b]``."""
        tagged = lexical[:]
        events = []
        new = tuple.__new__
        nt, tags = self.n_tags, self.tags
        for k, packed in enumerate(self.events[a:b]):
            position, tag = divmod(packed, nt)
            tagged.insert(position + k, tag)  # the k tags before it sit left of it
            events.append(new(Event, (position, k, tags[tag])))
        return new(Parsed, (lexical, tagged, tuple(events)))

    def words(self) -> List[str]:
        """code -> token string (for reports)."""
        return list(self.vocab)
