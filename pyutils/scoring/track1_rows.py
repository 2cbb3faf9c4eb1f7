"""Track 1 rows: field checks of reference and submission rows, duplicates, line numbers.

The checks and codes of the official evaluator: MISSING_REQUIRED_FIELD,
INVALID_FIELD_TYPE, EMPTY_REQUIRED_FIELD, INVALID_LANGUAGE (``language`` is
stripped and lower-cased first, so ``" EN"`` is English), DUPLICATE_UTT_ID;
``utt_id`` values are stripped.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple

from pyutils.scoring.errors import ScoringError
from pyutils.scoring.io import require_field
from pyutils.scoring.textnorm import LANGUAGES, Parsed, parse_tagged


def check_reference_row(obj: Mapping[str, Any], path: Optional[str], line: int) -> Tuple[str, str, str]:
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


def check_submission_row(obj: Mapping[str, Any], path: Optional[str], line: int) -> Tuple[str, str]:
    """Fields of one submission row -> (utt_id, text)."""
    utt_id, text = obj.get("utt_id"), obj.get("text_with_nvvs")
    if type(utt_id) is not str or type(text) is not str or not utt_id.strip():
        require_field(obj, "utt_id", path, line, nonempty=True)
        text = require_field(obj, "text_with_nvvs", path, line)
    return utt_id.strip(), text


def duplicate_error(utt_id: str, first_line: int, path: Optional[str], line: int) -> ScoringError:
    return ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt_id!r} (first on line {first_line})", path, line)


def load_reference_rows(rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]):
    """Validate reference rows -> {utt_id: (language, text, line, Parsed)} (all in memory; for validators)."""
    out: Dict[str, Tuple[str, str, int, Parsed]] = {}
    for line, obj in rows:
        utt_id, lang, text = check_reference_row(obj, path, line)
        if utt_id in out:
            raise duplicate_error(utt_id, out[utt_id][2], path, line)
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
        utt_id, text = check_submission_row(obj, path, line)
        if utt_id in out:
            raise duplicate_error(utt_id, out[utt_id][1], path, line)
        out[utt_id] = (text, line)
    return out


def numbered(rows) -> Iterator[Tuple[int, Mapping[str, Any]]]:
    """Rows as ``(line_no, dict)`` pairs, lazily (dicts are numbered from 1)."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return iter(())
    rows = itertools.chain((first,), it)
    return rows if isinstance(first, tuple) else enumerate(rows, start=1)
