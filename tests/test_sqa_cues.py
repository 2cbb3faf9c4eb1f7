"""The pitch contour beside the SQA log-mel (pyutils.sqa.cues.pitch_track): what it follows,
and that every path (dump, training examples re-made on the fly) appends it alike."""

import json

import numpy as np
import pytest

from pyutils.sqa.cues import PITCH_COLS, pitch_track
from pyutils.sqa.features import extract, fbank

SR = 16000


def syllables(rng, n=6, on=0.18, off=0.22):
    """Speech-like bursts: harmonic syllables of ``on`` s (pitch 100-160 Hz) with silent gaps."""
    out = []
    for _ in range(n):
        t = np.arange(int(on * SR)) / SR
        ph = 2 * np.pi * rng.uniform(100, 160) * t
        s = sum(np.sin(k * ph) / k for k in range(1, 11)) * np.hanning(len(t))
        out += [s, np.zeros(int(off * SR))]
    return 0.3 * np.concatenate(out)


def test_extract_and_dump_append_the_pitch_contour_last(tmp_path):
    """``pitch`` in the feature config adds the contour after the log-mel, and a dump made with
    ``--pitch`` says so in feats_config.json (read back by training and chorus-sqa)."""
    sf = pytest.importorskip("soundfile")
    from pyutils.sqa.features import dump

    dry = syllables(np.random.default_rng(0))[: 2 * SR]
    f = extract(dry, {"n_mels": 80, "pitch": True})
    assert f.shape == (fbank(dry).shape[0], 80 + len(PITCH_COLS))
    np.testing.assert_array_equal(f[:, :80], fbank(dry))
    np.testing.assert_array_equal(f[:, -len(PITCH_COLS):], pitch_track(dry, f.shape[0]))
    assert extract(dry, {"n_mels": 80}).shape[1] == 80
    sf.write(tmp_path / "a.wav", dry, SR)
    (tmp_path / "wav.scp").write_text(f"a {tmp_path / 'a.wav'}\n")
    assert dump(str(tmp_path / "wav.scp"), str(tmp_path / "out"), "1", pitch=True) == 0
    cfg = json.loads((tmp_path / "out" / "feats_config.json").read_text())
    assert cfg == {"n_mels": 80, "pitch": True}


def test_augmented_training_example_gets_the_pitch_columns_too(tmp_path):
    """An example re-made on the fly is featurised like the dump (feats_config.json's ``pitch``)."""
    kaldiio = pytest.importorskip("kaldiio")
    sf = pytest.importorskip("soundfile")
    from pyutils.sqa.dataset import SQADataset

    dry = syllables(np.random.default_rng(1))[: 2 * SR]
    cfg = {"n_mels": 80, "pitch": True}
    sf.write(tmp_path / "a.wav", dry, SR)
    with kaldiio.WriteHelper(f"ark,scp:{tmp_path}/f.ark,{tmp_path}/feats.scp") as w:
        w("a", extract(dry, cfg))
    (tmp_path / "utt2dur").write_text("a 2.0\n")
    (tmp_path / "wav.scp").write_text(f"a {tmp_path / 'a.wav'}\n")

    def add_noise(x, rng, ref):
        return x + 0.05 * rng.standard_normal(len(x)), {"noise": [[0.0, 2.0]], "distortion": [], "pause": []}

    ds = SQADataset(str(tmp_path / "feats.scp"), str(tmp_path / "utt2dur"), wav_scp=str(tmp_path / "wav.scp"),
                    augment_prob=1.0, augmenter=add_noise, feats_cfg=cfg)
    item = ds[0]
    assert item["feats"].shape == (201, 80 + len(PITCH_COLS))
    assert float(item["labels"][:, 0].mean()) == 1.0
    # the noise lowers the voicing column against the dumped (clean) example's
    clean = np.asarray(kaldiio.load_scp(str(tmp_path / "feats.scp"))["a"])
    assert item["feats"][:, 80].numpy().mean() < clean[:, 80].mean()


def test_pitch_track_follows_a_vibrato_and_stays_flat_on_a_steady_voice():
    from pyutils.sqa.cues import PITCH_COLS, pitch_track

    sr = 16000
    t = np.arange(2 * sr) / sr

    def voice(f0):                           # five harmonics on an instantaneous f0 contour
        phase = 2 * np.pi * np.cumsum(f0) / sr
        return sum(np.sin(h * phase) / h for h in range(1, 6)) * 0.3

    steady = pitch_track(voice(np.full_like(t, 150.0)))
    wobble = pitch_track(voice(150.0 * (1 + 0.05 * np.sin(2 * np.pi * 6 * t))))
    assert steady.shape == (1 + len(t) // 160, len(PITCH_COLS)) and steady.dtype == np.float32
    inner = slice(10, -10)
    assert steady[inner, 0].min() > 0.9                                   # voiced throughout
    assert np.abs(steady[inner, 1]).max() < 0.01
    # the log period follows 5 % * sin(2 pi 6 t); its frame-to-frame change peaks at
    # 0.05 * 2 pi * 6 * 0.01 = 0.019 and swings at 6 Hz (100 frames per second)
    delta = wobble[inner, 1]
    assert 0.012 < delta.max() < 0.03 and -0.03 < delta.min() < -0.012
    spec = np.abs(np.fft.rfft(delta - delta.mean()))
    freqs = np.fft.rfftfreq(len(delta), 0.01)
    assert 5.0 < freqs[spec.argmax()] < 7.0
    noise = pitch_track(np.random.default_rng(0).standard_normal(sr) * 0.1)
    assert np.median(noise[:, 0]) < 0.5 and np.all(noise[noise[:, 0] < 0.5, 1:] == 0)
    quiet = pitch_track(np.zeros(sr // 2))
    assert np.all(np.isfinite(quiet)) and not quiet.any()
