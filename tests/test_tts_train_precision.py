"""pyutils.tts.train: the bfloat16-autocast wrapper around ESPnet's TTS training."""

import sys
import types

import pytest
import torch

from pyutils.tts import train


def test_resolve_explicit_and_auto(monkeypatch):
    assert train.resolve("float32", 0) == "float32"
    assert train.resolve("bfloat16", 1) == "bfloat16"
    monkeypatch.setattr(train, "native_bf16", lambda: True)
    assert train.resolve("auto", 0) == "bfloat16"
    assert train.resolve("auto", 1) == "float32"     # a GPU run uses ESPnet's own --use_amp
    monkeypatch.setattr(train, "native_bf16", lambda: False)
    assert train.resolve("auto", 0) == "float32"     # emulated bfloat16 would be slower
    with pytest.raises(ValueError, match="fp8"):
        train.resolve("fp8", 0)


def test_autocast_forward_keeps_float32_state_and_gradients():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    keys = list(model.state_dict())
    x = torch.randn(3, 8)
    ref = model(x)
    assert ref.dtype == torch.float32
    train.autocast_forward(model)
    y = model(x)
    assert y.dtype == torch.bfloat16                  # the matrix products ran in bfloat16
    assert torch.allclose(y.float(), ref, atol=0.1)   # ... and still compute the same function
    y.float().pow(2).mean().backward()
    assert list(model.state_dict()) == keys           # checkpoints load into a plain model
    assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32
               for p in model.parameters())


def test_patch_task_wraps_built_models(monkeypatch):
    mod = types.ModuleType("fake_task_module")

    class FakeTask:
        @classmethod
        def build_model(cls, args):
            return torch.nn.Linear(4, 2)

    mod.FakeTask = FakeTask
    monkeypatch.setitem(sys.modules, "fake_task_module", mod)
    train.patch_task("fake_task_module.FakeTask")
    model = FakeTask.build_model(None)
    assert model(torch.randn(2, 4)).dtype == torch.bfloat16


def test_split_args_and_ngpu():
    ours, rest = train.split_args(["--precision", "float32", "--task", "tts", "--",
                                   "--ngpu", "0", "--config", "c.yaml"])
    assert (ours.precision, ours.task) == ("float32", "tts")
    assert rest == ["--ngpu", "0", "--config", "c.yaml"]
    assert train._ngpu(rest) == 0
    assert train._ngpu(["--ngpu=2"]) == 2
    assert train._ngpu([]) == 0
    with pytest.raises(SystemExit):
        train.split_args(["--precision", "fp8", "--"])
