"""Objective metrics without models: Fréchet distance, per-tag table, token spans."""

import math

import numpy as np
import pytest

from pyutils.tts.metrics import cosine, frechet_distance, per_tag_table, split_half, tag_counts, token_spans


def test_frechet_identical_is_zero():
    x = np.random.default_rng(0).normal(size=(200, 4))
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-6)


def test_frechet_known_gaussians():
    # N(mu1, diag(a)) vs N(mu2, diag(b)): FD = |mu1-mu2|^2 + sum (sqrt(a) - sqrt(b))^2
    rng = np.random.default_rng(1)
    a, b = np.array([1.0, 4.0, 0.25]), np.array([1.0, 1.0, 1.0])
    mu1, mu2 = np.zeros(3), np.array([1.0, 0.0, 2.0])
    x = mu1 + rng.normal(size=(40000, 3)) * np.sqrt(a)
    y = mu2 + rng.normal(size=(40000, 3)) * np.sqrt(b)
    expected = 5.0 + (2 - 1) ** 2 + (0.5 - 1) ** 2
    assert frechet_distance(x, y) == pytest.approx(expected, rel=0.03)
    assert frechet_distance(y, x) == pytest.approx(frechet_distance(x, y), rel=1e-6)


def test_frechet_rank_deficient_small_sample_is_finite_and_biased():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(10, 64)), rng.normal(size=(10, 64))
    fd = frechet_distance(x, y)
    assert math.isfinite(fd) and fd > 0  # same distribution, yet > 0: small-sample bias
    with pytest.raises(ValueError):
        frechet_distance(x, y[:, :10])


def test_cosine():
    assert cosine([1, 0], [0, 1]) == pytest.approx(0.0)
    assert cosine([1, 1], [2, 2]) == pytest.approx(1.0)


def test_per_tag_table():
    refs = {"u1": "a [laugh] b [laugh] [cough]", "u2": "c [sigh]", "u3": "[laugh]"}
    hyps = {"u1": "a [laugh] b [cough] [cough]", "u2": "c [laugh]"}  # u3 missing = empty output
    t = per_tag_table(refs, hyps)
    assert t["laugh"] == {"requested": 3, "found": 1, "in_hyp": 2, "recall": 1 / 3, "precision": 0.5}
    assert t["cough"]["found"] == 1 and t["cough"]["precision"] == 0.5 and t["cough"]["recall"] == 1.0
    assert t["sigh"]["recall"] == 0.0 and math.isnan(t["sigh"]["precision"])
    assert tag_counts("x [throat_clearing] [Throat clearing]")["throat clearing"] == 2


def test_token_spans_scaled_to_audio():
    spans = token_spans(["a", "[laugh]", "b"], [1, 2, 1, 4], total_s=8.0)  # last duration = eos
    assert spans == [("a", 0.0, 1.0), ("[laugh]", 1.0, 3.0), ("b", 3.0, 4.0)]
    assert token_spans(["a"], [0], 1.0) == []


def test_split_half_disjoint():
    x = np.arange(10)[:, None].astype(float)
    a, b = split_half(x)
    assert len(a) == len(b) == 5 and not set(a[:, 0]) & set(b[:, 0])
