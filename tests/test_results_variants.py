"""Every recipe's RESULTS file keeps its table of variants below the notes marker, so the
report that stage 7 writes above it (pyutils/results_file.py) never removes the table."""

import glob
import os

import pytest

from pyutils.results_file import merged, split_notes

ROOT = os.path.join(os.path.dirname(__file__), "..")
# the RESULTS files a recipe's stage 7 rewrites (RESULTS_gpu.md is written by hand only)
REGENERATED = sorted(p for p in glob.glob(os.path.join(ROOT, "egs", "*", "RESULTS*.md"))
                     if not p.endswith("RESULTS_gpu.md") and not p.endswith("RESULTS_whisper.md"))


def test_there_are_results_files():
    assert len(REGENERATED) >= 6


@pytest.mark.parametrize("path", REGENERATED, ids=lambda p: os.path.relpath(p, ROOT))
def test_variants_table_survives_a_new_report(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    report, notes = split_notes(text)
    assert notes is not None, f"{path}: no notes marker line"
    assert "## Variants" in notes and "| variant |" in notes, f"{path}: no table of variants below the marker"
    assert "## Variants" not in report
    new = merged("# a fresh report\n\nFinal: 0.5\n", text)
    assert new.startswith("# a fresh report") and new.endswith(notes)
