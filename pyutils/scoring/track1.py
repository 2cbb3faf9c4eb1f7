"""NVVSpeech Challenge (ISCSLP 2026) Track 1 score, official protocol v1.0.0: ``chorus-score track1``.

``Track1Score`` per language (formulas: :mod:`pyutils.scoring.track1_counts`),
``FinalTrack1Score = (Track1Score_ZH + Track1Score_EN) / 2`` (rounded to 12
decimals). Parsing/normalisation: :mod:`pyutils.scoring.textnorm`; alignment,
matching and mNTD: :mod:`pyutils.scoring.align`. The modules by job:

- :mod:`~pyutils.scoring.track1_rows`   row checks (fields, language, duplicates)
- :mod:`~pyutils.scoring.track1_table`  the reference as integer codes
- :mod:`~pyutils.scoring.track1_counts` per-language sums and the score
- :mod:`~pyutils.scoring.track1_batch`  the C scorer's driver (and why there are two paths)
- :mod:`~pyutils.scoring.track1_report` summary lines, ``--per-utt-report``
- this module: the streaming pass that ties them together, and the result object.

Rules where the protocol leaves room (documented for users):

- *Both languages*: like the official script, a reference without English
  and Mandarin rows is refused (REFERENCE_LANGUAGE_COVERAGE_ERROR, after the
  reference rows are checked). ``single_language=True`` (``chorus-score
  track1 --single-language``, what the one-language recipes use) scores the
  language present instead: the other's keys are ``null`` and
  ``FinalTrack1Score`` equals that language's score (``languages_scored`` and
  ``final_score_definition`` say so).
- Validation order follows the official script: reference rows in file
  order (fields, language, duplicates, tags), the language coverage, then
  submission rows (fields, duplicates), then the id sets, then the
  submission's tags in scoring order (English before Mandarin, utt_id
  ascending). The first problem found is reported with its file and line.
- A language whose reference has no tagged token at all cannot give a
  tagged error rate: EMPTY_REFERENCE_TOKENS (as the official script).
- ``order`` of an event = its index within the utterance (text order).

Streaming (memory): the reference is validated row by row and kept as
integer codes only (:class:`~pyutils.scoring.track1_table.ReferenceTable`,
~0.3 KB an utterance); the submission is then read one row at a time and
each utterance is scored at once into running sums, in the submission's own
order. What depends on order does not change: mNTD values are kept by
scoring position (8 bytes each) and summed in scoring order, the
per-utterance report goes through an on-disk spool and is written in scoring
order, and errors are the ones (and in the order) listed above -- a problem
met later in a file that an all-in-memory reading would have reported first
still wins (a row error is remembered while the rest of the file is checked
for JSON/encoding errors; a tag error waits until the id sets are known to
match). Outputs are written (atomically) only after the last row.
"""

from __future__ import annotations

import contextlib
import gc
from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from pyutils.scoring import native
from pyutils.scoring.errors import ScoringError
from pyutils.scoring.io import id_set_error, iter_jsonl
from pyutils.scoring.textnorm import LANGUAGES, Parsed, parse_tagged, parse_units
from pyutils.scoring.track1_batch import NativeBatch
from pyutils.scoring.track1_counts import COLLAR, PROTOCOL_NAME, PROTOCOL_VERSION, WEIGHTS, LangAccumulator
from pyutils.scoring.track1_report import PerUttReport, summary_lines
from pyutils.scoring.track1_rows import (check_submission_row, duplicate_error, load_reference_rows,
                                        load_submission_rows, numbered)
from pyutils.scoring.track1_table import ReferenceTable
from pyutils.tags import challenge_tags

# the entry points (chorus-score track1, validate-track1 and the tests use these names from here)
__all__ = ["score_track1", "score_track1_files", "score_streams", "public_result", "summary_lines",
           "PerUttReport", "load_reference_rows", "load_submission_rows"]

LANGUAGE_NAMES = {"en": "English", "zh": "Mandarin Chinese"}


def _load_reference(ref_rows: Iterable[Tuple[int, Mapping[str, Any]]], ref_path: Optional[str],
                    tags: Sequence[str], single_language: bool) -> ReferenceTable:
    """The checked reference (row errors, EMPTY_JSONL, REFERENCE_LANGUAGE_COVERAGE_ERROR), in scoring order."""
    table = ReferenceTable(tags)
    row_error = table.load(ref_rows, ref_path)
    if row_error is not None:
        raise row_error
    if not table.lines:
        raise ScoringError("EMPTY_JSONL", "reference contains no records", ref_path)
    missing = [lang for lang, k in zip(LANGUAGES, table.n_by_lang) if not k]
    if missing and not single_language:
        names = " and ".join(LANGUAGE_NAMES[lang] for lang in LANGUAGES)
        raise ScoringError("REFERENCE_LANGUAGE_COVERAGE_ERROR",
                           f"the reference must hold both {names} rows for the bilingual score; missing: "
                           f"{', '.join(missing)} (to score one language: --single-language)", ref_path)
    table.finish()
    return table


class _Pass:
    """What one pass over the submission leaves: the line of every reference row's answer,
    the unknown ids, and the tag error first in scoring order (if any)."""

    def __init__(self, n: int) -> None:
        self.hyp_lines = array("Q", [0]) * n       # row -> submission line (0: not seen yet)
        self.n_seen = 0
        self.unknown: Dict[str, int] = {}          # submission ids not in the reference -> line
        self.tag_error: Optional[ScoringError] = None
        self.tag_error_rank = n


def _score_submission(hyp_rows: Iterable[Tuple[int, Mapping[str, Any]]], table: ReferenceTable,
                      accs: Dict[str, LangAccumulator], first_rank: Dict[str, int],
                      report: Optional[PerUttReport], hyp_path: Optional[str]) -> _Pass:
    """Check and score every submission row as it comes (one loop with local names: it runs per utterance)."""
    n = len(table.lines)
    state = _Pass(n)
    hyp_lines, unknown = state.hyp_lines, state.unknown
    row_error: Optional[ScoringError] = None
    index, rank, langs = table.index, table.rank, table.langs
    by_code = [accs.get(lang) for lang in LANGUAGES]     # LANGUAGES index -> accumulator
    first_by_code = [first_rank[lang] for lang in LANGUAGES]
    lexical, lexical_starts = table.lexical, table.lexical_starts
    event_starts, decode_events = table.event_starts, table.decode_events
    code = table.vocab.__getitem__
    # the C scorer, when built (not with a report: that needs each utterance's alignment)
    batches: List[Optional[NativeBatch]] = [None] * len(LANGUAGES)
    if native.lib is not None and report is None:
        batches = [NativeBatch(accs[lang], table) if lang in accs else None for lang in LANGUAGES]
    n_tags, tag_code = table.n_tags, table.tag_code
    new = tuple.__new__
    for line, obj in hyp_rows:
        if row_error is not None:
            continue  # read on: an INVALID_JSON / INVALID_ENCODING further down comes first
        utt_id, text = obj.get("utt_id"), obj.get("text_with_nvvs")
        if type(utt_id) is str and type(text) is str and utt_id.strip():
            utt_id = utt_id.strip()  # the checks of check_submission_row, inlined for speed
        else:
            try:
                utt_id, text = check_submission_row(obj, hyp_path, line)
            except ScoringError as exc:
                row_error = exc
                continue
        row = index.get(utt_id)
        if row is None:
            first = unknown.get(utt_id)
            if first is not None:
                row_error = duplicate_error(utt_id, first, hyp_path, line)
            unknown[utt_id] = line
            continue
        if hyp_lines[row]:
            row_error = duplicate_error(utt_id, hyp_lines[row], hyp_path, line)
            continue
        hyp_lines[row] = line
        state.n_seen += 1
        if unknown:
            continue  # UNKNOWN_SAMPLES will be the answer; no need to parse or score
        r = rank[row]
        if r > state.tag_error_rank:
            continue
        lang_code = langs[row]
        batch = batches[lang_code]
        try:
            parsed = parse_units(text, LANGUAGES[lang_code]) if batch else parse_tagged(text, LANGUAGES[lang_code])
        except ScoringError as exc:
            state.tag_error, state.tag_error_rank = exc.located(hyp_path, line), r
            continue
        if state.tag_error is not None:
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
    for batch in batches:
        if batch is not None:
            batch.finish()
    return state


def score_streams(ref_rows: Iterable[Tuple[int, Mapping[str, Any]]],
                  hyp_rows: Iterable[Tuple[int, Mapping[str, Any]]], *, ref_path: Optional[str] = None,
                  hyp_path: Optional[str] = None, report: Optional[PerUttReport] = None,
                  single_language: bool = False) -> Dict[str, Any]:
    """Score ``(line_no, row)`` streams; each row is seen once and only the reference is kept (compactly).

    The reference is read and validated first; the submission is then scored
    row by row in its own order (every count is a sum; mNTD values are kept
    by scoring position and summed in scoring order at the end), and
    ``report``, if given, receives each utterance's report block as it is
    scored. Errors are the ones the official script reports, in its order
    (see the module docstring).
    """
    tags = challenge_tags()
    table = _load_reference(ref_rows, ref_path, tags, single_language)
    present = [lang for lang, k in zip(LANGUAGES, table.n_by_lang) if k]
    first_rank: Dict[str, int] = {}  # language -> scoring positions of its utterances [first, end)
    end_rank: Dict[str, int] = {}
    accs: Dict[str, LangAccumulator] = {}
    r = 0
    for lang, k in zip(LANGUAGES, table.n_by_lang):
        first_rank[lang] = r
        r += k
        end_rank[lang] = r
        if k:
            accs[lang] = LangAccumulator(lang, tags, k, keep_details=report is not None)
    if report is not None:
        report.start(table)
    state = _score_submission(hyp_rows, table, accs, first_rank, report, hyp_path)
    n, index, hyp_lines = len(table.lines), table.index, state.hyp_lines
    first_missing = (min((u for u, i in index.items() if not hyp_lines[i]), default=None)
                     if state.n_seen < n else None)
    error = id_set_error(n - state.n_seen, first_missing, len(state.unknown), min(state.unknown, default=None),
                         hyp_path)
    if error is not None:
        raise error
    results: Dict[str, Any] = {}
    for lang in present:
        if state.tag_error is not None and state.tag_error_rank < end_rank[lang]:
            raise state.tag_error
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
                 report: Optional[PerUttReport] = None, single_language: bool = False) -> Dict[str, Any]:
    """Score Track 1 from rows (dicts, or ``(line_no, dict)`` pairs; any iterables); raises ScoringError."""
    with _cyclic_gc_paused():
        return score_streams(numbered(ref_rows), numbered(hyp_rows), ref_path=ref_path, hyp_path=hyp_path,
                             report=report, single_language=single_language)


def score_track1_files(ref_path: str, hyp_path: str, report: Optional[PerUttReport] = None, *,
                       single_language: bool = False) -> Dict[str, Any]:
    """Score Track 1 from two JSONL files, streamed (see :func:`score_streams`); raises ScoringError."""
    with _cyclic_gc_paused():
        return score_streams(iter_jsonl(ref_path), iter_jsonl(hyp_path), ref_path=ref_path, hyp_path=hyp_path,
                             report=report, single_language=single_language)


def public_result(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The result without internal per-utterance objects (for JSON)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}
