"""pyutils.synth.nvv_sounds: every challenge tag has a recipe; instances vary; classes separable."""

import numpy as np
import pytest
from scipy import signal

from pyutils.synth.nvv_sounds import RECIPES, synthesize
from pyutils.tags import challenge_tags


def test_every_challenge_tag_has_a_documented_recipe():
    assert set(RECIPES) == set(challenge_tags())
    for tag, fn in RECIPES.items():
        assert fn.__doc__ and fn.__doc__.startswith(tag.split()[0])


@pytest.mark.parametrize("tag", challenge_tags())
def test_instances_are_bounded_random_and_reproducible(tag):
    xs = [synthesize(tag, np.random.default_rng(s)) for s in range(4)]
    for x in xs:
        assert x.dtype == np.float32 and np.isfinite(x).all()
        assert 0.05 < len(x) / 16000 < 2.5
        assert 0.01 < np.abs(x).max() < 1.0
        # no silent padding: the first and last 10 ms carry sound
        edge = 160
        assert np.abs(x[:edge]).max() > 1e-3 * np.abs(x).max()
        assert np.abs(x[-edge:]).max() > 1e-3 * np.abs(x).max()
    assert len({len(x) for x in xs}) > 1                      # randomised per instance
    again = synthesize(tag, np.random.default_rng(0))
    assert np.array_equal(again, xs[0])


def _features(x):
    _, _, z = signal.stft(x, fs=16000, nperseg=400, noverlap=240)
    p = np.abs(z) ** 2
    edges = np.geomspace(2, p.shape[0] - 1, 25).astype(int)
    bands = np.log(np.stack([p[a:b + 1].sum(0) for a, b in zip(edges[:-1], edges[1:])]) + 1e-10)
    return np.concatenate([bands.mean(1), bands.std(1), [np.log(len(x) / 16000)]])


def test_classes_are_separable_by_a_tiny_classifier():
    """Nearest class centroid on log band-energy statistics, held-out instances."""
    tags = challenge_tags()
    feats, labels = [], []
    for ti, tag in enumerate(tags):
        for s in range(10):
            feats.append(_features(synthesize(tag, np.random.default_rng([s, ti]))))
            labels.append(ti)
    x, y = np.array(feats), np.array(labels)
    x = (x - x.mean(0)) / (x.std(0) + 1e-9)
    train = np.arange(len(y)) % 2 == 0
    cent = np.stack([x[train & (y == k)].mean(0) for k in range(len(tags))])
    pred = np.argmin(((x[~train][:, None] - cent[None]) ** 2).sum(-1), axis=1)
    assert (pred == y[~train]).mean() > 0.85
