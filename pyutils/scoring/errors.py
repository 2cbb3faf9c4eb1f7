"""The scorers' invalid-input error (:class:`pyutils.io.InputError`), printed as one line.

``file:line: CODE: message`` -- the form compilers use, so editors can jump to
the line. ``line`` is omitted when the problem is not tied to one line (for
example a set of missing utterance ids).
"""

from __future__ import annotations

from pyutils.io import InputError


# The one error type for bad input everywhere in Chorus; the scorers know it by this name.
ScoringError = InputError


class FailedReport(Exception):
    """A validator's report lines (stdout) plus the error that fails the run."""

    def __init__(self, lines, error: ScoringError) -> None:
        super().__init__(error.one_line())
        self.lines = list(lines)
        self.error = error
