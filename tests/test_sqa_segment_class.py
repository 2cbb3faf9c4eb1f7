"""benchmarks/sqa_segment_class.py: per-segment class decisions on stored frame posteriors."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

from sqa_segment_class import (cue_regions, drop_weak_segments, pooled_cues, rows,  # noqa: E402
                               segment_classes)

from pyutils.sqa.common import FAULTS  # noqa: E402
from pyutils.sqa.postproc import rows_from_outputs  # noqa: E402

BASE = {"median": 1, "threshold": 0.3, "merge_gap": 0.0, "min_dur": 0.0, "utt_threshold": 0.0}


def test_weak_segment_dropped_strong_kept():
    p = np.zeros(40)
    p[5:10] = [0.31, 0.31, 0.31, 0.31, 0.8]    # one strong frame, mean 0.408
    p[20:30] = 0.9
    mask = p >= 0.3
    out = drop_weak_segments(mask, p, 0.5)
    assert not out[5:10].any() and out[20:30].all()
    assert drop_weak_segments(mask, p, 0.4)[5:10].all()      # mean over the run >= 0.4: kept
    assert mask[5:10].all()                                  # input untouched


def test_region_argmax_keeps_only_the_stronger_class():
    probs = np.zeros((30, 2))
    probs[10:20] = [0.7, 0.4]          # noise stronger over the region
    masks = probs >= 0.35
    out = segment_classes(masks, probs, ratio=1.0)
    assert out[10:20, 0].all() and not out[:, 1].any()
    # ratio 0.5: distortion's 0.4 is >= 0.5 * 0.7, so both stay
    both = segment_classes(masks, probs, ratio=0.5)
    assert both[10:20].all()


def test_region_is_pooled_over_the_union_and_absorb_fills_it():
    probs = np.zeros((30, 2))
    probs[5:15, 0] = 0.8               # noise on 5..15
    probs[12:20, 1] = 0.5              # distortion on 12..20, overlapping: one region 5..20
    masks = probs >= 0.4
    out = segment_classes(masks, probs, ratio=1.0, absorb=True)
    assert out[5:20, 0].all() and not out[:, 1].any()
    kept = segment_classes(masks, probs, ratio=1.0, absorb=False)
    assert kept[5:15, 0].all() and not kept[15:20, 0].any()


class _Fixed:
    """A classifier stub saying P(noise) = q for every region."""

    def __init__(self, q):
        self.q = q

    def predict_proba(self, x):
        return np.tile([1 - self.q, self.q], (len(x), 1))


def test_cue_regions_weight_decides_between_cues_and_posteriors():
    probs = np.zeros((20, 2))
    probs[5:15] = [0.3, 0.6]           # posteriors say distortion (noise share 1/3)
    masks = probs >= 0.25
    cues = np.zeros((40, 3))
    by_cues = cue_regions(masks, probs, cues, _Fixed(0.9), weight=1.0)
    assert by_cues[5:15, 0].all() and not by_cues[:, 1].any()
    by_post = cue_regions(masks, probs, cues, _Fixed(0.9), weight=0.0)
    assert by_post[5:15, 1].all() and not by_post[:, 0].any()


def test_pooled_cues_is_mean_then_std():
    c = np.array([[1.0, 0.0], [3.0, 0.0]])
    assert np.allclose(pooled_cues(c), [2.0, 0.0, 1.0, 0.0])


def test_off_reproduces_the_recipe_post_processing():
    rng = np.random.default_rng(0)
    outputs = {}
    for i in range(4):
        fp = rng.uniform(0, 1, size=(120, 3)).astype(np.float32)
        outputs[f"u{i}"] = {"frame_probs": fp, "utt_probs": np.array([0.9, 0.2, 0.8]), "score": 3.3,
                            "duration": 2.37}
    params = {f: {**BASE, "median": 5, "merge_gap": 0.1, "min_dur": 0.06, "utt_threshold": 0.5} for f in FAULTS}
    assert rows(outputs, params, ("off", 0.0)) == rows_from_outputs(outputs, params)


def test_step6_table_scores_off_after_and_joint():
    from sqa_segment_class import step6_table

    outputs, refs = {}, []
    for i in range(6):                 # noise split frame by frame between noise and distortion,
        p = np.full((100, 3), 0.05, dtype=np.float32)     # a real distortion in every other one
        p[20:40, 0], p[40:60, 1], p[40:60, 0] = 0.7, 0.7, 0.2
        dist = []
        if i % 2:
            p[80:90, 1], dist = 0.9, [[1.6, 1.8]]
        outputs[f"u{i}"] = {"frame_probs": p, "utt_probs": np.ones(3), "score": 3.0 + (i % 3) * 0.1,
                            "duration": 2.0}
        refs.append({"utt_id": f"u{i}", "score": 3.0 + i % 3,
                     "faults": {"noise": [[0.4, 1.2]], "distortion": dist, "pause": []}})
    grid = {"median": [1], "threshold": [0.25], "merge_gap": [0.0], "min_dur": [0.0], "utt_threshold": [0.0]}
    text = step6_table({"dev": (refs, outputs), "test": (refs, outputs)}, grid)
    row = [ln for ln in text.splitlines() if ln.startswith("| test | 6 |")][0].split("|")
    off, after = float(row[3]), float(row[4].split()[0])
    assert after > off and "(off)" not in row[4]
