"""Utterance embeddings that carry knowledge from outside the simulator.

The frame-level SQA model learns only from simulated faults; its quality score
then learns the simulator.  This module adds, per recording, a fixed vector
from models trained on real speech, fed to the score head
(:class:`pyutils.sqa.model.SQAModel`, ``embed_dim``):

* ``p808``:  DNSMOS P.808 MOS (``model_v8.onnx`` shipped in ``speechmos``; 9.01 s
  windows without overlap, shorter audio tiled to one window) -- 1 value;
* ``p835``:  DNSMOS P.835 SIG, BAK, OVRL (``sig_bak_ovr.onnx`` + the polynomial
  mapping of ``speechmos``) -- 3 values.  Off by default: it costs ~0.4-0.8 s per
  recording on this 2-core machine against ~0.05 s for P.808 (measured);
* ``whisper``: the pretrained Whisper encoder (``base`` = the weights
  ``make -C tools`` installed) run on the recording's own length (no 30 s
  padding; positional embeddings cut to the length; recordings longer than
  30 s in 30 s chunks), hidden states after block ``whisper_layer`` pooled to
  their mean and standard deviation over time -- ``2 * d_model`` values.
  Only the blocks up to ``whisper_layer`` are run.

Vectors are cached per utterance (``embed.scp`` beside ``feats.scp``), so
training never runs these models.  CLI (one job of a ``JOB=1:nj`` array)::

    python -m pyutils.sqa.embed dump --wav-scp dump/train/wav.3.scp --outdir dump/train --job 3 \
        --whisper base --whisper-layer 3 --p808 true

``--wav-scp``/``--outdir`` may be repeated (one pair per data set): the models
are then loaded once for all sets (~10 s per process on 2 cores), and
``--missing-ok`` skips a pair whose piece does not exist (a set with fewer
recordings than jobs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional

import numpy as np

from pyutils.sqa.common import SAMPLE_RATE
from pyutils.io import atomic_write, read_scp

DEFAULT_CFG = {"whisper": "base", "whisper_layer": 3, "p808": True, "p835": False}
WHISPER_CHUNK_S = 30.0
DNSMOS_WIN = 144160  # 9.01 s at 16 kHz: the input length of the DNSMOS models


def _ort_session(name: str):
    import onnxruntime as ort
    from speechmos import dnsmos as dm

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    path = os.path.join(os.path.dirname(dm.__file__), "dnsmos_models", name)
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def _dnsmos_windows(x: np.ndarray):
    """Non-overlapping 9.01 s windows; audio shorter than one is tiled to one."""
    x = np.asarray(x, dtype=np.float32)
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 1.0:
        x = x / peak * 0.9
    if len(x) < DNSMOS_WIN:
        x = np.tile(x, int(np.ceil(DNSMOS_WIN / max(len(x), 1))))[:DNSMOS_WIN]
    for a in range(0, len(x) - DNSMOS_WIN + 1, DNSMOS_WIN):
        yield x[a:a + DNSMOS_WIN]


class DnsmosP808:
    """DNSMOS P.808 MOS with the features of ``speechmos.dnsmos`` (120 mel, dB/ref max)."""

    def __init__(self):
        self.sess = _ort_session("model_v8.onnx")

    def __call__(self, x: np.ndarray) -> float:
        import librosa

        vals = []
        for w in _dnsmos_windows(x):
            mel = librosa.feature.melspectrogram(y=w[:-160], sr=SAMPLE_RATE, n_fft=321, hop_length=160,
                                                 n_mels=120)
            mel = (librosa.power_to_db(mel, ref=np.max) + 40) / 40
            vals.append(float(self.sess.run(None, {"input_1": mel.T[None].astype(np.float32)})[0][0][0]))
        return float(np.mean(vals))


class DnsmosP835:
    """DNSMOS P.835 SIG/BAK/OVRL (primary model + polynomial mapping of ``speechmos``)."""

    def __init__(self):
        from speechmos import dnsmos as dm

        self.sess = _ort_session("sig_bak_ovr.onnx")
        self.poly = dm.DNSMOS.get_polyfit_val

    def __call__(self, x: np.ndarray) -> np.ndarray:
        vals = []
        for w in _dnsmos_windows(x):
            sig, bak, ovr = self.sess.run(None, {"input_1": w[None]})[0][0]
            vals.append(self.poly(None, sig, bak, ovr, False))
        return np.mean(np.asarray(vals, dtype=np.float64), axis=0)  # sig, bak, ovrl


class WhisperPooled:
    """Mean and std over time of the Whisper encoder's hidden states after block ``layer``."""

    def __init__(self, model: str = DEFAULT_CFG["whisper"], layer: int = DEFAULT_CFG["whisper_layer"]):
        import torch

        from pyutils.whisper.espnet_models import build_whisper

        whole = build_whisper(model, None)
        enc = whole.encoder.eval()
        self.layer = int(layer)
        if not 1 <= self.layer <= len(enc.blocks):
            raise ValueError(f"whisper_layer {self.layer}: the encoder has blocks 1..{len(enc.blocks)}")
        self.enc, self.n_mels = enc, whole.dims.n_mels
        self.dim = 2 * whole.dims.n_audio_state
        self.torch = torch
        del whole.decoder

    def _states(self, x: np.ndarray):
        """Hidden states ``(T_w, d_model)`` after block ``self.layer``."""
        import whisper

        torch = self.torch
        mel = whisper.log_mel_spectrogram(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),
                                          n_mels=self.n_mels)
        if mel.shape[-1] < 2:
            mel = torch.nn.functional.pad(mel, (0, 2 - mel.shape[-1]))
        enc = self.enc
        h = torch.nn.functional.gelu(enc.conv1(mel[None]))
        h = torch.nn.functional.gelu(enc.conv2(h)).permute(0, 2, 1)
        h = h + enc.positional_embedding[: h.shape[1]].to(h.dtype)
        for block in enc.blocks[: self.layer]:
            h = block(h)
        return h[0]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """-> pooled ``(2 d_model,)``: the mean and std of the states over all 30 s chunks."""
        torch = self.torch
        n = int(WHISPER_CHUNK_S * SAMPLE_RATE)
        total, sq, count = None, None, 0
        with torch.no_grad():
            for a in range(0, max(len(x), 1), n):
                h = self._states(x[a:a + n]).double()         # (T_w, d_model)
                total = h.sum(0) if total is None else total + h.sum(0)
                sq = (h ** 2).sum(0) if sq is None else sq + (h ** 2).sum(0)
                count += h.shape[0]
        mean = total / count
        std = torch.sqrt(torch.clamp(sq / count - mean ** 2, min=1e-8))
        return torch.cat([mean, std]).float().numpy()


class UttEmbedder:
    """``embedder(x)`` -> float32 vector; ``cfg`` keys as :data:`DEFAULT_CFG`."""

    def __init__(self, cfg: Optional[dict] = None):
        self.cfg = {**DEFAULT_CFG, **(cfg or {})}
        self.p808 = DnsmosP808() if self.cfg["p808"] else None
        self.p835 = DnsmosP835() if self.cfg["p835"] else None
        self.whisper = (WhisperPooled(self.cfg["whisper"], self.cfg["whisper_layer"])
                        if self.cfg["whisper"] else None)

    @property
    def dim(self) -> int:
        return int(self.p808 is not None) + 3 * int(self.p835 is not None) + \
            (self.whisper.dim if self.whisper is not None else 0)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        parts = []
        if self.p808 is not None:
            parts.append(np.array([self.p808(x)]))
        if self.p835 is not None:
            parts.append(self.p835(x))
        if self.whisper is not None:
            parts.append(self.whisper(x))
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, dtype=np.float32)


def _finish_ark(ark: str, scp: str) -> None:
    """Move ``ark.tmp`` / ``scp.tmp`` into place, the scp naming the ark by its final path."""
    with open(f"{scp}.tmp", encoding="utf-8") as f:
        lines = [line.replace(f"{ark}.tmp:", f"{ark}:") for line in f]
    os.replace(f"{ark}.tmp", ark)
    with open(f"{scp}.tmp", "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(f"{scp}.tmp", scp)


def dump(wav_scp: str, outdir: str, job: str, cfg: dict, embedder: Optional[UttEmbedder] = None) -> int:
    """Embed every recording of one (16 kHz mono) wav.scp piece -> ``embed.JOB.{ark,scp}``.
    ``embedder`` (built from ``cfg`` when None) lets several pieces share one set of loaded models."""
    import kaldiio

    from pyutils.sqa.audio import AudioError, load_checked

    cfg = {**DEFAULT_CFG, **cfg}
    os.makedirs(outdir, exist_ok=True)
    cfg_path = os.path.join(outdir, "embed_config.json")
    with atomic_write(cfg_path) as f:
        json.dump(cfg, f)
    embedder = embedder if embedder is not None else UttEmbedder(cfg)
    entries = list(read_scp(wav_scp))
    ark, scp = os.path.abspath(os.path.join(outdir, f"embed.{job}.ark")), os.path.join(outdir, f"embed.{job}.scp")
    t0, bad = time.time(), 0
    with kaldiio.WriteHelper(f"ark,scp:{ark}.tmp,{scp}.tmp") as writer:
        for k, (utt, entry) in enumerate(entries, 1):
            try:
                x = load_checked(entry, name=utt)
            except AudioError as exc:
                print(f"WARNING: skipping {exc}", file=sys.stderr)
                bad += 1
                continue
            writer(utt, embedder(x)[None, :])
            if k % 100 == 0:
                print(f"{k}/{len(entries)} recordings, {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    _finish_ark(ark, scp)
    print(f"{wav_scp}: embedded {len(entries) - bad} recordings ({embedder.dim} dims) in {time.time() - t0:.1f} s",
          file=sys.stderr)
    return bad


def load_embeddings(embed_scp: str) -> dict:
    """``{utt: (dim,) float32}`` of an ``embed.scp``."""
    import kaldiio

    return {u: np.array(m, dtype=np.float32).reshape(-1) for u, m in kaldiio.load_scp_sequential(embed_scp)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.embed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="embed wav.scp pieces (one --wav-scp/--outdir pair per data set)")
    d.add_argument("--wav-scp", required=True, action="append", help="repeatable, paired with --outdir")
    d.add_argument("--outdir", required=True, action="append")
    d.add_argument("--missing-ok", action="store_true",
                   help="skip a pair whose --wav-scp does not exist (a set with fewer recordings than jobs)")
    d.add_argument("--job", default="1")
    d.add_argument("--whisper", default="base", help="Whisper weights ('base', a path) or 'none'")
    d.add_argument("--whisper-layer", type=int, default=DEFAULT_CFG["whisper_layer"],
                   help="encoder block whose states are pooled")
    d.add_argument("--p808", choices=("true", "false"), default="true")
    d.add_argument("--p835", choices=("true", "false"), default="false")
    d.add_argument("--num-threads", type=int, default=1)
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(a.num_threads)
    cfg = {"whisper": None if a.whisper in ("none", "") else a.whisper, "whisper_layer": a.whisper_layer,
           "p808": a.p808 == "true", "p835": a.p835 == "true"}
    if len(a.wav_scp) != len(a.outdir):
        p.error(f"{len(a.wav_scp)} --wav-scp but {len(a.outdir)} --outdir: give them in pairs")
    pairs = [(w, o) for w, o in zip(a.wav_scp, a.outdir) if not (a.missing_ok and not os.path.exists(w))]
    for w, _ in pairs:
        if not os.path.exists(w):
            p.error(f"--wav-scp {w}: no such file")
    embedder = UttEmbedder(cfg) if pairs else None
    for w, o in pairs:
        dump(w, o, a.job, cfg, embedder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
