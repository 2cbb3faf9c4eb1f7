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
  Only the blocks up to ``whisper_layer`` are run.  A list (``[3, 1]``, CLI
  ``--whisper-layer 3,1``) pools each listed block and concatenates them in
  that order, from the same pass.

With ``frames_dim`` K > 0 the same hidden states are also kept per frame for the
frame fault head: Whisper's encoder frames are 20 ms, the scoring grid.  Each
frame is layer-normalised (no affine) and multiplied by a fixed random
Gaussian ``(d_model, K)`` matrix (seed ``frames_seed``; a random projection
needs no fitting stage and keeps distances roughly, Johnson-Lindenstrauss),
then stored as ``frames.scp`` (``(T_w, K)`` float32, ``T_w = ceil(T_mel / 2)``).
The only extra cost over the pooled vector is the projection and the storage.

Vectors are cached per utterance (``embed.scp`` beside ``feats.scp``), so
training never runs these models.  CLI (one job of a ``JOB=1:nj`` array)::

    python -m pyutils.sqa.embed dump --wav-scp dump/train/wav.3.scp --outdir dump/train --job 3 \
        --whisper base --whisper-layer 3 --p808 true --frames-dim 48

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

DEFAULT_CFG = {"whisper": "base", "whisper_layer": 3, "p808": True, "p835": False,
               "frames_dim": 0, "frames_seed": 0}
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
    """Mean and std over time of the Whisper encoder's hidden states after block ``layer``.

    ``layer`` may also list several blocks (e.g. ``(3, 1)``): their pooled statistics are
    concatenated in the listed order, all from one pass up to the deepest; the frames
    (``frames_dim`` > 0) come from the first listed block.
    """

    def __init__(self, model: str = DEFAULT_CFG["whisper"], layer=DEFAULT_CFG["whisper_layer"],
                 frames_dim: int = 0, frames_seed: int = 0):
        import torch

        from pyutils.whisper.espnet_models import build_whisper

        whole = build_whisper(model, None)
        enc = whole.encoder.eval()
        self.layers = whisper_layers(layer)
        for b in self.layers:
            if not 1 <= b <= len(enc.blocks):
                raise ValueError(f"whisper_layer {b}: the encoder has blocks 1..{len(enc.blocks)}")
        self.enc, self.n_mels = enc, whole.dims.n_mels
        self.dim = 2 * whole.dims.n_audio_state * len(self.layers)
        self.torch = torch
        del whole.decoder
        self.frames_dim = int(frames_dim)
        self.proj = None
        if self.frames_dim > 0:
            d = whole.dims.n_audio_state
            rng = np.random.default_rng(int(frames_seed))
            self.proj = torch.from_numpy((rng.standard_normal((d, self.frames_dim)) / np.sqrt(d))
                                         .astype(np.float32))

    def _frames(self, x: np.ndarray) -> list:
        """Hidden states ``(T_w, d_model)`` after each block of ``self.layers``, in that order."""
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
        kept = {}                                   # only the listed blocks' states are held
        for i, block in enumerate(enc.blocks[: max(self.layers)], 1):
            h = block(h)
            if i in self.layers:
                kept[i] = h[0]
        return [kept[b] for b in self.layers]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.encode(x)[0]

    def encode(self, x: np.ndarray):
        """-> (pooled ``(2 d_model * len(layers),)``, projected frames ``(T_w, frames_dim)`` or None)."""
        torch = self.torch
        n = int(WHISPER_CHUNK_S * SAMPLE_RATE)
        total, sq, count, frames = None, None, 0, []
        with torch.no_grad():
            for a in range(0, max(len(x), 1), n):
                states = self._frames(x[a:a + n])
                if self.proj is not None:
                    frames.append(torch.nn.functional.layer_norm(states[0], states[0].shape[-1:]) @ self.proj)
                h = torch.stack(states).double()              # (layers, T_w, d_model)
                total = h.sum(1) if total is None else total + h.sum(1)
                sq = (h ** 2).sum(1) if sq is None else sq + (h ** 2).sum(1)
                count += h.shape[1]
        mean = total / count
        std = torch.sqrt(torch.clamp(sq / count - mean ** 2, min=1e-8))
        pooled = torch.cat([torch.cat([m, s]) for m, s in zip(mean, std)]).float().numpy()
        return pooled, (torch.cat(frames).numpy() if frames else None)


def whisper_layers(layer) -> tuple:
    """``3``, ``"3"``, ``"3,1"`` or ``[3, 1]`` -> ``(3,)`` / ``(3, 1)``; ValueError on repeats or junk."""
    if isinstance(layer, str):
        try:
            layer = [int(v) for v in layer.split(",")]
        except ValueError:
            raise ValueError(f"whisper_layer {layer!r}: give block numbers, e.g. 3 or 3,1") from None
    layers = (int(layer),) if isinstance(layer, (int, np.integer)) else tuple(int(v) for v in layer)
    if not layers or len(set(layers)) != len(layers):
        raise ValueError(f"whisper_layer {layer!r}: one or more distinct block numbers")
    return layers


class UttEmbedder:
    """``embedder(x)`` -> float32 vector; ``cfg`` keys as :data:`DEFAULT_CFG`."""

    def __init__(self, cfg: Optional[dict] = None):
        self.cfg = {**DEFAULT_CFG, **(cfg or {})}
        self.p808 = DnsmosP808() if self.cfg["p808"] else None
        self.p835 = DnsmosP835() if self.cfg["p835"] else None
        if int(self.cfg["frames_dim"]) > 0 and not self.cfg["whisper"]:
            raise ValueError("frames_dim > 0 needs the Whisper encoder (whisper: none given)")
        self.whisper = (WhisperPooled(self.cfg["whisper"], self.cfg["whisper_layer"],
                                      int(self.cfg["frames_dim"]), int(self.cfg["frames_seed"]))
                        if self.cfg["whisper"] else None)

    @property
    def dim(self) -> int:
        return int(self.p808 is not None) + 3 * int(self.p835 is not None) + \
            (self.whisper.dim if self.whisper is not None else 0)

    @property
    def frames_dim(self) -> int:
        return int(self.cfg["frames_dim"])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.encode(x)[0]

    def encode(self, x: np.ndarray):
        """-> (utterance vector ``(dim,)``, Whisper frames ``(T_w, frames_dim)`` or None)."""
        parts, frames = [], None
        if self.p808 is not None:
            parts.append(np.array([self.p808(x)]))
        if self.p835 is not None:
            parts.append(self.p835(x))
        if self.whisper is not None:
            pooled, frames = self.whisper.encode(x)
            parts.append(pooled)
        vec = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, dtype=np.float32)
        return vec, (None if frames is None else frames.astype(np.float32))


def _finish_ark(ark: str, scp: str) -> None:
    """Move ``ark.tmp`` / ``scp.tmp`` into place, the scp naming the ark by its final path."""
    with open(f"{scp}.tmp", encoding="utf-8") as f:
        lines = [line.replace(f"{ark}.tmp:", f"{ark}:") for line in f]
    os.replace(f"{ark}.tmp", ark)
    with open(f"{scp}.tmp", "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(f"{scp}.tmp", scp)


def dump(wav_scp: str, outdir: str, job: str, cfg: dict, embedder: Optional[UttEmbedder] = None) -> int:
    """Embed every recording of one (16 kHz mono) wav.scp piece -> ``embed.JOB.{ark,scp}``
    (and ``frames.JOB.{ark,scp}`` with ``frames_dim`` > 0).  ``embedder`` (built from
    ``cfg`` when None) lets several pieces share one set of loaded models."""
    import contextlib

    import kaldiio

    from pyutils.sqa.audio import AudioError, load_checked

    cfg = {**DEFAULT_CFG, **cfg}
    os.makedirs(outdir, exist_ok=True)
    cfg_path = os.path.join(outdir, "embed_config.json")
    with atomic_write(cfg_path) as f:
        json.dump(cfg, f)
    embedder = embedder if embedder is not None else UttEmbedder(cfg)
    entries = list(read_scp(wav_scp))
    names = ["embed"] + (["frames"] if embedder.frames_dim > 0 else [])
    paths = {n: (os.path.abspath(os.path.join(outdir, f"{n}.{job}.ark")), os.path.join(outdir, f"{n}.{job}.scp"))
             for n in names}
    t0, bad = time.time(), 0
    with contextlib.ExitStack() as stack:
        writers = {n: stack.enter_context(kaldiio.WriteHelper(f"ark,scp:{a}.tmp,{s}.tmp"))
                   for n, (a, s) in paths.items()}
        for k, (utt, entry) in enumerate(entries, 1):
            try:
                x = load_checked(entry, name=utt)
            except AudioError as exc:
                print(f"WARNING: skipping {exc}", file=sys.stderr)
                bad += 1
                continue
            vec, frames = embedder.encode(x)
            writers["embed"](utt, vec[None, :])
            if "frames" in writers:
                writers["frames"](utt, frames)
            if k % 100 == 0:
                print(f"{k}/{len(entries)} recordings, {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    for ark, scp in paths.values():
        _finish_ark(ark, scp)
    print(f"{wav_scp}: embedded {len(entries) - bad} recordings ({embedder.dim} dims"
          + (f", frames {embedder.frames_dim} dims" if embedder.frames_dim else "")
          + f") in {time.time() - t0:.1f} s", file=sys.stderr)
    return bad


def load_embeddings(embed_scp: str) -> dict:
    """``{utt: (dim,) float32}`` of an ``embed.scp``."""
    import kaldiio

    return {u: np.array(m, dtype=np.float32).reshape(-1) for u, m in kaldiio.load_scp_sequential(embed_scp)}


def load_frames(frames_scp: str):
    """Lazy ``{utt: (T_w, K) float32}`` of a ``frames.scp`` (read on access)."""
    import kaldiio

    return kaldiio.load_scp(frames_scp)


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
    d.add_argument("--whisper-layer", default=str(DEFAULT_CFG["whisper_layer"]),
                   help="encoder block whose states are pooled, or several (e.g. 3,1: both, concatenated)")
    d.add_argument("--p808", choices=("true", "false"), default="true")
    d.add_argument("--p835", choices=("true", "false"), default="false")
    d.add_argument("--frames-dim", type=int, default=0,
                   help="also keep the Whisper frames (20 ms), randomly projected to this many dims (0: no)")
    d.add_argument("--frames-seed", type=int, default=0, help="seed of the fixed random projection")
    d.add_argument("--num-threads", type=int, default=1)
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(a.num_threads)
    try:
        layers = whisper_layers(a.whisper_layer)
    except ValueError as e:
        p.error(str(e))
    cfg = {"whisper": None if a.whisper in ("none", "") else a.whisper,
           "whisper_layer": layers[0] if len(layers) == 1 else list(layers),
           "p808": a.p808 == "true", "p835": a.p835 == "true",
           "frames_dim": a.frames_dim, "frames_seed": a.frames_seed}
    if a.frames_dim < 0:
        p.error(f"--frames-dim {a.frames_dim}: must be >= 0")
    if a.frames_dim > 0 and cfg["whisper"] is None:
        p.error("--frames-dim > 0 needs the Whisper encoder (--whisper none given)")
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
