"""Coverage-aware matching and the HiFi-GAN re-vocoding option of pyutils.vc.knn."""

import os

import numpy as np
import pytest

from pyutils.vc import knn
from pyutils.vc.envelope import coverage_weight, warped_source_envelope
from pyutils.vc.features import SR, WORLD_PER_ENC, World

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(ROOT, "tools", "models", "real_speech")
WHISPER_PT = os.path.join(ROOT, "tools", "models", "whisper-base", "openai.pt")


def test_coverage_weight_ramps_between_the_thresholds():
    d = np.array([0.1, 0.2, 0.25, 0.3, 0.5])
    np.testing.assert_allclose(coverage_weight(d, 0.2, 0.3, smooth=1), [1.0, 1.0, 0.5, 0.0, 0.0])
    smoothed = coverage_weight(np.r_[np.zeros(5), np.ones(5)], 0.2, 0.3, smooth=3)
    assert smoothed[4] == pytest.approx(2 / 3) and smoothed[5] == pytest.approx(1 / 3)   # glides
    with pytest.raises(ValueError, match="hi > lo"):
        coverage_weight(d, 0.3, 0.3)


def test_knn_indices_reports_the_best_match_distance():
    ref = np.eye(3)
    src = np.array([[1.0, 0, 0], [1.0, 1.0, 0], [0, 0, -1.0]])
    best = np.empty(3)
    knn.knn_indices(src, ref, k=1, best_dist=best)
    np.testing.assert_allclose(best, [0.0, 1 - 1 / np.sqrt(2), 1.0], atol=1e-6)


def _world(f0, sp, ap):
    return World(f0=np.asarray(f0, float), sp=np.asarray(sp, float), ap=np.asarray(ap, float))


def test_uncovered_frames_take_the_source_warped_frame_and_covered_ones_the_reference():
    """One-hot content in 12 dims: source frames 0-2 match reference frames exactly (distance 0),
    frames 3-5 point where the reference has nothing (distance 1)."""
    t_ref, bins = 10, 17
    c_ref = np.eye(12)[:t_ref]
    c_src = np.eye(12)[[4, 1, 9, 11, 11, 10]]
    rng = np.random.default_rng(7)
    n_ref, n_src = t_ref * WORLD_PER_ENC, 6 * WORLD_PER_ENC
    w_ref = _world(np.full(n_ref, 200.0), np.exp(rng.normal(size=(n_ref, bins))), rng.uniform(size=(n_ref, bins)))
    w_src = _world(np.full(n_src, 100.0), np.exp(rng.normal(size=(n_src, bins))), rng.uniform(size=(n_src, bins)))
    cfg = knn.KnnConfig(k=1, smooth=1, energy="ref", rerank=0, cover_lo=0.2, cover_hi=0.5,
                        cover_smooth=1)
    out = knn.convert_features(c_src, w_src, c_ref, w_ref, cfg)
    covered = (np.array([4, 1, 9])[:, None] * WORLD_PER_ENC + np.arange(WORLD_PER_ENC)).ravel()
    np.testing.assert_allclose(out.sp[: 3 * WORLD_PER_ENC], w_ref.sp[covered], rtol=1e-9)
    np.testing.assert_allclose(out.ap[: 3 * WORLD_PER_ENC], w_ref.ap[covered], rtol=1e-9)
    target = warped_source_envelope(w_src, w_ref, cep_mvn=cfg.cep_mvn)
    np.testing.assert_allclose(np.log(out.sp[3 * WORLD_PER_ENC:]), target[3 * WORLD_PER_ENC:], atol=1e-9)
    np.testing.assert_allclose(out.ap[3 * WORLD_PER_ENC:], w_src.ap[3 * WORLD_PER_ENC:], rtol=1e-9)
    # off (cover_hi 0): every frame is the matched reference frame, even with nothing near
    plain = knn.convert_features(c_src, w_src, c_ref, w_ref, knn.KnnConfig(k=1, smooth=1, energy="ref",
                                                                            rerank=0, cover_hi=0))
    assert not np.allclose(np.log(plain.sp[3 * WORLD_PER_ENC:]), target[3 * WORLD_PER_ENC:])


@pytest.mark.parametrize("kw,msg", [(dict(cover_lo=0.4, cover_hi=0.3), "cover_lo"),
                                    (dict(cover_hi=0.3, cover_smooth=0), "cover_smooth")])
def test_bad_options_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        knn.KnnConfig(**kw)


@pytest.mark.skipif(not os.path.isfile(WHISPER_PT), reason="Whisper base missing")
def test_cli_with_coverage(tmp_path):
    import soundfile

    a, b = os.path.join(REAL, "arctic_a0007.wav"), os.path.join(REAL, "arctic_a0009.wav")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{a}\t{b}\tab.wav\n", encoding="utf-8")
    out = tmp_path / "out"
    assert knn.main(["--pairs", str(pairs), "--out", str(out), "--threads", "1", "--cover-lo", "0.24",
                     "--cover-hi", "0.34"]) == 0
    y, sr = soundfile.read(str(out / "ab.wav"))
    assert sr == SR and soundfile.info(str(out / "ab.wav")).subtype == "PCM_16"
    assert np.sqrt(np.mean(y ** 2)) > 0.01
