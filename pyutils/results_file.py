"""Put a freshly generated report into a recipe's RESULTS.md without losing the notes below it.

A recipe's RESULTS.md has two parts, split by the line :data:`NOTES_MARKER`:

* above it, the report that the recipe's scoring stage writes (replaced on every run);
* below it, notes people wrote by hand (measurements, before/after tables, timing),
  kept as they are.

A file without the marker is entirely replaced by the report (what a first run does).

    python -m pyutils.results_file --report exp/x/RESULTS.md --into RESULTS.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyutils.io import atomic_write

NOTES_MARKER = ("<!-- Notes below this line are written by hand; the recipe's scoring stage "
                "rewrites only the report above it. -->")


class ResultsFileError(ValueError):
    """A report or RESULTS.md that cannot be merged; the message names the file."""


def split_notes(text: str) -> tuple[str, str | None]:
    """``(report, notes)``: the text above the marker line and from the marker on (None: no marker)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == NOTES_MARKER:
            return "".join(lines[:i]), "".join(lines[i:])
    return text, None


def merged(report: str, existing: str | None) -> str:
    """The new RESULTS.md: ``report`` followed by the notes part of ``existing`` (if it has one)."""
    if split_notes(report)[1] is not None:
        raise ResultsFileError("the generated report contains the notes marker line")
    if existing is None:
        return report
    _, notes = split_notes(existing)
    if notes is None:
        return report
    report = report.rstrip("\n") + "\n\n"
    return report + notes


def write_results(report_path: str | Path, into: str | Path) -> bool:
    """Write ``report_path`` into ``into`` atomically; True iff hand-written notes were kept."""
    report_path, into = Path(report_path), Path(into)
    try:
        report = report_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsFileError(f"{report_path}: cannot read the report: {e}") from e
    existing = None
    if into.exists():
        try:
            existing = into.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ResultsFileError(f"{into}: cannot read the current RESULTS file "
                                   f"(its notes would be lost): {e}") from e
    try:
        text = merged(report, existing)
    except ResultsFileError as e:
        raise ResultsFileError(f"{report_path}: {e}") from e
    with atomic_write(into) as f:
        f.write(text)
    return split_notes(text)[1] is not None   # the report has no marker: any is the old notes'


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pyutils.results_file",
        description="Copy a generated report into a recipe's RESULTS.md, keeping the "
                    "hand-written notes below the notes marker line.")
    p.add_argument("--report", required=True, help="the report a scoring stage wrote")
    p.add_argument("--into", required=True, help="the RESULTS file to update (created if missing)")
    args = p.parse_args(argv)
    try:
        kept = write_results(args.report, args.into)
    except ResultsFileError as e:
        print(f"results_file: error: {e}", file=sys.stderr)
        return 1
    print(f"results_file: {args.report} -> {args.into}"
          + (" (hand-written notes kept)" if kept else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
