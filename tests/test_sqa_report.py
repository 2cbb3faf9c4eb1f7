"""RESULTS.md of the SQA recipe: the per-stage time table."""

from pyutils.sqa.report import build


def test_stage_times_table_sums_wall_and_cpu(tmp_path):
    tsv = tmp_path / "stage_times.tsv"
    tsv.write_text("stage\twall_s\tcpu_s\tload1\n0 corpus\t90\t150.2\t7.10\n5 train+tune\t600\t700.4\t8.02\n"
                   "broken line\n")
    text, _ = build(str(tmp_path), [], None, "ci", stage_times=str(tsv))
    assert "| 0 corpus | 90 | 150 | 7.10 |" in text
    assert "| all | 690 | 851 | |" in text
    assert "## Time per stage" not in build(str(tmp_path), [], None, "ci", stage_times=str(tmp_path / "none"))[0]
