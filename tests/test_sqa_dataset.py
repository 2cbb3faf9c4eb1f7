"""SQA labels: rasterisation must follow the scorer's frame-centre rule."""

import numpy as np
import pytest

from pyutils.sqa.common import FAULTS, num_grid_frames, rasterise
from pyutils.sqa.dataset import SQADataset, collate


def test_rasterise_matches_scorer_centre_rule():
    scoring = pytest.importorskip("pyutils.scoring.sqa")
    rng = np.random.default_rng(0)
    cases = [[(0.03, 0.07)], [(0.01, 0.03)], [(0.0, 0.01)], [(0.05, 0.0500001)], [(0.29, 0.31), (1.0, 1.5)]]
    for _ in range(200):
        s = round(float(rng.uniform(0, 3)), int(rng.integers(1, 5)))
        cases.append([(s, round(s + float(rng.uniform(0.001, 1)), int(rng.integers(1, 5))))])
    for ivs in cases:
        n = int(max(e for _, e in ivs) / 0.02) + 2
        ours = rasterise(ivs, n).astype(bool).tolist()
        assert ours == [any(a <= k < b for a, b in scoring.frame_ranges(ivs)) for k in range(n)], ivs


def test_grid_length():
    assert num_grid_frames(1.0) == 50
    assert num_grid_frames(1.001) == 51
    assert num_grid_frames(0.3) == 15       # 0.3 / 0.02 is 14.999999... in floats


def test_dataset_items_and_collate(tmp_path):
    kaldiio = pytest.importorskip("kaldiio")
    with kaldiio.WriteHelper(f"ark,scp:{tmp_path}/f.ark,{tmp_path}/feats.scp") as w:
        w("a", np.zeros((101, 8), np.float32))
        w("b", np.ones((51, 8), np.float32))
        w("c", np.ones((51, 8), np.float32))
    (tmp_path / "utt2dur").write_text("a 1.0\nb 0.5\nc 0.5\n")
    (tmp_path / "ref.jsonl").write_text(
        '{"utt_id": "a", "score": 2.5, "faults": {"noise": [[0.1, 0.3]], "distortion": [], "pause": []}}\n'
        '{"utt_id": "c", "score": 1.5, "faults": {"noise": [[0.1, 0.3], [0.2, 0.4]], "distortion": [[0, 0.1]]}}\n'
        '{"utt_id": "b", "score": 4.0, "faults": {}}\n')
    ds = SQADataset(str(tmp_path / "feats.scp"), str(tmp_path / "utt2dur"), str(tmp_path / "ref.jsonl"))
    a = ds[ds.utts.index("a")]
    assert a["n"] == 50 and a["labels"].shape == (50, len(FAULTS))
    assert a["labels"][:, 0].nonzero().flatten().tolist() == list(range(5, 15))
    assert a["presence"].tolist() == [1.0, 0.0, 0.0] and float(a["score"]) == 2.5
    assert ds[ds.utts.index("c")]["presence"].tolist() == [1.0, 1.0, 0.0]
    b = collate([ds[ds.utts.index("a")], ds[ds.utts.index("b")]])
    assert b["presence"].tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert b["feats"].shape == (2, 101, 8) and b["labels"].shape == (2, 50, 3)
    assert b["mask"].sum().item() == 75


def test_augmenter_keeps_exclusions():
    """A held-out family is never made; the augmentation-only kinds are never drawn."""
    from pyutils.sqa.augment import make_fault_augmenter
    from pyutils.synth import faults

    made = []

    class Spy:                       # the real simulator, recording what it was asked to draw
        allowed_kinds = staticmethod(faults.allowed_kinds)

        @staticmethod
        def apply_random_faults(x, rng, sr, **kw):
            y, iv, det = faults.apply_random_faults(x, rng, sr, **kw)
            made.extend(d["kind"] for d in det)
            return y, iv, det

    aug = make_fault_augmenter(Spy, exclude=["babble", "reverb"])
    x = (0.1 * np.sin(2 * np.pi * 150 * np.arange(32000) / 16000)).astype(np.float32)
    for seed in range(40):
        y, f = aug(x, np.random.default_rng(seed), None)
        assert set(f) == {"noise", "distortion", "pause"} and len(y) >= len(x)
    assert made and not {"babble", "reverb"} & set(made)
    with pytest.raises(ValueError):
        make_fault_augmenter(Spy, exclude=["no_such_kind"])


def test_channel_examples_keep_labels_and_score(tmp_path):
    """channel_prob: the example is re-made through a channel; labels, score and score weight stay."""
    kaldiio = pytest.importorskip("kaldiio")
    import soundfile as sf

    from pyutils.sqa.features import extract
    from pyutils.synth.channel import apply_channel

    x = (0.2 * np.sin(2 * np.pi * 220 * np.arange(16000) / 16000)).astype(np.float32)
    sf.write(tmp_path / "a.wav", x, 16000, subtype="PCM_16")
    cfg = {"n_mels": 8, "vad": False}
    with kaldiio.WriteHelper(f"ark,scp:{tmp_path}/f.ark,{tmp_path}/feats.scp") as w:
        w("a", extract(x, cfg))
        w("b", extract(x, cfg))
    (tmp_path / "utt2dur").write_text("a 1.0\nb 1.0\n")
    (tmp_path / "wav.scp").write_text(f"a {tmp_path / 'a.wav'}\nb {tmp_path / 'a.wav'}\n")
    (tmp_path / "ref.jsonl").write_text(
        '{"utt_id": "a", "score": 2.5, "faults": {"noise": [[0.1, 0.3]], "distortion": [], "pause": []}}\n'
        '{"utt_id": "b", "score": 2.0, "faults": {"noise": [], "distortion": [[0.2, 0.5]], "pause": []}}\n')
    args = (str(tmp_path / "feats.scp"), str(tmp_path / "utt2dur"), str(tmp_path / "ref.jsonl"),
            str(tmp_path / "wav.scp"))
    calls = []

    def channel(y, rng):
        calls.append(len(y))
        return apply_channel(y, rng)

    ds = SQADataset(*args, feats_cfg=cfg, channel_prob=1.0, channel=channel)
    plain = SQADataset(*args, feats_cfg=cfg)
    a, p = ds[ds.utts.index("a")], plain[plain.utts.index("a")]
    assert calls == [16000]
    b = ds[ds.utts.index("b")]            # a distortion is never put before its channel
    assert calls == [16000] and b["labels"][:, 1].sum() > 0 and float(b["score"]) == 2.0
    assert a["labels"].tolist() == p["labels"].tolist() and float(a["score"]) == 2.5
    assert float(a["score_weight"]) == 1.0 and a["feats"].shape == p["feats"].shape
    assert not np.allclose(a["feats"].numpy(), p["feats"].numpy())
