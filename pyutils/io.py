"""The one place Chorus reads JSONL / Kaldi two-column files and writes files atomically.

Reading
  :func:`iter_lines` -> ``(line_no, text)``; :func:`iter_jsonl` -> ``(line_no, dict)``;
  :func:`read_jsonl` -> ``[dict]``; :func:`iter_kaldi_text` -> ``(line_no, key, rest)``;
  :func:`read_text` -> ``{key: rest}`` (rest may be empty: a Kaldi ``text`` line
  without words); :func:`read_scp` -> ``[(key, value)]`` (value required: wav.scp,
  feats.scp). Lines are split as Python's text mode splits them (``\\n``,
  ``\\r\\n``, ``\\r``) and numbered from 1, so an error points at the line an
  editor shows. Every bad input raises :class:`InputError`, printed
  ``file:line: CODE: message``.

Writing
  :func:`atomic_write` (a context manager), :func:`atomic_write_text`,
  :func:`atomic_write_lines`, :func:`write_jsonl`: the data goes to a temp file
  in the destination's folder, then ``os.replace`` puts it in place, so a crash
  or a full disk never leaves a half-written file and never destroys the old
  one; the file gets the mode ``open()`` would give it (0666 minus the umask,
  :func:`pyutils.file_mode.follow_umask`). :func:`atomic_dir` does the same for a whole
  folder (installed models, built data sets): built in a temp sibling, then swapped in.

Checking
  :func:`sha256_file`: the SHA-256 of a file, read in blocks (pinned model and data files).

The JSONL reader follows the official Track 1 evaluator (each line stripped,
blank lines skipped, every other line one JSON object); the scorers read
through it, with a BOM refused there (``bom="error"``) because the official
evaluator would choke on one.

Two stricter policies sit on top, not beside: :mod:`pyutils.scoring.io` (the
evaluator's: a BOM or an empty file is an error, a write failure is
OUTPUT_WRITE_ERROR) and :mod:`pyutils.datadir.io` (Kaldi's ``validate_data_dir``:
a CR line end, an empty line or a repeated key is an error), which keeps its own
line reader for that (``\r`` is a line break here, an error there). Audio is
read by :mod:`pyutils.audio`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from pyutils.file_mode import follow_umask


class InputError(ValueError):
    """A bad input file or value, printed as one line ``file:line: CODE: message``.

    ``line`` (and ``path``) are left out when the problem is not tied to one
    line. The scorers call it ``ScoringError`` (the ``chorus-score`` CLI exits 2).
    """

    def __init__(self, code: str, message: str, path: Optional[str] = None,
                 line: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = " ".join(str(message).split())  # always one line
        self.path = None if path is None else str(path)
        self.line = line

    def located(self, path: Optional[str] = None, line: Optional[int] = None) -> "InputError":
        """Fill in a location not known where the error was raised."""
        if self.path is None:
            self.path = path
        if self.line is None:
            self.line = line
        return self

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.code}: {self.message}"

    def __str__(self) -> str:
        return self.one_line()


def _read_error(path, exc: OSError) -> InputError:
    return InputError("INPUT_FILE_READ_ERROR", f"cannot read file ({exc.strerror or type(exc).__name__})", path)


def _open_regular(path: str):
    """Open ``path`` for binary reading; a FIFO, device or folder is an error, not a hang."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _read_error(path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "not a regular file")
        raise InputError("INPUT_FILE_READ_ERROR", f"is {kind}; give a regular file", path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _read_error(path, exc) from None


def _decoded(piece: bytes, path: str, line_no: int) -> str:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("INVALID_ENCODING", f"not UTF-8: byte 0x{piece[exc.start]:02x} at column "
                         f"{exc.start + 1} ({exc.reason}); convert the file to UTF-8", path, line_no) from None


def iter_lines(path, *, bom: str = "strip", block_size: int = 1 << 18) -> Iterator[Tuple[int, str]]:
    """``(line_no, text)`` of every line of a UTF-8 text file, without line ends.

    A bad byte is reported on its own line (INVALID_ENCODING, ``file:line``),
    not "after" the last good one. A UTF-8 byte-order mark opening the file is
    removed with ``bom="strip"`` and is an INVALID_ENCODING error with
    ``bom="error"``. The file is read in blocks of whole lines; a block without
    ``\\r`` that decodes at once is split at ``\\n`` (the same lines, in far
    fewer calls), any other goes line by line.
    """
    path = str(path)
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
                            raise InputError("INVALID_ENCODING", "the file starts with a UTF-8 byte-order "
                                             "mark (BOM); save it as UTF-8 without BOM", path, 1)
                        text = text[1:]
                    yield line_no, text
                if not block:
                    break
        except OSError as exc:
            raise _read_error(path, exc) from None


# The C scanner behind json.loads (same default settings), called without its Python wrapper.
_SCAN_ONCE = json.JSONDecoder().scan_once


def iter_jsonl(path, *, allow_empty: bool = True, bom: str = "strip") -> Iterator[Tuple[int, Dict[str, Any]]]:
    """Yield ``(line_no, object)`` one line at a time (1-based line numbers).

    Nothing but the current line is held, so a file of any size streams.
    Codes (raised when the offending line is reached): INPUT_FILE_READ_ERROR,
    INVALID_ENCODING, INVALID_JSON, INVALID_JSONL_RECORD (valid JSON but not an
    object), EMPTY_JSONL (no records at all, only when ``allow_empty`` is False).
    """
    path = str(path)
    seen = False
    scan, loads = _SCAN_ONCE, json.loads
    for line_no, raw in iter_lines(path, bom=bom):
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
                raise InputError("INVALID_JSON", f"invalid JSON: {exc.msg} (column {exc.colno})",
                                 path, line_no) from None
            except RecursionError:
                raise InputError("INVALID_JSON", "invalid JSON: nested too deeply", path, line_no) from None
            except ValueError:  # an integer past Python's limit on digits (int('9' * 5000) raises)
                raise InputError("INVALID_JSON", f"invalid JSON: a number of more than "
                                 f"{sys.get_int_max_str_digits()} digits", path, line_no) from None
        if type(value) is not dict:
            raise InputError("INVALID_JSONL_RECORD", f"each line must be a JSON object, got {type(value).__name__}",
                             path, line_no)
        seen = True
        yield line_no, value
    if not seen and not allow_empty:
        raise InputError("EMPTY_JSONL", "file contains no JSONL records", path)


def read_jsonl(path) -> List[Dict[str, Any]]:
    """The objects of a JSONL file, in file order (:func:`iter_jsonl`, an empty file gives ``[]``)."""
    return [obj for _, obj in iter_jsonl(path)]


def iter_kaldi_text(path) -> Iterator[Tuple[int, str, str]]:
    """``(line_no, key, rest)`` of a Kaldi two-column file; blank lines skipped, ``rest`` may be ''.

    A byte-order mark is removed (it would glue onto the first key).
    """
    for line_no, line in iter_lines(path, bom="strip"):
        parts = line.split(maxsplit=1)
        if parts:
            yield line_no, parts[0], parts[1].strip() if len(parts) > 1 else ""


def read_text(path) -> Dict[str, str]:
    """``{utt_id: text}`` of a Kaldi ``text`` file (file order; text may be empty).

    DUPLICATE_KEY when an id comes twice (which line would win is a guess).
    """
    out: Dict[str, str] = {}
    first: Dict[str, int] = {}
    for line_no, key, rest in iter_kaldi_text(path):
        if key in out:
            raise InputError("DUPLICATE_KEY", f"{key!r} again (first on line {first[key]})", path, line_no)
        out[key] = rest
        first[key] = line_no
    return out


def read_scp(path) -> List[Tuple[str, str]]:
    """``[(key, value)]`` of a ``<key> <value>`` file (wav.scp): MISSING_VALUE when a line has no value."""
    rows = []
    for line_no, key, rest in iter_kaldi_text(path):
        if not rest:
            raise InputError("MISSING_VALUE", f"expected '<key> <value>', got only {key!r}", path, line_no)
        rows.append((key, rest))
    return rows


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: Optional[str] = "utf-8"):
    """Open a temp file next to ``path`` (folders made as needed); rename it over ``path`` on success.

    On any exception the temp file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        follow_umask(fd)  # mkstemp makes 0600; outputs follow the umask
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) atomically."""
    with atomic_write(path) as f:
        f.write(text)


def print_report(text: str, md=None) -> None:
    """A benchmark's/tool's report: printed, and written to ``md`` (atomically) when given."""
    print(text)
    if md:
        atomic_write_text(md, text)


def atomic_write_lines(path, lines: Iterable[str]) -> None:
    """Write ``lines`` atomically, each as given (bring your own ``\\n``)."""
    with atomic_write(path) as f:
        f.writelines(lines)


def write_jsonl(path, rows: Iterable[dict]) -> None:
    """One JSON object a line (UTF-8 as is, not ``\\u`` escapes), atomically."""
    with atomic_write(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def atomic_dir(out) -> Iterator[Path]:
    """Build a folder in a temp sibling of ``out`` (yielded); on success it replaces ``out``
    (mode 0755), on an error it is removed and ``out`` is left as it was."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def sha256_file(path, block_size: int = 1 << 20) -> str:
    """Hex SHA-256 of the file at ``path``, read ``block_size`` bytes at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(block_size), b""):
            h.update(block)
    return h.hexdigest()
