"""SQA post-processing: frame probabilities -> intervals, and its tuning."""

import numpy as np
import pytest

from pyutils.sqa.common import FAULTS, frames_to_intervals
from pyutils.sqa.postproc import (decide_regions, fault_mask, make_row, mask_to_intervals, read_postproc,
                                   smooth_and_threshold, tune, tune_region)

BASE = {"median": 1, "threshold": 0.5, "merge_gap": 0.0, "min_dur": 0.0, "utt_threshold": 0.0}


def frames_to_fault_intervals(probs, params, utt_prob=1.0, duration=None):
    """One fault: (N,) probabilities -> ``[[start, end], ...]`` seconds (steps 1-5 of make_row)."""
    return mask_to_intervals(fault_mask(probs, params, utt_prob), duration)


def probs(*runs, n=50):
    p = np.zeros(n, dtype=np.float32)
    for a, b in runs:
        p[a:b] = 0.9
    return p


def test_runs_to_seconds_on_20ms_grid():
    assert frames_to_intervals(np.array([0, 1, 1, 0, 0, 1])) == [[0.02, 0.06], [0.1, 0.12]]
    assert frames_to_intervals(np.zeros(5)) == []


def test_threshold_only():
    assert frames_to_fault_intervals(probs((10, 20)), BASE) == [[0.2, 0.4]]


def test_min_duration_drops_short_runs():
    p = probs((5, 7), (20, 40))            # 40 ms and 400 ms
    prm = {**BASE, "min_dur": 0.1}
    assert frames_to_fault_intervals(p, prm) == [[0.4, 0.8]]


def test_merge_close_segments_but_not_far_ones():
    p = probs((10, 20), (22, 30), (40, 45))   # gap of 2 frames (40 ms), then 10 frames
    prm = {**BASE, "merge_gap": 0.1}
    assert frames_to_fault_intervals(p, prm) == [[0.2, 0.6], [0.8, 0.9]]


def test_median_removes_single_frame_spikes():
    p = probs((10, 11), (20, 30))
    m = smooth_and_threshold(p, median=5, threshold=0.5, merge_gap=0.0, min_dur=0.0)
    assert not m[10] and m[20:30].all()


def test_utterance_gate_and_duration_clip():
    p = probs((40, 50))
    assert frames_to_fault_intervals(p, {**BASE, "utt_threshold": 0.5}, utt_prob=0.2) == []
    assert frames_to_fault_intervals(p, BASE, duration=0.95) == [[0.8, 0.95]]


def test_present_fault_always_has_intervals():
    fp = np.stack([probs((10, 20)), probs(), probs((0, 3))], axis=1)
    row = make_row("u", 7.0, fp, [0.9, 0.1, 0.9], {f: {**BASE, "min_dur": 0.1} for f in FAULTS})
    assert row["score"] == 5.0                       # clipped into [1, 5]
    assert row["faults"]["noise"] == [[0.2, 0.4]]
    assert row["faults"]["distortion"] == [] and row["faults"]["pause"] == []


def test_tune_picks_a_threshold_that_separates_classes():
    pytest.importorskip("pyutils.scoring.sqa")
    rng = np.random.default_rng(0)
    outputs, refs = {}, []
    for i in range(6):
        p = rng.uniform(0.0, 0.35, size=(100, 3)).astype(np.float32)
        faults = {f: [] for f in FAULTS}
        if i % 2 == 0:
            p[30:60, 0] = rng.uniform(0.45, 0.55, size=30)   # noise only above 0.45
            faults["noise"] = [[0.6, 1.2]]
        outputs[f"u{i}"] = {"frame_probs": p, "utt_probs": np.full(3, 0.5), "score": 3.0, "duration": 2.0}
        refs.append({"utt_id": f"u{i}", "score": 3.0 + i % 2, "faults": faults})
    grid = {"median": [1], "threshold": [0.3, 0.4, 0.6], "merge_gap": [0.1], "min_dur": [0.0],
            "utt_threshold": [0.0]}
    params, table = tune(outputs, refs, grid)
    assert params["noise"]["threshold"] == 0.4
    assert len(table) == 2 * (3 + 1 + 1) * len(FAULTS)   # 2 passes over 3 parameter groups


def test_region_goes_whole_to_each_class_above_the_threshold():
    probs = np.zeros((40, 2))
    probs[5:15] = [0.6, 0.35]           # region 1: noise strong, distortion on at its end only
    probs[25:35] = [0.25, 0.7]          # region 2: distortion strong, noise weak throughout
    masks = np.zeros((40, 2), dtype=bool)
    masks[5:12, 0] = masks[12:15, 1] = True       # frame by frame: split between the classes
    masks[25:35, 1] = True
    masks[30:33, 0] = True
    out = decide_regions(masks, probs, 0.3)
    assert out[5:15].all()                         # both means >= 0.3 over 5..15: both take it whole
    assert out[25:35, 1].all() and not out[25:35, 0].any()   # noise mean 0.25 < 0.3: dropped
    assert not out[:5].any() and not out[15:25].any()
    np.testing.assert_array_equal(decide_regions(masks, probs, 0.0), masks)   # 0: off
    assert decide_regions(masks, probs, 0.4)[5:15, 0].all() and not decide_regions(masks, probs, 0.4)[:, 1][5:15].any()


def test_make_row_applies_the_region_step_to_noise_and_distortion_only():
    fp = np.zeros((50, 3), dtype=np.float32)
    fp[10:20, 0] = 0.8
    fp[20:30, 1] = 0.8                  # distortion right after the noise: one region 10..30
    fp[40:45, 2] = 0.9
    prm = {f: dict(BASE) for f in FAULTS}
    plain = make_row("u", 3.0, fp, [1, 1, 1], prm)
    assert plain["faults"]["noise"] == [[0.2, 0.4]] and plain["faults"]["distortion"] == [[0.4, 0.6]]
    row = make_row("u", 3.0, fp, [1, 1, 1], prm, region_threshold=0.3)
    assert row["faults"]["noise"] == [[0.2, 0.6]] and row["faults"]["distortion"] == [[0.2, 0.6]]
    assert row["faults"]["pause"] == plain["faults"]["pause"] == [[0.8, 0.9]]
    row = make_row("u", 3.0, fp, [1, 1, 1], prm, region_threshold=0.5)   # means 0.4 each: neither
    assert row["faults"]["noise"] == [] and row["faults"]["distortion"] == []


def _split_fault_set(n=8):
    """Recordings whose noise (0.4-1.2 s) the model splits between noise and distortion; every
    other one also has a real distortion (1.6-1.8 s) that the model finds."""
    outputs, refs = {}, []
    for i in range(n):
        p = np.full((100, 3), 0.05, dtype=np.float32)
        p[20:40, 0] = 0.7
        p[40:60, 1] = 0.7
        p[40:60, 0] = 0.3
        dist = []
        if i % 2:
            p[80:90, 1] = 0.9
            dist = [[1.6, 1.8]]
        outputs[f"u{i}"] = {"frame_probs": p, "utt_probs": np.ones(3), "score": 3.0, "duration": 2.0}
        refs.append({"utt_id": f"u{i}", "score": 3.0 + (i % 3),
                     "faults": {"noise": [[0.4, 1.2]], "distortion": dist, "pause": []}})
    return outputs, refs


def test_tune_region_picks_a_threshold_that_mends_a_split_and_off_otherwise():
    pytest.importorskip("pyutils.scoring.sqa")
    outputs, refs = _split_fault_set()
    prm = {f: dict(BASE) for f in FAULTS}
    t, values = tune_region(outputs, refs, prm, grid=[0.2, 0.5, 0.8])
    assert t == 0.5 and values[0.5] > values[0.0]       # noise (mean 0.5) takes the region, distortion (0.35) not
    for o in outputs.values():                          # nothing split: the step cannot help, stays off
        o["frame_probs"][40:60, :2] = 0.05
    refs = [{**r, "faults": {**r["faults"], "noise": [[0.4, 0.8]]}} for r in refs]
    assert tune_region(outputs, refs, prm, grid=[0.2, 0.5])[0] == 0.0


def test_read_postproc(tmp_path):
    prm = {f: dict(BASE) for f in FAULTS}
    p = tmp_path / "postproc.json"
    p.write_text('{"params": %s}' % __import__("json").dumps(prm))
    assert read_postproc(str(p)) == (prm, 0.0)          # files written before the region step
    p.write_text('{"params": %s, "region_threshold": 0.25}' % __import__("json").dumps(prm))
    assert read_postproc(str(p))[1] == 0.25
    for bad in ('"0.2"', "1.5", "true", "-0.1"):
        p.write_text('{"params": %s, "region_threshold": %s}' % (__import__("json").dumps(prm), bad))
        with pytest.raises(ValueError, match="postproc.json"):
            read_postproc(str(p))


def test_the_cli_writes_the_region_threshold(tmp_path):
    pytest.importorskip("pyutils.scoring.sqa")
    from pyutils.io import write_jsonl
    from pyutils.sqa.infer import save_outputs
    from pyutils.sqa.postproc import main

    outputs, refs = _split_fault_set()
    save_outputs(str(tmp_path / "out.npz"), outputs)
    write_jsonl(str(tmp_path / "ref.jsonl"), refs)
    for mode in ("after", "off"):
        assert main(["tune", "--quick", "--region", mode, "--outputs", str(tmp_path / "out.npz"),
                     "--ref", str(tmp_path / "ref.jsonl"), "--out", str(tmp_path / f"{mode}.json")]) == 0
    assert read_postproc(str(tmp_path / "after.json"))[1] > 0     # the split is mended on this dev set
    assert read_postproc(str(tmp_path / "off.json"))[1] == 0.0


def _gate_set():
    """Two recordings with noise (utterance probability 0.9), two without but with noisy-looking
    frames (utterance probability 0.6): a noise gate between 0.6 and 0.9 removes only the latter."""
    outputs, refs = {}, []
    for i in range(4):
        p = np.zeros((100, 3), dtype=np.float32)
        p[20:80, 0] = 0.9
        faults = {f: [] for f in FAULTS}
        if i < 2:
            faults["noise"] = [[0.4, 1.6]]
        utt = np.array([0.9 if i < 2 else 0.6, 0.0, 0.0], dtype=np.float32)
        outputs[f"u{i}"] = {"frame_probs": p, "utt_probs": utt, "score": 3.0 + 0.5 * i, "duration": 2.0}
        refs.append({"utt_id": f"u{i}", "score": 3.0 + 0.4 * i, "faults": faults})
    return outputs, refs


def test_sweep_varies_one_parameter_and_keeps_the_rest(tmp_path, capsys):
    pytest.importorskip("pyutils.scoring.sqa")
    import json

    from pyutils.io import write_jsonl
    from pyutils.sqa.infer import save_outputs
    from pyutils.sqa.postproc import main, sweep

    outputs, refs = _gate_set()
    params = {f: dict(BASE) for f in FAULTS}
    rows = sweep(outputs, refs, params, 0.0, "noise", "utt_threshold", [0.0, 0.7, 0.95])
    assert [r["F1"] for r in rows] == pytest.approx([2 / 3, 1.0, 0.0])   # 2 TP + 2 FP; gate; all gone
    assert rows[0]["tuned"] and not rows[1]["tuned"]
    assert rows[1]["Final"] > rows[0]["Final"] > rows[2]["Final"]
    assert params["noise"]["utt_threshold"] == 0.0                      # the caller's dict is untouched
    with pytest.raises(ValueError, match="not one of"):
        sweep(outputs, refs, params, 0.0, "noise", "gate", [0.5])
    save_outputs(str(tmp_path / "out.npz"), outputs)
    write_jsonl(str(tmp_path / "ref.jsonl"), refs)
    (tmp_path / "pp.json").write_text(json.dumps({"params": params, "region_threshold": 0.0}))
    args = ["sweep", "--postproc", str(tmp_path / "pp.json"), "--outputs", str(tmp_path / "out.npz"),
            "--ref", str(tmp_path / "ref.jsonl"), "--fault", "noise", "--param", "utt_threshold"]
    assert main(args + ["--values", "0,0.7"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].split()[0] == "0" and out[-2].endswith("*") and out[-1].split()[0] == "0.7"
    with pytest.raises(SystemExit, match="--values"):
        main(args + ["--values", "0,high"])
    (tmp_path / "bad.jsonl").write_text('{"utt_id": "u0"\n')
    bad_ref = [a if a != str(tmp_path / "ref.jsonl") else str(tmp_path / "bad.jsonl") for a in args]
    with pytest.raises(SystemExit, match="bad.jsonl:1"):
        main(bad_ref + ["--values", "0"])
    with pytest.raises(SystemExit, match="missing.npz"):
        main([a if a != str(tmp_path / "out.npz") else str(tmp_path / "missing.npz") for a in args]
             + ["--values", "0"])
