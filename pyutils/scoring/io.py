"""Readers for JSONL / Kaldi ``text`` files, atomic writers and an on-disk spool.

The JSONL reader follows the official Track 1 evaluator: lines are split the
way Python's text mode splits them (``\\n``, ``\\r\\n``, ``\\r``), each line is
stripped, blank lines are skipped, every other line must be one JSON object.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from array import array
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from pyutils.scoring.errors import ScoringError
from pyutils.file_mode import follow_umask


def _open_regular(path: str):
    """Open ``path`` for binary reading; a FIFO, device or folder is an error, not a hang."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ScoringError("INPUT_FILE_READ_ERROR", f"cannot read file ({exc.strerror or type(exc).__name__})",
                           path) from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "not a regular file")
        raise ScoringError("INPUT_FILE_READ_ERROR", f"is {kind}; give a regular file", path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ScoringError("INPUT_FILE_READ_ERROR", f"cannot read file ({exc.strerror or type(exc).__name__})",
                           path) from None


def _decoded(piece: bytes, path: str, line_no: int) -> str:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScoringError("INVALID_ENCODING", f"not UTF-8: byte 0x{piece[exc.start]:02x} at column "
                           f"{exc.start + 1} ({exc.reason}); convert the file to UTF-8", path, line_no) from None


def iter_lines(path: str, *, bom: str = "error", block_size: int = 1 << 18) -> Iterator[Tuple[int, str]]:
    """``(line_no, text)`` of every line of a UTF-8 text file, without line ends.

    Lines are numbered as Python's text mode splits them (``\\n``, ``\\r\\n``,
    ``\\r``); a bad byte is reported on its own line (INVALID_ENCODING,
    ``file:line``), not "after" the last good one. A UTF-8 byte-order mark
    opening the file is removed with ``bom="strip"`` and is an
    INVALID_ENCODING error with ``bom="error"`` (the official evaluator would
    choke on it). The file is read in blocks of whole lines; a block without
    ``\\r`` that decodes at once is split at ``\\n`` (the same lines, in far
    fewer calls), any other goes line by line.
    """
    line_no = 0
    with _open_regular(path) as handle:
        try:
            rest = b""
            while True:
                block = handle.read(block_size)
                data = rest + block if rest else block
                if block:
                    cut = data.rfind(b"\n") + 1
                    if not cut:  # no line end yet: read on
                        rest = data
                        continue
                    data, rest = data[:cut], data[cut:]
                elif not data:
                    break
                lines = None
                if b"\r" not in data:
                    try:
                        lines = data.decode("utf-8").split("\n")
                    except UnicodeDecodeError:
                        pass
                    else:
                        if data.endswith(b"\n"):
                            lines.pop()
                for text in lines if lines is not None else data.splitlines():
                    line_no += 1
                    if lines is None:
                        text = _decoded(text, path, line_no)
                    if line_no == 1 and text.startswith("\ufeff"):
                        if bom != "strip":
                            raise ScoringError("INVALID_ENCODING", "the file starts with a UTF-8 byte-order "
                                               "mark (BOM); save it as UTF-8 without BOM", path, 1)
                        text = text[1:]
                    yield line_no, text
                if not block:
                    break
        except OSError as exc:
            raise ScoringError("INPUT_FILE_READ_ERROR",
                               f"cannot read file ({exc.strerror or type(exc).__name__})", path) from None


# The C scanner behind json.loads (same default settings), called without its Python wrapper.
_SCAN_ONCE = json.JSONDecoder().scan_once


def iter_jsonl(path: str, *, allow_empty: bool = False) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """Yield ``(line_no, object)`` one line at a time (1-based line numbers).

    Nothing but the current line is held, so a scorer can stream a file of
    any size. Codes (raised when the offending line is reached):
    INPUT_FILE_READ_ERROR, INVALID_ENCODING, INVALID_JSON,
    INVALID_JSONL_RECORD (a line that is valid JSON but not an object),
    EMPTY_JSONL (no records at all, raised at the end of the file).
    """
    seen = False
    scan, loads = _SCAN_ONCE, json.loads
    for line_no, raw in iter_lines(path):
        line = raw.strip()
        if not line:
            continue
        # json.loads(line) = scan_once(line, 0) + whitespace checks that a stripped line
        # passes + the whole line used; when the scanner fails, json.loads says why
        try:
            value, end = scan(line, 0)
        except (StopIteration, ValueError, RecursionError):
            end = -1
        if end != len(line):
            try:
                value = loads(line)
            except json.JSONDecodeError as exc:
                raise ScoringError("INVALID_JSON", f"invalid JSON: {exc.msg} (column {exc.colno})",
                                   path, line_no) from None
            except RecursionError:
                raise ScoringError("INVALID_JSON", "invalid JSON: nested too deeply", path, line_no) from None
        if type(value) is not dict:
            raise ScoringError("INVALID_JSONL_RECORD",
                               f"each line must be a JSON object, got {type(value).__name__}",
                               path, line_no)
        seen = True
        yield line_no, value
    if not seen and not allow_empty:
        raise ScoringError("EMPTY_JSONL", "file contains no JSONL records", path)


def read_jsonl(path: str, *, allow_empty: bool = False) -> List[Tuple[int, Dict[str, Any]]]:
    """Return ``[(line_no, object), ...]``: :func:`iter_jsonl` as a list (same codes)."""
    return list(iter_jsonl(path, allow_empty=allow_empty))


def read_kaldi_text(path: str) -> List[Tuple[int, str, str]]:
    """Read ``utt_id text...`` lines -> ``[(line_no, utt_id, text)]``; text may be empty."""
    rows: List[Tuple[int, str, str]] = []
    for line_no, line in iter_lines(path, bom="strip"):  # a BOM would glue onto the first id
        if not line.strip():
            continue
        parts = line.strip().split(maxsplit=1)
        rows.append((line_no, parts[0], parts[1] if len(parts) > 1 else ""))
    return rows


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


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to a temp file in the same folder, then ``os.replace``.

    Code OUTPUT_WRITE_ERROR when the folder or file cannot be written.
    """
    atomic_write_chunks(path, (text.encode("utf-8"),))


def atomic_write_chunks(path: str, chunks: Iterable[bytes]) -> None:
    """Write the byte ``chunks`` (an iterable, consumed lazily) like :func:`atomic_write_text`.

    Nothing appears at ``path`` unless every chunk was written; an error
    raised by the iterable itself (a ScoringError, say) removes the temp file
    and propagates unchanged.
    """
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=os.path.basename(path), dir=folder)
        follow_umask(fd)  # mkstemp makes 0600; outputs follow the umask
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise ScoringError("OUTPUT_WRITE_ERROR", f"cannot write ({exc.strerror or type(exc).__name__})",
                           path) from None
    except BaseException:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    atomic_write_text(path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def iter_jsonl_text(rows) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"
