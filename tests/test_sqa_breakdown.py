"""Per-kind breakdown of an SQA model's test outputs (pyutils.sqa.breakdown) and its place in the report."""

import json

import pytest

from pyutils.sqa import breakdown
from pyutils.sqa.report import build, main as report_main


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _example(tmp_path):
    kinds = _jsonl(tmp_path / "faults.jsonl", [
        {"utt_id": "u1", "duration": 4.0, "details": [
            {"type": "distortion", "kind": "warble", "start": 1.0, "end": 2.0, "strength": 0.5}]},
        {"utt_id": "u2", "duration": 3.0, "details": [
            {"type": "noise", "kind": "pink", "start": 0.0, "end": 1.0, "snr_db": 5.0}]},
        {"utt_id": "u3", "duration": 2.0, "details": []}])
    ref = _jsonl(tmp_path / "ref.jsonl", [
        {"utt_id": "u1", "score": 3.0, "faults": {"distortion": [[1.0, 2.0]]}},
        {"utt_id": "u2", "score": 2.0, "faults": {"noise": [[0.0, 1.0]]}},
        {"utt_id": "u3", "score": 4.6, "faults": {}}])
    hyp = _jsonl(tmp_path / "hyp.jsonl", [
        {"utt_id": "u1", "score": 3.5, "faults": {"distortion": [[1.5, 3.0]]}},      # half the warble
        {"utt_id": "u2", "score": 2.5, "faults": {"distortion": [[0.2, 0.4]]}},      # noise missed, wrong class
        {"utt_id": "u3", "score": 4.0, "faults": {"noise": [[0.5, 0.7]]}}])          # alarm on a clean one
    return kinds, ref, hyp


def test_found_covered_false_alarms_and_score_by_fault_count(tmp_path):
    kinds, ref, hyp = _example(tmp_path)
    b = breakdown.breakdown(breakdown.load_kinds(kinds), breakdown.load_rows(ref), breakdown.load_rows(hyp))
    rows = {(r["type"], r["kind"]): r for r in b["kinds"]}
    # warble [1, 2) holds frames 50..99 (centres (2k+1)/100); [1.5, 3) covers 75..99: 25 of 50
    assert rows[("distortion", "warble")] == {"type": "distortion", "kind": "warble", "n": 1, "found": 1.0,
                                              "covered": 0.5}
    assert rows[("noise", "pink")]["found"] == 0.0 and rows[("noise", "pink")]["covered"] == 0.0
    assert [r["type"] for r in b["kinds"]] == ["noise", "distortion"]              # in FAULTS order
    assert b["false_alarms"] == {"noise": [("no fault", 1)], "distortion": [("pink", 1)], "pause": []}
    by = {(c["faults"], c["same_type"]): c for c in b["by_fault_count"]}
    assert by[(0, 0)]["n"] == 1 and by[(0, 0)]["hyp"] - by[(0, 0)]["ref"] == pytest.approx(-0.6)
    assert by[(1, 1)]["n"] == 2 and by[(1, 1)]["ref"] == pytest.approx(2.5) and by[(1, 1)]["hyp"] == pytest.approx(3.0)
    text = "\n".join(breakdown.markdown(b))
    assert "| distortion | warble | 1 | 1.00 | 0.50 |" in text
    assert "noise 1 (no fault 1); distortion 1 (pink 1)" in text
    assert "| 1 | 1 | 2 | 2.50 | 3.00 | +0.50 |" in text


def test_score_groups_split_repeated_faults_of_one_type(tmp_path):
    clip = {"type": "distortion", "kind": "clipping", "strength": 0.8}
    kinds = _jsonl(tmp_path / "faults.jsonl", [
        {"utt_id": "a", "duration": 4.0, "details": [dict(clip, start=0.0, end=0.5), dict(clip, start=2.0, end=2.5),
                                                      {"type": "noise", "kind": "pink", "start": 1.0, "end": 1.5,
                                                       "snr_db": 5.0}]},
        {"utt_id": "b", "duration": 4.0, "details": [dict(clip, start=0.0, end=0.5),
                                                      {"type": "noise", "kind": "pink", "start": 1.0, "end": 1.5,
                                                       "snr_db": 5.0},
                                                      {"type": "pause", "kind": "silence", "start": 3.0, "end": 3.5}]}])
    ref = _jsonl(tmp_path / "ref.jsonl", [{"utt_id": "a", "score": 1.5, "faults": {}},
                                         {"utt_id": "b", "score": 2.0, "faults": {}}])
    hyp = _jsonl(tmp_path / "hyp.jsonl", [{"utt_id": "a", "score": 2.5, "faults": {}},
                                         {"utt_id": "b", "score": 2.1, "faults": {}}])
    b = breakdown.breakdown(breakdown.load_kinds(kinds), breakdown.load_rows(ref), breakdown.load_rows(hyp))
    assert [(c["faults"], c["same_type"], c["n"]) for c in b["by_fault_count"]] == [(3, 1, 1), (3, 2, 1)]
    text = "\n".join(breakdown.markdown(b))
    assert "| 3 | 2 | 1 | 1.50 | 2.50 | +1.00 |" in text and "| 3 | 1 | 1 | 2.00 | 2.10 | +0.10 |" in text


def test_false_alarms_per_speaker(tmp_path):
    kinds, ref, hyp = _example(tmp_path)
    spk = tmp_path / "utt2spk"
    spk.write_text("u1 real_a\nu2 real_a\nu3 real_b\n")
    b = breakdown.breakdown(breakdown.load_kinds(kinds), breakdown.load_rows(ref), breakdown.load_rows(hyp),
                            breakdown.load_utt2spk(str(spk)))
    per = b["false_alarms_by_speaker"]
    # u1 (distortion) and u2 (noise) of real_a: one recording without noise, one without distortion;
    # the distortion predicted on u2 is an alarm, nothing is predicted as noise on u1
    assert per["real_a"] == {"noise": [0, 1], "distortion": [1, 1], "pause": [0, 2]}
    assert per["real_b"] == {"noise": [1, 1], "distortion": [0, 1], "pause": [0, 1]}
    text = "\n".join(breakdown.markdown(b))
    assert "| real_a | 0 / 1 | 1 / 1 | 0 / 2 |" in text and "| real_b | 1 / 1 | 0 / 1 | 0 / 1 |" in text
    assert "per speaker" not in "\n".join(breakdown.markdown(breakdown.breakdown(
        breakdown.load_kinds(kinds), breakdown.load_rows(ref), breakdown.load_rows(hyp))))
    spk.write_text("u1 real_a extra\n")
    with pytest.raises(ValueError, match="utt2spk: utterance 'u1'"):
        breakdown.load_utt2spk(str(spk))
    spk.write_text("u1 real_a\nu1 real_b\n")
    with pytest.raises(ValueError, match="utt2spk:2: duplicate key"):
        breakdown.load_utt2spk(str(spk))


@pytest.mark.parametrize("row,msg", [
    ({"utt_id": "u1", "details": [{"type": "hiss", "kind": "x", "start": 0, "end": 1}]}, "type in"),
    ({"utt_id": "u1", "details": [{"type": "noise", "kind": "pink", "start": 2, "end": 1}]}, "start <= end"),
    ({"utt_id": "u1", "details": [{"type": "noise", "kind": "pink", "start": 0, "end": float("nan")}]}, "finite"),
    ({"utt_id": "u1", "details": "noise"}, "must be a list"),
    ({"details": []}, "utt_id"),
])
def test_bad_kind_rows_name_the_file_and_line(tmp_path, row, msg):
    path = tmp_path / "faults.jsonl"
    path.write_text(json.dumps({"utt_id": "u0", "details": []}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=msg) as err:
        breakdown.load_kinds(str(path))
    assert f"{path}:2" in str(err.value)


_SCORE = json.dumps({"Final": 0.5, "num_recordings": 3, "PCC": 0.5, "F1_macro": 0.5, "IoU_macro": 0.5,
                     "per_fault": {f: {"F1": 0.5, "IoU": 0.5, "counts": {"tp": 1, "fp": 0, "fn": 0}}
                                   for f in ("noise", "distortion", "pause")}})


def test_report_adds_the_table_only_for_splits_that_know_their_kinds(tmp_path):
    kinds, ref, hyp = _example(tmp_path)
    model, data = tmp_path / "exp", tmp_path / "data"
    for s in ("test", "test_plain"):
        (model / f"infer_{s}").mkdir(parents=True)
        (model / f"infer_{s}" / "hyp.jsonl").write_text(open(hyp).read())
        (model / f"infer_{s}" / "score.json").write_text(_SCORE)
        (data / s).mkdir(parents=True)
        (data / s / "ref.jsonl").write_text(open(ref).read())
    (data / "test" / "faults.jsonl").write_text(open(kinds).read())
    text, details = build(str(model), ["test", "test_plain"], None, "ci", data_dir=str(data),
                          details_path="exp/x/report_details.md")
    # the tables go to the details file, under the split's heading; RESULTS.md names that file in the split's section
    assert "Per fault kind (" not in text and "| distortion | warble |" not in text
    assert details.count("Per fault kind (3 recordings") == 1 and "| distortion | warble | 1 | 1.00 | 0.50 |" in details
    assert details.index("## test\n") < details.index("Per fault kind") and "## test_plain" not in details
    pointer = "score by the number of faults: `exp/x/report_details.md`, section test."
    assert text.count(pointer) == 1 and text.index("## test\n") < text.index(pointer) < text.index("## test_plain")
    text, details = build(str(model), ["test"], None, "ci")                    # no data dir, no table
    assert "report_details" not in text and "Per fault kind" not in details and "no per-kind tables" in details
    (data / "test" / "faults.jsonl").write_text("{broken\n")
    text, details = build(str(model), ["test"], None, "ci", data_dir=str(data))
    assert "Per-kind breakdown skipped:" in text and "report_details" not in text and "## test" not in details


def test_report_cli_writes_both_files_and_results_names_the_details(tmp_path):
    kinds, ref, hyp = _example(tmp_path)
    model, data = tmp_path / "exp", tmp_path / "data"
    (model / "infer_test").mkdir(parents=True)
    (model / "infer_test" / "hyp.jsonl").write_text(open(hyp).read())
    (model / "infer_test" / "score.json").write_text(_SCORE)
    (data / "test").mkdir(parents=True)
    (data / "test" / "ref.jsonl").write_text(open(ref).read())
    (data / "test" / "faults.jsonl").write_text(open(kinds).read())
    out = model / "RESULTS.md"
    assert report_main(["--model-dir", str(model), "--test-sets", "test", "--preset", "ci",
                        "--data-dir", str(data), "--out", str(out)]) == 0
    details = model / "report_details.md"
    assert f"`{details}`, section test." in out.read_text()
    assert "| noise | pink | 1 | 0.00 | 0.00 |" in details.read_text()
