"""benchmarks/sqa_fault_physics.py: the measures move the way their definitions say."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

from sqa_fault_physics import measures  # noqa: E402

from pyutils.synth import faults  # noqa: E402

SR = 16000


def _bursts(seed=0, dur=4.0):
    """Voiced 'words' (200 ms on, 300 ms off) over a faint floor."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(dur * SR)) / SR
    x = 0.3 * np.sin(2 * np.pi * 150 * t) * ((t % 0.5) < 0.2)
    return x + 1e-4 * rng.standard_normal(len(t))


def test_noise_fills_the_gaps_and_distortion_of_the_words_does_not():
    x = _bursts()
    noisy = faults.apply_noise(x, 1.0, 3.0, np.random.default_rng(1), "white", snr_db=10).astype(float)
    floor, rise, flat, dyn, _ = measures(noisy, SR, 1.0, 3.0)
    assert rise > 30 and floor > -30 and flat > 0.3 and dyn < 10
    clean = measures(x, SR, 1.0, 3.0)
    assert clean[0] < -50 and abs(clean[1]) < 5 and clean[3] > 20


def test_a_tail_that_follows_the_speech_correlates_with_it_and_noise_does_not():
    x = _bursts(dur=6.0)
    rng = np.random.default_rng(2)
    # bursts of random level, each followed by an exponential tail (reverberation-like)
    t = np.arange(len(x)) / SR
    level = np.repeat(rng.uniform(0.05, 1.0, int(np.ceil(len(x) / (0.5 * SR)))), int(0.5 * SR))[: len(x)]
    tail = np.where((t % 0.5) >= 0.2, np.exp(-((t % 0.5) - 0.2) * 10), 0.0)
    rev = x * level + 0.2 * level * tail * rng.standard_normal(len(x))
    noisy = x * level + 0.05 * rng.standard_normal(len(x))
    assert measures(rev, SR, 0.5, 5.5)[4] > measures(noisy, SR, 0.5, 5.5)[4] + 0.2


def test_too_short_interval_gives_none():
    assert measures(_bursts(), SR, 1.0, 1.1) is None
