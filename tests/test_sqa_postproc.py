"""SQA post-processing: frame probabilities -> intervals, and its tuning."""

import numpy as np
import pytest

from pyutils.sqa.common import FAULTS, frames_to_intervals
from pyutils.sqa.postproc import frames_to_fault_intervals, make_row, smooth_and_threshold, tune

BASE = {"median": 1, "threshold": 0.5, "merge_gap": 0.0, "min_dur": 0.0, "utt_threshold": 0.0}


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
