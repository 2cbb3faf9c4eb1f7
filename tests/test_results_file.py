"""pyutils.results_file: a regenerated report replaces only the part above the notes marker."""

from pathlib import Path

import pytest

from pyutils.results_file import NOTES_MARKER, ResultsFileError, main, merged, write_results

ROOT = Path(__file__).resolve().parents[1]


def test_notes_below_the_marker_survive_a_new_report():
    old = f"# run 1\nScore: 1.0\n\n{NOTES_MARKER}\n\n## Timing (by hand)\n42 s\n"
    new = merged("# run 2\nScore: 2.0\n", old)
    assert new.startswith("# run 2\nScore: 2.0\n")
    assert "Score: 1.0" not in new
    assert new.endswith(f"{NOTES_MARKER}\n\n## Timing (by hand)\n42 s\n")


def test_a_file_without_the_marker_is_replaced_whole():
    assert merged("# run 2\n", "# run 1\nold numbers\n") == "# run 2\n"
    assert merged("# run 2\n", None) == "# run 2\n"


def test_a_report_carrying_the_marker_is_refused():
    with pytest.raises(ResultsFileError, match="marker"):
        merged(f"# report\n{NOTES_MARKER}\n", None)


def test_marker_at_the_top_keeps_the_whole_file_below_the_report():
    old = f"{NOTES_MARKER}\n\n# zh runs, by hand\n"
    assert merged("# report\n", old) == f"# report\n\n{NOTES_MARKER}\n\n# zh runs, by hand\n"


def test_write_results_keeps_notes_and_reports_it(tmp_path):
    report, into = tmp_path / "report.md", tmp_path / "RESULTS.md"
    report.write_text("# new\n", encoding="utf-8")
    into.write_text(f"# old\n{NOTES_MARKER}\nnote\n", encoding="utf-8")
    assert write_results(report, into) is True
    assert into.read_text(encoding="utf-8") == f"# new\n\n{NOTES_MARKER}\nnote\n"
    # no temp file left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["RESULTS.md", "report.md"]


def test_unreadable_results_file_is_left_untouched(tmp_path, capsys):
    report, into = tmp_path / "report.md", tmp_path / "RESULTS.md"
    report.write_text("# new\n", encoding="utf-8")
    into.write_bytes(b"# old\n\xff\xfe broken\n")
    assert main(["--report", str(report), "--into", str(into)]) == 1
    assert str(into) in capsys.readouterr().err
    assert into.read_bytes() == b"# old\n\xff\xfe broken\n"


def test_missing_report_names_the_file(tmp_path, capsys):
    assert main(["--report", str(tmp_path / "nope.md"), "--into", str(tmp_path / "R.md")]) == 1
    assert "nope.md" in capsys.readouterr().err
    assert not (tmp_path / "R.md").exists()


@pytest.mark.parametrize("rel", ["egs/nvv_tts/RESULTS.md", "egs/nvv_tts/RESULTS_zh.md",
                                 "egs/sqa/RESULTS.md", "egs/vivc/RESULTS.md"])
def test_recipe_results_with_hand_notes_carry_the_marker(rel):
    text = (ROOT / rel).read_text(encoding="utf-8")
    assert sum(line.strip() == NOTES_MARKER for line in text.splitlines()) == 1
