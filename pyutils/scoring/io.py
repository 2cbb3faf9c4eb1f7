"""The scorers' side of :mod:`pyutils.io`: strict JSONL reading, field and id-set checks, an on-disk spool.

Lines are read by :mod:`pyutils.io` (the one reader); here a BOM and an empty
file are errors, as in the official Track 1 evaluator, and writes fail with
OUTPUT_WRITE_ERROR.
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple, Union

from pyutils.io import atomic_write
from pyutils.io import iter_jsonl as _iter_jsonl
from pyutils.scoring.errors import ScoringError


def iter_jsonl(path: str, *, allow_empty: bool = False) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """:func:`pyutils.io.iter_jsonl` as the official evaluator reads: a BOM is an error
    (INVALID_ENCODING) and a file without records is EMPTY_JSONL unless ``allow_empty``."""
    return _iter_jsonl(path, allow_empty=allow_empty, bom="error")


def require_field(obj: Dict[str, Any], key: str, path: Optional[str], line: Optional[int], *,
                  kind: type = str, nonempty: bool = False) -> Any:
    """Fetch a required field; codes MISSING_REQUIRED_FIELD, INVALID_FIELD_TYPE, EMPTY_REQUIRED_FIELD."""
    if key not in obj:
        raise ScoringError("MISSING_REQUIRED_FIELD", f"missing required field {key!r}", path, line)
    value = obj[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ScoringError("INVALID_FIELD_TYPE",
                           f"field {key!r} must be a {kind.__name__}, got {type(value).__name__}", path, line)
    if nonempty and isinstance(value, str) and not value.strip():
        raise ScoringError("EMPTY_REQUIRED_FIELD", f"field {key!r} must not be empty", path, line)
    return value


def check_id_sets(ref_ids, hyp_ids, hyp_path: Optional[str], what: str = "utt_id") -> None:
    """Exactly one hypothesis per reference id.

    Codes (as in the official Track 1 evaluator): MISSING_SAMPLES,
    UNKNOWN_SAMPLES, ID_SET_MISMATCH (both).
    """
    ref_set, hyp_set = set(ref_ids), set(hyp_ids)
    missing = ref_set - hyp_set
    extra = hyp_set - ref_set
    error = id_set_error(len(missing), min(missing, default=None), len(extra), min(extra, default=None),
                         hyp_path, what)
    if error:
        raise error


def id_set_error(n_missing: int, first_missing: Optional[str], n_extra: int, first_extra: Optional[str],
                 hyp_path: Optional[str], what: str = "utt_id") -> Optional[ScoringError]:
    """The error of :func:`check_id_sets` from counts and the smallest id of each kind (None when both are 0)."""
    if not n_missing and not n_extra:
        return None
    details = []
    if n_missing:
        details.append(f"{n_missing} reference {what}(s) missing (first: {first_missing!r})")
    if n_extra:
        details.append(f"{n_extra} unknown {what}(s) (first: {first_extra!r})")
    code = "ID_SET_MISMATCH" if n_missing and n_extra else ("MISSING_SAMPLES" if n_missing else "UNKNOWN_SAMPLES")
    return ScoringError(code, "; ".join(details), hyp_path)


def check_not_input(output: Optional[str], inputs, option: str) -> None:
    """OUTPUT_IS_INPUT when ``output`` names the same file as one of ``inputs``."""
    if not output:
        return
    for name, path in inputs:
        if not path:
            continue
        same = os.path.realpath(output) == os.path.realpath(path)
        if not same:
            try:
                same = os.path.samefile(output, path)
            except OSError:
                same = False
        if same:
            raise ScoringError("OUTPUT_IS_INPUT", f"{option} is the same file as {name}; "
                               "it would overwrite its own input", output)


def atomic_write_chunks(path: str, chunks: Iterable[Union[bytes, str]]) -> None:
    """Write the ``chunks`` (bytes, or text written as UTF-8; an iterable, consumed lazily) with
    :func:`pyutils.io.atomic_write`.

    Nothing appears at ``path`` unless every chunk was written; code
    OUTPUT_WRITE_ERROR when the folder or file cannot be written. An error
    raised by the iterable itself (a ScoringError, say) propagates unchanged.
    """
    try:
        with atomic_write(path, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
    except OSError as exc:
        raise ScoringError("OUTPUT_WRITE_ERROR", f"cannot write ({exc.strerror or type(exc).__name__})",
                           path) from None


class OrderedSpool:
    """Text pieces numbered 0..n-1 that arrive in any order, kept on disk.

    For an output whose order differs from the order its pieces are made in
    (a per-utterance report in scoring order, built while a submission is
    streamed in file order): each piece is appended to an anonymous temp
    file and only its offset and size stay in memory (16 bytes a piece);
    :meth:`write_to` then writes them in number order, atomically. The temp
    file lives in the output's folder (or its nearest existing parent: the
    folder itself is only made when the output is written), never in /tmp,
    which may be memory-backed. Use as a context manager; it closes (and the
    system deletes) the temp file.
    """

    def __init__(self, n: int, output_path: str) -> None:
        self.output_path = output_path
        folder = os.path.dirname(os.path.abspath(output_path))
        while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)
        try:
            self._file = tempfile.TemporaryFile(prefix=".spool.", dir=folder)
        except OSError as exc:
            raise ScoringError("OUTPUT_WRITE_ERROR", f"cannot write ({exc.strerror or type(exc).__name__})",
                               output_path) from None
        self._offset = array("q", [-1]) * n
        self._size = array("q", [0]) * n
        self._end = 0

    def put(self, k: int, text: str) -> None:
        data = text.encode("utf-8")
        try:
            self._file.write(data)
        except OSError as exc:
            raise ScoringError("OUTPUT_WRITE_ERROR", f"cannot write a temp file next to it "
                               f"({exc.strerror or type(exc).__name__})", self.output_path) from None
        self._offset[k] = self._end
        self._size[k] = len(data)
        self._end += len(data)

    def _pieces(self, head: bytes) -> Iterator[bytes]:
        yield head
        f = self._file
        f.flush()
        for k, (offset, size) in enumerate(zip(self._offset, self._size)):
            if offset < 0:
                raise AssertionError(f"spool piece {k} was never written")
            f.seek(offset)
            yield f.read(size)

    def write_to(self, head: str = "") -> None:
        """Write ``head`` then every piece in number order to the output path (atomically)."""
        atomic_write_chunks(self.output_path, self._pieces(head.encode("utf-8")))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "OrderedSpool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def atomic_write_json(path: str, payload: Any) -> None:
    atomic_write_chunks(path, [json.dumps(payload, ensure_ascii=False, indent=2) + "\n"])


def iter_jsonl_text(rows) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"
