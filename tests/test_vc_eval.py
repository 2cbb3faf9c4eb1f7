"""VC evaluation: SIM/MOS mappings, WER, component file -> chorus-score vc, report."""

import json
import math
import re

import pytest

from pyutils.scoring import cli as score_cli
from pyutils.vc import evaluate as E
from pyutils.vc import report as R


@pytest.mark.parametrize("cos,expected", [(-0.3, 0.0), (0.0, 0.0), (0.42, 42.0), (1.0, 100.0), (1.2, 100.0)])
def test_sim_mapping(cos, expected):
    assert E.sim_from_cosine(cos) == pytest.approx(expected)


@pytest.mark.parametrize("ovrl,expected", [(1.0, 0.0), (3.0, 50.0), (4.2, 80.0), (5.0, 100.0),
                                           (0.5, 0.0), (5.3, 100.0)])
def test_mos_mapping(ovrl, expected):
    assert E.mos100(ovrl) == pytest.approx(expected)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_mappings_reject_non_numbers(bad):
    with pytest.raises(ValueError):
        E.sim_from_cosine(bad)
    with pytest.raises(ValueError):
        E.mos100(bad)


def test_cosine():
    assert E.cosine([1, 0], [0, 2]) == pytest.approx(0.0)
    assert E.cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    assert E.cosine([0, 0], [1, 2]) == 0.0


def test_wer_normalises_and_caps():
    assert E.wer_percent("Xin chào, các BẠN!", "xin chào các bạn") == 0.0
    assert E.wer_percent("xin chào các bạn", "xin chào bạn") == pytest.approx(25.0)
    # tone marks matter: "ma" and "má" are different syllables
    assert E.wer_percent("ma", "má") == pytest.approx(100.0)
    assert E.wer_percent("một hai", "a b c d e f") == 100.0   # capped
    assert E.wer_percent("một hai", "") == 100.0
    assert E.wer_percent("", "") == 0.0


def test_corpus_wer():
    ref = {"a": "một hai ba", "b": "bốn năm"}
    hyp = {"a": "một hai", "b": "bốn năm"}
    assert E.corpus_wer(ref, hyp) == pytest.approx(20.0)


def _rows():
    return [
        dict(utt_id="p1", sim_ref_out=80.0, sim_src_out=60.0, sim_src_ref=55.0, mos=50.0,
             dnsmos_ovrl=3.0, wer=10.0, ref_text="một hai", hyp_text="một hai"),
        dict(utt_id="p2", sim_ref_out=70.0, sim_src_out=75.0, sim_src_ref=50.0, mos=25.0,
             dnsmos_ovrl=2.0, wer=30.0, ref_text="ba bốn", hyp_text="ba"),
    ]


def test_components_file_scored_by_chorus_score(tmp_path):
    comp = tmp_path / "components.tsv"
    E.write_components(str(comp), _rows())
    header = comp.read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert header[:5] == ["utt_id", "sim_ref_out", "sim_src_out", "mos", "wer"]
    out = tmp_path / "score.json"
    assert score_cli.main(["vc", "--hyp", str(comp), "--output-json", str(out)]) == 0
    result = json.loads(out.read_text())
    # means: SIM gain (75-67.5)=7.5, MOS 37.5, WER 20
    expected = 0.4 * 7.5 + 0.3 * 37.5 + 0.3 * (100 - 20)
    assert result["Score"] == pytest.approx(expected)
    assert R.score_from_json(str(out)) == pytest.approx(expected)


def test_report_has_checked_lines(tmp_path):
    comp = tmp_path / "components.tsv"
    E.write_components(str(comp), _rows())
    score = tmp_path / "score.json"
    score.write_text(json.dumps({"Score": 41.25}))
    out = tmp_path / "RESULTS.md"
    assert R.main(["--set", "test", str(comp), str(score), "--output", str(out), "--note", "hello"]) == 0
    text = out.read_text(encoding="utf-8")
    assert re.search(r"^## test$", text, re.M)
    assert re.search(r"^Score: 41\.25$", text, re.M)
    assert re.search(r"^SIM_gain: 7\.50$", text, re.M)   # mean(80,70) - mean(60,75)
    assert "| 2 | 75.00 | 67.50 | 52.50 | 37.50 | 20.00 | 50% |" in text
    assert (tmp_path / "sim_test.png").stat().st_size > 0


def test_report_wer_table_marks_the_score_listener(tmp_path):
    comp = tmp_path / "components.tsv"
    E.write_components(str(comp), _rows())
    score = tmp_path / "score.json"
    score.write_text(json.dumps({"Score": 41.25}))
    table = tmp_path / "wer.tsv"
    table.write_text("judge on the sources\t80.10%\t\njudge on the outputs\t90.00%\tScore\n"
                     "recipe ASR on the outputs\t35.50%\t\n", encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    assert R.main(["--set", "test", str(comp), str(score), "--wer-table", "test", str(table),
                   "--wer-by", "the judge", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "- WER (%) of the judge on the output" in text
    assert "| judge on the outputs | 90.00% | yes |" in text
    assert "| recipe ASR on the outputs | 35.50% |  |" in text
    bad = tmp_path / "bad.tsv"
    bad.write_text("only a label\n", encoding="utf-8")
    assert R.main(["--set", "test", str(comp), str(score), "--wer-table", "test", str(bad),
                   "--output", str(tmp_path / "R2.md")]) == 2
    assert not (tmp_path / "R2.md").exists()


def test_summary_counts_pairs_with_gain():
    rows = [{k: str(v) for k, v in r.items()} for r in _rows()]
    s = R.summarize(rows)
    assert s["n"] == 2 and s["frac_gain_pos"] == 0.5
    assert math.isclose(s["sim_gain"], 7.5)


def test_results_check(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("# t\n\n## test\n\nScore: 12.5\nSIM_gain: -0.4\n\n## test2\nScore: 1\nSIM_gain: 2\n")
    assert R.check(str(good)) == {"test": {"Score": 12.5, "SIM_gain": -0.4},
                                  "test2": {"Score": 1.0, "SIM_gain": 2.0}}
    assert R.main(["--check", str(good)]) == 0
    bad = tmp_path / "bad.md"
    bad.write_text("## test\nScore: 3\n## other\nScore: 1\nSIM_gain: 2\n")
    with pytest.raises(ValueError, match="section test lacks SIM_gain"):
        R.check(str(bad))
    assert R.main(["--check", str(bad)]) == 2
    nan = tmp_path / "nan.md"
    nan.write_text("## test\nScore: n/a\nSIM_gain: 1\n")
    with pytest.raises(ValueError, match=":2: Score is not a number"):
        R.check(str(nan))
