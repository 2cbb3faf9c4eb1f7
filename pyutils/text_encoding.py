"""Where is the byte that is not UTF-8? (file, line, column) for clear errors.

A ``UnicodeDecodeError`` raised while reading a file carries neither the file
name nor the line. Command-line tools catch it and call :func:`locate_non_utf8`
with the files (or folders) they were given, which scans them line by line and
names the first offending byte (the error path only: nothing is scanned when
all input is fine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

#: text-like files searched inside folders
TEXT_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".txt", ".list", ".scp", ".yaml", ".yml",
                 ".lst", ".trans", ".lab", ".text", "")


def first_non_utf8(path: str | os.PathLike) -> str | None:
    """``"path:line: not UTF-8: byte 0xe9 at column 5"`` for the first bad byte, else None."""
    try:
        with open(path, "rb") as f:
            line_no = 0
            for raw in f:
                for piece in raw.splitlines() or [b""]:
                    line_no += 1
                    try:
                        piece.decode("utf-8")
                    except UnicodeDecodeError as e:
                        return (f"{path}:{line_no}: not UTF-8: byte 0x{piece[e.start]:02x} at column "
                                f"{e.start + 1} ({e.reason}); convert the file to UTF-8")
    except OSError:
        return None
    return None


def locate_non_utf8(paths: Iterable[str | os.PathLike | None], max_files: int = 20000) -> str | None:
    """First non-UTF-8 location among ``paths`` (files, or folders searched for text files)."""
    seen = 0
    for p in paths:
        if not p:
            continue
        p = Path(p)
        if p.is_file():
            found = first_non_utf8(p)
            if found:
                return found
        elif p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames.sort()
                for name in sorted(filenames):
                    if Path(name).suffix.lower() not in TEXT_SUFFIXES:
                        continue
                    seen += 1
                    if seen > max_files:
                        return None
                    found = first_non_utf8(Path(dirpath) / name)
                    if found:
                        return found
    return None
