"""ESPnet TTS training with a bfloat16 forward pass on CPUs that compute bfloat16 natively.

ESPnet's trainer only autocasts on CUDA (``--use_amp``). On a CPU with AMX or AVX512-BF16
units an update of the small FastSpeech alone runs 1.45x (r=4) to 1.75x (r=2) faster in
bfloat16 (``git show dd1cc9d:benchmarks/tts_update_time.py``, rows ``world_r*_*``); inside the recipe, with
ESPnet's data loading, the saving measured was smaller and not established over a whole
training (egs/nvv_tts/README.md), so the recipe's default stays float32. This entry point runs the unmodified
``espnet2.bin.<task>_train`` with the model's ``forward`` wrapped in
``torch.autocast("cpu", dtype=torch.bfloat16)``: parameters, optimiser state and
checkpoints stay float32 (mixed precision, as ESPnet's ``--use_amp`` does on a GPU), and
inference is unchanged.

    python -m pyutils.tts.train --precision auto|float32|bfloat16 --task tts -- <tts_train args>

``auto`` picks bfloat16 when training on the CPU (``--ngpu 0``) and the CPU has native
bfloat16 units, float32 otherwise (emulated bfloat16 would be slower). The choice is
logged as ``pyutils.tts.train: precision ...``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from typing import List, Tuple

PRECISIONS = ("auto", "float32", "bfloat16")
TASKS = {"tts": "espnet2.tasks.tts.TTSTask", "gan_tts": "espnet2.tasks.gan_tts.GANTTSTask"}


def native_bf16() -> bool:
    """True when this CPU computes bfloat16 in hardware (AMX tiles or AVX512-BF16)."""
    import torch

    for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        fn = getattr(torch.cpu, probe, None)
        try:
            if fn is not None and fn():
                return True
        except RuntimeError:
            pass
    return False


def resolve(precision: str, ngpu: int) -> str:
    """The precision to train in: ``auto`` -> bfloat16 on a CPU with native units, else float32."""
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision
    return "bfloat16" if ngpu == 0 and native_bf16() else "float32"


def autocast_forward(model):
    """Run ``model.forward`` under CPU bfloat16 autocast (the module's state dict is untouched)."""
    import torch

    forward = model.forward

    @functools.wraps(forward)
    def bf16_forward(*args, **kwargs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return forward(*args, **kwargs)

    model.forward = bf16_forward
    return model


def patch_task(task_path: str) -> None:
    """Make ``<Task>.build_model`` return models with an autocast forward."""
    module, name = task_path.rsplit(".", 1)
    task = getattr(importlib.import_module(module), name)
    build = task.build_model.__func__

    def build_model(cls, args):
        return autocast_forward(build(cls, args))

    task.build_model = classmethod(build_model)


def _ngpu(espnet_args: List[str]) -> int:
    for i, a in enumerate(espnet_args):
        if a == "--ngpu" and i + 1 < len(espnet_args):
            return int(espnet_args[i + 1])
        if a.startswith("--ngpu="):
            return int(a.split("=", 1)[1])
    return 0


def split_args(argv: List[str]) -> Tuple[argparse.Namespace, List[str]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--precision", default="auto", choices=PRECISIONS)
    p.add_argument("--task", default="tts", choices=sorted(TASKS))
    if "--" in argv:
        k = argv.index("--")
        return p.parse_args(argv[:k]), argv[k + 1:]
    return p.parse_args(argv), []


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, espnet_args = split_args(argv)
    precision = resolve(ours.precision, _ngpu(espnet_args))
    if precision == "bfloat16":
        patch_task(TASKS[ours.task])
    bin_module = importlib.import_module(f"espnet2.bin.{ours.task}_train")
    sys.argv = [f"{ours.task}_train.py"] + espnet_args
    print(f"pyutils.tts.train: precision {precision} (asked: {ours.precision}, "
          f"native bfloat16: {native_bf16()})", file=sys.stderr, flush=True)
    bin_module.main(espnet_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
