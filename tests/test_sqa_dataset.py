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
        n = scoring.n_frames_for(ivs)
        ours = rasterise(ivs, n).astype(bool).tolist()
        assert ours == scoring.frame_mask(ivs, n), ivs


def test_grid_length():
    assert num_grid_frames(1.0) == 50
    assert num_grid_frames(1.001) == 51
    assert num_grid_frames(0.3) == 15       # 0.3 / 0.02 is 14.999999... in floats


def test_dataset_items_and_collate(tmp_path):
    kaldiio = pytest.importorskip("kaldiio")
    with kaldiio.WriteHelper(f"ark,scp:{tmp_path}/f.ark,{tmp_path}/feats.scp") as w:
        w("a", np.zeros((101, 8), np.float32))
        w("b", np.ones((51, 8), np.float32))
    (tmp_path / "utt2dur").write_text("a 1.0\nb 0.5\n")
    (tmp_path / "ref.jsonl").write_text(
        '{"utt_id": "a", "score": 2.5, "faults": {"noise": [[0.1, 0.3]], "distortion": [], "pause": []}}\n'
        '{"utt_id": "b", "score": 4.0, "faults": {}}\n')
    ds = SQADataset(str(tmp_path / "feats.scp"), str(tmp_path / "utt2dur"), str(tmp_path / "ref.jsonl"))
    a = ds[ds.utts.index("a")]
    assert a["n"] == 50 and a["labels"].shape == (50, len(FAULTS))
    assert a["labels"][:, 0].nonzero().flatten().tolist() == list(range(5, 15))
    assert a["presence"].tolist() == [1.0, 0.0, 0.0] and float(a["score"]) == 2.5
    b = collate([ds[0], ds[1]])
    assert b["feats"].shape == (2, 101, 8) and b["labels"].shape == (2, 50, 3)
    assert b["mask"].sum().item() == 75
