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
        assert abs(len(y) / SR - len(x) / SR - total) < 2e-3
        for s, e in iv["pause"]:
            seg = y[int(s * SR) + 80:int(e * SR) - 80]
            # pause = silence or room tone >= 40 dB below the speech level
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
