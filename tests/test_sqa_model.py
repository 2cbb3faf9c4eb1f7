"""SQA model: output shapes on the 20 ms grid, masking, save/load."""

import numpy as np
import pytest
import torch

from pyutils.sqa.common import FAULTS, num_grid_frames
from pyutils.sqa.features import fbank
from pyutils.sqa.model import ModelConfig, ModelFileError, SQAModel, fit_length, load_model, save_model


@pytest.mark.parametrize("encoder,pooling", [("gru", "att"), ("tcn", "att"), ("tcn", "rich")])
def test_forward_shapes_at_20ms(encoder, pooling):
    torch.manual_seed(0)
    model = SQAModel(ModelConfig(input_dim=40, conv_channels=16, rnn_hidden=8, rnn_layers=1,
                                 encoder=encoder, tcn_dilations=(1, 2), score_pooling=pooling)).eval()
    durs = [1.0, 0.73, 0.31]
    feats = [fbank(np.random.default_rng(i).standard_normal(int(d * 16000)).astype(np.float32) * 0.1, 40)
             for i, d in enumerate(durs)]
    t = max(f.shape[0] for f in feats)
    x = torch.zeros(len(durs), t, 40)
    for i, f in enumerate(feats):
        x[i, : f.shape[0]] = torch.from_numpy(f)
    lengths = torch.tensor([f.shape[0] for f in feats])
    out = model(x, lengths)
    assert out["frame_logits"].shape == (3, (t + 1) // 2, 3)
    assert out["utt_logits"].shape == (3, 3) and out["score"].shape == (3,)
    assert ((out["score"] >= 1) & (out["score"] <= 5)).all()
    for i, d in enumerate(durs):
        # 10 ms features -> stride 2 -> 20 ms: within one frame of the scorer's grid
        assert abs(int(out["lengths"][i]) - num_grid_frames(d)) <= 1
    # padding does not change a recording's outputs
    single = model(x[2:3, : lengths[2]], lengths[2:3])
    n = int(out["lengths"][2])
    assert torch.allclose(single["frame_logits"][0, :n], out["frame_logits"][2, :n], atol=1e-4)
    assert torch.allclose(single["score"], out["score"][2:3], atol=1e-4)


def test_checkpoint_of_an_earlier_version_loads_and_one_with_removed_options_is_refused(tmp_path):
    """Every earlier checkpoint names score_faults ("class") and frames_dim (0), the model this
    version builds: it loads with the same outputs; one trained with an option this version lacks is refused with
    the option's name."""
    model = SQAModel(ModelConfig(input_dim=20, conv_channels=8, encoder="tcn", tcn_dilations=(1, 2))).eval()
    save_model(str(tmp_path / "m.pt"), model, {"mean": np.zeros(20, np.float32), "std": np.ones(20, np.float32)})
    blob = torch.load(str(tmp_path / "m.pt"), weights_only=True)
    blob["model_config"].update(score_faults="class", frames_dim=0)
    torch.save(blob, str(tmp_path / "old.pt"))
    loaded = load_model(str(tmp_path / "old.pt"))[0]
    x = torch.randn(1, 50, 20)
    assert torch.equal(loaded(x, torch.tensor([50]))["score"], model(x, torch.tensor([50]))["score"])
    for key, value in (("score_faults", "union"), ("global_context", "mean"), ("frames_dim", 48)):
        bad = dict(blob, model_config=dict(blob["model_config"], **{key: value}))
        torch.save(bad, str(tmp_path / "bad.pt"))
        with pytest.raises(ModelFileError, match=key):
            load_model(str(tmp_path / "bad.pt"))


def test_fit_length_crops_and_pads():
    x = torch.arange(6.0).view(1, 3, 2)
    assert fit_length(x, 2).shape == (1, 2, 2)
    y = fit_length(x, 5)
    assert y.shape == (1, 5, 2) and torch.equal(y[0, 4], x[0, 2])


def test_save_load_roundtrip(tmp_path):
    model = SQAModel(ModelConfig(input_dim=20, conv_channels=8, rnn_hidden=4, rnn_layers=1)).eval()
    stats = {"mean": np.zeros(20, np.float32), "std": np.ones(20, np.float32)}
    save_model(str(tmp_path / "model.pt"), model, stats, {"note": "x"})
    loaded, mean, std, extra = load_model(str(tmp_path / "model.pt"))
    x = torch.randn(1, 30, 20)
    assert torch.allclose(model(x, torch.tensor([30]))["score"], loaded(x, torch.tensor([30]))["score"])
    assert extra["note"] == "x" and mean.shape == (20,)


def test_retired_feature_columns_are_refused_and_old_configs_that_had_them_off_load():
    from pyutils.sqa.features import extract

    x = (0.1 * np.random.default_rng(0).standard_normal(8000)).astype(np.float32)
    plain = extract(x, {"n_mels": 40})
    assert np.array_equal(extract(x, {"n_mels": 40, "vad": False}), plain)   # feats_config.json of older dumps
    for key in ("vad", "cues"):
        with pytest.raises(ValueError, match=key):
            extract(x, {"n_mels": 40, key: True})


@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 4)])
def test_channels_last_block_is_conv1d_layernorm_gelu(stride, dilation):
    from torch import nn

    from pyutils.sqa.model import conv_ln_gelu, to_channels_last

    torch.manual_seed(0)
    conv = nn.Conv1d(12, 8, 5, stride=stride, padding=2 * dilation, dilation=dilation)
    norm = nn.LayerNorm(8)
    x = torch.randn(3, 12, 41)
    ref = torch.nn.functional.gelu(norm(conv(x).transpose(1, 2)).transpose(1, 2))
    got = conv_ln_gelu(to_channels_last(x), conv, norm).squeeze(2)
    assert got.shape == ref.shape
    assert torch.allclose(got, ref, atol=1e-5)
