"""DistillMOS: a second MOS proxy beside DNSMOS (``distillmos==0.9.1``, MIT).

Model (Stahl & Gamper, "Distillation and pruning for scalable self-supervised
representation-based speech quality assessment", ICASSP 2025): the input
(16 kHz) is cut into 7.68 s crops (122,880 samples; shorter input is
zero-padded, longer input gives ``ceil((T - 122880) / 16000) + 1`` evenly
spaced crops), each crop is peak-normalised, turned into a power-law
compressed complex STFT (20 ms Hann window, 10 ms hop; ``|X|^0.3 * X/|X|``),
fed to a 6-layer CNN and a 7-layer transformer with attention pooling whose
output ``q`` in 0..1 maps to ``MOS = 1 + 4 q``; the crops' MOS are averaged.

Only ``torch.stft`` is used on the signal path: the package's own file
loading (``torchaudio.load``/``Resample``) is not used (our venv's
torchaudio has no native libraries); audio is read with soundfile and
resampled with soxr by the callers. The weights file is checked against its
pinned SHA-256 (:mod:`pyutils.judges.models`) and loaded with
``torch.load(weights_only=True)``.

Python::

    from pyutils.judges.mos import DistillMOS
    DistillMOS().score(wav_16k)          # -> float in 1..5
"""

from __future__ import annotations

import importlib
import math
import sys
import types

import numpy as np

from pyutils.judges.models import INSTALL_HINT, MODELS, JudgeUnavailable, model_path

SR = 16000


def _import_model_class():
    """``distillmos.sqa.ConvTransformerSQAModel``; a torchaudio that cannot load is
    replaced by an empty placeholder during the import (the model never calls it)."""
    try:
        return importlib.import_module("distillmos.sqa").ConvTransformerSQAModel
    except ImportError as exc:
        missing = getattr(exc, "name", "") or ""
        if missing.split(".")[0] in ("distillmos", "xls_r_sqa"):
            raise JudgeUnavailable(f"judge distillmos: Python package {missing.split('.')[0]} is not "
                                   f"installed ({MODELS['distillmos'].package} needs xls-r-sqa==0.1.0); "
                                   f"run `{INSTALL_HINT}`") from None
        if "torchaudio" not in str(exc):
            raise
    except OSError as exc:  # torchaudio native libraries failing to load
        if "torchaudio" not in str(exc):
            raise
    had, saved = "torchaudio" in sys.modules, sys.modules.get("torchaudio")
    sys.modules["torchaudio"] = types.ModuleType("torchaudio")
    try:
        for name in [m for m in sys.modules if m.startswith("distillmos")]:
            del sys.modules[name]
        return importlib.import_module("distillmos.sqa").ConvTransformerSQAModel
    finally:
        if had:
            sys.modules["torchaudio"] = saved
        else:
            del sys.modules["torchaudio"]


def mos100(mos: float) -> float:
    """MOS on 0..100 from a 1..5 MOS: ``100 * (MOS - 1) / 4``, clipped (as for DNSMOS OVRL)."""
    if mos is None or not math.isfinite(mos):
        raise ValueError(f"MOS must be a finite number, got {mos!r}")
    return float(min(max((float(mos) - 1.0) / 4.0 * 100.0, 0.0), 100.0))


class DistillMOS:
    """DistillMOS v7 on CPU; ``score(x)`` takes mono float audio at 16 kHz."""

    name = "DistillMOS"

    def __init__(self) -> None:
        import torch

        path = model_path("distillmos")
        cls = _import_model_class()
        self._torch = torch
        self._model = cls(load_weights=False)
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "model" not in state:
            raise JudgeUnavailable(f"judge distillmos: {path} holds no 'model' state dict; "
                                   f"reinstall with `{INSTALL_HINT}`")
        self._model.load_state_dict(state["model"])
        self._model.eval()

    def score(self, wav: np.ndarray) -> float:
        """Predicted MOS (1..5) of one mono 16 kHz clip; silence/empty input gives 1..5 too."""
        x = np.asarray(wav, dtype=np.float32).reshape(-1)
        if x.size == 0:
            x = np.zeros(SR // 10, dtype=np.float32)
        if not np.all(np.isfinite(x)):
            raise ValueError("audio holds NaN or infinite samples")
        with self._torch.inference_mode():
            y = self._model(self._torch.from_numpy(x)[None, :])
        return float(y.reshape(-1)[0])
