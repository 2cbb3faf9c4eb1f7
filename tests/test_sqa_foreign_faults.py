"""benchmarks/sqa_foreign_faults.py: exact intervals, monotone severity model, clean scores highest."""

import importlib.util
import os
import random

import numpy as np
import pytest

pytest.importorskip("audiomentations")

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sqa_foreign_faults.py")
_spec = importlib.util.spec_from_file_location("sqa_foreign_faults", _PATH)
B = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B)

SR = B.SR
FADE = int(B.FADE_S * SR)


def _speechlike(seconds=2.0, seed=0):
    """Amplitude-modulated harmonics with quiet gaps: enough for every transform."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    env = np.clip(np.sin(2 * np.pi * 2.5 * t), 0, None) ** 2
    x = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12)) * env
    return (0.5 * x / np.abs(x).max() + 1e-4 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.mark.parametrize("kind,choice", [("noise", c) for c in B.NOISE_KINDS]
                         + [("distortion", c) for c in B.DISTORTIONS])
def test_transform_stays_inside_its_interval(kind, choice):
    x = _speechlike()
    seed = 3
    name, _, t = B.draw_transform(kind, np.random.default_rng(seed), choice)
    s, e = 8000, 20000

    def fn(seg):
        random.seed(seed)
        np.random.seed(seed)
        return t(samples=seg, sample_rate=SR)

    y = B.crossfade_apply(x, s, e, fn)
    assert np.array_equal(y[: s - FADE], x[: s - FADE]), name
    assert np.array_equal(y[e + FADE:], x[e + FADE:]), name
    assert np.max(np.abs(y[s:e] - x[s:e])) > 1e-3, f"{name} changed nothing inside the interval"
    # inside [s, e] every sample is the transform's own output (no fade there)
    ref = fn(x[s - FADE:e + FADE].copy())
    np.testing.assert_allclose(y[s:e], ref[FADE:FADE + e - s], atol=1e-6, err_msg=name)


def test_crossfade_weights_only_outside_the_label():
    x = np.zeros(4000, dtype=np.float32)
    y = B.crossfade_apply(x, 1000, 2000, lambda seg: seg + 1.0)
    assert np.all(y[1000:2000] == 1.0)
    assert np.all(y[: 1000 - FADE] == 0) and np.all(y[2000 + FADE:] == 0)
    assert 0 < y[1000 - 1] < 1 and 0 < y[2000] < 1


def test_make_recording_labels_match_the_audio():
    x = _speechlike(3.0)
    for seed in range(12):
        y, faults, details = B.make_recording(x, np.random.default_rng(seed), seed)
        for d in details:
            s, e = (int(round(v * SR)) for v in d["interval"])
            assert faults[d["type"]] == [d["interval"]]
            if d["type"] == "pause":
                assert len(y) == len(x) + (e - s)
                if len(details) == 1:                          # silence or room tone only
                    assert np.max(np.abs(y[s:e])) < 0.01
            else:
                assert 0 <= s < e <= len(y)


def _detail(kind, transform, params, s=0.0, e=2.0):
    return {"type": kind, "transform": transform, "params": params, "interval": [s, e]}


def test_score_is_monotone_in_severity_and_coverage():
    noise = [B.quality_score([_detail("noise", "AddGaussianSNR", {"snr_db": snr})], 2.0) for snr in (30, 20, 10, 0)]
    assert all(a > b for a, b in zip(noise, noise[1:])), noise
    bits = [B.quality_score([_detail("distortion", "BitCrush", {"bit_depth": b})], 2.0) for b in (10, 8, 6, 4)]
    assert all(a > b for a, b in zip(bits, bits[1:])), bits
    clip = [B.quality_score([_detail("distortion", "ClippingDistortion", {"percentile_threshold": q})], 2.0)
            for q in (5, 15, 30)]
    assert all(a > b for a, b in zip(clip, clip[1:])), clip
    cov = [B.quality_score([_detail("noise", "AddGaussianSNR", {"snr_db": 5}, 0.0, e)], 2.0)
           for e in (0.3, 1.0, 2.0)]
    assert all(a > b for a, b in zip(cov, cov[1:])), cov
    lp = [B.quality_score([_detail("distortion", "LowPassFilter", {"cutoff_hz": c})], 2.0) for c in (3000, 1000, 400)]
    assert all(a > b for a, b in zip(lp, lp[1:])), lp


def test_clean_recording_scores_highest():
    clean = B.quality_score([], 3.0)
    assert clean == B.CLEAN_MOS
    rng = np.random.default_rng(0)
    for seed in range(20):
        _, _, details = B.make_recording(_speechlike(), rng, seed)
        if details:
            assert B.quality_score(details, 2.5) < clean
    worst = [_detail("noise", "AddGaussianSNR", {"snr_db": 0}), _detail("distortion", "BitCrush", {"bit_depth": 3})]
    assert B.quality_score(worst, 2.0) == 1.0
