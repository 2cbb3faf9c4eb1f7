"""Paths built from data stay inside their output folder.

Split names, utterance ids and converted-file names come from user files; used
as file or folder names they must not climb out of the output folder
(``../../evil``), be absolute, or hide control characters. Every writer that
builds a path from data goes through :func:`plain_name` / :func:`confined`.
"""

from __future__ import annotations

import os
from pathlib import Path


class UnsafePathError(ValueError):
    """A name from the data that would not stay inside its output folder."""


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain file/folder name, or None if it is one."""
    if not isinstance(name, str) or name == "":
        return "is empty"
    if name in (".", ".."):
        return f"is {name!r}"
    if "/" in name or "\\" in name:
        return "contains a path separator"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "contains a control character"
    return None


def plain_name(name: str, what: str = "name") -> str:
    """``name`` unchanged if it is a plain single path component, else UnsafePathError."""
    problem = name_problem(name)
    if problem:
        raise UnsafePathError(f"{what} {name!r} {problem}: it must be a plain file name "
                              "(it is used as one, and must not point outside the output folder)")
    return name


def confined(root: str | os.PathLike, *parts: str, what: str = "name") -> Path:
    """``root/parts...`` after checking each part is a plain name and the result
    (symlinks resolved) stays under ``root``."""
    for p in parts:
        plain_name(p, what)
    root = Path(root)
    out = root.joinpath(*parts)
    real_root = os.path.realpath(root)
    real = os.path.realpath(out)
    if os.path.commonpath([real_root, real]) != real_root:
        raise UnsafePathError(f"{what} {'/'.join(parts)!r} resolves to {real}, outside {root}")
    return out
