"""pyutils.synth.faults: faults stay inside their intervals; pauses are silent; scores."""

import numpy as np
import pytest

from pyutils.synth import faults

SR = 16000


def _speechlike(seed=0, dur=3.0):
    """Voiced bursts ("words") separated by short gaps."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(dur * SR)) / SR
    x = 0.3 * np.sin(2 * np.pi * 150 * t) * (np.sin(2 * np.pi * 2.0 * t) > 0.2)
    return (x + 1e-4 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.mark.parametrize("kind", faults.NOISE_KINDS)
def test_noise_only_inside_interval(kind):
    x = _speechlike()
    y = faults.apply_noise(x, 1.0, 2.0, np.random.default_rng(1), kind, snr_db=10)
    d = np.abs(y - x)
    assert d[: SR].max() == 0 and d[2 * SR + 1:].max() == 0
    assert np.sqrt(np.mean(d[SR + 100:2 * SR - 100] ** 2)) > 0.01


@pytest.mark.parametrize("kind", faults.DISTORTION_KINDS)
def test_distortion_only_inside_interval(kind):
    x = _speechlike()
    y = faults.apply_distortion(x, 0.5, 1.5, np.random.default_rng(1), kind, strength=0.8)
    d = np.abs(y - x)
    assert d[: SR // 2].max() == 0 and d[int(1.5 * SR) + 1:].max() == 0
    assert d[SR // 2:int(1.5 * SR)].max() > 1e-3


def test_random_faults_intervals_are_exact():
    for seed in range(30):
        rng = np.random.default_rng(seed)
        x = _speechlike(seed)
        y, iv, details = faults.apply_random_faults(x, rng, SR, n_faults=int(seed % 4))
        assert set(iv) == {"noise", "distortion", "pause"}
        n_pause = len(iv["pause"])
        total = sum(e - s for s, e in iv["pause"])
        inserted = len(y) / SR - len(x) / SR
        # a truncation also labels the 50-150 ms of speech it cut before the gap
        n_trunc = sum(d["kind"] == "truncation" for d in details)
        assert inserted - 2e-3 < total < inserted + 0.151 * n_trunc + 2e-3
        for s, e in iv["pause"]:
            seg = y[int(e * SR) - int(0.3 * SR):int(e * SR) - 80]
            # a pause ends in silence or room tone >= 40 dB below the speech level
            assert np.sqrt(np.mean(seg ** 2)) < 0.01 * 0.3
        for key in ("noise", "distortion"):
            for s, e in iv[key]:
                assert 0 <= s < e <= len(y) / SR + 1e-6
                assert all(e <= a or s >= b for a, b in iv["pause"])   # labels stay apart
        assert len(details) == sum(len(v) for v in iv.values())
        assert 0 <= n_pause <= 3


def test_quality_score_orders_severity():
    clean = faults.quality_score([], 4.0)
    mild = faults.quality_score([{"type": "noise", "start": 0, "end": 1, "snr_db": 25}], 4.0)
    bad = faults.quality_score([{"type": "noise", "start": 0, "end": 4, "snr_db": 0},
                                {"type": "distortion", "start": 0, "end": 4, "strength": 1.0}], 4.0)
    assert clean == pytest.approx(4.6)
    assert clean > mild > bad >= 1.0


@pytest.mark.parametrize("kind", faults.PAUSE_KINDS)
def test_pause_kinds_label_their_span(kind):
    x = _speechlike(3)
    at = int(1.3 * SR)
    y, (a, b) = faults.insert_pause(x, at, 0.8, np.random.default_rng(2), kind, SR, return_span=True)
    assert len(y) == len(x) + int(0.8 * SR)
    assert b == at + int(0.8 * SR) and (a == at or (kind == "truncation" and at - 0.16 * SR < a < at))
    tail = y[b - int(0.3 * SR):b]                  # the end of every pause kind is quiet
    assert np.sqrt(np.mean(tail ** 2)) < 0.003
    assert np.array_equal(y[b:], x[at:])           # speech after the pause is untouched


def test_exclude_removes_families_and_types():
    kinds = faults.allowed_kinds(["reverb", "babble", "pause"])
    assert "reverb" not in kinds["distortion"] and "babble" not in kinds["noise"]
    assert kinds["pause"] == ()
    assert "codec" in kinds["distortion"]
    assert faults.allowed_kinds(["packetloss"])["distortion"].count("dropout") == 0   # a family
    with pytest.raises(ValueError, match="unknown"):
        faults.allowed_kinds(["reverbb"])
    for seed in range(25):
        rng = np.random.default_rng(seed)
        _, iv, details = faults.apply_random_faults(_speechlike(seed), rng, SR, n_faults=3,
                                                    exclude=["reverb", "codec", "pause", "music"])
        assert not iv["pause"]
        assert all(d["kind"] not in ("reverb", "codec", "music") for d in details)


def test_quality_score_is_monotone_in_every_severity():
    base = [{"type": "noise", "start": 0, "end": 1, "snr_db": 15},
            {"type": "distortion", "start": 1, "end": 2, "strength": 0.5},
            {"type": "pause", "start": 2.5, "end": 3.3}]
    s0 = faults.quality_score(base, 5.0)
    worse = [[dict(base[0], snr_db=5), base[1], base[2]],
             [base[0], dict(base[1], strength=0.9), base[2]],
             [base[0], base[1], dict(base[2], end=4.0)],
             [dict(base[0], end=3.0), base[1], base[2]],
             base + [{"type": "distortion", "start": 4, "end": 4.5, "strength": 0.2}]]
    for w in worse:
        assert faults.quality_score(w, 5.0) < s0


@pytest.mark.parametrize("rt60", [0.3, 0.8, 1.5])
def test_room_ir_decays_at_the_requested_rt60(rt60):
    from pyutils.synth.rooms import room_ir

    h = room_ir(rt60, np.random.default_rng(3))
    edc = np.cumsum(h[::-1] ** 2)[::-1]
    edc_db = 10 * np.log10(edc / edc[0] + 1e-20)
    t20 = np.argmax(edc_db < -20) / SR                 # Schroeder backward integration
    assert abs(3 * t20 - rt60) < 0.25 * rt60
    assert np.argmax(np.abs(h)) == 0                   # the direct path comes first


@pytest.mark.parametrize("codec", ["mp3", "opus", "gsm", "g726"])
def test_codec_roundtrip_is_aligned_and_lossy(codec):
    import shutil

    from pyutils.synth.codecs import codec_roundtrip

    if not shutil.which("ffmpeg"):
        pytest.skip("ffmpeg not installed")
    x = _speechlike(4, dur=1.5)
    mild, harsh = codec_roundtrip(x, codec, 0.0), codec_roundtrip(x, codec, 1.0)
    assert len(mild) == len(x) and len(harsh) == len(x)
    for y in (mild, harsh):
        r = np.corrcoef(x[1600:-1600], y[1600:-1600])[0, 1]
        assert 0.6 < r < 0.99999, r                     # aligned (no codec delay left), but changed
