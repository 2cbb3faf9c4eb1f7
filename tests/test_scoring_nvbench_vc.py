"""Hand-worked cases for ``chorus-score nvbench`` and ``chorus-score vc``."""

import pytest

from pyutils.scoring.errors import ScoringError
from pyutils.scoring.nvbench import map_nvbench_text, score_nvbench, score_nvbench_files
from pyutils.scoring.vc import combine, load_components, score_vc, score_vc_files


def rows(lang, *texts):
    return [{"utt_id": f"u{k}", "language": lang, "text_with_nvvs": t} for k, t in enumerate(texts)]


def hyps(*texts):
    return [{"utt_id": f"u{k}", "text_with_nvvs": t} for k, t in enumerate(texts)]


def test_nvbench_zh_inventory():
    r = score_nvbench(rows("zh", "你好[Laughter]世界", "你好"), hyps("你好世[Cough]界", "你好[Sigh]"),
                      inventory="nvbench")["zh"]
    assert r["CER"] == 0.0
    # utt 0: [laughter] -> [cough] = 1 edit over 1 tag ; utt 1: 1 insertion over 0 tags
    assert r["PCER_micro"] == 2.0
    assert r["PCER_macro"] == 1.0 and r["PCER_macro_num_utterances"] == 1
    # tagged: (你 好 L 世 界) vs (你 好 世 C 界) = 2 ; (你 好) vs (你 好 S) = 1  -> 3 / 7
    assert r["OCER"] == pytest.approx(3 / 7)


def test_nvbench_en_mapped_to_challenge():
    res = score_nvbench(rows("en", "hello [Laughter] world [Question-en]"), hyps("hallo world [Laughter]"),
                        map_to_challenge=True)
    r = res["en"]
    assert r["CER"] == pytest.approx(1 / 11)      # "hello world" vs "hallo world"
    assert r["WER"] == pytest.approx(1 / 2)
    assert r["PCER_micro"] == 0.0                 # [laugh] vs [laugh]; [Question-en] has no counterpart
    assert r["OCER"] == pytest.approx(3 / 3)      # substitute + tag moved (delete + insert)
    assert map_nvbench_text("a [Breathing] b [Uhm] c [laugh]") == "a [breath] b  c [laugh]"


def test_nvbench_inventory_errors_and_kaldi(tmp_path):
    with pytest.raises(ScoringError) as info:
        score_nvbench(rows("en", "a [Laughter]"), hyps("a"))
    assert info.value.code == "UNSUPPORTED_NVV_TAG"
    ref = tmp_path / "text.ref"
    hyp = tmp_path / "text.hyp"
    ref.write_text("u1 你好[laugh]\nu2 世界\n", encoding="utf-8")
    hyp.write_text("u1 你[laugh]好\nu2\n", encoding="utf-8")
    r = score_nvbench_files(str(ref), str(hyp), fmt="kaldi", lang="zh")["zh"]
    assert r["CER"] == pytest.approx(2 / 4) and r["PCER_micro"] == 0.0
    hyp.write_text("u1 你[giggle]好\nu2\n", encoding="utf-8")
    with pytest.raises(ScoringError) as info:
        score_nvbench_files(str(ref), str(hyp), fmt="kaldi", lang="zh")
    assert (info.value.code, info.value.line) == ("UNSUPPORTED_NVV_TAG", 1)


def test_vc_score_linear_average(tmp_path):
    assert combine(80, 30, 70, 10) == pytest.approx(0.4 * 50 + 0.3 * 70 + 0.3 * 90)
    tsv = tmp_path / "comp.tsv"
    tsv.write_text("utt\tsim_ref_out\tsim_src_out\tmos\twer\n"
                   "a.wav\t80\t30\t70\t10\n"
                   "b.wav\t60\t40\t50\t30\n")
    r = score_vc_files(str(tsv))
    assert r["SIM_gain"] == pytest.approx(35.0)
    assert r["Score"] == pytest.approx(0.4 * 35 + 0.3 * 60 + 0.3 * 80)
    assert r["Score"] == pytest.approx(r["Score_mean_of_utterances"])
    ids = tmp_path / "ids.txt"
    ids.write_text("a.wav\nb.wav\nc.wav\n")
    with pytest.raises(ScoringError) as info:
        score_vc_files(str(tsv), str(ids))
    assert info.value.code == "MISSING_SAMPLES"


@pytest.mark.parametrize("line,code", [
    ("a\t80\t30\t70\t101\n", "VALUE_OUT_OF_RANGE"),
    ("a\t80\tx\t70\t10\n", "INVALID_VALUE"),
    ("a\t80\tnan\t70\t10\n", "INVALID_VALUE"),
    ("a\t80\t30\t70\n", "INVALID_TSV_ROW"),
])
def test_vc_invalid(tmp_path, line, code):
    tsv = tmp_path / "comp.tsv"
    tsv.write_text("utt\tsim_ref_out\tsim_src_out\tmos\twer\n" + line)
    with pytest.raises(ScoringError) as info:
        load_components(str(tsv))
    assert (info.value.code, info.value.line) == (code, 2)


def test_vc_jsonl():
    r = score_vc({"x": {"sim_ref_out": 100, "sim_src_out": 0, "mos": 100, "wer": 0}})
    assert r["Score"] == 100.0
