"""NVV event detector on YAMNet: patch logits -> softmax over 16 challenge tags + none -> events;
its fit and thresholds.

    python -m pyutils.nvv_detect.yamnet_detector --corpus CORPUS --real-dev data/nvv_real_dev \\
        --out pyutils/nvv_detect/nvv_detector.npz [--report train_report.json]
    python -m pyutils.nvv_detect.yamnet_detector --train-feats feats/corpus_train.npz --train-feats feats/real_train.npz \\
        --dev-feats feats/corpus_dev.npz --dev-feats feats/real_dev.npz --out exp/.../nvv_detector.npz

(The second form reads features cached by :mod:`pyutils.nvv_detect.yamnet_features`, as stage 5 of
``local/nvv_asr.sh --asr_method cascade`` does; the first computes them itself. Events of a
wav.scp: :mod:`pyutils.nvv_detect.detect`.)

Features: :class:`pyutils.nvv_detect.yamnet_features.Features` (the kept classes' logits with
their neighbours; ``--embed``: and the 1024-d embeddings), standardised ``z = (f - mu) / sigma``.

Classifier. Multinomial logistic regression, ``P(k | z) = softmax(W^T z + b)_k`` over
``none`` + the 16 tags. Per-tag thresholds ``theta`` (picked on the dev sets) turn
probabilities into events (:func:`pyutils.nvv_detect.events.frames_to_events`).

Per tag, the detector keeps either the classifier or the naive mapping
(:func:`pyutils.nvv_detect.yamnet_features.naive_probs`; ``naive_tags``: the tag's classifier
F1 on its dev utterances was lower than the mapping's;
:func:`pyutils.nvv_detect.thresholds.choose_sources`).

Overlapping events of different tags (one laugh heard as laugh and cough) keep one
(:func:`suppress_overlaps`): measured on the dev sets, micro event F1 0.629 ->
0.694 (real dev 0.712 -> 0.808, corpus dev 0.568 -> 0.611).

Training utterances (each with exact event times, :mod:`pyutils.nvv_detect.utt_sources`):

* ``CORPUS/data/train`` of a ``chorus-synth nvv`` corpus (``events/train.jsonl``): neural
  or formant voices with bank train recordings (laugh, cough, moan, hum, gasp) and
  generated sounds for the other tags, and utterances without any event;
* the real-speech ``train`` split of :mod:`pyutils.nvv_detect.devset` (``--train-variants``
  per segment): the real talkers' train stretch with all 16 tags spliced in.

Labels per patch ``[t, t + 0.96]``: the tag of the event with the largest overlap ``o``
when ``o >= min(0.3, 0.6 d)`` (``d``: the event's duration); ``none`` when no event
overlaps; left out (weight 0) in between.

Fit: weighted multinomial logistic regression, minimising
``L(W, b) = -sum_n w_n log P(y_n | z_n) / sum_n w_n + (lambda / 2) ||W||^2``
(``lambda`` = ``--l2``) by L-BFGS (scipy), gradient ``Z^T ((P - Y) * w) / sum w + lambda W``;
weights ``w_n`` = ``--real-weight`` (4) for patches of real talkers, 1 for corpus ones; no
class weights (class balancing, measured on the real dev set, made every tag fire on ordinary
speech: not adopted, removed; code: ``git show 28b938a``). More than ``MAX_NONE`` ``none``
patches: a uniform sample of them, weights scaled by ``n_none / MAX_NONE`` (:func:`fit`).

Thresholds and per-tag sources: on the dev utterances (``--real-dev``: real speech + bank dev
recordings; ``CORPUS/data/dev``: every tag), :mod:`pyutils.nvv_detect.thresholds`. ``--tune-on
all`` (default): every tag on all dev utterances; ``split``: the tags with real dev events on
those alone (how the shipped model was made). Never tuned on a test set.

Model file: one ``.npz`` of plain arrays (``W``, ``b``, ``mu``, ``sigma``, ``classes``,
``thresholds``, ``hop_s``, ``context``, ``feature_ids``, ``naive_tags``, ``embed``) beside
``<file>.sha256`` (:mod:`pyutils.nvv_detect.arrays`: the SHA-256 is checked first, nothing is
ever unpickled).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError, load_arrays, save_arrays
from pyutils.nvv_detect.events import PATCH_S, frames_to_events, match_counts, micro, prf
from pyutils.nvv_detect.thresholds import choose_sources, coordinate_ascent
from pyutils.nvv_detect.utt_sources import devset_dir_utts, iter_corpus_utts, readable_audio, real_train_utts
from pyutils.nvv_detect.yamnet_features import (EMBED_DIM, HOP_S, NAIVE_THRESHOLD, Features, compute,
                                                default_feature_ids, load, model_input, naive_events,
                                                naive_probs)

DEFAULT_MODEL = Path(__file__).resolve().parent / "nvv_detector.npz"
KEYS = ("W", "b", "mu", "sigma", "classes", "thresholds", "hop_s", "context", "feature_ids")
MAX_NONE = 12000   # fit: at most this many "none" patches (a uniform sample, weights scaled up)


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
        arrays = load_arrays(path, missing="; train one with `python -m pyutils.nvv_detect.yamnet_detector`")
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
        th = np.where(self.naive_tags, np.inf, self.thresholds)
        out = frames_to_events(utt_id, starts, self.probs(feats)[:, 1:], self.tags, th)
        ranked = [((0, e["score"] / th[self.tags.index(e["tag"])]), e) for e in out]
        if self.naive_tags.any():
            if naive_p is None:
                raise DetectorError("this model takes some tags from the naive mapping: pass naive_p")
            keep = np.flatnonzero(self.naive_tags)
            ranked += [((1, e["score"] / NAIVE_THRESHOLD), e) for e in frames_to_events(
                utt_id, starts, naive_p[:, keep], [self.tags[k] for k in keep], [NAIVE_THRESHOLD] * len(keep))]
        return sorted(suppress_overlaps(ranked), key=lambda e: (e["start"], e["tag"]))


def suppress_overlaps(ranked: Sequence[Tuple[tuple, dict]]) -> List[dict]:
    """Of events whose intervals overlap, keep the best ranked: events of the naive mapping's
    tags first (they were chosen for their dev precision), then by ``score / threshold``."""
    kept: List[dict] = []
    for _, e in sorted(ranked, key=lambda r: r[0], reverse=True):
        if all(min(e["end"], k["end"]) <= max(e["start"], k["start"]) for k in kept):
            kept.append(e)
    return kept


def detect_entries(det: Optional[Detector], feats: Features, entries: Dict[str, str], log=None) -> List[dict]:
    """Events of every ``{utt: wav.scp value}`` entry (any format, rate, channels, length; audio
    through :func:`pyutils.nvv_detect.utt_sources.readable_audio`). ``det=None``: the naive mapping. An entry
    that cannot be read gives no events and one ``log`` line; the others go on."""
    from pyutils.tags import challenge_tags

    rows: List[dict] = []
    for utt, x in readable_audio(entries, log):
        t, f, lg = feats(x, 16000)
        rows += (naive_events(feats.tagger, utt, t, lg, challenge_tags()) if det is None
                 else det.events(utt, t, f, naive_probs(feats.tagger, lg, det.tags)))
    return rows


def patch_labels(starts: np.ndarray, events: Sequence[dict], classes: Sequence[str]) -> np.ndarray:
    """Class index per patch; -1 = left out (see the module docstring)."""
    idx = {c: i for i, c in enumerate(classes)}
    y = np.zeros(len(starts), dtype=np.int64)
    for i, t in enumerate(starts):
        best, best_o, any_o = None, 0.0, False
        for e in events:
            o = min(t + PATCH_S, e["end"]) - max(t, e["start"])
            if o > 0:
                any_o = True
                if o > best_o:
                    best, best_o = e, o
        if best is not None and best_o >= min(0.3, 0.6 * (best["end"] - best["start"])):
            y[i] = idx[best["tag"]]
        elif any_o:
            y[i] = -1
    return y


def fit(X: np.ndarray, y: np.ndarray, n_classes: int, l2: float, max_iter: int = 300,
        sample_weight: np.ndarray | None = None, max_none: int = MAX_NONE):
    """Weighted softmax regression by L-BFGS -> (W, b, mu, sigma, final loss).

    More than ``max_none`` patches of class 0 (``none``: ordinary speech and pauses, most of
    a large corpus): a uniform sample of ``max_none`` of them (fixed seed) with their weights
    multiplied by ``n_none / max_none``, so the weighted loss keeps its expectation and the
    cost per L-BFGS step stays bounded."""
    from scipy.optimize import minimize

    keep = y >= 0
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    none = np.flatnonzero(keep & (y == 0))
    if len(none) > max_none:
        drop = np.random.default_rng(0).permutation(none)[max_none:]
        keep[drop] = False
        sw = sw.copy()
        sw[y == 0] *= len(none) / max_none
    X, y, w = X[keep], y[keep], sw[keep]
    mu, sigma = X.mean(axis=0), X.std(axis=0) + 1e-3
    Z = (X - mu) / sigma
    n, d = Z.shape
    Y = np.zeros((n, n_classes))
    Y[np.arange(n), y] = 1.0

    def loss(theta):
        W = theta[: d * n_classes].reshape(d, n_classes)
        b = theta[d * n_classes:]
        a = Z @ W + b
        a -= a.max(axis=1, keepdims=True)
        logp = a - np.log(np.exp(a).sum(axis=1, keepdims=True))
        val = -(w * (logp * Y).sum(axis=1)).sum() / w.sum() + 0.5 * l2 * (W * W).sum()
        G = (np.exp(logp) - Y) * w[:, None] / w.sum()
        return val, np.concatenate([(Z.T @ G + l2 * W).ravel(), G.sum(axis=0)])

    theta0 = np.zeros(d * n_classes + n_classes)
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    W = res.x[: d * n_classes].reshape(d, n_classes)
    return W, res.x[d * n_classes:], mu, sigma, float(res.fun)


def tune_thresholds(det: Detector, dev: Sequence[Tuple[str, np.ndarray, np.ndarray, List[dict]]],
                    real_dev: Sequence[str] = (), sweeps: int = 2, tune_on: str = "split"
                    ) -> Tuple[np.ndarray, Dict[str, List[int]]]:
    """Coordinate ascent of micro event F1 over per-tag thresholds (see the module docstring).

    ``tune_on="split"``: a tag with events in the real dev utterances (ids in ``real_dev``) is
    tuned on those alone, any other tag on the rest (the corpus dev split); ``"all"``: every
    tag on all dev utterances.
    """
    probs = [(u, t, det.probs(f)[:, 1:]) for u, t, f, _ in dev]
    return coordinate_ascent(probs, {u: ev for u, _, _, ev in dev}, det.tags, frames_to_events, real_dev,
                             sweeps, tune_on)


def model_features(rows, feature_ids: np.ndarray, context: int, embed: bool = False
                   ) -> List[Tuple[str, np.ndarray, np.ndarray, List[dict]]]:
    """``(utt, starts, model input, events)`` of cached rows (:mod:`pyutils.nvv_detect.yamnet_features`)."""
    return [(r.utt, r.starts, model_input(r.logits, r.emb, feature_ids, context, embed), r.events) for r in rows]


def train_sets(train_sets: Sequence[Tuple[str, list]], dev_sets: Sequence[Tuple[str, list]], l2: float = 1e-2,
               context: int = 1, real_weight: float = 4.0, log=print,
               feature_ids: Sequence[int] | None = None, embed: bool = False, tune_on: str = "split"
               ) -> Tuple[Detector, dict]:
    """Fit and tune on cached feature sets ``[(kind, rows)]`` (kind ``real``: real talkers, weight
    ``real_weight`` in training, the recorded tags' thresholds chosen on them in dev)."""
    from pyutils.tags import challenge_tags

    t0 = time.time()
    if not train_sets or not dev_sets:
        raise DetectorError("need at least one training and one dev feature set")
    if feature_ids is None:
        from pyutils.audio_tagger import YamNet

        feature_ids = default_feature_ids(YamNet.load())
    fids = np.asarray(feature_ids, dtype=np.int64)
    classes = ["none"] + list(challenge_tags())
    tr, weights = [], []
    for kind, rows in train_sets:
        part = model_features(rows, fids, context, embed)
        tr += part
        weights += [real_weight if kind == "real" else 1.0] * len(part)
    dev, naive, real_ids = [], {}, []
    for kind, rows in dev_sets:
        dev += model_features(rows, fids, context, embed)
        naive.update({r.utt: r.naive.astype(np.float64) for r in rows})
        if kind == "real":
            real_ids += [r.utt for r in rows]
    log(f"train: {len(tr)} utterances, dev: {len(dev)} ({len(real_ids)} real)")
    X = np.concatenate([f for _, _, f, _ in tr])
    y = np.concatenate([patch_labels(t, ev, classes) for _, t, _, ev in tr])
    sw = np.concatenate([np.full(len(t), w) for (_, t, _, _), w in zip(tr, weights)])
    W, b, mu, sigma, final = fit(X, y, len(classes), l2, sample_weight=sw)
    det = Detector({"W": W, "b": b, "mu": mu, "sigma": sigma, "classes": np.array(classes),
                    "thresholds": np.full(len(classes) - 1, 0.5), "hop_s": np.float64(HOP_S),
                    "context": np.int64(context), "feature_ids": fids, "embed": np.int64(embed)})
    det.thresholds, _ = tune_thresholds(det, dev, real_ids, tune_on=tune_on)
    sources = choose_sources(det, dev, naive, real_ids, tune_on)
    counts = match_counts({u: ev for u, _, _, ev in dev},
                          {u: det.events(u, t, f, naive[u]) for u, t, f, _ in dev}, [u for u, *_ in dev])
    report = {"train_utts": len(tr), "tune_on": tune_on, "train_patches": int((y >= 0).sum()),
              "patches_per_class": {c: int((y == i).sum()) for i, c in enumerate(classes)},
              "dev_utts": len(dev), "real_dev_utts": len(real_ids), "l2": l2,
              "real_weight": real_weight, "context": context, "embed": embed, "loss": final,
              "seconds": round(time.time() - t0, 1),
              "thresholds": {t: float(v) for t, v in zip(det.tags, det.thresholds)},
              "naive_tags": [t for t, n in zip(det.tags, det.naive_tags) if n],
              "dev_f1_model_naive": sources, "dev_counts": counts,
              "dev_prf": {t: [round(v, 3) for v in prf(*c)] for t, c in sorted(counts.items())},
              "dev_micro": [round(v, 3) for v in micro(counts)]}
    log(f"fit + thresholds {report['seconds']} s; dev micro P/R/F1 {report['dev_micro']}")
    return det, report


def train(corpora: Sequence[Path], real_dev: Sequence[Path], train_variants: int = 12,
          l2: float = 1e-2, context: int = 1, real_weight: float = 4.0,
          log=print) -> Tuple[Detector, dict]:
    """Features computed here (no cache), then :func:`train_sets`."""
    feats = Features(hop_s=HOP_S, context=0)
    trs = [("real", compute(real_train_utts(train_variants), feats))] if train_variants > 0 else []
    trs += [("corpus", compute(iter_corpus_utts(c, "train"), feats)) for c in corpora]
    devs = [("real", compute(devset_dir_utts(d), feats)) for d in real_dev]
    devs += [("corpus", compute(iter_corpus_utts(c, "dev"), feats)) for c in corpora]
    return train_sets(trs, devs, l2, context, real_weight, log, feats.feature_ids)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", default=[],
                    help="a chorus-synth nvv corpus dir (its train split trains, its dev split tunes)")
    ap.add_argument("--real-dev", type=Path, action="append", default=[],
                    help="a dir of `python -m pyutils.nvv_detect.devset --split dev`")
    ap.add_argument("--train-feats", type=Path, action="append", default=[],
                    help="cached features (pyutils.nvv_detect.yamnet_features) to train on; replaces --corpus/--real-dev")
    ap.add_argument("--dev-feats", type=Path, action="append", default=[],
                    help="cached features to choose thresholds and per-tag sources on")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--train-variants", type=int, default=12)
    ap.add_argument("--l2", type=float, default=1e-2)
    ap.add_argument("--context", type=int, default=1)
    ap.add_argument("--real-weight", type=float, default=4.0, help="weight of real-talker patches")
    ap.add_argument("--embed", action="store_true", help="also the 1024-d YAMNet embeddings as features (cached sets)")
    ap.add_argument("--tune-on", choices=("split", "all"), default="all",
                    help="thresholds/sources of each tag on all dev sets (all), or of the recorded tags on the "
                         "real dev set only (split: how the shipped model was made)")
    ap.add_argument("--report", type=Path)
    a = ap.parse_args(argv)
    from pyutils.audio_tagger import TaggerError
    from pyutils.nvv_detect.devset import DevsetError
    from pyutils.synth.nvv_bank import BankError

    try:
        if a.train_feats or a.dev_feats:
            if a.corpus or a.real_dev:
                raise ValueError("give either --train-feats/--dev-feats or --corpus/--real-dev")
            det, report = train_sets([load(p) for p in a.train_feats], [load(p) for p in a.dev_feats],
                                     a.l2, a.context, a.real_weight, embed=a.embed, tune_on=a.tune_on)
        else:
            det, report = train(a.corpus, a.real_dev, a.train_variants, a.l2, a.context, a.real_weight)
        det.save(a.out)
        if a.report:
            from pyutils.datadir.io import atomic_write

            with atomic_write(a.report) as f:
                f.write(json.dumps(report, indent=1) + "\n")
    except (DetectorError, DevsetError, BankError, TaggerError, OSError, ValueError) as e:
        print(f"nvv_detect.yamnet_detector: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect.yamnet_detector: model -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
