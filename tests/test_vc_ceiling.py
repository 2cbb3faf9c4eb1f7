"""pyutils.vc.ceiling: the Score bound when the output is as intelligible as the sources."""

import json

import pytest

from pyutils.scoring.vc import combine
from pyutils.vc import ceiling as C

HEADER = "utt_id\tsim_ref_out\tsim_src_out\tmos\twer\tref_text\n"


def _components(tmp_path, rows):
    path = tmp_path / "components.tsv"
    path.write_text(HEADER + "".join("\t".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_bound_uses_judge_wer_on_sources(tmp_path):
    comp = _components(tmp_path, [("p1", 70, 60, 10, 100, "xin chào bạn"),
                                  ("p2", 80, 60, 20, 100, "một hai ba bốn")])
    judge = tmp_path / "judge_src"
    # p1: 1 of 3 syllables wrong -> 33.3 %; p2: all right -> 0 %
    judge.write_text("p1 xin chào bàn\np2 một hai ba bốn\n", encoding="utf-8")
    out_json = tmp_path / "c.json"
    assert C.main(["--components", comp, "--judge-sources", str(judge), "--output-json", str(out_json)]) == 0
    res = json.loads(out_json.read_text())
    assert res["SIM_gain"] == pytest.approx(15.0)
    assert res["MOS"] == pytest.approx(15.0)
    assert res["WER_sources"] == pytest.approx(100 / 6, abs=1e-6)
    assert res["Score"] == pytest.approx(combine(15, 0, 15, 100))
    assert res["as_sources"] == pytest.approx(0.4 * 15 + 0.3 * 15 + 0.3 * (100 - 100 / 6))
    # the WER that would give exactly the target with this gain and MOS
    assert combine(15, 0, 15, res["wer_for_target"]) == pytest.approx(40.0)


def test_missing_judge_transcript_is_named(tmp_path, capsys):
    comp = _components(tmp_path, [("p1", 70, 60, 10, 100, "xin chào"), ("p2", 70, 60, 10, 100, "ba")])
    judge = tmp_path / "judge_src"
    judge.write_text("p1 xin chào\n", encoding="utf-8")
    assert C.main(["--components", comp, "--judge-sources", str(judge)]) == 2
    assert "p2" in capsys.readouterr().err


def test_wrong_table_refused(tmp_path, capsys):
    bad = tmp_path / "x.tsv"
    bad.write_text("a\tb\n1\t2\n", encoding="utf-8")
    judge = tmp_path / "j"
    judge.write_text("", encoding="utf-8")
    assert C.main(["--components", str(bad), "--judge-sources", str(judge)]) == 2
    assert "expected a components.tsv" in capsys.readouterr().err
