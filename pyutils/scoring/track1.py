"""NVVSpeech Challenge (ISCSLP 2026) Track 1 score, official protocol v1.0.0.

Per language (en: words, collar 2; zh: characters, collar 5):

- ``F1_micro``: per tag, one-to-one matching of reference events and predicted
  events mapped into reference coordinates (|p-g| <= collar); TP pooled over
  tags and utterances, FP = #pred - TP, FN = #ref - TP; P, R, F1 (0 when a
  denominator is 0).
- ``mNTD``: mean over reference utterances with >= 1 event of
  cost(monotone event alignment) / max(#ref, #pred), clipped to [0, 1]
  (0 when no utterance has an event).
- ``tagged_transcript_error`` (WER en / CER zh): sum of Levenshtein distances
  between tagged-token sequences / sum of reference tagged tokens.
- ``Track1Score = 100 * [0.70 F1 + 0.20 (1 - mNTD) + 0.10 (1 - min(Err, 1))]``
  clipped to [0, 100] and rounded to 12 decimals (as the official script);
  ``FinalTrack1Score = (ZH + EN) / 2`` (rounded to 12 decimals).

Parsing/normalisation: :mod:`pyutils.scoring.textnorm`; alignment, matching
and mNTD: :mod:`pyutils.scoring.align`.

Decisions (where the brief or protocol leaves room; documented for users):

- *One language only*: the official script refuses a reference without both
  languages; here a reference with one language is scored for that language,
  the other's keys are ``null`` and ``FinalTrack1Score`` equals that
  language's score (``languages_scored`` and ``final_score_definition`` say so).
- ``language`` values are stripped and lower-cased before the check (as the
  official script), so ``" EN"`` is English; ``utt_id`` values are stripped.
- Validation order follows the official script: reference rows in file
  order (fields, language, duplicates, tags), then submission rows
  (fields, duplicates), then the id sets, then the submission's tags in
  scoring order (English before Mandarin, utt_id ascending). The first
  problem found is reported with its file and line.
- A language whose reference has no tagged token at all cannot give a
  tagged error rate: EMPTY_REFERENCE_TOKENS (as the official script).
- ``order`` of an event = its index within the utterance (text order).
- Tag confusion (beyond the official script): diagonal = per-tag TP; the
  remaining reference and predicted events of an utterance are paired,
  regardless of tag, within the collar (earliest-first sweep) -> off-diagonal
  cells (reference tag row, predicted tag column); still unpaired references
  go to column ``<none>`` (missed) and predictions to row ``<none>``
  (inserted). Row sums = reference counts, column sums = predicted counts.

Streaming (memory): the reference is validated row by row and kept as
integer codes only (:class:`_ReferenceTable`, ~0.3 KB an utterance); the
submission is then read one row at a time and each utterance is scored at
once into running sums, in the submission's own order. What depends on order
does not change: mNTD values are kept by scoring position (8 bytes each) and
summed in scoring order, the per-utterance report goes through an on-disk
spool and is written in scoring order, and errors are the ones (and in the
order) listed above -- a problem met later in a file that an all-in-memory
reading would have reported first still wins (a row error is remembered
while the rest of the file is checked for JSON/encoding errors; a tag error
waits until the id sets are known to match). Outputs are written (atomically)
only after the last row.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import operator
from array import array
from collections import Counter
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from pyutils.scoring import align, native
from pyutils.scoring.errors import ScoringError
from pyutils.scoring.io import OrderedSpool, id_set_error, iter_jsonl, require_field
from pyutils.scoring.textnorm import LANGUAGES, Event, Parsed, parse_tagged, parse_units
from pyutils.tags import challenge_tags

PROTOCOL_NAME = "NVVSpeech Challenge Track 1 evaluation (re-implemented by chorus-score)"
PROTOCOL_VERSION = "1.0.0"
COLLAR = {"en": 2, "zh": 5}
WEIGHTS = {"F1": 0.70, "mNTD": 0.20, "Err": 0.10}
NONE_TAG = "<none>"


# --------------------------------------------------------------------------- loading
def _check_reference_row(obj: Mapping[str, Any], path: Optional[str], line: int) -> Tuple[str, str, str]:
    """Fields and language of one reference row -> (utt_id, language, text)."""
    utt_id, lang_raw, text = obj.get("utt_id"), obj.get("language"), obj.get("text_with_nvvs")
    if type(utt_id) is not str or type(lang_raw) is not str or type(text) is not str or not utt_id.strip():
        # slow path only to name the problem
        require_field(obj, "utt_id", path, line, nonempty=True)
        require_field(obj, "language", path, line)
        text = require_field(obj, "text_with_nvvs", path, line)
    lang = lang_raw.strip().lower()
    if lang not in LANGUAGES:
        raise ScoringError("INVALID_LANGUAGE", f"language must be 'en' or 'zh', got {lang_raw!r}", path, line)
    return utt_id.strip(), lang, text


def _check_submission_row(obj: Mapping[str, Any], path: Optional[str], line: int) -> Tuple[str, str]:
    """Fields of one submission row -> (utt_id, text)."""
    utt_id, text = obj.get("utt_id"), obj.get("text_with_nvvs")
    if type(utt_id) is not str or type(text) is not str or not utt_id.strip():
        require_field(obj, "utt_id", path, line, nonempty=True)
        text = require_field(obj, "text_with_nvvs", path, line)
    return utt_id.strip(), text


def _duplicate(utt_id: str, first_line: int, path: Optional[str], line: int) -> ScoringError:
    return ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt_id!r} (first on line {first_line})", path, line)


def load_reference_rows(rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]):
    """Validate reference rows -> {utt_id: (language, text, line, Parsed)} (all in memory; for validators)."""
    out: Dict[str, Tuple[str, str, int, Parsed]] = {}
    for line, obj in rows:
        utt_id, lang, text = _check_reference_row(obj, path, line)
        if utt_id in out:
            raise _duplicate(utt_id, out[utt_id][2], path, line)
        try:
            parsed = parse_tagged(text, lang)
        except ScoringError as exc:
            raise exc.located(path, line)
        out[utt_id] = (lang, text, line, parsed)
    return out


def load_submission_rows(rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]):
    """Validate submission rows (fields, duplicates) -> {utt_id: (text, line)}."""
    out: Dict[str, Tuple[str, int]] = {}
    for line, obj in rows:
        utt_id, text = _check_submission_row(obj, path, line)
        if utt_id in out:
            raise _duplicate(utt_id, out[utt_id][1], path, line)
        out[utt_id] = (text, line)
    return out


def _numbered(rows) -> Iterator[Tuple[int, Mapping[str, Any]]]:
    """Rows as ``(line_no, dict)`` pairs, lazily (dicts are numbered from 1)."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return iter(())
    rows = itertools.chain((first,), it)
    return rows if isinstance(first, tuple) else enumerate(rows, start=1)


UNKNOWN_CODE = 0xFFFFFFFF  # a submission token that is in no reference: equal to no reference code


class _Vocabulary(dict):
    """token -> code; a token never seen in the reference looks up as UNKNOWN_CODE."""

    def __missing__(self, token: str) -> int:
        return UNKNOWN_CODE


class _ReferenceTable:
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
        self.vocab = _Vocabulary((f"[{t}]", k) for k, t in enumerate(self.tags))
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
                utt_id, lang, text = _check_reference_row(obj, path, line)
                first = index.get(utt_id)
                if first is not None:
                    raise _duplicate(utt_id, lines[first], path, line)
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


# --------------------------------------------------------------------------- scoring
_TAG_OF = operator.itemgetter(2)  # Event.tag


class _LangAccumulator:
    """Counts of one language, filled utterance by utterance.

    Per tag only the TP are counted per utterance; reference and predicted
    counts are tallied with ``Counter.update`` and FP/FN, the confusion
    diagonal and its ``<none>`` row/column are derived in :meth:`result`.
    """

    def __init__(self, language: str, tags: Sequence[str], n_utts: int, keep_details: bool) -> None:
        self.language = language
        self.collar = COLLAR[language]
        self.tags = list(tags)
        self.n_utts = 0
        self.tp = self.fp = self.fn = 0
        self.edits = 0
        self.ref_tokens = 0
        # mNTD per utterance, by position in scoring order: the mean is summed
        # in that order, so the float result is bit-identical to the official
        # script's whatever order the submission rows arrive in.
        self.mntd_values = array("d", [0.0]) * n_utts
        self.has_mntd = bytearray(n_utts)
        self.ref_counts: Counter = Counter()
        self.pred_counts: Counter = Counter()
        self.tp_counts: Counter = Counter()
        self.off_diagonal: Counter = Counter()  # (reference tag, predicted tag) -> pairs
        self.keep_details = keep_details

    def add(self, slot: int, ref: Parsed, hyp: Parsed):
        """Score the utterance at position ``slot`` of this language's scoring order from token codes (see :class:`_ReferenceTable`).

        Returns ``(edits, mapped events, mNTD or None)`` when details are kept.
        """
        self.n_utts += 1
        self.ref_tokens += len(ref.tagged)
        ref_events = ref.events
        if ref.tagged == hyp.tagged and not self.keep_details:
            # No edit; every event a TP at distance 0; mNTD 0.0 (the DP's
            # all-diagonal path of zero-cost pairs).
            if ref_events:
                self.ref_counts.update(map(_TAG_OF, ref_events))
                self.pred_counts.update(map(_TAG_OF, ref_events))
                self.tp_counts.update(map(_TAG_OF, ref_events))
                self.tp += len(ref_events)
                self.has_mntd[slot] = 1  # mNTD 0.0
            return None
        collar = self.collar
        # 1) tagged-token edit distance (rapidfuzz).
        if ref.tagged == hyp.tagged:
            edits = 0
        else:
            edits = align.edit_distance(ref.tagged, hyp.tagged)
        self.edits += edits
        # 2) predicted events in reference coordinates.
        if not hyp.events or ref.lexical == hyp.lexical:
            mapped = hyp.events
        else:
            bmap = align.boundary_map(ref.lexical, hyp.lexical, hyp.events[0].position)
            new = tuple.__new__
            mapped = tuple([new(Event, (bmap[e.position], e.order, e.tag)) for e in hyp.events])
        # 3) per-tag matching (positions are already sorted: both event lists
        #    are in text order and the boundary map is monotone).
        n_ref, n_hyp = len(ref_events), len(mapped)
        utt_tp = 0
        if n_ref:
            self.ref_counts.update(map(_TAG_OF, ref_events))
        if n_hyp:
            self.pred_counts.update(map(_TAG_OF, mapped))
        if n_ref and n_hyp:
            if n_ref == 1 and n_hyp == 1:
                g, p = ref_events[0], mapped[0]
                if g.tag == p.tag and abs(g.position - p.position) <= collar:
                    utt_tp = 1
                    self.tp_counts[g.tag] += 1
            else:
                by_ref: Dict[str, List[int]] = {}
                for e in ref_events:
                    by_ref.setdefault(e.tag, []).append(e.position)
                by_hyp: Dict[str, List[int]] = {}
                for e in mapped:
                    by_hyp.setdefault(e.tag, []).append(e.position)
                for tag, hp in by_hyp.items():
                    rp = by_ref.get(tag)
                    if rp:
                        k = align.count_matches_f1(rp, hp, collar)
                        if k:
                            self.tp_counts[tag] += k
                            utt_tp += k
            if n_ref > utt_tp and n_hyp > utt_tp:
                self._confuse(ref_events, mapped)  # pair leftovers of different tags
        self.tp += utt_tp
        self.fp += n_hyp - utt_tp
        self.fn += n_ref - utt_tp
        # 4) mNTD (only utterances with a reference event).
        value = None
        if n_ref:
            value = align.utterance_mntd(ref_events, mapped, len(ref.lexical))
            self.mntd_values[slot] = value
            self.has_mntd[slot] = 1
        if self.keep_details:
            return edits, mapped, value
        return None

    def absorb(self, batch: "_NativeBatch") -> None:
        """Add the per-tag counts and confusion pairs that ``batch`` accumulated."""
        tags, nt = self.tags, len(self.tags)
        for k, tag in enumerate(tags):
            if batch.tag_ref[k]:
                self.ref_counts[tag] += batch.tag_ref[k]
            if batch.tag_pred[k]:
                self.pred_counts[tag] += batch.tag_pred[k]
            if batch.tag_tp[k]:
                self.tp_counts[tag] += batch.tag_tp[k]
        for k, n in enumerate(batch.confusion):
            if n:
                self.off_diagonal[tags[k // nt], tags[k % nt]] += n

    def _confuse(self, ref_events: Sequence[Event], mapped: Sequence[Event]) -> None:
        """Off-diagonal confusion pairs of one utterance (see module docstring).

        Same-tag events are paired by the sweep of :func:`align.sweep_pairs`
        (as many pairs as the protocol's TP); the leftovers are paired by the
        same sweep regardless of tag. Unpaired events end up in the ``<none>``
        row/column, derived from the totals in :meth:`result`.
        """
        collar = self.collar
        left_r = set(range(len(ref_events)))
        left_h = set(range(len(mapped)))
        for tag in {e.tag for e in ref_events} & {e.tag for e in mapped}:
            ri = [k for k, e in enumerate(ref_events) if e.tag == tag]
            hi = [k for k, e in enumerate(mapped) if e.tag == tag]
            for a, b in align.sweep_pairs([ref_events[k].position for k in ri],
                                          [mapped[k].position for k in hi], collar):
                left_r.discard(ri[a])
                left_h.discard(hi[b])
        rest_r = sorted(left_r)
        rest_h = sorted(left_h)
        for a, b in align.sweep_pairs([ref_events[k].position for k in rest_r],
                                      [mapped[k].position for k in rest_h], collar):
            self.off_diagonal[ref_events[rest_r[a]].tag, mapped[rest_h[b]].tag] += 1

    def confusion_table(self) -> Dict[str, Dict[str, int]]:
        labels = self.tags + [NONE_TAG]
        table = {r: {c: 0 for c in labels} for r in labels}
        for tag in self.tags:
            table[tag][tag] = self.tp_counts[tag]
        for (r, c), k in self.off_diagonal.items():
            table[r][c] += k
        for tag in self.tags:
            table[tag][NONE_TAG] = self.ref_counts[tag] - sum(table[tag][c] for c in self.tags)
            table[NONE_TAG][tag] = self.pred_counts[tag] - sum(table[r][tag] for r in self.tags)
        return table

    def result(self) -> Dict[str, Any]:
        if self.ref_tokens == 0:
            raise ScoringError("EMPTY_REFERENCE_TOKENS",
                               f"{self.language} reference has no lexical unit or tag at all; "
                               "the tagged error rate is undefined")
        precision, recall, f1 = safe_prf(self.tp, self.fp, self.fn)
        n_mntd = self.has_mntd.count(1)
        mntd = sum(itertools.compress(self.mntd_values, self.has_mntd)) / n_mntd if n_mntd else 0.0
        err = self.edits / self.ref_tokens
        score = track1_score(f1, mntd, err)
        per_tag = {}
        for tag in self.tags:
            tp, n_ref, n_pred = self.tp_counts[tag], self.ref_counts[tag], self.pred_counts[tag]
            p, r, f = safe_prf(tp, n_pred - tp, n_ref - tp)
            per_tag[tag] = {"tp": tp, "fp": n_pred - tp, "fn": n_ref - tp, "reference": n_ref,
                            "prediction": n_pred, "precision": p, "recall": r, "f1": f}
        return {
            "language": self.language,
            "num_utterances": self.n_utts,
            "f1_collar": self.collar,
            "event_counts": {"tp": self.tp, "fp": self.fp, "fn": self.fn,
                             "reference": self.tp + self.fn, "prediction": self.tp + self.fp},
            "precision": precision,
            "recall": recall,
            "F1_micro": f1,
            "mNTD": mntd,
            "mNTD_num_utterances": n_mntd,
            "tagged_transcript_error": err,
            "tagged_transcript_error_name": "WER" if self.language == "en" else "CER",
            "tagged_edit_distance": self.edits,
            "tagged_reference_tokens": self.ref_tokens,
            "score_components": {
                "0.70*F1_micro": 100 * 0.70 * f1,
                "0.20*(1-mNTD)": 100 * 0.20 * (1.0 - mntd),
                "0.10*(1-min(Err,1))": 100 * 0.10 * (1.0 - min(err, 1.0)),
            },
            "Track1Score": score,
            "per_tag": per_tag,
            "confusion": {"rows": "reference tag", "columns": "predicted tag",
                          "none": NONE_TAG, "table": self.confusion_table()},
        }


class _NativeBatch:
    """Utterances of one language queued for the C scorer (``track1_native.c``).

    Each submission row adds its codes (lexical units, events packed as
    ``position * 16 + tag``) and the reference row it is scored against;
    every :attr:`SIZE` rows one C call scores them all and adds the sums to
    the language's :class:`_LangAccumulator` (mNTD values by scoring slot, as
    the Python path). Per-tag counts stay in arrays until :meth:`finish`.
    """

    SIZE = 4096

    def __init__(self, acc: _LangAccumulator, table: _ReferenceTable) -> None:
        self.acc, self.table = acc, table
        nt = table.n_tags
        self.tag_tp, self.tag_ref, self.tag_pred = (array("q", [0]) * nt for _ in range(3))
        self.confusion = array("q", [0]) * (nt * nt)
        self._clear()

    def _clear(self) -> None:
        self.rows, self.slots = array("Q"), array("Q")
        self.lex, self.lex_starts = array("I"), array("Q", [0])
        self.events, self.event_starts = array("Q"), array("Q", [0])

    def add(self, row: int, slot: int, lex_codes: Iterable[int], events: Optional[List[int]]) -> None:
        self.rows.append(row)
        self.slots.append(slot)
        self.lex.extend(lex_codes)
        self.lex_starts.append(len(self.lex))
        if events:
            self.events.extend(events)
        self.event_starts.append(len(self.events))
        if len(self.rows) >= self.SIZE:
            self.flush()

    def flush(self) -> None:
        k = len(self.rows)
        if not k:
            return
        t, acc, buf = self.table, self.acc, native.ffi.from_buffer
        edits, tp = array("q", [0]) * k, array("q", [0]) * k
        mntd = array("d", [0.0]) * k
        n_ref, n_pred = sum(self.tag_ref), sum(self.tag_pred)
        # (an empty array has no buffer to lend: one unused element is added)
        lex = self.lex if len(self.lex) else array("I", [0])
        events = self.events if len(self.events) else array("Q", [0])
        if native.lib.score_batch(
                buf("uint32_t[]", t.lexical), buf("uint64_t[]", t.lexical_starts), buf("uint64_t[]", t.events),
                buf("uint64_t[]", t.event_starts), buf("uint64_t[]", self.rows), k, buf("uint32_t[]", lex),
                buf("uint64_t[]", self.lex_starts), buf("uint64_t[]", events), buf("uint64_t[]", self.event_starts),
                t.n_tags, acc.collar, buf("int64_t[]", edits), buf("int64_t[]", tp), buf("double[]", mntd),
                buf("int64_t[]", self.tag_tp), buf("int64_t[]", self.tag_ref), buf("int64_t[]", self.tag_pred),
                buf("int64_t[]", self.confusion)) != 0:
            raise MemoryError("track1_native.score_batch: out of memory")
        batch_tp = sum(tp)
        acc.n_utts += k
        acc.edits += sum(edits)
        acc.tp += batch_tp
        acc.fp += sum(self.tag_pred) - n_pred - batch_tp
        acc.fn += sum(self.tag_ref) - n_ref - batch_tp
        ls, es = t.lexical_starts, t.event_starts
        acc.ref_tokens += sum([ls[r + 1] - ls[r] + es[r + 1] - es[r] for r in self.rows])
        values, has = acc.mntd_values, acc.has_mntd
        for slot, value in zip(self.slots, mntd):
            if value == value:  # NaN: no reference event, no mNTD
                values[slot] = value
                has[slot] = 1
        self._clear()

    def finish(self) -> None:
        self.flush()
        self.acc.absorb(self)


def safe_prf(tp: int, fp: int, fn: int) -> Tuple[float, float, float]:
    """Precision, recall, F1 with 0 where a denominator is 0."""
    precision = tp / (tp + fp) if (tp + fp) else 0.0
    recall = tp / (tp + fn) if (tp + fn) else 0.0
    if precision + recall == 0.0:
        return precision, recall, 0.0
    return precision, recall, 2.0 * precision * recall / (precision + recall)


def track1_score(f1: float, mntd: float, err: float) -> float:
    """100 * [0.70 F1 + 0.20 (1 - mNTD) + 0.10 (1 - min(Err, 1))], clipped, 12 decimals."""
    value = 100.0 * (0.70 * f1 + 0.20 * (1.0 - mntd) + 0.10 * (1.0 - min(err, 1.0)))
    return round(max(0.0, min(100.0, value)), 12)


def score_streams(ref_rows: Iterable[Tuple[int, Mapping[str, Any]]],
                  hyp_rows: Iterable[Tuple[int, Mapping[str, Any]]], *, ref_path: Optional[str] = None,
                  hyp_path: Optional[str] = None, report: Optional["PerUttReport"] = None) -> Dict[str, Any]:
    """Score ``(line_no, row)`` streams; each row is seen once and only the reference is kept (compactly).

    The reference is read and validated first; the submission is then scored
    row by row in its own order (every count is a sum; mNTD values are kept
    by scoring position and summed in scoring order at the end), and
    ``report``, if given, receives each utterance's report block as it is
    scored. Errors are the ones the official script reports, in its order
    (see the module docstring): a later problem of an earlier kind wins, so a
    row error (fields, duplicate) is remembered while the rest of the file is
    still read for JSON/encoding errors, and a tag error is reported only
    after the id sets are known to match, the one first in scoring order.
    """
    tags = challenge_tags()
    table = _ReferenceTable(tags)
    row_error = table.load(ref_rows, ref_path)
    if row_error is not None:
        raise row_error
    n = len(table.lines)
    if not n:
        raise ScoringError("EMPTY_JSONL", "reference contains no records", ref_path)
    table.finish()
    present = [lang for lang, k in zip(LANGUAGES, table.n_by_lang) if k]
    first_rank = {}  # language -> scoring positions of its utterances [first, end)
    end_rank = {}
    accs = {}
    r = 0
    for lang, k in zip(LANGUAGES, table.n_by_lang):
        first_rank[lang] = r
        r += k
        end_rank[lang] = r
        if k:
            accs[lang] = _LangAccumulator(lang, tags, k, keep_details=report is not None)
    if report is not None:
        report.start(table)

    index, rank, langs = table.index, table.rank, table.langs
    by_code = [accs.get(lang) for lang in LANGUAGES]     # LANGUAGES index -> accumulator
    first_by_code = [first_rank[lang] for lang in LANGUAGES]
    # the reference table's arrays and the vocabulary, bound once (this loop runs per utterance)
    lexical, lexical_starts = table.lexical, table.lexical_starts
    event_starts, decode_events = table.event_starts, table.decode_events
    code = table.vocab.__getitem__
    # the C scorer, when built (not with a report: that needs each utterance's alignment)
    batches = [None] * len(LANGUAGES)
    if native.lib is not None and report is None:
        batches = [_NativeBatch(accs[lang], table) if lang in accs else None for lang in LANGUAGES]
    n_tags, tag_code = table.n_tags, table.tag_code
    hyp_lines = array("Q", [0]) * n           # row -> submission line (0: not seen yet)
    n_seen = 0
    unknown: Dict[str, int] = {}              # submission ids not in the reference -> line
    tag_error: Optional[ScoringError] = None  # the submission tag error first in scoring order so far
    tag_error_rank = n
    new = tuple.__new__
    for line, obj in hyp_rows:
        if row_error is not None:
            continue  # read on: an INVALID_JSON / INVALID_ENCODING further down comes first
        utt_id, text = obj.get("utt_id"), obj.get("text_with_nvvs")
        if type(utt_id) is str and type(text) is str and utt_id.strip():
            utt_id = utt_id.strip()  # the checks of _check_submission_row, inlined for speed
        else:
            try:
                utt_id, text = _check_submission_row(obj, hyp_path, line)
            except ScoringError as exc:
                row_error = exc
                continue
        row = index.get(utt_id)
        if row is None:
            first = unknown.get(utt_id)
            if first is not None:
                row_error = _duplicate(utt_id, first, hyp_path, line)
            unknown[utt_id] = line
            continue
        if hyp_lines[row]:
            row_error = _duplicate(utt_id, hyp_lines[row], hyp_path, line)
            continue
        hyp_lines[row] = line
        n_seen += 1
        if unknown:
            continue  # UNKNOWN_SAMPLES will be the answer; no need to parse or score
        r = rank[row]
        if r > tag_error_rank:
            continue
        lang_code = langs[row]
        batch = batches[lang_code]
        try:
            parsed = parse_units(text, LANGUAGES[lang_code]) if batch else parse_tagged(text, LANGUAGES[lang_code])
        except ScoringError as exc:
            tag_error, tag_error_rank = exc.located(hyp_path, line), r
            continue
        if tag_error is not None:
            continue  # the run fails; scores are not needed any more
        if batch is not None:
            units, positions, ev_tags = parsed
            batch.add(row, r - first_by_code[lang_code], map(code, units),
                      [p * n_tags + tag_code[t] for p, t in zip(positions, ev_tags)] if ev_tags else None)
            continue
        # the reference utterance as codes
        ref_lex = lexical[lexical_starts[row]:lexical_starts[row + 1]].tolist()
        a, b = event_starts[row], event_starts[row + 1]
        ref = new(Parsed, (ref_lex, ref_lex, ())) if a == b else decode_events(ref_lex, a, b)
        # the submission as codes of the reference (unknown tokens: UNKNOWN_CODE)
        hyp_lex = list(map(code, parsed.lexical))
        if parsed.events:
            hyp = new(Parsed, (hyp_lex, list(map(code, parsed.tagged)), parsed.events))
        else:
            hyp = new(Parsed, (hyp_lex, hyp_lex, ()))
        details = by_code[lang_code].add(r - first_by_code[lang_code], ref, hyp)
        if report is not None:
            report.put(r, utt_id, LANGUAGES[lang_code], ref, parsed, *details)
    if row_error is not None:
        raise row_error
    first_missing = min((u for u, i in index.items() if not hyp_lines[i]), default=None) if n_seen < n else None
    error = id_set_error(n - n_seen, first_missing, len(unknown), min(unknown, default=None), hyp_path)
    if error is not None:
        raise error
    for batch in batches:
        if batch is not None:
            batch.finish()
    results: Dict[str, Any] = {}
    for lang in present:
        if tag_error is not None and tag_error_rank < end_rank[lang]:
            raise tag_error
        results[lang] = accs[lang].result()
    return _assemble(results, present, tags)


def _assemble(results: Mapping[str, Dict[str, Any]], present: Sequence[str], tags: Sequence[str]) -> Dict[str, Any]:
    """The result object from the per-language results."""
    en = results.get("en")
    zh = results.get("zh")
    if en and zh:
        final = round((en["Track1Score"] + zh["Track1Score"]) / 2.0, 12)
        definition = "(Track1Score_ZH + Track1Score_EN) / 2"
    else:
        only = present[0]
        final = results[only]["Track1Score"]
        definition = (f"reference holds {only} only: FinalTrack1Score = Track1Score_{only.upper()} "
                      "(the official leaderboard averages EN and ZH)")
    out: Dict[str, Any] = {
        "protocol": {"name": PROTOCOL_NAME, "version": PROTOCOL_VERSION, "valid_tags": list(tags),
                     "f1_collar": dict(COLLAR), "weights": dict(WEIGHTS),
                     "implementation": "pyutils.scoring.track1 (chorus-score track1)"},
        "languages_scored": list(present),
        "final_score_definition": definition,
        "Track1Score_EN": en["Track1Score"] if en else None,
        "Track1Score_ZH": zh["Track1Score"] if zh else None,
        "FinalTrack1Score": final,
        "en": en,
        "zh": zh,
    }
    out["scores"] = {k: out[k] for k in ("Track1Score_EN", "Track1Score_ZH", "FinalTrack1Score")}
    return out


@contextlib.contextmanager
def _cyclic_gc_paused():
    """Pause Python's cyclic garbage collector while scoring.

    Scoring builds only acyclic objects (tuples, lists, dicts), which reference
    counting frees at once; the cyclic collector's scans, triggered by the
    millions of short-lived rows, tuples and lists, would cost time for
    nothing. The previous state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def score_track1(ref_rows, hyp_rows, *, ref_path: Optional[str] = None, hyp_path: Optional[str] = None,
                 report: Optional["PerUttReport"] = None) -> Dict[str, Any]:
    """Score Track 1 from rows (dicts, or ``(line_no, dict)`` pairs; any iterables); raises ScoringError."""
    with _cyclic_gc_paused():
        return score_streams(_numbered(ref_rows), _numbered(hyp_rows), ref_path=ref_path, hyp_path=hyp_path,
                             report=report)


def score_track1_files(ref_path: str, hyp_path: str, report: Optional["PerUttReport"] = None) -> Dict[str, Any]:
    """Score Track 1 from two JSONL files, streamed (see :func:`score_streams`); raises ScoringError."""
    with _cyclic_gc_paused():
        return score_streams(iter_jsonl(ref_path), iter_jsonl(hyp_path), ref_path=ref_path, hyp_path=hyp_path,
                             report=report)


# --------------------------------------------------------------------------- reporting
def summary_lines(result: Mapping[str, Any]) -> List[str]:
    lines = [f"{PROTOCOL_NAME} | protocol v{PROTOCOL_VERSION}"]
    for lang in LANGUAGES:
        r = result.get(lang)
        if not r:
            continue
        ev = r["event_counts"]
        lines.append(
            f"[{lang.upper()}] utts={r['num_utterances']} TP/FP/FN={ev['tp']}/{ev['fp']}/{ev['fn']} "
            f"P={r['precision']:.4f} R={r['recall']:.4f} F1_micro={r['F1_micro']:.6f} "
            f"mNTD={r['mNTD']:.6f} ({r['mNTD_num_utterances']} utts) "
            f"tagged_{r['tagged_transcript_error_name']}={r['tagged_transcript_error']:.6f} "
            f"Track1Score={r['Track1Score']:.6f}")
        c = r["score_components"]
        lines.append(f"      Track1Score = {c['0.70*F1_micro']:.4f} (0.70*F1) + {c['0.20*(1-mNTD)']:.4f} (0.20*(1-mNTD))"
                     f" + {c['0.10*(1-min(Err,1))']:.4f} (0.10*(1-min(Err,1)))")
        worst = sorted((t for t, c in r["per_tag"].items() if c["reference"] or c["prediction"]),
                       key=lambda t: (r["per_tag"][t]["f1"], t))[:3]
        if worst:
            lines.append("      lowest per-tag F1: " + ", ".join(
                f"{t}={r['per_tag'][t]['f1']:.3f} ({r['per_tag'][t]['reference']} ref)" for t in worst))
    for key in ("Track1Score_EN", "Track1Score_ZH"):
        if result[key] is not None:
            lines.append(f"{key:<17}: {result[key]:.6f}")
    lines.append(f"{'FinalTrack1Score':<17}: {result['FinalTrack1Score']:.6f}   [{result['final_score_definition']}]")
    return lines


def _render(parsed: Parsed, events: Sequence[Event]) -> str:
    """Lexical units with tags written ``[tag]@pos`` at their (reference) positions."""
    by_pos: Dict[int, List[Event]] = {}
    for e in events:
        by_pos.setdefault(e.position, []).append(e)
    words: List[str] = []
    units = parsed.lexical
    # Place each event after the lexical unit at its *own* position, but show
    # the position it has in reference coordinates.
    own = {e.order: e.position for e in parsed.events}
    own_by_pos: Dict[int, List[Event]] = {}
    for e in events:
        own_by_pos.setdefault(own[e.order], []).append(e)
    for k in range(len(units) + 1):
        for e in own_by_pos.get(k, ()):
            words.append(f"[{e.tag}]@{e.position}")
        if k < len(units):
            words.append(units[k])
    return " ".join(words) if words else "(empty)"


REPORT_HEADER = ("# chorus-score track1 per-utterance report\n"
                 "# REF/HYP: normalised lexical units; [tag]@k = event at reference boundary k\n"
                 "# (k lexical units of the reference before it; hypothesis tags are mapped\n"
                 "# into reference coordinates by the protocol's minimum-edit alignment).\n\n")


def utterance_report(utt_id: str, language: str, ref: Parsed, hyp: Parsed, mapped: Sequence[Event],
                     edits: int, mntd: Optional[float]) -> str:
    """The report block of one utterance (``ref``/``hyp`` parsed as strings; ``mapped`` in reference coordinates)."""
    collar = COLLAR[language]
    n_ref = max(len(ref.tagged), 1)
    shown = "-" if mntd is None else f"{mntd:.3f}"
    out = [f"== {utt_id} ({language})  tagged_edits={edits}/{len(ref.tagged)} ({edits / n_ref:.3f})  mNTD={shown}",
           "  REF: " + _render(ref, ref.events),
           "  HYP: " + _render(hyp, mapped)]
    lines = []
    matched = set()
    for tag in {e.tag for e in ref.events} | {e.tag for e in mapped}:
        for g, p in align.match_events_f1([e for e in ref.events if e.tag == tag],
                                          [e for e in mapped if e.tag == tag], collar):
            matched.add(("r", g.order))
            matched.add(("h", p.order))
            lines.append((g.position, f"    TP   [{tag}] ref@{g.position} hyp@{p.position}"
                                      f" (|d|={abs(g.position - p.position)})"))
    for g in ref.events:
        if ("r", g.order) not in matched:
            lines.append((g.position, f"    MISS [{g.tag}] ref@{g.position}"))
    for p in mapped:
        if ("h", p.order) not in matched:
            lines.append((p.position, f"    FA   [{p.tag}] hyp@{p.position}"))
    out.extend(text for _, text in sorted(lines, key=lambda x: x[0]))
    return "\n".join(out) + "\n"


class PerUttReport:
    """``--per-utt-report``: blocks made while scoring, written in scoring order.

    The blocks go to an :class:`~pyutils.scoring.io.OrderedSpool` (a temp file
    next to the report) as the submission is streamed, in whatever order its
    rows come; :meth:`commit` writes the report atomically (English first,
    utt_id ascending). Nothing is written at ``path`` unless scoring succeeded
    and :meth:`commit` was called. Use as a context manager.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._spool: Optional[OrderedSpool] = None
        self._words: List[str] = []

    def start(self, table: _ReferenceTable) -> None:
        self._spool = OrderedSpool(len(table.lines), self.path)
        self._words = table.words()

    def put(self, rank: int, utt_id: str, language: str, ref: Parsed, hyp: Parsed, edits: int,
            mapped: Sequence[Event], mntd: Optional[float]) -> None:
        """``ref`` as codes (from the reference table), ``hyp`` as parsed strings."""
        words = self._words
        ref = tuple.__new__(Parsed, (tuple(words[c] for c in ref.lexical), tuple(words[c] for c in ref.tagged),
                                     ref.events))
        self._spool.put(rank, utterance_report(utt_id, language, ref, hyp, mapped, edits, mntd))

    def commit(self) -> None:
        self._spool.write_to(REPORT_HEADER)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> "PerUttReport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def public_result(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The result without internal per-utterance objects (for JSON)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}
