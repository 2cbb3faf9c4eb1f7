"""Permissions of files written through a temp file.

``tempfile.mkstemp`` creates its file 0600 whatever the umask, so an output
written to a temp file and renamed into place would be private even under
umask 022. :func:`follow_umask` gives such a file the mode ``open()`` would
have given it (0666 minus the umask).
"""

from __future__ import annotations

import os


def current_umask() -> int:
    """The process umask, read without changing it (Linux), else via os.umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def follow_umask(fd_or_path) -> None:
    """chmod an open file descriptor (or a path) to 0666 & ~umask."""
    mode = 0o666 & ~current_umask()
    if isinstance(fd_or_path, int):
        os.fchmod(fd_or_path, mode)
    else:
        os.chmod(fd_or_path, mode)
