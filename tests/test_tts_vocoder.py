"""Griffin-Lim vocoder of the TTS recipe: log-mel of a known signal comes back as that signal."""

import librosa
import numpy as np
import pytest
import soundfile as sf
import yaml

from pyutils.tts.vocoder import GriffinLim, main

FBANK = {"fs": 16000, "n_fft": 1024, "hop_length": 128, "win_length": 512, "fmin": 0, "fmax": 8000, "n_mels": 80}


def _logmel(x: np.ndarray) -> np.ndarray:
    """ESPnet's LogMelFbank computation (|STFT| -> mel -> log10), without importing espnet."""
    mag = np.abs(librosa.stft(x, n_fft=1024, hop_length=128, win_length=512))
    mel = librosa.filters.mel(sr=16000, n_fft=1024, n_mels=80, fmin=0, fmax=8000)
    return np.log10(np.maximum(1e-10, mel @ mag)).T


def _tone(f0=220.0, s=0.5, fs=16000):
    t = np.arange(int(s * fs)) / fs
    return 0.3 * sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))


def test_roundtrip_keeps_the_spectrum():
    x = _tone()
    gl = GriffinLim(**FBANK, iters=16, power=1.0)
    y = gl(_logmel(x))
    assert abs(len(y) - len(x)) <= FBANK["hop_length"]
    # same pitch: the strongest bin of the output's spectrum is the 220 Hz fundamental
    spec = np.abs(np.fft.rfft(y[2000:6000] * np.hanning(4000)))
    assert abs(np.argmax(spec) * 16000 / 4000 - 220.0) <= 8.0
    # and the log-mel of the output is close to the input's (per-band mean abs error in log10 units)
    a, b = _logmel(x), _logmel(y[: len(x)])
    n = min(len(a), len(b))
    assert np.mean(np.abs(a[5:n - 5] - b[5:n - 5])) < 0.35


@pytest.mark.parametrize("bad,msg", [(np.zeros((1, 80)), "frame"), (np.zeros((10, 40)), "shape"),
                                     (np.full((10, 80), np.nan), "non-finite")])
def test_bad_features_rejected(bad, msg):
    with pytest.raises(ValueError, match=msg):
        GriffinLim(**FBANK, iters=2)(bad)


def test_cli_names_the_utterance(tmp_path, capsys):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"feats_extract": "fbank", "feats_extract_conf": FBANK}))
    feats = tmp_path / "denorm"; feats.mkdir()
    np.save(feats / "good.npy", _logmel(_tone(s=0.3)))
    assert main(["--config", str(cfg), "--out-dir", str(tmp_path / "wav"), "--iters", "4", str(feats)]) == 0
    y, sr = sf.read(tmp_path / "wav" / "good.wav")
    assert sr == 16000 and len(y) > 4000 and np.max(np.abs(y)) > 0
    np.save(feats / "utt_bad.npy", np.zeros((0, 80)))
    assert main(["--config", str(cfg), "--out-dir", str(tmp_path / "wav"), "--iters", "4", str(feats)]) == 2
    assert "utt_bad" in capsys.readouterr().err
    cfg.write_text(yaml.safe_dump({"feats_extract": "linear_spectrogram"}))
    assert main(["--config", str(cfg), "--out-dir", str(tmp_path / "w2"), str(feats)]) == 2
