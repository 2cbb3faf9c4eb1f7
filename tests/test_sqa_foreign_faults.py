"""benchmarks/sqa_foreign_faults.py: exact intervals, monotone severity model, clean scores highest."""

import importlib.util
import os
import random

import numpy as np
import pytest
import soundfile as sf

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
def test_transform_stays_inside_its_interval(kind, choice, tmp_path):
    x = _speechlike()
    seed = 3
    name, _, t = B.draw_transform(kind, np.random.default_rng(seed), choice, ir_dir=str(tmp_path))
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


def _bursts(seconds=2.0, seed=0):
    """Aperiodic test signal (enveloped white noise): a periodic one would make the lag ambiguous."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * rng.standard_normal(len(t)) * np.clip(np.sin(2 * np.pi * 2.5 * t), 0.05, None)).astype(np.float32)


def _lag(y, x, max_lag=200):
    """Lag (samples) of the cross-correlation peak of ``y`` against ``x``."""
    lags = range(-max_lag, max_lag + 1)
    c = [np.dot(y[max_lag + k:len(y) - max_lag + k], x[max_lag:len(x) - max_lag]) for k in lags]
    return list(lags)[int(np.argmax(c))]


@pytest.mark.parametrize("kbps", B.MP3_BITRATES)
def test_mp3_is_not_shifted(kbps):
    pytest.importorskip("lameenc")
    x = _bursts()
    y = B.Mp3Aligned(kbps)(samples=x.copy(), sample_rate=SR)
    assert len(y) == len(x)
    assert _lag(y, x) == 0, f"{kbps} kbps: the codec delay was not removed"
    assert np.max(np.abs(y - x)) > 1e-3                        # it did compress


def test_reverb_ir_and_alignment(tmp_path):
    x = _bursts()
    for seed in range(3):
        name, p, t = B.draw_transform("distortion", np.random.default_rng(seed), "ApplyImpulseResponse",
                                      ir_dir=str(tmp_path))
        assert B.RT60_RANGE[0] <= p["rt60_s"] <= B.RT60_RANGE[1]
        h, sr = sf.read(os.path.join(tmp_path, p["ir"]), dtype="float32")
        assert sr == SR and h[0] == 1.0 and len(h) == int(round(p["rt60_s"] * SR))
        assert np.abs(h[1:]).max() < 0.5
        y = t(samples=x.copy(), sample_rate=SR)
        assert len(y) == len(x) and _lag(y, x) == 0
        assert np.isclose(np.abs(y).max(), np.abs(x).max(), rtol=1e-5)   # no level jump
        # the same draw writes the same file
        _, p2, _ = B.draw_transform("distortion", np.random.default_rng(seed), "ApplyImpulseResponse",
                                    ir_dir=str(tmp_path / "again"))
        h2, _ = sf.read(os.path.join(tmp_path, "again", p2["ir"]), dtype="float32")
        assert p2 == p and np.array_equal(h, h2)


def test_make_recording_is_deterministic(tmp_path):
    x = _speechlike()
    for seed in range(6):
        a = B.make_recording(x, np.random.default_rng(seed), seed, str(tmp_path / "a"))
        b = B.make_recording(x, np.random.default_rng(seed), seed, str(tmp_path / "b"))
        assert np.array_equal(a[0], b[0]) and a[1] == b[1] and a[2] == b[2]


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
    mp3 = [B.quality_score([_detail("distortion", "Mp3Compression", {"bitrate_kbps": k})], 2.0)
           for k in sorted(B.MP3_BITRATES, reverse=True)]
    assert all(a > b for a, b in zip(mp3, mp3[1:])), mp3
    rev = [B.quality_score([_detail("distortion", "ApplyImpulseResponse", {"rt60_s": r})], 2.0)
           for r in (0.3, 0.6, 0.9, 1.2)]
    assert all(a > b for a, b in zip(rev, rev[1:])), rev
    assert rev[0] < B.CLEAN_MOS


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
