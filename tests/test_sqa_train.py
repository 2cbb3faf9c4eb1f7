"""A two-epoch training run on a handful of synthetic feature files (seconds)."""

import json

import numpy as np
import pytest

from pyutils.sqa.common import FAULTS


def test_train_loop_learns_and_saves(tmp_path):
    kaldiio = pytest.importorskip("kaldiio")
    from pyutils.sqa.train import main

    rng = np.random.default_rng(0)
    d = tmp_path / "dump"
    d.mkdir()
    refs, durs = [], []
    with kaldiio.WriteHelper(f"ark,scp:{d}/feats.ark,{d}/feats.scp") as w:
        for i in range(8):
            f = rng.standard_normal((101, 16)).astype(np.float32)
            faults = {f_: [] for f_ in FAULTS}
            if i % 2:
                f[40:80] += 4.0                  # a loud "noise" band, frames 20-40 at 20 ms
                faults["noise"] = [[0.4, 0.8]]
            w(f"u{i}", f)
            refs.append({"utt_id": f"u{i}", "score": 2.0 if i % 2 else 4.0, "faults": faults})
            durs.append(f"u{i} 1.0")
    (d / "utt2dur").write_text("\n".join(durs) + "\n")
    (d / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    np.savez(tmp_path / "stats.npz", mean=np.zeros(16, np.float32), std=np.ones(16, np.float32))
    (tmp_path / "cfg.yaml").write_text("model: {conv_channels: 8, rnn_hidden: 8, rnn_layers: 1}\n"
                                       "epochs: 2\nbatch_size: 4\nnum_workers: 0\n")
    out = tmp_path / "exp"
    args = ["--config", str(tmp_path / "cfg.yaml"), "--train-dir", str(d), "--train-ref", str(d / "ref.jsonl"),
            "--dev-dir", str(d), "--dev-ref", str(d / "ref.jsonl"), "--stats", str(tmp_path / "stats.npz"),
            "--outdir", str(out)]
    assert main(args) == 0
    log = (out / "train_log.tsv").read_text().splitlines()
    assert len(log) == 3 and (out / "model.pt").exists() and (out / "last.pt").exists()
    # resuming a finished run does no more epochs and keeps the log
    assert main(args + ["--resume"]) == 0
    assert len((out / "train_log.tsv").read_text().splitlines()) == 3
    first_model = (out / "model.pt").read_bytes()
    # a run killed after logging epoch 2 but before its checkpoint: the resumed
    # run redoes epoch 2 and the log has it once
    import torch
    ck = torch.load(out / "last.pt", weights_only=True)
    ck["epoch"], ck["step"] = 1, ck["step"] // 2
    torch.save(ck, out / "last.pt")
    assert main(args + ["--resume"]) == 0
    epochs = [l.split("\t")[0] for l in (out / "train_log.tsv").read_text().splitlines()[1:]]
    assert epochs == ["1", "2"]
    # a deleted model.pt is not "resumed" into nothing: training starts over
    (out / "model.pt").unlink()
    assert main(args + ["--resume"]) == 0
    assert (out / "model.pt").exists()
    assert len((out / "train_log.tsv").read_text().splitlines()) == 3
    assert len(first_model) > 0
    # same seed, same numbers: a fresh run, and a run killed after epoch 1 then resumed
    import shutil
    import torch
    log_a = (out / "train_log.tsv").read_text().splitlines()
    w_a = torch.load(out / "model.pt", weights_only=True)["state_dict"]
    shutil.rmtree(out)
    assert main(args) == 0
    assert [l.split("\t")[:3] for l in (out / "train_log.tsv").read_text().splitlines()] == \
        [l.split("\t")[:3] for l in log_a]
    w_b = torch.load(out / "model.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(w_a[k], w_b[k]) for k in w_a)
    shutil.rmtree(out)
    (tmp_path / "cfg1.yaml").write_text((tmp_path / "cfg.yaml").read_text())
    assert main(args) == 0
    ck = torch.load(out / "last.pt", weights_only=True)
    assert "torch_rng" in ck and ck["sched_steps"] >= ck["step"]


def test_unknown_config_key_is_an_error(tmp_path):
    from pyutils.sqa.train import load_config

    (tmp_path / "c.yaml").write_text("epochz: 3\n")
    with pytest.raises(ValueError, match="unknown keys"):
        load_config(str(tmp_path / "c.yaml"))


def test_config_base_chain_merges_model_options(tmp_path):
    from pyutils.sqa.train import DEFAULTS, load_config

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.yaml").write_text("model: {encoder: tcn, conv_channels: 96}\nlr: 0.003\nseed: 0\n")
    (tmp_path / "sub" / "b.yaml").write_text("base: ../a.yaml\nmodel: {dropout: 0.2}\nseed: 1\n")
    (tmp_path / "c.yaml").write_text("base: sub/b.yaml\nlr: 0.001\n")
    cfg = load_config(str(tmp_path / "c.yaml"))
    assert cfg["model"] == {"encoder": "tcn", "conv_channels": 96, "dropout": 0.2}
    assert (cfg["lr"], cfg["seed"], cfg["epochs"]) == (0.001, 1, DEFAULTS["epochs"])
    assert "base" not in cfg and DEFAULTS["model"] == {}   # the defaults are not mutated


def test_config_base_errors_name_the_file(tmp_path):
    from pyutils.sqa.train import load_config

    (tmp_path / "x.yaml").write_text("base: y.yaml\n")
    (tmp_path / "y.yaml").write_text("base: x.yaml\n")
    with pytest.raises(ValueError, match="loops back"):
        load_config(str(tmp_path / "x.yaml"))
    (tmp_path / "z.yaml").write_text("base: w.yaml\n")
    (tmp_path / "w.yaml").write_text("lrr: 1\n")
    with pytest.raises(ValueError, match=r"w\.yaml: unknown keys \['lrr'\]"):
        load_config(str(tmp_path / "z.yaml"))
    (tmp_path / "v.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match="v.yaml: a training config is a mapping"):
        load_config(str(tmp_path / "v.yaml"))
    (tmp_path / "t.yaml").write_text("model: {global_context: mean}\n")   # a retired model option
    with pytest.raises(ValueError, match=r"t\.yaml: unknown model options \['global_context'\]"):
        load_config(str(tmp_path / "t.yaml"))
    (tmp_path / "u.yaml").write_text("base: missing.yaml\n")
    with pytest.raises(OSError):
        load_config(str(tmp_path / "u.yaml"))


def _tiny_set(tmp_path, with_embed: bool):
    kaldiio = pytest.importorskip("kaldiio")
    rng = np.random.default_rng(0)
    d = tmp_path / "dump"
    d.mkdir()
    refs, durs = [], []
    with kaldiio.WriteHelper(f"ark,scp:{d}/feats.ark,{d}/feats.scp") as w, \
            kaldiio.WriteHelper(f"ark,scp:{d}/embed.ark,{d}/embed.scp") as we:
        for i in range(12):
            f = rng.standard_normal((101, 16)).astype(np.float32)
            w(f"u{i}", f)
            we(f"u{i}", np.array([[float(i % 3), 1.0, -1.0]], dtype=np.float32))   # score cue in dim 0
            refs.append({"utt_id": f"u{i}", "score": 2.0 + i % 3, "faults": {f_: [] for f_ in FAULTS}})
            durs.append(f"u{i} 1.0")
    (d / "utt2dur").write_text("\n".join(durs) + "\n")
    (d / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    (d / "embed_config.json").write_text(json.dumps({"whisper": None, "p808": False, "p835": False}))
    np.savez(tmp_path / "stats.npz", mean=np.zeros(16, np.float32), std=np.ones(16, np.float32))
    (tmp_path / "cfg.yaml").write_text(
        "model: {conv_channels: 8, rnn_hidden: 8, rnn_layers: 1, dropout: 0.1, embed_proj: 4}\n"
        f"max_updates: 7\nbatch_size: 4\nnum_workers: 0\nutt_embed: {str(with_embed).lower()}\n")
    return d


def _args(tmp_path, d, out):
    return ["--config", str(tmp_path / "cfg.yaml"), "--train-dir", str(d), "--train-ref", str(d / "ref.jsonl"),
            "--dev-dir", str(d), "--dev-ref", str(d / "ref.jsonl"), "--stats", str(tmp_path / "stats.npz"),
            "--outdir", str(out)]


def test_training_length_is_a_number_of_updates_and_deterministic(tmp_path):
    import torch

    from pyutils.sqa.model import load_model
    from pyutils.sqa.train import main

    d = _tiny_set(tmp_path, with_embed=True)
    weights = []
    for k in range(2):
        out = tmp_path / f"exp{k}"
        assert main(_args(tmp_path, d, out)) == 0
        ck = torch.load(out / "last.pt", weights_only=True)
        assert ck["step"] == 7                                 # 3 batches per epoch: 3 + 3 + 1
        weights.append(ck["model"])
        model, _, _, extra = load_model(str(out / "model.pt"))
        assert model.cfg.embed_dim == 3 and extra["embed"]["whisper"] is None
    for name in weights[0]:
        assert torch.equal(weights[0][name], weights[1][name]), name


def test_model_with_embeddings_needs_them(tmp_path):
    import torch

    from pyutils.sqa.model import ModelConfig, SQAModel

    m = SQAModel(ModelConfig(input_dim=16, conv_channels=8, rnn_hidden=8, rnn_layers=1, embed_dim=3))
    x = torch.zeros(2, 50, 16)
    out = m(x, torch.tensor([50, 30]), torch.zeros(2, 3))
    assert out["score"].shape == (2,)
    with pytest.raises(ValueError, match="needs utterance embeddings of 3 dims"):
        m(x, torch.tensor([50, 30]))


def _blas_threads() -> int:
    import threadpoolctl

    blas = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    return max(blas) if blas else 0


def test_data_worker_limits_blas_to_one_thread():
    """A worker's numpy BLAS runs one thread even when the parent allows more (a spinning
    second thread took the training step's core)."""
    import threadpoolctl
    import torch

    from pyutils.sqa.train import _seed_worker

    class BlasThreads(torch.utils.data.Dataset):   # reports from inside the worker
        rng = None

        def __len__(self):
            return 1

        def __getitem__(self, i):
            return _blas_threads()

    with threadpoolctl.threadpool_limits(2, user_api="blas"):   # what the parent may allow
        if _blas_threads() < 2:
            pytest.skip("numpy's BLAS here does not run two threads")
        plain = torch.utils.data.DataLoader(BlasThreads(), batch_size=None, num_workers=1)
        assert list(plain) == [2]      # a worker inherits the parent's limit...
        limited = torch.utils.data.DataLoader(BlasThreads(), batch_size=None, num_workers=1,
                                              worker_init_fn=_seed_worker)
        assert list(limited) == [1]    # ...unless the recipe's worker init lowers it
