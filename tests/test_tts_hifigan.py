"""pyutils.tts.hifigan: the 16 kHz log-mel -> HiFi-GAN grid conversion, and the pretrained vocoder."""

import numpy as np
import pytest

from pyutils.tts import hifigan as H


def test_grid_conversion_scales_to_ln_and_interpolates_in_time():
    t = np.arange(250)                                       # 2 s of 8 ms frames
    lm = np.stack([np.full(250, -1.0), t / 250.0], axis=1)  # band 0 flat, band 1 a ramp in time
    out = H.to_hifigan_grid(lm, offset=np.array([0.5, 0.0]))
    assert out.shape == (int(np.ceil(2.0 * 22050 / 256)), 2)   # 173 frames of 256 samples at 22.05 kHz
    assert np.allclose(out[:, 0], -np.log(10.0) + 0.5)
    t22 = (np.arange(len(out)) * 256 + 128) / 22050           # HiFi-GAN frame centres
    inside = t22 < 249 * 0.008
    assert np.allclose(out[inside, 1], np.log(10.0) * t22[inside] / 2.0, atol=1e-9)


def test_fit_offset_recovers_a_known_level_difference():
    rng = np.random.default_rng(0)
    x = 0.1 * rng.standard_normal(16000 * 2)

    def logmel16(y):         # an analysis whose ln-level is HiFi-GAN's minus 0.7, on the 16 kHz grid
        a = H.hifigan_logmel(y) - 0.7
        n = 1 + len(y) // 128
        t22 = (np.arange(len(a)) * 256 + 128) / 22050
        t16 = np.arange(n) * 128 / 16000
        return np.stack([np.interp(t16, t22, a[:, b]) for b in range(a.shape[1])], axis=1) / np.log(10.0)

    off = H.fit_offset([x], logmel16)
    assert off.shape == (80,) and np.allclose(off, 0.7, atol=0.05)


def test_pretrained_vocoder_rebuilds_a_recording():
    """Copy-synthesis of a recorded sentence: HiFi-GAN's output has the input's log-mel (not noise)."""
    try:
        H.package_dir()
    except H.VocoderUnavailable as e:
        pytest.skip(str(e))
    from pathlib import Path

    import soundfile as sf

    wavs = sorted((Path(__file__).resolve().parents[1] / "tools" / "models" / "real_speech").glob("*.wav"))
    if not wavs:
        pytest.skip("no real speech clips (make -C tools)")
    x, sr = sf.read(wavs[0], dtype="float64", always_2d=True)
    from pyutils.audio import resample
    x = resample(x.mean(axis=1), sr, 16000)[: 16000 * 2]
    from pyutils.tts.fbank import feature_extractor, logmel
    fe = feature_extractor({"feats_extract": "fbank", "feats_extract_conf": {
        "fs": 16000, "n_fft": 512, "hop_length": 128, "win_length": 512, "n_mels": 80, "fmin": 0, "fmax": 8000}})
    lm = logmel(fe, x)
    off = H.fit_offset([x], lambda y: logmel(fe, y))
    voc = H.HifiGanVocoder(off)
    y = voc(np.concatenate([lm, np.zeros((len(lm), 3))], axis=1))   # WORLD features: the log-mel comes first
    assert abs(len(y) - len(x)) <= 128 and np.isfinite(y).all()
    lm_y = logmel(fe, y.astype(np.float64))[: len(lm)]
    loud = lm.max(axis=1) > lm.max() - 2.0
    r = np.corrcoef(lm[loud].ravel(), lm_y[loud].ravel())[0, 1]
    assert r > 0.9
    with pytest.raises(ValueError, match="log-mel first"):
        voc(np.zeros((10, 40)))
