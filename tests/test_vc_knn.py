"""kNN voice conversion (pyutils.vc.knn): matching, acoustics of matched frames, hostile input."""

import os

import numpy as np
import pytest

from pyutils.vc import knn
from pyutils.vc.features import SR, WORLD_PER_ENC, World

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHISPER_PT = os.path.join(ROOT, "tools", "models", "whisper-base", "openai.pt")
REAL = os.path.join(ROOT, "tools", "models", "real_speech")


def test_knn_indices_finds_the_most_similar_frames():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(50, 16))
    src = ref[[3, 7, 7, 40]] * 2.5 + 1e-3 * rng.normal(size=(4, 16))   # scale: cosine ignores it
    nn = knn.knn_indices(src, ref, k=1)
    assert nn[:, 0].tolist() == [3, 7, 7, 40]
    assert knn.knn_indices(src, ref[:2], k=4).shape == (4, 2)   # k capped by the reference length


def test_map_f0_takes_the_reference_log_f0_statistics():
    rng = np.random.default_rng(1)
    src = np.exp(rng.normal(np.log(120), 0.1, 400))
    ref = np.exp(rng.normal(np.log(220), 0.15, 300))
    src[::5] = 0.0                                  # unvoiced frames stay unvoiced
    out = knn.map_f0(src, ref)
    assert np.all(out[::5] == 0)
    v = np.log(out[out > 0])
    assert abs(v.mean() - np.log(ref).mean()) < 1e-6
    assert abs(v.std() - np.log(ref).std()) < 1e-6


def _world(f0, sp, ap):
    return World(f0=np.asarray(f0, float), sp=np.asarray(sp, float), ap=np.asarray(ap, float))


def test_output_frames_are_the_matched_reference_frames_acoustics():
    """One-hot content: source frame i matches reference frame perm[i]; with k=1 and no
    smoothing, the output envelope at WORLD frame 4i+q is the reference's at 4 perm[i]+q."""
    t_ref, t_src, bins = 10, 6, 9
    c_ref = np.eye(t_ref)
    perm = np.array([4, 1, 9, 9, 0, 6])
    c_src = c_ref[perm]
    rng = np.random.default_rng(2)
    sp_ref = np.exp(rng.normal(size=(t_ref * WORLD_PER_ENC, bins)))
    ap_ref = rng.uniform(size=(t_ref * WORLD_PER_ENC, bins))
    w_ref = _world(np.full(t_ref * WORLD_PER_ENC, 200.0), sp_ref, ap_ref)
    w_src = _world(np.full(t_src * WORLD_PER_ENC, 100.0), np.ones((t_src * WORLD_PER_ENC, bins)),
                   np.zeros((t_src * WORLD_PER_ENC, bins)))
    cfg = knn.KnnConfig(k=1, smooth=1, energy="ref", rerank=0)
    out = knn.convert_features(c_src, w_src, c_ref, w_ref, cfg)
    rows = (perm[:, None] * WORLD_PER_ENC + np.arange(WORLD_PER_ENC)).ravel()
    np.testing.assert_allclose(out.sp, sp_ref[rows], rtol=1e-9)
    np.testing.assert_allclose(out.ap, ap_ref[rows], rtol=1e-9)
    assert np.allclose(out.f0, 200.0)                 # constant contours: the reference's mean
    # energy=source puts the source's frame power back (here 1 per bin)
    src_e = knn.convert_features(c_src, w_src, c_ref, w_ref, knn.KnnConfig(k=1, smooth=1, rerank=0))
    np.testing.assert_allclose(src_e.sp.mean(axis=1), 1.0, rtol=1e-9)


def test_voicing_mismatched_neighbours_are_left_out():
    c_ref = np.array([[1.0, 0.1], [1.0, 0.0]])         # both close to the source frame
    c_src = np.array([[1.0, 0.05]])
    f0_ref = np.r_[np.zeros(WORLD_PER_ENC), np.full(WORLD_PER_ENC, 150.0)]
    ap_ref = np.r_[np.ones((WORLD_PER_ENC, 3)), np.zeros((WORLD_PER_ENC, 3))]
    w_ref = _world(f0_ref, np.ones((2 * WORLD_PER_ENC, 3)), ap_ref)
    w_src = _world(np.full(WORLD_PER_ENC, 100.0), np.ones((WORLD_PER_ENC, 3)), np.zeros((WORLD_PER_ENC, 3)))
    out = knn.convert_features(c_src, w_src, c_ref, w_ref, knn.KnnConfig(k=2, smooth=1, rerank=0))
    assert np.all(out.ap == 0.0)                       # only the voiced neighbour counts


@pytest.mark.parametrize("seconds,amp,why", [(0.2, 0.1, "long"), (2.0, 0.0, "silent"),
                                             (2.0, 0.1, "voiced")])
def test_unusable_references_are_named(seconds, amp, why):
    rng = np.random.default_rng(3)
    x = amp * rng.normal(size=int(seconds * SR))           # white noise: no voiced frame
    from pyutils.vc.features import world_analyze

    w = world_analyze(x) if amp > 0 and seconds >= 1 else None
    msg = knn.check_reference(x, w, knn.KnnConfig())
    assert msg is not None and why in msg


class _FakeConverter:
    """Stands in for KnnConverter: problems by path, output = a 440 Hz tone."""

    def __init__(self, bad):
        self.bad = bad

    def problem(self, source, target):
        return self.bad.get(target)

    def convert(self, source, target):
        return 0.3 * np.sin(2 * np.pi * 440 * np.arange(SR) / SR).astype(np.float32)


def _tone_file(path):
    from pyutils.vc.convert import write_pcm16

    write_pcm16(str(path), 0.3 * np.sin(2 * np.pi * 220 * np.arange(SR) / SR))
    return str(path)


def test_run_lists_every_bad_pair_and_writes_nothing(tmp_path):
    src = _tone_file(tmp_path / "s.wav")
    pairs = [("a", src, "r1", "a.wav"), ("b", src, "r2", "b.wav"), ("c", src, "ok", "c.wav")]
    conv = _FakeConverter({"r1": "reference is 0.20 s long (< 1.0 s): r1",
                           "r2": "reference is silent: r2"})
    with pytest.raises(knn.ConversionError) as err:
        knn.run(pairs, str(tmp_path / "out"), conv)
    assert "pair a" in str(err.value) and "pair b" in str(err.value) and "2 of 3" in str(err.value)
    assert not (tmp_path / "out").exists()
    stats = knn.run(pairs, str(tmp_path / "out"), conv, bad_ref="copy-source", log=lambda *a: None)
    assert stats["copied_source"] == 2
    import soundfile

    for name in ("a.wav", "b.wav", "c.wav"):
        y, sr = soundfile.read(str(tmp_path / "out" / name))
        assert sr == SR and y.size > 0 and np.abs(y).max() > 0.1
        assert soundfile.info(str(tmp_path / "out" / name)).subtype == "PCM_16"


@pytest.mark.skipif(not os.path.isfile(WHISPER_PT), reason="Whisper base not installed (make -C tools whisper)")
def test_end_to_end_on_real_speech(tmp_path):
    """CLI on two real English clips: each converted toward the other, plus a 0.2 s reference
    that must stop the run naming its pair."""
    a, b = os.path.join(REAL, "arctic_a0007.wav"), os.path.join(REAL, "arctic_a0009.wav")
    short = str(tmp_path / "short.wav")
    from pyutils.vc.convert import write_pcm16
    from pyutils.audio import load_audio

    write_pcm16(short, load_audio(a, SR)[0][: SR // 5])
    good = tmp_path / "pairs.tsv"
    good.write_text(f"{a}\t{b}\tab.wav\n{b}\t{a}\tba.wav\n", encoding="utf-8")
    out = tmp_path / "out"
    assert knn.main(["--pairs", str(good), "--out", str(out), "--threads", "1"]) == 0
    import soundfile

    for name, src in (("ab.wav", a), ("ba.wav", b)):
        y, sr = soundfile.read(str(out / name))
        assert sr == SR and soundfile.info(str(out / name)).subtype == "PCM_16"
        assert abs(y.size - load_audio(src, SR)[0].size) <= 2 * 80   # the source's length
        assert np.sqrt(np.mean(y ** 2)) > 0.01
    bad = tmp_path / "bad.tsv"
    bad.write_text(f"{a}\t{short}\tx.wav\n", encoding="utf-8")
    assert knn.main(["--pairs", str(bad), "--out", str(tmp_path / "out2")]) == 1
    assert not (tmp_path / "out2" / "x.wav").exists()


def test_warp_moves_spectral_peaks_by_alpha():
    spec = np.zeros((1, 101))
    spec[0, 40] = 1.0
    assert int(np.argmax(knn._warp(spec, 1.25))) == 50        # S'(f) = S(f / alpha)
    assert np.allclose(knn._warp(spec, 1.0), spec)


def test_warped_source_envelope_of_the_same_voice_is_the_source_envelope():
    rng = np.random.default_rng(4)
    sp = np.exp(rng.normal(size=(40, 65)))
    w = _world(np.full(40, 120.0), sp, np.zeros((40, 65)))
    np.testing.assert_allclose(knn.warped_source_envelope(w, w), np.log(sp), atol=1e-6)
    np.testing.assert_allclose(knn.warped_source_envelope(w, w, cep_mvn=True), np.log(sp), atol=1e-6)
    # a reference with twice the level everywhere: the output is the source's envelope + log 2
    w2 = _world(np.full(40, 120.0), 2 * sp, np.zeros((40, 65)))
    np.testing.assert_allclose(knn.warped_source_envelope(w, w2), np.log(sp) + np.log(2), atol=1e-6)


def test_rerank_keeps_the_spectrally_closest_candidates():
    bins = 33
    rng = np.random.default_rng(5)
    sp = np.exp(rng.normal(size=(6, bins)))
    w_ref = _world(np.full(6, 100.0), sp, np.zeros((6, bins)))
    target = np.log(sp[[4, 2]])                         # frame n wants reference frame 4, then 2
    m = np.array([[0, 4, 5], [2, 3, 1]])
    kept = knn.rerank_spectral(m, target, w_ref, k=1)
    assert kept[:, 0].tolist() == [4, 2]
    assert knn.rerank_spectral(m, target, w_ref, k=9).shape == (2, 3)   # k capped by the candidates


def test_a_very_low_voice_is_analysed_with_the_low_f0_floor():
    """A 50 Hz voice (glottal-like pulse train through a resonance) is unvoiced for DIO at a
    60 Hz floor; the converter redoes the analysis at 40 Hz and keeps the envelope size."""
    from scipy.signal import lfilter

    from pyutils.vc.features import world_analyze

    n = 2 * SR
    pulses = np.zeros(n)
    pulses[:: SR // 50] = 1.0
    x = lfilter([1.0], [1.0, -1.8 * np.cos(2 * np.pi * 500 / SR), 0.81], pulses)
    x = (0.3 * x / np.abs(x).max()).astype(np.float32)
    conv = knn.KnnConverter.__new__(knn.KnnConverter)     # no Whisper needed for WORLD
    conv.cfg = knn.KnnConfig()
    plain = world_analyze(x, conv.cfg.f0_floor, conv.cfg.f0_ceil)
    w = conv.world(x)
    assert plain.voiced.mean() < 0.1 < w.voiced.mean()
    assert w.sp.shape == plain.sp.shape
    assert abs(np.median(w.f0[w.voiced]) - 50.0) < 5.0
    assert knn.check_reference(x, w, conv.cfg) is None


YAMNET = os.path.join(ROOT, "tools", "models", "yamnet", "model.onnx")


def _music(seconds=4.0, seed=0):
    """Synthetic music: a melody of harmonic notes with decaying envelopes over a bass line."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(0.25 * SR)) / SR
    notes = []
    for _ in range(int(seconds / 0.25)):
        f = 220.0 * 2 ** (rng.integers(0, 12) / 12)
        tone = sum(0.5 ** h * np.sin(2 * np.pi * f * (h + 1) * t) for h in range(5))
        bass = 0.6 * np.sin(2 * np.pi * f / 4 * t)
        notes.append((tone + bass) * np.exp(-6 * t))
    x = np.concatenate(notes)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def _bare_converter(**cfg):
    conv = knn.KnnConverter.__new__(knn.KnnConverter)     # no Whisper: problem() needs cached features
    conv.cfg = knn.KnnConfig(**cfg)
    conv._cache, conv._tagger, conv._speech_ok = {}, None, set()
    return conv


@pytest.mark.skipif(not os.path.isfile(YAMNET), reason="YAMNet not installed (make -C tools yamnet)")
def test_a_music_only_reference_is_refused_naming_it_though_world_calls_it_voiced():
    from pyutils.audio import load_audio

    conv = _bare_converter()
    music = _music()
    w = conv.world(music)
    assert knn.check_reference(music, w, conv.cfg) is None          # WORLD alone lets it through
    speech = load_audio(os.path.join(REAL, "arctic_a0007.wav"), SR)[0]
    conv._cache["src.wav"] = (speech, None, conv.world(speech))
    conv._cache["music.wav"] = (music, None, w)
    conv._cache["speech.wav"] = (speech, None, conv._cache["src.wav"][2])
    why = conv.problem("src.wav", "music.wav")
    assert why is not None and why.startswith("reference") and "YAMNet" in why and why.endswith("music.wav")
    assert conv.problem("src.wav", "speech.wav") is None
    off = _bare_converter(min_speech=0)                               # the check switched off
    off._cache = conv._cache
    assert off.problem("src.wav", "music.wav") is None


def test_a_source_longer_than_whisper_window_is_encoded_window_by_window(monkeypatch):
    """A 65 s source: three windows of <= 30 s, one content frame per 20 ms over the whole length."""
    from pyutils.vc import features

    seen = []

    def fake_chunk(self, x):
        seen.append(x.size)
        return np.zeros((int(np.ceil(x.size / 320)), 4), np.float32)

    monkeypatch.setattr(features.WhisperContent, "_encode_chunk", fake_chunk)
    enc = features.WhisperContent.__new__(features.WhisperContent)
    c = enc.features(np.zeros(65 * SR, np.float32))
    assert seen == [30 * SR, 30 * SR, 5 * SR]
    assert c.shape[0] == 65 * SR // 320


def test_convert_features_covers_a_long_source_frame_for_frame():
    """Output WORLD frames = source frames for a 40 s source against a 3 s reference."""
    rng = np.random.default_rng(0)
    n_src, n_ref = 40 * 200, 3 * 200                       # 5 ms frames
    w_src = _world(np.full(n_src, 120.0), np.exp(rng.normal(size=(n_src, 65))), np.full((n_src, 65), 0.1))
    w_ref = _world(np.full(n_ref, 200.0), np.exp(rng.normal(size=(n_ref, 65))), np.full((n_ref, 65), 0.3))
    c_src = rng.normal(size=(n_src // WORLD_PER_ENC, 8))
    c_ref = rng.normal(size=(n_ref // WORLD_PER_ENC, 8))
    out = knn.convert_features(c_src, w_src, c_ref, w_ref, knn.KnnConfig())
    assert out.sp.shape == w_src.sp.shape and np.isfinite(out.sp).all()
    assert np.allclose(out.f0, 200.0)                      # source F0 moved to the reference's mean
