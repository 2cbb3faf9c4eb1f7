"""NVV event detector on YAMNet: patch logits -> softmax over 16 challenge tags + none -> events.

    python -m pyutils.nvv_detect.model detect --wav-scp data/test/wav.scp --out events.jsonl \\
        [--model pyutils/nvv_detect/nvv_detector.npz] [--naive] [--threads 1]

(``detect`` reads either kind of model file, :func:`load_detector`: this module's YAMNet
model, or a Whisper-frame model of :mod:`pyutils.nvv_detect.head`, the recipe's default.)

Features. YAMNet (:mod:`pyutils.audio_tagger`, int8 ONNX) scores 0.96 s log-mel patches
every ``hop_s`` (0.24 s); the feature of patch ``i`` is its logits ``l_i = s_out (q_i - z_out)``
of the kept AudioSet classes (``feature_ids``: the 72 human-sound classes, the tags' classes,
three scene classes; 76 in all) stacked with its neighbours' ``[l_i, l_{i-1}, l_{i+1}]``
(edges repeated), standardised ``z = (f - mu) / sigma`` with the training set's ``mu``,
``sigma``. With ``embed`` (model key, 0/1) the patch's 1024-d YAMNet embedding ``e_i`` (the
dequantised global-average-pooled activations the classifier layer reads; the int8 export has
no such output, so :func:`embedding_session` adds one to the graph in memory) is appended:
``f_i = [l_i, l_{i-1}, l_{i+1}, e_i]``.

Classifier. Multinomial logistic regression, ``P(k | z) = softmax(W^T z + b)_k`` over
``none`` + the 16 tags (:mod:`pyutils.nvv_detect.train` fits it). Per-tag thresholds
``theta`` (picked on the dev sets) turn probabilities into events
(:func:`pyutils.nvv_detect.events.frames_to_events`).

Per tag, the detector keeps either the classifier or the naive mapping below
(``naive_tags``: the tag's classifier F1 on its dev utterances was lower than the mapping's;
:func:`pyutils.nvv_detect.train.choose_sources`).

Overlapping events of different tags (one laugh heard as laugh and cough) keep one
(:func:`suppress_overlaps`, ``SUPPRESS``): measured on the dev sets, micro event F1 0.629 ->
0.694 (real dev 0.712 -> 0.808, corpus dev 0.568 -> 0.611).

Naive baseline (``--naive``): the zero-shot mapping, ``p(tag) = max`` of the sigmoid
scores of the tag's AudioSet classes (:data:`pyutils.audio_tagger.TAG_CLASSES`; none
for yawn and lipsmack), fixed threshold 0.5.

Model file: one ``.npz`` of plain arrays (``W``, ``b``, ``mu``, ``sigma``, ``classes``,
``thresholds``, ``hop_s``, ``context``, ``feature_ids``, ``naive_tags``, ``embed``) beside ``<file>.sha256``; loading checks the
SHA-256 first and reads with ``allow_pickle=False`` (nothing is ever unpickled).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.io import sha256_file

DEFAULT_MODEL = Path(__file__).resolve().parent / "nvv_detector.npz"
HOP_S = 0.24
NAIVE_THRESHOLD = 0.5
SUPPRESS = True
CHUNK_HOPS = 1000              # Features.logits: inputs longer than 1000 hops (240 s) go in blocks
PATCH_SAMPLES = 160 * 95 + 512
EMBED_OUTPUT, EMBED_DIM = "/model/Reshape_output_0_qdq", 1024
KEYS = ("W", "b", "mu", "sigma", "classes", "thresholds", "hop_s", "context", "feature_ids")
#: AudioSet classes kept as features: the human sounds (YAMNet indices 0-71: speech, voice,
#: breathing, laughter, ... whistling), every class of TAG_CLASSES (Hiss, Snoring, ...) and
#: three scene classes (measured on the real dev set: all 521 generalise worse to real talkers)
SCENE_CLASSES = ("Silence", "Music", "Inside, small room")
N_HUMAN = 72


class DetectorError(RuntimeError):
    """Missing, damaged or inconsistent model file; the message names it."""


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
        from pyutils.audio_tagger import HOP, SR, _to_16k, patches

        x = _to_16k(x, sr)
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

    def logits(self, x: np.ndarray, sr: int) -> Tuple[np.ndarray, np.ndarray]:
        """Patch start times (s) and (N, 521) logits."""
        t, lg, _ = self.logits_emb(x, sr)
        return t, lg

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


class Detector:
    """A trained model file: probabilities per patch and events."""

    def __init__(self, arrays: Dict[str, np.ndarray], path: str = "<memory>"):
        missing = [k for k in KEYS if k not in arrays]
        if missing:
            raise DetectorError(f"{path}: model arrays {missing} missing")
        self.W, self.b = arrays["W"].astype(np.float64), arrays["b"].astype(np.float64)
        self.mu, self.sigma = arrays["mu"].astype(np.float64), arrays["sigma"].astype(np.float64)
        self.classes = [str(c) for c in arrays["classes"]]
        self.thresholds = arrays["thresholds"].astype(np.float64)
        self.hop_s, self.context = float(arrays["hop_s"]), int(arrays["context"])
        self.feature_ids = arrays["feature_ids"].astype(np.int64)
        self.naive_tags = np.asarray(arrays.get("naive_tags", np.zeros(len(self.classes) - 1)), dtype=bool)
        self.embed = bool(int(arrays.get("embed", 0)))
        d, k = self.W.shape
        if (self.b.shape != (k,) or self.mu.shape != (d,) or self.sigma.shape != (d,)
                or len(self.classes) != k or self.classes[0] != "none"
                or self.thresholds.shape != (k - 1,) or self.naive_tags.shape != (k - 1,)
                or d != len(self.feature_ids) * (2 * self.context + 1) + EMBED_DIM * self.embed
                or not ((self.feature_ids >= 0) & (self.feature_ids < 521)).all()):
            raise DetectorError(f"{path}: model arrays have inconsistent shapes")

    @property
    def tags(self) -> List[str]:
        return self.classes[1:]

    @classmethod
    def load(cls, path: Optional[os.PathLike] = None) -> "Detector":
        path = Path(path or DEFAULT_MODEL)
        arrays = load_arrays(path, missing="; train one with `python -m pyutils.nvv_detect.train`")
        return cls(arrays, str(path))

    def save(self, path: os.PathLike) -> None:
        save_arrays(self.arrays(), Path(path))

    def arrays(self) -> Dict[str, np.ndarray]:
        return {"W": self.W.astype(np.float32), "b": self.b.astype(np.float32),
                "mu": self.mu.astype(np.float32), "sigma": self.sigma.astype(np.float32),
                "classes": np.array(self.classes), "thresholds": self.thresholds.astype(np.float32),
                "hop_s": np.float64(self.hop_s), "context": np.int64(self.context),
                "feature_ids": self.feature_ids.astype(np.int64), "naive_tags": self.naive_tags.astype(np.int8),
                "embed": np.int64(self.embed)}

    def probs(self, feats: np.ndarray) -> np.ndarray:
        """(N, 17) softmax probabilities of stacked features."""
        z = (feats - self.mu) / self.sigma
        a = z @ self.W + self.b
        a -= a.max(axis=1, keepdims=True)
        e = np.exp(a)
        return e / e.sum(axis=1, keepdims=True)

    def events(self, utt_id: str, starts: np.ndarray, feats: np.ndarray,
               naive_p: Optional[np.ndarray] = None) -> List[dict]:
        """Events of the model's tags, plus the naive mapping's for the tags in ``naive_tags``
        (``naive_p``: :func:`naive_probs` of the same patches, needed when any tag is naive)."""
        from pyutils.nvv_detect.events import frames_to_events

        th = np.where(self.naive_tags, np.inf, self.thresholds)
        out = frames_to_events(utt_id, starts, self.probs(feats)[:, 1:], self.tags, th)
        ranked = [((0, e["score"] / th[self.tags.index(e["tag"])]), e) for e in out]
        if self.naive_tags.any():
            if naive_p is None:
                raise DetectorError("this model takes some tags from the naive mapping: pass naive_p")
            keep = np.flatnonzero(self.naive_tags)
            ranked += [((1, e["score"] / NAIVE_THRESHOLD), e) for e in frames_to_events(
                utt_id, starts, naive_p[:, keep], [self.tags[k] for k in keep], [NAIVE_THRESHOLD] * len(keep))]
        return sorted(suppress_overlaps(ranked) if SUPPRESS else [e for _, e in ranked],
                      key=lambda e: (e["start"], e["tag"]))


def suppress_overlaps(ranked: Sequence[Tuple[tuple, dict]]) -> List[dict]:
    """Of events whose intervals overlap, keep the best ranked: events of the naive mapping's
    tags first (they were chosen for their dev precision), then by ``score / threshold``."""
    kept: List[dict] = []
    for _, e in sorted(ranked, key=lambda r: r[0], reverse=True):
        if all(min(e["end"], k["end"]) <= max(e["start"], k["start"]) for k in kept):
            kept.append(e)
    return kept


def save_arrays(arrays: Dict[str, np.ndarray], path: Path) -> None:
    """npz + ``.sha256``, each written to a temp file and renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez(tmp, **arrays)
    digest = sha256_file(tmp)
    os.replace(tmp, path)
    stmp = path.with_name(f".{path.name}.sha256.tmp")
    stmp.write_text(f"{digest}  {path.name}\n")
    os.replace(stmp, Path(str(path) + ".sha256"))


def load_arrays(path: Path, missing: str, mismatch: str = "") -> Dict[str, np.ndarray]:
    """The arrays of an npz written by :func:`save_arrays`, after checking its ``.sha256``
    (no pickles). ``missing``/``mismatch``: what the error adds when the file or its sum is
    absent / when the sum differs."""
    sums = Path(str(path) + ".sha256")
    if not path.is_file() or not sums.is_file():
        raise DetectorError(f"{path} or {sums} is missing{missing}")
    want = (sums.read_text().split() or [""])[0]
    got = sha256_file(path)
    if got != want:
        raise DetectorError(f"{path}: SHA-256 {got} differs from {sums} ({want}){mismatch}")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (ValueError, OSError) as e:
        raise DetectorError(f"{path}: not a plain-array npz: {e}") from e


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


def load_detector(path: Optional[os.PathLike] = None):
    """A model file of either kind: :class:`Detector` (YAMNet patches) or, when its ``kind`` is
    ``whisper_frames``, :class:`pyutils.nvv_detect.head.FrameDetector`."""
    path = Path(path or DEFAULT_MODEL)
    arrays = load_arrays(path, missing="; fit one with stage 5 of local/nvv_asr.sh --asr_method cascade")
    if "kind" in arrays and str(arrays["kind"]) == "whisper_frames":
        from pyutils.nvv_detect.head import FrameDetector

        return FrameDetector(arrays, str(path))
    return Detector(arrays, str(path))


def read_scp_audio(scp: Path):
    """Yield ``(utt_id, audio, sr)`` of a wav.scp; unreadable entries raise naming the line."""
    from pyutils.datadir.io import read_kv, read_wav_scp_entry

    for utt, entry in read_kv(scp).items():
        try:
            x, sr = read_wav_scp_entry(entry)
        except Exception as e:          # noqa: BLE001 - any reader failure names the utterance
            raise DetectorError(f"{scp}: utterance {utt}: cannot read audio: {e}") from e
        x = np.asarray(x, dtype=np.float32)
        yield utt, (x.mean(axis=1) if x.ndim == 2 else x), sr


def readable_audio(entries: Dict[str, str], log=None) -> Iterator[Tuple[str, np.ndarray]]:
    """``(utt, 16 kHz mono audio)`` of every ``{utt: wav.scp value}`` entry that can be read
    (any format, rate, channels, length: :func:`pyutils.asr.cascade.load_audio`); an unreadable,
    empty or non-finite one is skipped with one ``log`` line, and the others go on."""
    from pyutils.asr.cascade import load_audio
    from pyutils.datadir.io import AudioReadError

    for utt, entry in entries.items():
        try:
            x = load_audio(entry)
        except (AudioReadError, OSError, ValueError, RuntimeError) as e:
            if log:
                log(f"{utt}: cannot read audio ({e}): no events")
            continue
        if len(x) == 0 or not np.isfinite(x).all():
            if log:
                log(f"{utt}: empty or non-finite audio: no events")
            continue
        yield utt, x


def detect_entries(det: Optional[Detector], feats: Features, entries: Dict[str, str], log=None) -> List[dict]:
    """Events of every ``{utt: wav.scp value}`` entry (any format, rate, channels, length; audio
    through :func:`pyutils.asr.cascade.load_audio`). ``det=None``: the naive mapping. An entry
    that cannot be read gives no events and one ``log`` line; the others go on."""
    from pyutils.tags import challenge_tags

    rows: List[dict] = []
    for utt, x in readable_audio(entries, log):
        t, f, lg = feats(x, 16000)
        rows += (naive_events(feats.tagger, utt, t, lg, challenge_tags()) if det is None
                 else det.events(utt, t, f, naive_probs(feats.tagger, lg, det.tags)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("detect", help="write NVV events of a wav.scp as JSONL (the cascade's --events)")
    d.add_argument("--wav-scp", type=Path, required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    d.add_argument("--naive", action="store_true", help="zero-shot AudioSet mapping instead of the model")
    d.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    from pyutils.audio_tagger import TaggerError
    from pyutils.datadir.io import DataDirError, read_kv
    from pyutils.nvv_detect.events import write_events
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        det = None if a.naive else load_detector(a.model)
        entries = read_kv(a.wav_scp)
        log = lambda m: print(f"nvv_detect: {m}", file=sys.stderr)  # noqa: E731
        if det is not None and not isinstance(det, Detector):
            from pyutils.nvv_detect.head import detect_entries as detect_frames

            rows = detect_frames(det, entries, a.threads, log)
            write_events(rows, a.out)
            print(f"nvv_detect: {len(rows)} events in {len(entries)} files -> {a.out}")
            return 0
        feats = Features(hop_s=det.hop_s if det else HOP_S, context=det.context if det else 0,
                         num_threads=a.threads, feature_ids=det.feature_ids if det else None,
                         embed=bool(det and det.embed))
        rows = detect_entries(det, feats, entries, log=log)
        write_events(rows, a.out)
    except (DetectorError, TaggerError, DataDirError, WhisperWeightsError, OSError, ValueError) as e:
        print(f"nvv_detect: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect: {len(rows)} events in {len(entries)} files -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
