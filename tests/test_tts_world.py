"""WORLD features of the TTS recipe: analysis of a known signal, synthesis back, bad input."""

import numpy as np
import pytest
import soundfile as sf
import yaml

from pyutils.tts.world import WorldConfig, WorldVocoder, analyze, interpolate_log_f0, main

FS = 16000


def _voiced(f0=140.0, s=0.6, fs=FS):
    """A vowel-like harmonic signal (decaying harmonics) with 0.1 s of silence on each side."""
    t = np.arange(int(s * fs)) / fs
    v = 0.3 * sum(np.sin(2 * np.pi * f0 * k * t) / k ** 1.5 for k in range(1, 25))
    pad = np.zeros(int(0.1 * fs))
    return np.concatenate([pad, v, pad])


def _configs(tmp_path, odim=83, extra=None):
    train = tmp_path / "train.yaml"
    train.write_text(yaml.safe_dump({"odim": odim, "feats_extract": "fbank", "feats_extract_conf": {
        "fs": FS, "n_fft": 512, "win_length": 512, "hop_length": 128, "n_mels": 80, "fmin": 0, "fmax": 8000}}))
    world = tmp_path / "world.yaml"
    world.write_text(yaml.safe_dump({"envelope": "mel", "f0_floor": 60, "f0_ceil": 600, **(extra or {})}))
    return str(train), str(world)


def test_interpolate_log_f0_fills_unvoiced_frames():
    f0 = np.array([0.0, 100.0, 0.0, 0.0, 200.0, 0.0])
    lf0 = interpolate_log_f0(f0)
    assert lf0[0] == pytest.approx(np.log(100.0)) and lf0[-1] == pytest.approx(np.log(200.0))
    assert np.log(100.0) < lf0[2] < lf0[3] < np.log(200.0)
    assert np.all(interpolate_log_f0(np.zeros(4)) == pytest.approx(np.log(100.0)))


def test_analysis_finds_pitch_and_voicing_on_the_frame_grid():
    c = WorldConfig()
    x = _voiced()
    f = analyze(x, c)
    assert f.shape == (1 + len(x) // 128, c.dim) and c.dim == 83 and f.dtype == np.float32
    voiced = f[:, c.n_mels + 1] > 0.5
    mid = slice(len(f) // 2 - 10, len(f) // 2 + 10)
    assert voiced[mid].all() and not voiced[:5].any() and not voiced[-5:].any()
    assert np.exp(f[mid, c.n_mels]).mean() == pytest.approx(140.0, rel=0.03)


def test_synthesis_from_the_features_keeps_the_pitch_and_length():
    c = WorldConfig()
    x = _voiced(f0=180.0)
    y = WorldVocoder(c)(analyze(x, c))
    assert abs(len(y) - len(x)) <= 128
    seg = y[len(y) // 2 - 2000: len(y) // 2 + 2000]
    f0 = np.exp(analyze(seg, c)[5:-5, c.n_mels])     # the output's own pitch, measured again
    assert np.median(f0) == pytest.approx(180.0, rel=0.03)
    # the silent edges stay quiet next to the vowel
    assert np.sqrt(np.mean(y[:800] ** 2)) < 0.1 * np.sqrt(np.mean(seg ** 2))


def test_unvoiced_prediction_gives_noise_not_a_tone():
    c = WorldConfig()
    f = analyze(_voiced(), c)
    voiced = WorldVocoder(c)(f)
    f[:, c.n_mels + 1] = 0.0          # the model says: nothing voiced
    unvoiced = WorldVocoder(c)(f)

    def peakiness(y):   # strongest line over the mean level, 100-1000 Hz
        seg = y[len(y) // 2 - 2000: len(y) // 2 + 2000]
        band = np.abs(np.fft.rfft(seg * np.hanning(len(seg))))[25:250]
        return band.max() / band.mean()

    assert peakiness(voiced) > 20 and peakiness(unvoiced) < 0.2 * peakiness(voiced)


def test_a_soft_voiced_flag_counts_as_voiced_above_the_threshold():
    """The model's flag is a smoothed 0/1: 0.3 is noise at the default threshold (0.5), voiced at 0.15."""
    c = WorldConfig()
    f = analyze(_voiced(), c)
    f[:, c.n_mels + 1] *= 0.3

    def peakiness(y):
        seg = y[len(y) // 2 - 2000: len(y) // 2 + 2000]
        band = np.abs(np.fft.rfft(seg * np.hanning(len(seg))))[25:250]
        return band.max() / band.mean()

    strict = peakiness(WorldVocoder(c)(f))
    soft = peakiness(WorldVocoder(WorldConfig(voiced_threshold=0.15))(f))
    assert soft > 20 and strict < 0.2 * soft


@pytest.mark.parametrize("bad,msg", [(np.zeros((1, 83)), "frame"), (np.zeros((10, 63)), "shape"),
                                     (np.full((10, 83), np.nan), "non-finite")])
def test_vocoder_rejects_bad_features(bad, msg):
    with pytest.raises(ValueError, match=msg):
        WorldVocoder(WorldConfig())(bad)


def test_config_checks_odim_and_unknown_settings(tmp_path):
    train, world = _configs(tmp_path)
    assert WorldConfig.load(train, world).dim == 83
    with pytest.raises(ValueError, match="voiced threshold"):
        WorldConfig.load(train, world, voiced_threshold=1.2)
    train, world = _configs(tmp_path, odim=63)
    with pytest.raises(ValueError, match="odim 63"):
        WorldConfig.load(train, world)
    for envelope in ("coded", "linear"):
        train, world = _configs(tmp_path, extra={"envelope": envelope})
        with pytest.raises(ValueError, match="envelope"):
            WorldConfig.load(train, world)
    train, world = _configs(tmp_path, extra={"frame_period": 5})
    with pytest.raises(ValueError, match="unknown setting"):
        WorldConfig.load(train, world)


def _extract(tmp_path, scp_lines):
    """Configs, one voiced wav (a.wav) and a wav.scp of ``scp_lines``; runs ``extract``."""
    train, world = _configs(tmp_path)
    sf.write(tmp_path / "a.wav", _voiced().astype(np.float32), FS)
    scp = tmp_path / "wav.scp"
    scp.write_text("".join(f"{line}\n" for line in scp_lines))
    out = tmp_path / "feats.scp"
    rc = main(["extract", "--config", train, "--world-conf", world, "--wav-scp", str(scp), "--out-scp", str(out)])
    return rc, train, world, scp, out


def test_extract_names_the_bad_line_and_leaves_no_scp(tmp_path, capsys):
    rc, _, _, scp, out = _extract(tmp_path, [f"a {tmp_path / 'a.wav'}", f"b {tmp_path / 'missing.wav'}"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{scp}:2: utterance b" in err
    assert not out.exists()


def test_extract_then_vocode_end_to_end(tmp_path):
    import kaldiio

    rc, train, world, _, out = _extract(tmp_path, [f"utt1 {tmp_path / 'a.wav'}"])
    assert rc == 0
    feats = dict(kaldiio.load_scp(str(out)))["utt1"]
    d = tmp_path / "denorm"
    d.mkdir()
    np.save(d / "utt1.npy", feats)
    assert main(["vocode", "--config", train, "--world-conf", world, "--out-dir", str(tmp_path / "wav"), str(d)]) == 0
    y, sr = sf.read(tmp_path / "wav" / "utt1.wav")
    assert sr == FS and abs(len(y) - len(_voiced())) <= 128
