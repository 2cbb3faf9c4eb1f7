"""One exception type for every invalid input, printed as one line.

``file:line: CODE: message`` -- the form compilers use, so editors can jump to
the line. ``line`` is omitted when the problem is not tied to one line (for
example a set of missing utterance ids).
"""

from __future__ import annotations

from typing import Optional


class ScoringError(Exception):
    """Invalid input for a scorer/validator (the CLI exits with status 2)."""

    def __init__(self, code: str, message: str, path: Optional[str] = None,
                 line: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = " ".join(str(message).split())  # always one line
        self.path = path
        self.line = line

    def located(self, path: Optional[str] = None, line: Optional[int] = None) -> "ScoringError":
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

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.one_line()


class FailedReport(Exception):
    """A validator's report lines (stdout) plus the error that fails the run."""

    def __init__(self, lines, error: ScoringError) -> None:
        super().__init__(error.one_line())
        self.lines = list(lines)
        self.error = error
