"""Physical frame cues (pyutils.sqa.cues): each cue moves the way its physics says."""

import json

import numpy as np
import pytest

from pyutils.sqa.cues import CUE_NAMES, NUM_CUES, frame_cues
from pyutils.sqa.features import extract, fbank

SR = 16000


def col(c, name):
    return c[:, CUE_NAMES.index(name)]


def voice(f0, dur, rng, jitter=0.0):
    """A harmonic 'voice' (10 harmonics, 1/k amplitudes) with a slow pitch drift."""
    t = np.arange(int(dur * SR)) / SR
    f = f0 * (1 + 0.03 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6)) + jitter)
    ph = 2 * np.pi * np.cumsum(f) / SR
    return sum(np.sin(k * ph) / k for k in range(1, 11))


def syllables(rng, n=10, on=0.18, off=0.22):
    """Speech-like bursts: harmonic syllables of ``on`` s with silent gaps of ``off`` s."""
    out = []
    for _ in range(n):
        s = voice(rng.uniform(100, 160), on, rng) * np.hanning(int(on * SR))
        out += [s, np.zeros(int(off * SR))]
    return 0.3 * np.concatenate(out)


def gaps(x, n_frames):
    """10 ms frames whose 25 ms neighbourhood in the dry signal is silent."""
    e = np.array([np.abs(x[max(0, j * 160 - 200): j * 160 + 200]).max(initial=0.0) for j in range(n_frames)])
    return e < 1e-6


@pytest.fixture(scope="module")
def signals():
    rng = np.random.default_rng(0)
    dry = syllables(rng)
    t = np.arange(int(0.8 * SR)) / SR                       # RT60 0.5 s: 60 dB in 0.5 s
    ir = rng.standard_normal(len(t)) * 10 ** (-3 * t / 0.5)
    ir[0] = 1.0
    wet = np.convolve(dry, ir)[: len(dry)]
    wet *= np.abs(dry).max() / np.abs(wet).max()
    noisy = dry + 0.03 * rng.standard_normal(len(dry))
    return dry, wet, noisy


def test_shape_finite_and_gain_invariant(signals):
    dry, wet, noisy = signals
    for x in (dry, wet, noisy, np.zeros(8000), np.full(8000, 0.5)):
        c = frame_cues(x)
        assert c.shape == (1 + len(x) // 160, NUM_CUES)
        assert np.isfinite(c).all()
    a, b = frame_cues(noisy), frame_cues(0.05 * noisy)
    assert np.abs(a - b).max() < 1e-2 * max(1.0, np.abs(a).max())


def test_reverb_tail_follows_the_speech_noise_floor_does_not(signals):
    dry, wet, noisy = signals
    cw, cn = frame_cues(wet), frame_cues(noisy)
    g = gaps(dry, len(cw))
    assert g.sum() > 100
    # gap energy tied to the energy 50 ms before it: much more for the tail than for the floor
    assert col(cw, "lag50")[g].mean() > col(cn, "lag50")[g].mean() + 0.2
    # the tail's level in the gaps falls steadily: negative slope on the gaps' first 100 ms
    first = g & ~np.roll(g, 10)
    assert col(cw, "slope")[first].mean() < -0.5
    assert abs(col(cn, "slope")[first].mean()) < abs(col(cw, "slope")[first].mean())


def test_filled_gaps_raise_the_floor_and_flatten_the_modulation(signals):
    dry, _, noisy = signals
    cd, cn = frame_cues(dry), frame_cues(noisy)
    mid = slice(100, len(cd) - 100)
    assert np.median(col(cn, "floor")[mid]) > np.median(col(cd, "floor")[mid]) + 20
    rng = np.random.default_rng(1)
    t = np.arange(4 * SR) / SR
    steady = rng.standard_normal(len(t))
    am = steady * (1.05 + np.sin(2 * np.pi * 4 * t))       # 4 Hz, speech-rate envelope
    assert np.median(col(frame_cues(am), "mod_low")) > np.median(col(frame_cues(steady), "mod_low")) + 0.3


def test_second_voice_leaves_a_periodic_residual():
    rng = np.random.default_rng(2)
    one = voice(120, 2.0, rng)
    two = one + voice(185, 2.0, rng)
    c1, c2 = frame_cues(0.2 * one), frame_cues(0.1 * two)
    mid = slice(20, len(c1) - 20)
    assert np.median(col(c1, "harm")[mid]) > 0.8
    # one voice cancels almost completely; two leave the second one behind
    assert np.median(col(c1, "res_db")[mid]) < -10
    assert np.median(col(c2, "res_db")[mid]) > np.median(col(c1, "res_db")[mid]) + 8
    assert np.median(col(c2, "res_harm")[mid]) > 0.5
    wn = frame_cues(0.1 * rng.standard_normal(2 * SR))
    assert np.median(col(wn, "harm")[mid]) < 0.4


def test_extract_appends_the_cues_on_the_logmel_rows(signals):
    dry = signals[0]
    f = extract(dry, {"n_mels": 80, "vad": False, "cues": True})
    assert f.shape == (fbank(dry).shape[0], 80 + NUM_CUES)
    np.testing.assert_array_equal(f[:, :80], fbank(dry))
    assert extract(dry, {"n_mels": 80, "vad": False}).shape[1] == 80


def test_augmented_training_example_gets_the_cue_columns_too(tmp_path, signals):
    """An example re-made on the fly is featurised like the dump (feats_config.json's ``cues``)."""
    kaldiio = pytest.importorskip("kaldiio")
    sf = pytest.importorskip("soundfile")
    from pyutils.sqa.dataset import SQADataset

    dry = signals[0][: 2 * SR]
    cfg = {"n_mels": 80, "vad": False, "cues": True}
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
    assert item["feats"].shape == (201, 80 + NUM_CUES)
    assert float(item["labels"][:, 0].mean()) == 1.0
    # the noise raised the floor cue over the dumped (clean) example's
    clean = np.asarray(kaldiio.load_scp(str(tmp_path / "feats.scp"))["a"])
    k = 80 + CUE_NAMES.index("floor")
    assert np.median(item["feats"][:, k].numpy()) > np.median(clean[:, k]) + 10


def test_context_mean_is_the_windowed_mean_cut_at_the_edges():
    from pyutils.sqa.cues import context_mean

    c = np.arange(10, dtype=np.float32)[:, None] * [1.0, -2.0]
    m = context_mean(c, 2)
    assert m.shape == c.shape
    np.testing.assert_allclose(m[5], c[3:8].mean(0))      # inside: t-2 .. t+2
    np.testing.assert_allclose(m[0], c[0:3].mean(0))      # edge: only the frames that exist
    np.testing.assert_allclose(m[9], c[7:10].mean(0))
    np.testing.assert_allclose(context_mean(c, 0), c)


def test_extract_cue_context_appends_the_pooled_cues(signals):
    from pyutils.sqa.cues import context_mean

    dry = signals[0]
    f = extract(dry, {"n_mels": 80, "vad": False, "cues": True, "cue_context": 1.5})
    assert f.shape[1] == 80 + 2 * NUM_CUES
    np.testing.assert_allclose(f[:, 80 + NUM_CUES:], context_mean(f[:, 80:80 + NUM_CUES], 150), rtol=1e-5)
    assert np.all(np.abs(np.diff(f[:, -NUM_CUES:], axis=0)).mean(0)
                  <= np.abs(np.diff(f[:, 80:80 + NUM_CUES], axis=0)).mean(0) + 1e-6)   # smoother than the frames


def test_extract_and_dump_append_the_pitch_contour_last(tmp_path, signals):
    """``pitch`` in the feature config adds the contour after every other column, and a dump
    made with ``--pitch`` says so in feats_config.json (read back by training and chorus-sqa)."""
    sf = pytest.importorskip("soundfile")
    from pyutils.sqa.cues import PITCH_COLS, pitch_track
    from pyutils.sqa.features import dump

    dry = signals[0][: 2 * SR]
    f = extract(dry, {"n_mels": 80, "vad": False, "cues": True, "pitch": True})
    assert f.shape == (fbank(dry).shape[0], 80 + NUM_CUES + len(PITCH_COLS))
    np.testing.assert_array_equal(f[:, -len(PITCH_COLS):], pitch_track(dry, f.shape[0]))
    sf.write(tmp_path / "a.wav", dry, SR)
    (tmp_path / "wav.scp").write_text(f"a {tmp_path / 'a.wav'}\n")
    assert dump(str(tmp_path / "wav.scp"), str(tmp_path / "out"), "1", pitch=True) == 0
    cfg = json.loads((tmp_path / "out" / "feats_config.json").read_text())
    assert cfg == {"n_mels": 80, "vad": False, "pitch": True}
    # the 8 kHz analysis: named in the config (older configs stay as they were) and used by extract
    assert dump(str(tmp_path / "wav.scp"), str(tmp_path / "out8"), "1", pitch=True, pitch_rate=8000) == 0
    cfg8 = json.loads((tmp_path / "out8" / "feats_config.json").read_text())
    assert cfg8 == {"n_mels": 80, "vad": False, "pitch": True, "pitch_rate": 8000}
    f8 = extract(dry, cfg8)
    np.testing.assert_array_equal(f8[:, -len(PITCH_COLS):], pitch_track(dry, f8.shape[0], 8000))
    assert not np.array_equal(f8[:, -1], f[:, -1]) and np.array_equal(f8[:, :80], f[:, :80])
    with pytest.raises(ValueError, match="pitch rate"):
        pitch_track(dry, rate=22050)


@pytest.mark.parametrize("rate", [16000, 8000])
def test_pitch_track_follows_a_vibrato_and_stays_flat_on_a_steady_voice(rate):
    from functools import partial

    from pyutils.sqa.cues import PITCH_COLS
    from pyutils.sqa.cues import pitch_track as track

    pitch_track = partial(track, rate=rate)    # the same contour at either analysis rate

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
