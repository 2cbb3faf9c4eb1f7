"""SQA model: output shapes on the 20 ms grid, masking, save/load."""

import numpy as np
import pytest
import torch

from pyutils.sqa.common import FAULTS, num_grid_frames
from pyutils.sqa.features import fbank
from pyutils.sqa.model import ModelConfig, SQAModel, fit_length, load_model, save_model, soft_event_count
from pyutils.sqa.model import count_events


@pytest.mark.parametrize("encoder,pooling,first,events", [("gru", "att", False, False),
                                                          ("tcn", "att", False, False),
                                                          ("tcn", "rich", False, False),
                                                          ("tcn", "rich", True, False),
                                                          ("tcn", "rich", False, True)])
def test_forward_shapes_at_20ms(encoder, pooling, first, events):
    torch.manual_seed(0)
    model = SQAModel(ModelConfig(input_dim=40, conv_channels=16, rnn_hidden=8, rnn_layers=1,
                                 encoder=encoder, tcn_dilations=(1, 2), score_pooling=pooling,
                                 subsample_first=first, score_events=events)).eval()
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


def test_subsample_first_moves_the_stride_and_old_checkpoints_keep_their_layout(tmp_path):
    first = SQAModel(ModelConfig(input_dim=20, conv_channels=8, encoder="tcn", subsample_first=True))
    assert [b.conv.stride[0] for b in first.frontend] == [2, 1, 1, 1]
    assert first.frontend[1].residual and not first.frontend[0].residual
    old = SQAModel(ModelConfig(input_dim=20, conv_channels=8, encoder="tcn")).eval()
    assert [b.conv.stride[0] for b in old.frontend] == [1, 2, 1, 1]
    # a checkpoint written before the option existed has no such key: it loads as the old layout
    save_model(str(tmp_path / "old.pt"), old, {"mean": np.zeros(20, np.float32), "std": np.ones(20, np.float32)})
    blob = torch.load(str(tmp_path / "old.pt"), weights_only=True)
    del blob["model_config"]["subsample_first"]
    torch.save(blob, str(tmp_path / "old.pt"))
    loaded = load_model(str(tmp_path / "old.pt"))[0]
    assert [b.conv.stride[0] for b in loaded.frontend] == [1, 2, 1, 1]


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


def test_vad_feature_column():
    pytest.importorskip("silero_vad")
    from pyutils.sqa.features import extract

    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    x = np.concatenate([np.zeros(8000), 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + 0.3 * rng.standard_normal(16000))])
    f = extract(x.astype(np.float32), {"n_mels": 40, "vad": True})
    assert f.shape == (1 + len(x) // 160, 41)
    assert 0.0 <= f[:, -1].min() and f[:, -1].max() <= 1.0
    assert np.array_equal(f[:, :40], fbank(x.astype(np.float32), 40))


def test_score_fault_tracks_union_is_or_of_noise_and_distortion():
    from pyutils.sqa.model import score_fault_tracks

    p = torch.tensor([[[0.5, 0.5, 0.2], [0.0, 0.9, 0.0], [1.0, 0.0, 1.0]]])   # noise, distortion, pause
    assert torch.equal(score_fault_tracks(p, "class"), p)
    u = score_fault_tracks(p, "union")
    assert torch.allclose(u, torch.tensor([[[0.75, 0.2], [0.9, 0.0], [1.0, 1.0]]]))
    with pytest.raises(ValueError):
        score_fault_tracks(p, "max")


@pytest.mark.parametrize("pooling", ["att", "rich"])
def test_union_score_ignores_how_a_fault_is_split_between_noise_and_distortion(pooling):
    """Swapping the frame head's noise and distortion outputs leaves the union model's score
    unchanged (it reads only their OR) and changes the per-class model's."""
    x = torch.randn(2, 60, 40)
    lengths = torch.tensor([60, 41])
    scores = {}
    for mode in ("union", "class"):
        torch.manual_seed(0)
        model = SQAModel(ModelConfig(input_dim=40, conv_channels=16, rnn_hidden=8, encoder="tcn",
                                     tcn_dilations=(1, 2), score_pooling=pooling, score_faults=mode)).eval()
        with torch.no_grad():
            a = model(x, lengths)["score"]
            last = model.frame_head[-1]
            last.weight[[0, 1]] = last.weight[[1, 0]].clone()
            last.bias[[0, 1]] = last.bias[[1, 0]].clone()
            b = model(x, lengths)["score"]
        scores[mode] = (a, b)
    assert torch.allclose(*scores["union"], atol=1e-6)
    assert not torch.allclose(*scores["class"], atol=1e-4)


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


def test_soft_event_count_counts_runs_and_ignores_padding():
    p = torch.zeros(2, 120, 3)
    p[:, 10:20, 0] = 1
    p[:, 40:60, 0] = 1
    p[:, 80:100, 0] = 1           # three runs of noise
    p[:, 0:50, 1] = 1             # one run from the first frame
    p[:, 95:100, 2] = 1           # one run up to the last valid frame of row 1
    mask = torch.ones(2, 120, dtype=torch.bool)
    mask[1, 100:] = False
    p[1, 100:] = 0.7              # padding holds garbage: it must not count
    assert torch.allclose(soft_event_count(p, mask), torch.tensor([[3.0, 1.0, 1.0]] * 2), atol=1e-5)
    # jitter inside one event adds little; a second run adds one
    q = torch.zeros(1, 100, 1)
    q[0, 20:60, 0] = 0.9 + 0.1 * (torch.arange(40) % 2)
    one = soft_event_count(q, torch.ones(1, 100, dtype=torch.bool)).item()
    raw = soft_event_count(q, torch.ones(1, 100, dtype=torch.bool), smooth=1).item()
    assert abs(raw - 2.9) < 1e-5 and 0.9 <= one < 1.5     # 20 jitter rises of 0.1 unsmoothed
    q[0, 75:90, 0] = 1
    assert abs(soft_event_count(q, torch.ones(1, 100, dtype=torch.bool)).item() - one - 1) < 1e-5
    # gradients reach the probabilities
    r = torch.rand(1, 50, 3, requires_grad=True)
    soft_event_count(r, torch.ones(1, 50, dtype=torch.bool)).sum().backward()
    assert r.grad is not None and r.grad.abs().sum() > 0


def test_count_events_sums_a_density_over_valid_frames_only():
    logits = torch.full((2, 50, 3), -30.0)
    logits[:, 10, 0] = 30.0                # softplus(30) ~ 30: a spike worth 30 events
    logits[:, 20:30, 1] = 0.0              # ten frames of log(2)
    mask = torch.ones(2, 50, dtype=torch.bool)
    mask[1, 25:] = False
    logits[1, 25:] = 5.0                   # padding holds garbage: it must not count
    c = count_events(logits, mask)
    assert torch.allclose(c[:, 0], torch.tensor([30.0, 30.0]), atol=1e-3)
    assert torch.allclose(c[:, 1], torch.tensor([10, 5]) * torch.log(torch.tensor(2.0)), atol=1e-4)
    assert (c[:, 2] < 1e-9).all()


def test_event_counter_head_feeds_the_score_and_ignores_padding():
    torch.manual_seed(0)
    cfg = dict(input_dim=40, conv_channels=16, rnn_hidden=8, encoder="tcn", tcn_dilations=(1, 2),
               score_pooling="rich")
    plain = SQAModel(ModelConfig(**cfg))
    model = SQAModel(ModelConfig(**cfg, event_counter=True)).eval()
    assert "counts" not in plain.eval()(torch.zeros(1, 60, 40), torch.tensor([60]))
    assert model.score_head[0].in_features == plain.score_head[0].in_features + 3
    x = torch.randn(2, 120, 40)
    lengths = torch.tensor([120, 70])
    out = model(x, lengths)
    assert out["counts"].shape == (2, 3) and (out["counts"] >= 0).all()
    assert (out["counts"][0] < 1.0).all()      # starts near zero events (COUNT_BIAS)
    single = model(x[1:2, :70], lengths[1:2])
    assert torch.allclose(single["counts"], out["counts"][1:2], atol=1e-5)
    assert torch.allclose(single["score"], out["score"][1:2], atol=1e-5)
    # the count reaches the score: its gradient flows back into the density head
    model.zero_grad()
    out = model(x, lengths)
    out["score"].sum().backward()
    assert model.count_head.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("context", ["mean", "attention"])
def test_global_context_sees_the_whole_recording_and_ignores_padding(context):
    cfg = dict(input_dim=40, conv_channels=16, rnn_hidden=8, encoder="tcn", tcn_dilations=(1,),
               score_pooling="rich")
    torch.manual_seed(0)
    plain = SQAModel(ModelConfig(**cfg))
    torch.manual_seed(0)
    model = SQAModel(ModelConfig(**cfg, global_context=context)).eval()
    # the context modules are created last: every other weight starts as without them
    ps = plain.state_dict()
    assert all(torch.equal(v, ps[k]) for k, v in model.state_dict().items() if k in ps)
    x = torch.randn(2, 200, 40)
    lengths = torch.tensor([200, 120])
    out = model(x, lengths)
    single = model(x[1:2, :120], lengths[1:2])
    n = int(out["lengths"][1])
    assert torch.allclose(single["frame_logits"][0, :n], out["frame_logits"][1, :n], atol=1e-4)
    assert torch.allclose(single["score"], out["score"][1:2], atol=1e-5)
    # a change at the far end of the recording reaches the first frame's decision, which
    # the small TCN alone (a few frames of context) cannot see
    y = x[:1].clone()
    y[0, 150:] += 3.0
    far_plain = (plain.eval()(y, lengths[:1])["frame_logits"][0, 0]
                 - plain(x[:1], lengths[:1])["frame_logits"][0, 0]).abs().max()
    far = (model(y, lengths[:1])["frame_logits"][0, 0] - model(x[:1], lengths[:1])["frame_logits"][0, 0]).abs().max()
    assert far_plain < 1e-6 and far > 1e-4


def test_global_context_unknown_value_is_rejected():
    with pytest.raises(ValueError, match="global_context"):
        SQAModel(ModelConfig(input_dim=20, conv_channels=8, encoder="tcn", global_context="lstm"))


def test_context_for_one_fault_type_reaches_only_its_frame_logit():
    cfg = dict(input_dim=40, conv_channels=16, rnn_hidden=8, encoder="tcn", tcn_dilations=(1,),
               score_pooling="rich", global_context="mean")
    torch.manual_seed(0)
    model = SQAModel(ModelConfig(**cfg, context_faults="distortion")).eval()
    x = torch.randn(1, 200, 40)
    y = x.clone()
    y[0, 150:] += 3.0
    lengths = torch.tensor([200])
    a, b = model(x, lengths)["frame_logits"][0, 0], model(y, lengths)["frame_logits"][0, 0]
    d = FAULTS.index("distortion")
    assert (a[d] - b[d]).abs() > 1e-4                       # the distortion frame sees the far end
    assert torch.allclose(torch.cat([a[:d], a[d + 1:]]), torch.cat([b[:d], b[d + 1:]]), atol=1e-6)
    # the same weights with the context for every type: all three logits move
    full = SQAModel(ModelConfig(**cfg)).eval()
    full.load_state_dict(model.state_dict())
    fa, fb = full(x, lengths)["frame_logits"][0, 0], full(y, lengths)["frame_logits"][0, 0]
    assert ((fa - fb).abs() > 1e-4).all()
    with pytest.raises(ValueError, match="context_faults"):
        SQAModel(ModelConfig(**cfg, context_faults="hum"))
