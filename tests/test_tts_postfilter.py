"""Global-variance post-filter of the TTS recipe (pyutils/tts/postfilter.py)."""

import numpy as np
import pytest
import soundfile as sf
import yaml

from pyutils.tts import postfilter as pf
from pyutils.tts.vocoder import main as vocoder_main

FBANK = {"fs": 16000, "n_fft": 512, "hop_length": 128, "win_length": 512, "fmin": 0, "fmax": 8000, "n_mels": 80}


def _smooth_utt(rng, frames=200, bands=80):
    """A log-mel-like array: band-dependent means, deviations of small (over-smoothed) variance."""
    mean = np.linspace(-1.0, -4.0, bands)
    dev = rng.normal(size=(frames, bands)) * np.linspace(0.2, 0.6, bands)
    return (mean + dev).astype(np.float32)


def test_full_strength_gives_the_target_variance_and_keeps_the_mean():
    rng = np.random.default_rng(0)
    x = _smooth_utt(rng)
    target = np.linspace(0.5, 1.5, 80)
    y = pf.gv_postfilter(x, target, 1.0)
    assert y.shape == x.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y.var(axis=0), target, rtol=1e-4)
    np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), atol=1e-4)
    # each band is an affine map of the input band with a positive slope: the shape over time is kept
    for d in (0, 40, 79):
        assert np.corrcoef(x[:, d], y[:, d])[0, 1] > 0.9999


def test_strength_zero_is_identity_and_half_strength_is_the_geometric_middle():
    rng = np.random.default_rng(1)
    x = _smooth_utt(rng)
    target = np.full(80, 2.0)
    np.testing.assert_array_equal(pf.gv_postfilter(x, target, 0.0), x)
    half = pf.gv_postfilter(x, target, 0.5)
    expect = np.sqrt(x.astype(np.float64).var(axis=0) * target)
    np.testing.assert_allclose(half.var(axis=0), expect, rtol=1e-4)


def test_flat_band_and_short_input_are_left_alone():
    x = np.zeros((50, 4)); x[:, 1] = np.sin(np.arange(50))
    y = pf.gv_postfilter(x, np.ones(4), 1.0)
    np.testing.assert_array_equal(y[:, 0], x[:, 0])          # zero variance: no division by zero
    assert abs(y[:, 1].var() - 1.0) < 1e-6
    one = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(pf.gv_postfilter(one, np.ones(4), 1.0), one)


@pytest.mark.parametrize("x,g,s,msg", [
    (np.zeros((10,)), np.ones(10), 1.0, "frames, bands"),
    (np.zeros((10, 80)), np.ones(40), 1.0, "do not fit"),
    (np.zeros((10, 4)), np.ones(4), -0.5, "strength"),
    (np.zeros((10, 4)), np.ones(4), 3.0, "strength"),
    (np.zeros((10, 4)), np.array([1.0, 0.0, 1.0, 1.0]), 1.0, "positive"),
    (np.full((10, 4), np.nan), np.ones(4), 1.0, "non-finite"),
])
def test_bad_input_is_refused(x, g, s, msg):
    with pytest.raises(ValueError, match=msg):
        pf.gv_postfilter(x, g, s)


def test_stats_file_roundtrip_and_bad_files(tmp_path):
    p = tmp_path / "gv.npz"
    pf.write_gv(str(p), np.array([0.5, 1.0, 2.0]), 7)
    np.testing.assert_array_equal(pf.load_gv(str(p)), [0.5, 1.0, 2.0])
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(ValueError, match="other.npz: no 'gv'"):
        pf.load_gv(str(tmp_path / "other.npz"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        pf.load_gv(str(tmp_path / "junk.npz"))
    np.savez(tmp_path / "neg.npz", gv=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="positive"):
        pf.load_gv(str(tmp_path / "neg.npz"))


def test_training_gv_is_the_mean_per_utterance_variance(tmp_path):
    """The stats of two wavs with the model's own log-mel (ESPnet LogMelFbank)."""
    torch = pytest.importorskip("torch")
    from espnet2.tts.feats_extract.log_mel_fbank import LogMelFbank

    rng = np.random.default_rng(2)
    rows = []
    wavs = []
    for i, n in enumerate((8000, 12000)):
        x = (0.1 * rng.normal(size=n) * np.hanning(n)).astype(np.float32)
        sf.write(tmp_path / f"u{i}.wav", x, 16000, subtype="FLOAT")
        rows.append(f"u{i} {tmp_path / f'u{i}.wav'}\n")
        wavs.append(x)
    (tmp_path / "wav.scp").write_text("".join(rows))
    gv, n = pf.training_gv({"feats_extract": "fbank", "feats_extract_conf": FBANK}, str(tmp_path / "wav.scp"))
    fe = LogMelFbank(**FBANK)
    with torch.no_grad():
        v = [fe(torch.from_numpy(x)[None], torch.tensor([len(x)]))[0][0].numpy().var(axis=0) for x in wavs]
    assert n == 2 and gv.shape == (80,)
    np.testing.assert_allclose(gv, (v[0] + v[1]) / 2, rtol=1e-5)
    sf.write(tmp_path / "u8k.wav", wavs[0], 8000)
    (tmp_path / "bad.scp").write_text(f"u8k {tmp_path / 'u8k.wav'}\n")
    with pytest.raises(ValueError, match="bad.scp: utterance u8k: 8000 Hz"):
        pf.training_gv({"feats_extract": "fbank", "feats_extract_conf": FBANK}, str(tmp_path / "bad.scp"))


def test_vocoder_cli_applies_the_postfilter(tmp_path, capsys):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"feats_extract": "fbank", "feats_extract_conf": FBANK}))
    feats = tmp_path / "denorm"; feats.mkdir()
    rng = np.random.default_rng(3)
    np.save(feats / "u1.npy", _smooth_utt(rng, frames=60))
    pf.write_gv(str(tmp_path / "gv.npz"), np.full(80, 0.8), 10)
    args = ["--config", str(cfg), "--iters", "2", str(feats)]
    assert vocoder_main(["--out-dir", str(tmp_path / "a")] + args) == 0
    assert vocoder_main(["--out-dir", str(tmp_path / "b"), "--gv-stats", str(tmp_path / "gv.npz"),
                         "--gv-strength", "1"] + args) == 0
    a, _ = sf.read(tmp_path / "a" / "u1.wav")
    b, _ = sf.read(tmp_path / "b" / "u1.wav")
    assert a.shape == b.shape and not np.allclose(a, b)
    capsys.readouterr()
    assert vocoder_main(["--out-dir", str(tmp_path / "c"), "--gv-strength", "1"] + args) == 2
    assert "--gv-stats" in capsys.readouterr().err
    pf.write_gv(str(tmp_path / "gv40.npz"), np.ones(40), 1)
    assert vocoder_main(["--out-dir", str(tmp_path / "c"), "--gv-stats", str(tmp_path / "gv40.npz"),
                         "--gv-strength", "1"] + args) == 2
    assert "40 bands" in capsys.readouterr().err
