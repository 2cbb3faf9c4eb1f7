"""Benign recording channels (pyutils.synth.channel): level, band and floor as documented."""

import numpy as np
from scipy import signal

from pyutils.synth.channel import FLOOR_DB, apply_channel, draw_channel, high_shelf_sos, peaking_sos

SR = 16000


def _speechlike(n=32000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SR
    env = ((np.arange(n) // 4000) % 2 == 0).astype(float)          # 0.25 s bursts and gaps
    x = sum(np.sin(2 * np.pi * f * t) / k for k, f in enumerate((150, 300, 450, 1200, 2500), 1))
    return (0.3 * env * x + 1e-6 * rng.standard_normal(n)).astype(np.float32), env


def test_peaking_and_shelf_gains_at_their_frequencies():
    for f0, g in ((1000.0, 6.0), (3000.0, -6.0)):
        w, h = signal.sosfreqz(peaking_sos(f0, g, 1.0, SR), worN=[f0, 20.0], fs=SR)
        assert abs(20 * np.log10(abs(h[0])) - g) < 0.05 and abs(20 * np.log10(abs(h[1]))) < 0.1
    w, h = signal.sosfreqz(high_shelf_sos(3000.0, 4.0, SR), worN=[7900.0, 50.0], fs=SR)
    assert abs(20 * np.log10(abs(h[0])) - 4.0) < 0.3 and abs(20 * np.log10(abs(h[1]))) < 0.1


def test_channel_keeps_length_peak_and_puts_the_floor_in_range():
    x, env = _speechlike()
    for seed in range(20):
        rng = np.random.default_rng(seed)
        p = draw_channel(np.random.default_rng(seed))
        y = apply_channel(x, rng)
        assert y.shape == x.shape and y.dtype == np.float32
        # gaps between bursts hold only the floor: FLOOR_DB under the speech, within a few dB
        pos = np.arange(len(x)) % 8000
        gaps = y[(env == 0) & (pos > 5000) & (pos < 7500)]           # clear of the filters' tails
        speech = np.sqrt(np.mean(np.square(x[env == 1], dtype=np.float64)))
        floor_db = 20 * np.log10(speech / np.sqrt(np.mean(np.square(gaps, dtype=np.float64))))
        assert FLOOR_DB[0] - 6 < floor_db < FLOOR_DB[1] + 6, (seed, p, floor_db)
        assert abs(np.abs(y).max() - np.abs(x).max()) < 0.05 * np.abs(x).max()


def test_channel_is_reproducible_and_lowpass_removes_the_top_band():
    x = np.random.default_rng(1).standard_normal(32000).astype(np.float32) * 0.1
    a = apply_channel(x, np.random.default_rng(3))
    b = apply_channel(x, np.random.default_rng(3))
    assert np.array_equal(a, b)
    p = dict(draw_channel(np.random.default_rng(0)), lowpass_hz=6000.0, floor_db=65.0)
    y = apply_channel(x, np.random.default_rng(0), params=p)
    f, pxx = signal.welch(y, fs=SR, nperseg=1024)
    assert 10 * np.log10(pxx[f > 7500].mean() / pxx[(f > 1000) & (f < 4000)].mean()) < -25


def test_floor_range_is_a_parameter_and_the_default_draws_the_same():
    x, env = _speechlike()
    same = [draw_channel(np.random.default_rng(s)) == draw_channel(np.random.default_rng(s), FLOOR_DB)
            for s in range(5)]
    assert all(same)
    assert all(20.0 <= draw_channel(np.random.default_rng(s), (20.0, 22.0))["floor_db"] <= 22.0 for s in range(20))
    a = apply_channel(x, np.random.default_rng(0), floor_db=(20.0, 20.0))
    b = apply_channel(x, np.random.default_rng(0), floor_db=(60.0, 60.0))
    pos = np.arange(len(x)) % 8000
    gaps = (env == 0) & (pos > 5000) & (pos < 7500)
    # the same channel draw, floor 40 dB apart: the gaps' level differs by about 40 dB
    ratio = 20 * np.log10(np.sqrt(np.mean(np.square(a[gaps], dtype=np.float64)))
                          / np.sqrt(np.mean(np.square(b[gaps], dtype=np.float64))))
    assert 35 < ratio < 45
