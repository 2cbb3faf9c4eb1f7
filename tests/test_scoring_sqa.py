"""Hand-worked cases for ``chorus-score sqa``."""

import math

import pytest

from pyutils.scoring.errors import ScoringError
from pyutils.scoring.sqa import frame_iou, frame_ranges, pearson, score_sqa


def frame_mask(intervals, n_frames):
    """The frame rule written out frame by frame: k faulty when some s <= (2k+1)/100 < e."""
    return [any(s <= (2 * k + 1) / 100 < e for s, e in intervals) for k in range(n_frames)]


def n_frames_for(*interval_lists):
    return int(math.ceil(max((e for ivs in interval_lists for _, e in ivs), default=0.0) / 0.02)) + 1


def row(u, score, **faults):
    return {"utt_id": u, "score": score, "faults": faults}


def test_pcc_constant_short_and_known():
    assert pearson([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]) == 0.0
    assert pearson([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) == 0.0
    assert pearson([2.0], [3.0]) == 0.0
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = 1,2,3,4 ; y = 1,3,2,4 -> r = 0.8
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_frame_centre_rule():
    # frame k covers [0.02k, 0.02k+0.02), centre (2k+1)/100
    assert frame_mask([(0.0, 0.03)], 4) == [True, False, False, False]     # 0.03 = centre of k=1, end exclusive
    assert frame_mask([(0.03, 0.05)], 4) == [False, True, False, False]    # start inclusive, 0.05 excluded
    assert frame_mask([(0.03, 0.0500001)], 4) == [False, True, True, False]
    assert frame_mask([(0.005, 0.0099)], 2) == [False, False]              # covers no centre
    assert frame_mask([(0.01, 0.0100001)], 2) == [True, False]
    assert frame_mask([(0.1, 0.3)], 20)[4:16] == [False] + [True] * 10 + [False]  # centres .11 .. .29
    iou, inter, union = frame_iou([(0.0, 0.1)], [(0.04, 0.2)])
    assert (inter, union) == (3, 10)  # ref frames 0-4, hyp frames 2-9
    assert iou == pytest.approx(0.3)


def test_fault_f1_iou_and_final():
    ref = [row("a", 1.0, noise=[[0.0, 0.1]]), row("b", 3.0, noise=[[0.5, 0.7]], pause=[[1.0, 1.2]]),
           row("c", 5.0)]
    hyp = [row("a", 2.0, noise=[[0.04, 0.2]]), row("b", 3.0, distortion=[[0.0, 1.0]]),
           {"utt_id": "c", "score": 4.0}]
    r = score_sqa(ref, hyp)
    # noise: TP a, FN b -> 2/3 ; distortion: FP b -> 0 ; pause: FN b -> 0
    assert r["F1_noise"] == pytest.approx(2 / 3)
    assert r["F1_distortion"] == 0.0 and r["F1_pause"] == 0.0
    assert r["F1_macro"] == pytest.approx(2 / 9)
    # IoU noise: a 0.3, b 0 -> 0.15 ; pause: b 0 ; distortion not in reference
    assert r["IoU_noise"] == pytest.approx(0.15)
    assert r["IoU_distortion"] is None and r["IoU_pause"] == 0.0
    assert r["IoU_macro"] == pytest.approx(0.075)
    pcc = pearson([1.0, 3.0, 5.0], [2.0, 3.0, 4.0])
    assert r["PCC"] == pytest.approx(pcc) == pytest.approx(1.0)
    assert r["Final"] == pytest.approx(0.4 * pcc + 0.3 * 2 / 9 + 0.3 * 0.075)


def test_no_faults_anywhere():
    r = score_sqa([row("a", 1.0), row("b", 2.0)], [row("a", 1.0), row("b", 2.0, noise=[])])
    assert r["F1_macro"] == 0.0 and r["IoU_macro"] == 0.0   # TP+FP+FN = 0 -> 0 ; no fault in reference
    assert r["Final"] == pytest.approx(0.4)


def test_perfect_prediction():
    ref = [row("a", 1.5, noise=[[0.0, 1.0]]), row("b", 4.5, pause=[[0.2, 0.4]], distortion=[[1, 2]])]
    r = score_sqa(ref, ref)
    assert r["F1_macro"] == 1.0
    assert r["IoU_macro"] == pytest.approx(1.0, abs=1e-6)
    assert r["Final"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("bad,code", [
    (row("a", 0.5), "SCORE_OUT_OF_RANGE"),
    (row("a", 5.01), "SCORE_OUT_OF_RANGE"),
    (row("a", float("nan")), "INVALID_SCORE"),
    (row("a", float("inf")), "INVALID_SCORE"),
    (row("a", "3"), "INVALID_SCORE"),
    (row("a", True), "INVALID_SCORE"),
    ({"utt_id": "a"}, "MISSING_REQUIRED_FIELD"),
    (row("a", 3, noise=[[1.0, 1.0]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[[2.0, 1.0]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[[-0.1, 1.0]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[[0.1]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[[0.1, 0.2, 0.3]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[[0.1, "x"]]), "INVALID_INTERVAL"),
    (row("a", 3, noise=[0.1, 0.2]), "INVALID_INTERVAL"),
    (row("a", 3, hum=[[0.1, 0.2]]), "UNKNOWN_FAULT"),
    ({"utt_id": "a", "score": 3, "faults": []}, "INVALID_FAULTS"),
])
def test_invalid_rows(bad, code):
    with pytest.raises(ScoringError) as info:
        score_sqa([row("a", 3.0)], [bad], hyp_path="hyp.jsonl")
    assert info.value.code == code and info.value.line == 1


@pytest.mark.parametrize("hyp,code", [
    ([row("a", 3.0), row("a", 3.0)], "DUPLICATE_UTT_ID"),
    ([row("a", 3.0)], "MISSING_SAMPLES"),
    ([row("a", 3.0), row("b", 3.0), row("c", 3.0)], "UNKNOWN_SAMPLES"),
    ([row("a", 3.0), row("c", 3.0)], "ID_SET_MISMATCH"),
])
def test_id_errors(hyp, code):
    with pytest.raises(ScoringError) as info:
        score_sqa([row("a", 3.0), row("b", 3.0)], hyp)
    assert info.value.code == code


def test_null_faults_mean_absent():
    r = score_sqa([{"utt_id": "a", "score": 2, "faults": None}], [row("a", 2, noise=None)])
    assert r["F1_noise"] == 0.0 and math.isfinite(r["Final"])


def test_frame_ranges_equal_frame_masks_on_random_intervals():
    import random

    rng = random.Random(7)
    for _ in range(3000):
        def ivs():
            out = []
            for _ in range(rng.randint(0, 4)):
                s = round(rng.uniform(0, 2), rng.choice([2, 3, 5]))
                out.append((s, s + round(rng.uniform(0.0001, 0.5), rng.choice([2, 3, 5]))))
            return out
        g, p = ivs(), ivs()
        n = n_frames_for(g, p)
        mg, mp = frame_mask(g, n), frame_mask(p, n)
        assert [k for k in range(n) if mg[k]] == [k for a, b in frame_ranges(g) for k in range(a, b)]
        inter = sum(1 for a, b in zip(mg, mp) if a and b)
        union = sum(1 for a, b in zip(mg, mp) if a or b)
        assert frame_iou(g, p)[1:] == (inter, union)
