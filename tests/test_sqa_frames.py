"""Whisper encoder frames as input of the SQA frame encoder (pyutils.sqa.embed ``frames_dim``)."""

import json

import numpy as np
import pytest
import torch

from pyutils.sqa.common import FAULTS
from pyutils.sqa.features import fbank
from pyutils.sqa.model import ModelConfig, SQAModel, frames_to_grid, load_model, save_model

TINY_DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=16, n_audio_head=2, n_audio_layer=2,
                 n_vocab=51865, n_text_ctx=64, n_text_state=16, n_text_head=2, n_text_layer=1)


def _model(frames_dim=6):
    torch.manual_seed(0)
    return SQAModel(ModelConfig(input_dim=20, conv_channels=8, rnn_hidden=8, encoder="tcn",
                                tcn_dilations=(1, 2), frames_dim=frames_dim)).eval()


def test_frames_to_grid_matches_the_models_output_length():
    f = np.arange(12, dtype=np.float32).reshape(6, 2)
    assert frames_to_grid(f, 11).shape == (6, 2)                # ceil(11 / 2) = 6: as is
    g = frames_to_grid(f, 14)                                    # 7 frames: last one repeated
    assert g.shape == (7, 2) and np.array_equal(g[6], f[5])
    assert np.array_equal(frames_to_grid(f, 9), f[:5])           # cropped
    with pytest.raises(ValueError):
        frames_to_grid(np.zeros((0, 2)), 4)


def test_frames_change_the_output_and_padding_does_not():
    model = _model()
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal((t, 20)).astype(np.float32) for t in (41, 30)]
    frames = [rng.standard_normal(((t + 1) // 2 - 1, 6)).astype(np.float32) for t in (41, 30)]  # one short
    grid = [torch.from_numpy(frames_to_grid(fr, f.shape[0])) for fr, f in zip(frames, feats)]
    x = torch.zeros(2, 41, 20)
    fr = torch.zeros(2, 21, 6)
    for i in range(2):
        x[i, : feats[i].shape[0]] = torch.from_numpy(feats[i])
        fr[i, : grid[i].shape[0]] = grid[i]
    lengths = torch.tensor([41, 30])
    out = model(x, lengths, frames=fr)
    single = model(x[1:2, :30], lengths[1:2], frames=grid[1][None])
    n = int(out["lengths"][1])
    assert torch.allclose(single["frame_logits"][0, :n], out["frame_logits"][1, :n], atol=1e-4)
    # the frames are read: other frames, other outputs; frames_mask 0 ignores them
    other = model(x, lengths, frames=fr + 3.0)
    assert not torch.allclose(other["frame_logits"], out["frame_logits"], atol=1e-3)
    off_a = model(x, lengths, frames=fr, frames_mask=torch.zeros(2))
    off_b = model(x, lengths, frames=fr + 3.0, frames_mask=torch.zeros(2))
    assert torch.allclose(off_a["frame_logits"], off_b["frame_logits"])
    with pytest.raises(ValueError, match="needs Whisper frames of 6 dims"):
        model(x, lengths)


def test_frame_statistics_are_saved_with_the_weights(tmp_path):
    model = _model()
    model.frames_mean, model.frames_std = torch.arange(6.0), torch.full((6,), 2.0)
    stats = {"mean": np.zeros(20, np.float32), "std": np.ones(20, np.float32)}
    save_model(str(tmp_path / "model.pt"), model, stats)
    loaded, _, _, _ = load_model(str(tmp_path / "model.pt"))
    assert torch.equal(loaded.frames_mean, torch.arange(6.0)) and loaded.cfg.frames_dim == 6
    x, fr = torch.randn(1, 30, 20), torch.randn(1, 15, 6)
    assert torch.allclose(model(x, torch.tensor([30]), frames=fr)["score"],
                          loaded(x, torch.tensor([30]), frames=fr)["score"])


def test_whisper_frames_are_on_the_20ms_grid(monkeypatch):
    """A tiny random Whisper (no weights needed): one frame per 20 ms, the pooled vector unchanged."""
    pytest.importorskip("whisper")
    import whisper.model as wm

    import pyutils.whisper.espnet_models as em
    from pyutils.sqa.embed import UttEmbedder

    monkeypatch.setattr(em, "build_whisper", lambda name, dims: wm.Whisper(wm.ModelDimensions(**TINY_DIMS)))
    torch.manual_seed(0)
    with_frames = UttEmbedder({"whisper": "tiny-test", "whisper_layer": 2, "p808": False, "frames_dim": 5})
    torch.manual_seed(0)
    without = UttEmbedder({"whisper": "tiny-test", "whisper_layer": 2, "p808": False})
    x = (np.random.default_rng(1).standard_normal(16000 * 13 // 10) * 0.1).astype(np.float32)  # 1.3 s
    vec, frames = with_frames.encode(x)
    assert frames.shape[1] == 5 and with_frames.frames_dim == 5
    n_model = (fbank(x, 20).shape[0] + 1) // 2                  # the SQA model's 20 ms frames
    assert n_model - 1 <= frames.shape[0] <= n_model
    assert np.allclose(vec, without(x), atol=1e-5)              # same weights: same pooled vector
    v2, f2 = with_frames.encode(x)
    assert np.array_equal(frames, f2)                           # the projection is fixed
    with pytest.raises(ValueError, match="needs the Whisper encoder"):
        UttEmbedder({"whisper": None, "p808": False, "frames_dim": 4})


def test_several_whisper_blocks_concatenate_their_pooled_states(monkeypatch):
    """``whisper_layer: [2, 1]`` = block 2's pooled vector, then block 1's, from one pass."""
    pytest.importorskip("whisper")
    import whisper.model as wm

    import pyutils.whisper.espnet_models as em
    from pyutils.sqa.embed import UttEmbedder, whisper_layers

    monkeypatch.setattr(em, "build_whisper", lambda name, dims: wm.Whisper(wm.ModelDimensions(**TINY_DIMS)))
    x = (np.random.default_rng(2).standard_normal(16000) * 0.1).astype(np.float32)
    vecs = {}
    for layer in (1, 2, [2, 1]):
        torch.manual_seed(0)                                     # the same random weights each time
        e = UttEmbedder({"whisper": "tiny-test", "whisper_layer": layer, "p808": False})
        vecs[str(layer)] = e(x)
        assert e.dim == vecs[str(layer)].shape[0]
    assert vecs["[2, 1]"].shape == (2 * 2 * 16,)
    assert np.allclose(vecs["[2, 1]"], np.concatenate([vecs["2"], vecs["1"]]), atol=1e-6)
    assert not np.allclose(vecs["1"], vecs["2"], atol=1e-3)
    assert whisper_layers("3,1") == (3, 1) and whisper_layers(2) == (2,) and whisper_layers([4]) == (4,)
    for bad in ("3,3", "x", [], "3,,1"):
        with pytest.raises(ValueError):
            whisper_layers(bad)
    with pytest.raises(ValueError, match="blocks 1..2"):
        UttEmbedder({"whisper": "tiny-test", "whisper_layer": [1, 3], "p808": False})


def test_training_and_inference_with_frames(tmp_path):
    kaldiio = pytest.importorskip("kaldiio")
    from pyutils.sqa import infer
    from pyutils.sqa.train import main

    rng = np.random.default_rng(0)
    d = tmp_path / "dump"
    d.mkdir()
    refs, durs = [], []
    with kaldiio.WriteHelper(f"ark,scp:{d}/feats.ark,{d}/feats.scp") as w, \
            kaldiio.WriteHelper(f"ark,scp:{d}/frames.ark,{d}/frames.scp") as wf:
        for i in range(8):
            w(f"u{i}", rng.standard_normal((101, 16)).astype(np.float32))
            fr = rng.standard_normal((50, 4)).astype(np.float32) + 5.0
            faults = {f_: [] for f_ in FAULTS}
            if i % 2:                                           # the fault is only in the frames
                fr[10:30, :] += 3.0
                faults["noise"] = [[0.2, 0.6]]
            wf(f"u{i}", fr)
            refs.append({"utt_id": f"u{i}", "score": 3.0, "faults": faults})
            durs.append(f"u{i} 1.0")
    (d / "utt2dur").write_text("\n".join(durs) + "\n")
    (d / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    (d / "embed_config.json").write_text(json.dumps({"whisper": "base", "frames_dim": 4, "p808": False}))
    np.savez(tmp_path / "stats.npz", mean=np.zeros(16, np.float32), std=np.ones(16, np.float32))
    (tmp_path / "cfg.yaml").write_text("model: {conv_channels: 8, rnn_hidden: 8, encoder: tcn, "
                                       "tcn_dilations: [1, 2]}\nmax_updates: 120\nbatch_size: 4\n"
                                       "lr: 0.01\nnum_workers: 0\nframe_embed: true\n")
    out = tmp_path / "exp"
    args = ["--config", str(tmp_path / "cfg.yaml"), "--train-dir", str(d), "--train-ref", str(d / "ref.jsonl"),
            "--dev-dir", str(d), "--dev-ref", str(d / "ref.jsonl"), "--stats", str(tmp_path / "stats.npz"),
            "--outdir", str(out)]
    assert main(args) == 0
    model, _, _, extra = load_model(str(out / "model.pt"))
    assert model.cfg.frames_dim == 4 and extra["embed"]["frames_dim"] == 4
    assert abs(float(model.frames_mean.mean()) - 5.6) < 0.15   # training-set statistics, saved
    assert infer.main(["--model-dir", str(out), "--data-dir", str(d), "--outdir", str(tmp_path / "inf")]) == 0
    o = np.load(tmp_path / "inf" / "outputs.npz")
    probs = o["frame_probs"][o["offsets"][1]:o["offsets"][2], 0]  # u1: noise in frames 10-30
    assert probs[12:28].mean() > probs[35:].mean() + 0.2
    (d / "frames.scp").unlink()
    assert infer.main(["--model-dir", str(out), "--data-dir", str(d), "--outdir", str(tmp_path / "inf2")]) == 2


def test_embed_cli_embeds_several_sets_with_one_model_load(tmp_path, monkeypatch):
    """``embed dump`` with two --wav-scp/--outdir pairs writes each set's own embed.JOB.scp;
    --missing-ok skips a pair whose piece does not exist; unpaired options are an error."""
    pytest.importorskip("speechmos")
    sf = pytest.importorskip("soundfile")
    kaldiio = pytest.importorskip("kaldiio")
    from pyutils.sqa import embed

    built = []
    real = embed.UttEmbedder

    class Counting(real):
        def __init__(self, cfg=None):
            built.append(1)
            super().__init__(cfg)

    monkeypatch.setattr(embed, "UttEmbedder", Counting)
    rng = np.random.default_rng(0)
    args = []
    for name, n in (("a", 2), ("b", 1)):
        d = tmp_path / name
        d.mkdir()
        lines = []
        for i in range(n):
            wav = d / f"{name}{i}.wav"
            sf.write(str(wav), (0.1 * rng.standard_normal(8000)).astype(np.float32), 16000)
            lines.append(f"{name}{i} {wav}\n")
        (d / "wav.1.scp").write_text("".join(lines))
        args += ["--wav-scp", str(d / "wav.1.scp"), "--outdir", str(d)]
    missing = ["--wav-scp", str(tmp_path / "c" / "wav.1.scp"), "--outdir", str(tmp_path / "c")]
    common = ["--whisper", "none", "--p808", "true", "--job", "1"]
    with pytest.raises(SystemExit):
        embed.main(["dump"] + args + missing + common)             # missing piece, no --missing-ok
    with pytest.raises(SystemExit):
        embed.main(["dump"] + args + ["--wav-scp", "x.scp"] + common)   # unpaired
    assert embed.main(["dump"] + args + missing + common + ["--missing-ok"]) == 0
    assert len(built) == 1
    for name, n in (("a", 2), ("b", 1)):
        vecs = dict(kaldiio.load_scp_sequential(str(tmp_path / name / "embed.1.scp")))
        assert sorted(vecs) == [f"{name}{i}" for i in range(n)] and vecs[f"{name}0"].shape == (1, 1)
    assert not (tmp_path / "c").exists()
