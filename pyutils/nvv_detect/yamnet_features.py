"""YAMNet features of the NVV detectors: patch logits and embeddings, the naive zero-shot tag
scores, and the cached-features CLI (stage 4 of ``local/nvv_asr.sh --asr_method cascade``).

    python -m pyutils.nvv_detect.yamnet_features --corpus CORPUS --split train --out feats/corpus_train.npz
    python -m pyutils.nvv_detect.yamnet_features --devset-split train --variants 12 --out feats/real_train.npz
    python -m pyutils.nvv_detect.yamnet_features --data-dir data/nvv_real_dev --out feats/real_dev.npz
    python -m pyutils.nvv_detect.yamnet_features --check-devset     # exit 0 when its material is installed
    (--max-utts N: the first N only; --part J --parts N: every N-th utterance from the J-th, for N jobs)

Features. YAMNet (:mod:`pyutils.audio_tagger`, int8 ONNX) scores 0.96 s log-mel patches
every ``hop_s`` (0.24 s); the feature of patch ``i`` is its logits ``l_i = s_out (q_i - z_out)``
of the kept AudioSet classes (``feature_ids``: the 72 human-sound classes, the tags' classes,
three scene classes; 76 in all) stacked with its neighbours' ``[l_i, l_{i-1}, l_{i+1}]``
(edges repeated), standardised ``z = (f - mu) / sigma`` with the training set's ``mu``,
``sigma``. With ``embed`` (model key, 0/1) the patch's 1024-d YAMNet embedding ``e_i`` (the
dequantised global-average-pooled activations the classifier layer reads; the int8 export has
no such output, so :func:`embedding_session` adds one to the graph in memory) is appended:
``f_i = [l_i, l_{i-1}, l_{i+1}, e_i]``.

Naive baseline (``detect --naive``): the zero-shot mapping, ``p(tag) = max`` of the sigmoid
scores of the tag's AudioSet classes (:data:`pyutils.audio_tagger.TAG_CLASSES`; none
for yawn and lipsmack), fixed threshold 0.5 (:func:`naive_probs`, :func:`naive_events`).

Sources of the cache: those of :mod:`pyutils.nvv_detect.utt_sources` (a ``chorus-synth nvv``
corpus split, ``--devset-split``, or a ``--data-dir`` of :func:`pyutils.nvv_detect.devset.write`).

What is stored is what every detector variant is computed from, so that fitting and
threshold choice (stage 5) never run YAMNet again: per utterance the patch start times
``t_i`` (every ``hop_s`` = 0.24 s), the raw logits ``l_i`` of all 521 AudioSet classes
(:class:`Features`; the model picks its classes and stacks the neighbours at fit time), the
naive zero-shot scores of the 16 tags (:func:`naive_probs`) and the 1024-d YAMNet embeddings
(:func:`embedding_session`, stored as float16).

File: one ``.npz`` of plain arrays (never unpickled) beside ``<file>.sha256``:
``utts`` (U,), ``offsets`` (U + 1,: utterance ``u`` owns patches ``offsets[u]:offsets[u+1]``),
``starts`` (N,), ``logits`` (N, 521) float32, ``naive`` (N, 16) float32, ``emb`` (N, 1024) float16, ``events`` (U,)
JSON text of each utterance's reference events, ``kind`` ("corpus" or "real": real talkers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError, load_arrays, save_arrays
from pyutils.nvv_detect.utt_sources import add_utt_source_args, utts_from_args

HOP_S = 0.24
NAIVE_THRESHOLD = 0.5
CHUNK_HOPS = 1000              # Features.logits_emb: inputs longer than 1000 hops (240 s) go in blocks
PATCH_SAMPLES = 160 * 95 + 512
EMBED_OUTPUT, EMBED_DIM = "/model/Reshape_output_0_qdq", 1024
#: AudioSet classes kept as features: the human sounds (YAMNet indices 0-71: speech, voice,
#: breathing, laughter, ... whistling), every class of TAG_CLASSES (Hiss, Snoring, ...) and
#: three scene classes (measured on the real dev set: all 521 generalise worse to real talkers)
SCENE_CLASSES = ("Silence", "Music", "Inside, small room")
N_HUMAN = 72
KINDS = ("corpus", "real", "weak")    # weak: the events are tag windows (pyutils.nvv_detect.weak_labels)


class Features:
    """YAMNet patch logits with neighbour context, and optionally the 1024-d embeddings
    (see the module docstring)."""

    def __init__(self, tagger=None, hop_s: float = HOP_S, context: int = 1, num_threads: int = 1,
                 feature_ids: Optional[Sequence[int]] = None, embed: bool = False):
        from pyutils.audio_tagger import YamNet

        self.tagger = tagger or YamNet.load(num_threads=num_threads)
        self.hop_s, self.context, self.embed = hop_s, context, embed
        self.feature_ids = np.asarray(feature_ids if feature_ids is not None else default_feature_ids(self.tagger),
                                      dtype=np.int64)
        self._emb_session = embedding_session(num_threads) if embed else None

    def _run(self, p: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        if self._emb_session is None:
            return self.tagger.logits(p).astype(np.float64), None
        t = self.tagger
        q = np.clip(np.round(p / t.s_in + t.z_in), 0, 255).astype(np.uint8)
        lg = np.empty((len(q), len(t.classes)))
        emb = np.empty((len(q), EMBED_DIM), dtype=np.float32)
        for i in range(len(q)):
            out, e = self._emb_session.run(None, {t.input_name: q[i][None, None]})
            lg[i] = t.s_out * (out.reshape(-1).astype(np.float64) - t.z_out)
            emb[i] = e.reshape(-1)
        return lg, emb

    def logits_emb(self, x: np.ndarray, sr: int) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """Patch start times (s), (N, 521) logits and (N, 1024) embeddings (None unless ``embed``)."""
        from pyutils.audio import resample
        from pyutils.audio_tagger import HOP, SR, patches

        x = resample(np.asarray(x, dtype=np.float32).reshape(-1), sr, SR).astype(np.float32)
        hop_frames = max(1, int(round(self.hop_s * SR / HOP)))
        step = CHUNK_HOPS * hop_frames * HOP          # long inputs: blocks of ~4 min (bounded memory)
        if len(x) <= step + PATCH_SAMPLES:
            p, t = patches(x, hop_frames)
            return (t, *self._run(p))
        ts, lgs, embs = [], [], []
        for c in range(0, len(x), step):
            p, t = patches(x[c:c + step + PATCH_SAMPLES], hop_frames)
            last = c + step >= len(x) - PATCH_SAMPLES
            keep = slice(None) if last else t * SR < step
            ts.append(t[keep] + c / SR)
            lg, emb = self._run(p[keep])
            lgs.append(lg)
            embs.append(emb)
            if last:
                break
        return np.concatenate(ts), np.concatenate(lgs), (np.concatenate(embs) if self.embed else None)

    def __call__(self, x: np.ndarray, sr: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, model features: stacked logits of the kept classes [+ embeddings], raw (N, 521) logits)."""
        t, lg, emb = self.logits_emb(x, sr)
        return t, model_input(lg, emb, self.feature_ids, self.context, self.embed), lg


def model_input(lg: np.ndarray, emb: Optional[np.ndarray], feature_ids: np.ndarray, context: int,
                embed: bool) -> np.ndarray:
    """The detector's input per patch: ``[stack(l[:, ids], context), e]`` (``e`` only with ``embed``)."""
    f = stack(np.asarray(lg, dtype=np.float64)[:, feature_ids], context)
    if embed:
        if emb is None:
            raise DetectorError("this model reads YAMNet embeddings: none were computed")
        f = np.concatenate([f, np.asarray(emb, dtype=np.float64)], axis=1)
    return f


def embedding_session(num_threads: int = 1):
    """An ONNX Runtime session of the YAMNet graph with a second output: the 1024-d embedding
    (the dequantised global-average-pooled activations the classifier reads; the int8 export
    does not expose it, so the graph is loaded with ``onnx`` and the output added in memory)."""
    import onnx
    import onnxruntime as ort

    from pyutils.audio_tagger import default_dir

    m = onnx.load(str(default_dir() / "model.onnx"))
    if EMBED_OUTPUT not in {o for n in m.graph.node for o in n.output}:
        raise DetectorError(f"{default_dir()}/model.onnx has no tensor {EMBED_OUTPUT}")
    m.graph.output.append(onnx.helper.make_tensor_value_info(EMBED_OUTPUT, onnx.TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.intra_op_num_threads = num_threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def stack(lg: np.ndarray, context: int) -> np.ndarray:
    """``[l_i, l_{i-1}, l_{i+1}, ..., l_{i-c}, l_{i+c}]`` per row (edges repeated)."""
    parts = [lg]
    for d in range(1, context + 1):
        prev = np.concatenate([np.repeat(lg[:1], d, axis=0), lg[:-d]])[: len(lg)]
        nxt = np.concatenate([lg[d:], np.repeat(lg[-1:], d, axis=0)])[: len(lg)]
        parts += [prev, nxt]
    return np.concatenate(parts, axis=1)


def default_feature_ids(tagger) -> List[int]:
    """Indices of the kept AudioSet classes (see :data:`SCENE_CLASSES`)."""
    from pyutils.audio_tagger import TAG_CLASSES

    names = [c for cs in TAG_CLASSES.values() for c in cs] + list(SCENE_CLASSES)
    return sorted(set(range(N_HUMAN)) | set(tagger.class_ids(names)))


def naive_probs(tagger, logits: np.ndarray, tags: Sequence[str]) -> np.ndarray:
    """(N, T) zero-shot tag scores: max sigmoid over the tag's AudioSet classes (0 if none)."""
    from pyutils.audio_tagger import TAG_CLASSES

    s = 1.0 / (1.0 + np.exp(-logits))
    out = np.zeros((len(logits), len(tags)))
    for j, tag in enumerate(tags):
        names = TAG_CLASSES.get(tag)
        if names:
            out[:, j] = s[:, tagger.class_ids(names)].max(axis=1)
    return out


def naive_events(tagger, utt_id: str, starts, logits, tags: Sequence[str]) -> List[dict]:
    from pyutils.nvv_detect.events import frames_to_events

    return frames_to_events(utt_id, starts, naive_probs(tagger, logits, tags), tags,
                            [NAIVE_THRESHOLD] * len(tags))


class Utt(NamedTuple):
    utt: str
    starts: np.ndarray
    logits: np.ndarray      # (n, 521)
    naive: np.ndarray       # (n, 16)
    events: List[dict]
    emb: np.ndarray | None = None   # (n, 1024) YAMNet embeddings


def compute(utts: Iterable[Tuple[str, np.ndarray, int, List[dict]]], feats: Features | None = None,
            log=None) -> List[Utt]:
    """YAMNet logits and naive scores of ``(utt, audio, sr, events)`` items."""
    from pyutils.tags import challenge_tags

    feats = feats or Features(hop_s=HOP_S, context=0, embed=True)
    tags = challenge_tags()
    out = []
    for n, (u, x, sr, ev) in enumerate(utts, 1):
        t, lg, emb = feats.logits_emb(x, sr)
        out.append(Utt(u, t, lg.astype(np.float32), naive_probs(feats.tagger, lg, tags).astype(np.float32),
                       list(ev), None if emb is None else emb.astype(np.float16)))
        if log and n % 200 == 0:
            log(f"features: {n} utterances")
    return out


def save(rows: List[Utt], kind: str, path: Path) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not rows:
        raise DetectorError(f"{path}: no utterances to store")
    offsets = np.cumsum([0] + [len(r.starts) for r in rows]).astype(np.int64)
    emb = {} if any(r.emb is None for r in rows) else {"emb": np.concatenate([r.emb for r in rows]).astype(np.float16)}
    save_arrays({**emb, "utts": np.array([r.utt for r in rows]), "offsets": offsets,
                 "starts": np.concatenate([r.starts for r in rows]).astype(np.float64),
                 "logits": np.concatenate([r.logits for r in rows]).astype(np.float32),
                 "naive": np.concatenate([r.naive for r in rows]).astype(np.float32),
                 "events": np.array([json.dumps(r.events, ensure_ascii=False) for r in rows]),
                 "kind": np.array(kind)}, Path(path))


def load(path: Path) -> Tuple[str, List[Utt]]:
    """``(kind, rows)`` of a features file; its SHA-256 is checked first."""
    a = load_arrays(Path(path), missing=" (stage 4 of local/nvv_asr.sh writes them)",
                    mismatch=": recompute the features",
                    need=("utts", "offsets", "starts", "logits", "naive", "events", "kind"))
    off, kind = a["offsets"], str(a["kind"])
    if (kind not in KINDS or len(off) != len(a["utts"]) + 1 or off[-1] != len(a["starts"])
            or a["logits"].shape != (len(a["starts"]), 521) or len(a["naive"]) != len(a["starts"])):
        raise DetectorError(f"{path}: inconsistent arrays")
    rows = []
    for i, u in enumerate(a["utts"]):
        s = slice(int(off[i]), int(off[i + 1]))
        try:
            ev = json.loads(str(a["events"][i]))
        except ValueError as e:
            raise DetectorError(f"{path}: utterance {u}: bad events: {e}") from e
        rows.append(Utt(str(u), a["starts"][s], a["logits"][s], a["naive"][s], ev,
                        a["emb"][s] if "emb" in a else None))
    return kind, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--check-devset", action="store_true",
                     help="exit 0 if the real-NVV set material (tools/models/real_speech, nvv_bank) is installed, "
                          "else 3 with the reason")
    add_utt_source_args(ap, src)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if not a.check_devset and a.out is None:
        ap.error("--out is required")
    if not 1 <= a.part <= a.parts:
        ap.error(f"need 1 <= --part <= --parts, got {a.part} of {a.parts}")
    from pyutils.audio_tagger import TaggerError
    from pyutils.nvv_detect.devset import DevsetError
    from pyutils.synth.nvv_bank import BankError

    try:
        if a.check_devset:
            from pyutils.nvv_detect.devset import bank_clips, segments

            for split in ("train", "dev"):
                segments(split)
                bank_clips(split)
            print("nvv_detect.yamnet_features: the real-NVV set material is installed")
            return 0
        utts, kind = utts_from_args(a)
        feats = Features(hop_s=HOP_S, context=0, num_threads=a.threads, embed=True)
        rows = compute(utts, feats, log=lambda m: print(m, file=sys.stderr))
        save(rows, kind, a.out)
    except (DetectorError, DevsetError, BankError, TaggerError, OSError, ValueError) as e:
        print(f"nvv_detect.yamnet_features: error: {e}", file=sys.stderr)
        return 3 if a.check_devset else 1
    print(f"nvv_detect.yamnet_features: {len(rows)} utterances, {sum(len(r.starts) for r in rows)} patches -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
