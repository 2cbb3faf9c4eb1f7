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


def test_single_fault_recordings_keep_only_one_long_noise_or_distortion(tmp_path):
    import json

    import soundfile as sf

    from sqa_fault_physics import single_fault_recordings

    (tmp_path / "faults").mkdir()
    (tmp_path / "wav").mkdir()
    rows = {"a": [{"type": "noise", "kind": "white", "start": 0.5, "end": 1.5}],
            "b": [{"type": "pause", "kind": "silence", "start": 0.5, "end": 1.5}],
            "c": [{"type": "noise", "kind": "white", "start": 0.5, "end": 0.8}],
            "d": [{"type": "noise", "kind": "white", "start": 0.1, "end": 1.0},
                  {"type": "distortion", "kind": "clipping", "start": 1.0, "end": 1.8}]}
    with open(tmp_path / "faults" / "train.jsonl", "w") as f:
        for utt, details in rows.items():
            f.write(json.dumps({"utt_id": utt, "details": details}) + "\n")
            sf.write(tmp_path / "wav" / f"{utt}.wav", np.zeros((SR * 2, 2)), SR)
    got = list(single_fault_recordings(str(tmp_path), "train"))
    assert [g[0]["kind"] for g in got] == ["white"] and got[0][1].shape == (SR * 2,)


def test_enhancer_erb_bands_cover_every_bin_and_threshold_separates():
    from sqa_enhancer_snr import FFT, NB_ERB, best_threshold, erb_widths

    w = erb_widths()
    assert len(w) == NB_ERB and w.sum() == FFT // 2 + 1 and w.min() >= 2
    assert np.all(np.diff(w[8:]) >= 0)          # bands widen with frequency above the 2-bin floor
    thr, acc = best_threshold([1.0, 2.0, 3.0], [10.0, 12.0, 2.5])
    assert abs(acc - (1.0 - 0.5 / 3)) < 1e-12 and 2.0 < thr < 10.0
