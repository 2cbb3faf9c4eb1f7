"""Fit the YAMNet NVV detector (:mod:`pyutils.nvv_detect.model`) and pick its thresholds.

    python -m pyutils.nvv_detect.train --corpus CORPUS --real-dev data/nvv_real_dev \\
        --out pyutils/nvv_detect/nvv_detector.npz [--report train_report.json]
    python -m pyutils.nvv_detect.train --train-feats feats/corpus_train.npz --train-feats feats/real_train.npz \
        --dev-feats feats/corpus_dev.npz --dev-feats feats/real_dev.npz --out exp/.../nvv_detector.npz

(The second form reads features cached by :mod:`pyutils.nvv_detect.features`, as stage 5 of
``local/nvv_asr.sh --asr_method cascade`` does; the first computes them itself.)

Training utterances (each with exact event times):

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
weights ``w_n = r_n c_{y_n}``: ``r_n`` = ``--real-weight`` (4) for patches of real talkers, 1 for
corpus ones; class weights ``c_k = clip(N / (K n_k), 0.2, 20)^beta`` (``beta`` = ``--balance``;
0, no class balancing, measured best on the real dev set: balancing makes every tag fire on
ordinary speech). Features: :class:`pyutils.nvv_detect.model.Features` (the kept classes;
``--embed``: and the 1024-d embeddings). More than ``MAX_NONE`` ``none`` patches: a uniform
sample of them, weights scaled by ``n_none / MAX_NONE`` (:func:`fit`).

Thresholds: on the dev utterances (``--real-dev``: real speech + bank dev recordings;
``CORPUS/data/dev``: every tag), coordinate ascent over tags (two sweeps, grid 0.10..0.90)
of the micro event F1 of :func:`pyutils.nvv_detect.events.match_counts`; a tag with no dev
event keeps 0.5. ``--tune-on all`` (default): every tag on all dev utterances; ``split``:
the tags with real dev events on those alone (how the shipped model was made). Then, per
tag, the naive zero-shot mapping replaces the classifier where its event F1 on the same dev
utterances is higher (:func:`choose_sources`). Never tuned on a test set.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.events import PATCH_S, frames_to_events, match_counts, micro, prf
from pyutils.nvv_detect.model import HOP_S, Detector, DetectorError, Features, read_scp_audio

GRID = np.round(np.arange(0.10, 0.901, 0.05), 2)


def iter_corpus_utts(corpus: Path, split: str) -> Iterator[Tuple[str, np.ndarray, int, List[dict]]]:
    """``(utt_id, audio, sr, events)`` of a ``chorus-synth nvv`` corpus split, read one at a time."""
    scp, evp = corpus / "data" / split / "wav.scp", corpus / "events" / f"{split}.jsonl"
    if not scp.is_file() or not evp.is_file():
        raise DetectorError(f"{corpus}: no {scp.name} or {evp.name} for split {split} "
                            f"(make one with `chorus-synth nvv --out {corpus}`)")
    events: Dict[str, List[dict]] = {}
    for n, line in enumerate(evp.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            events[row["utt_id"]] = list(row["events"])
        except (ValueError, KeyError, TypeError) as e:
            raise DetectorError(f"{evp}:{n}: bad events row: {e}") from e
    return ((u, x, sr, events.get(u, [])) for u, x, sr in read_scp_audio(scp))


def corpus_utts(corpus: Path, split: str) -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    """``(utt_id, audio, sr, events)`` of a ``chorus-synth nvv`` corpus split."""
    return list(iter_corpus_utts(corpus, split))


def devset_dir_utts(d: Path) -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    """A data dir written by :func:`pyutils.nvv_detect.devset.write`."""
    from pyutils.nvv_detect.events import read_events

    ev = read_events(str(d / "events.jsonl"))
    return [(u, x, sr, ev.get(u, [])) for u, x, sr in read_scp_audio(d / "wav.scp")]


def real_train_utts(variants: int, split: str = "train") -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    from pyutils.nvv_detect.devset import SR, build

    return [(u["utt_id"], u["audio"], SR, u["events"]) for u in build(split, variants)]


def add_utt_source_args(ap: argparse.ArgumentParser, src) -> None:
    """The utterance-source options shared by the feature extractors (``src``: a required
    mutually exclusive group of ``ap``); :func:`utts_from_args` reads them."""
    src.add_argument("--corpus", type=Path, help="a chorus-synth nvv corpus dir (with --split)")
    src.add_argument("--devset-split", choices=("train", "dev", "test"),
                     help="real speech with real/generated NVVs spliced in (pyutils.nvv_detect.devset)")
    src.add_argument("--data-dir", type=Path, help="a dir written by pyutils.nvv_detect.devset (wav.scp, events.jsonl)")
    ap.add_argument("--split", default="train", help="corpus split (train, dev, test)")
    ap.add_argument("--variants", type=int, default=12, help="--devset-split: utterances per speech segment")
    ap.add_argument("--max-utts", type=int, default=0, help="only the first N utterances (0: all)")
    ap.add_argument("--part", type=int, default=1, help="with --parts: this job's share (1-based)")
    ap.add_argument("--parts", type=int, default=1, help="split the utterances round robin into this many jobs")


def utts_from_args(a: argparse.Namespace) -> Tuple[Iterator[Tuple[str, np.ndarray, int, List[dict]]], str]:
    """``(utterances, kind)`` of the options of :func:`add_utt_source_args`: this job's share
    (round robin over ``--parts``) of the first ``--max-utts``; kind ``corpus`` or ``real``."""
    if a.corpus:
        utts, kind = iter_corpus_utts(a.corpus, a.split), "corpus"
    elif a.devset_split:
        utts, kind = real_train_utts(a.variants, a.devset_split), "real"
    else:
        utts, kind = devset_dir_utts(a.data_dir), "real"
    return ((u for i, u in enumerate(utts) if (not a.max_utts or i < a.max_utts) and i % a.parts == a.part - 1),
            kind)


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


def choose_sources(det: Detector, dev, naive: Dict[str, np.ndarray], real_dev: Sequence[str],
                   tune_on: str = "split") -> Dict[str, list]:
    """Per tag: the naive mapping replaces the classifier when its event F1 on the tag's dev
    utterances (real dev for the recorded tags, else the corpus dev) is higher. Sets
    ``det.naive_tags``; returns ``{tag: [F1 model, F1 naive]}``."""
    from pyutils.nvv_detect.model import NAIVE_THRESHOLD

    ref = {u: ev for u, _, _, ev in dev}
    real = [u for u in ref if u in set(real_dev)]
    synth = [u for u in ref if u not in set(real_dev)]
    real_tags = {e["tag"] for u in real for e in ref[u]}
    tags = det.tags
    det.naive_tags = np.zeros(len(tags), dtype=bool)
    model_hyp = {u: det.events(u, t, f) for u, t, f, _ in dev}
    chosen = np.zeros(len(tags), dtype=bool)
    choice = {}
    for j, tag in enumerate(tags):
        utts = list(ref) if tune_on == "all" else real if tag in real_tags else synth
        keep = set(utts)
        mc = match_counts(ref, {u: h for u, h in model_hyp.items() if u in keep}, utts).get(tag)
        nc = match_counts(ref, {u: frames_to_events(u, t, naive[u][:, [j]], [tag], [NAIVE_THRESHOLD])
                                for u, t, _, _ in dev if u in keep}, utts).get(tag)
        f_m, f_n = prf(*(mc or [0, 0, 0]))[2], prf(*(nc or [0, 0, 0]))[2]
        choice[tag] = [round(f_m, 3), round(f_n, 3)]
        chosen[j] = f_n > f_m
    det.naive_tags = chosen
    return choice


MAX_NONE = 12000   # fit: at most this many "none" patches (a uniform sample, weights scaled up)


def fit(X: np.ndarray, y: np.ndarray, n_classes: int, l2: float, max_iter: int = 300,
        balance: float = 0.0, sample_weight: np.ndarray | None = None, max_none: int = MAX_NONE):
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
    X, y, sw = X[keep], y[keep], sw[keep]
    mu, sigma = X.mean(axis=0), X.std(axis=0) + 1e-3
    Z = (X - mu) / sigma
    n, d = Z.shape
    counts = np.bincount(y, minlength=n_classes)
    seen = max(1, int((counts > 0).sum()))
    cw = np.where(counts > 0, np.clip(n / (seen * np.maximum(counts, 1)), 0.2, 20.0) ** balance, 0.0)
    w = cw[y] * sw
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


def coordinate_ascent(probs: Sequence[Tuple[str, np.ndarray, np.ndarray]], ref: Dict[str, List[dict]],
                      tags: Sequence[str], to_events, real_dev: Sequence[str] = (), sweeps: int = 2,
                      tune_on: str = "split") -> Tuple[np.ndarray, Dict[str, List[int]]]:
    """Per-tag thresholds maximising the micro event F1 of ``to_events(utt, starts, probs,
    tags, thresholds)`` on the dev utterances ``probs`` = ``[(utt, starts, (N, T) probs)]``
    (see :func:`tune_thresholds` for ``real_dev`` and ``tune_on``)."""
    real = [u for u in ref if u in set(real_dev)]
    synth = [u for u in ref if u not in set(real_dev)]
    real_tags = {e["tag"] for u in real for e in ref[u]}
    synth_tags = {e["tag"] for u in synth for e in ref[u]}
    th = np.full(len(tags), 0.5)

    def score(th_, utts):
        keep = set(utts)
        hyp = {u: to_events(u, t, p, tags, th_) for u, t, p in probs if u in keep}
        c = match_counts(ref, hyp, utts)
        return micro(c)[2], c

    for _ in range(sweeps):
        for j, tag in enumerate(tags):
            utts = (list(ref) if tune_on == "all" and tag in real_tags | synth_tags
                    else real if tag in real_tags else synth if tag in synth_tags else None)
            if not utts:
                continue
            best = (score(th, utts)[0], -th[j], th[j])
            for g in GRID:
                trial = th.copy()
                trial[j] = g
                best = max(best, (score(trial, utts)[0], -g, g))
            th[j] = best[2]
    return th, score(th, list(ref))[1]


def model_features(rows, feature_ids: np.ndarray, context: int, embed: bool = False
                   ) -> List[Tuple[str, np.ndarray, np.ndarray, List[dict]]]:
    """``(utt, starts, model input, events)`` of cached rows (:mod:`pyutils.nvv_detect.features`)."""
    from pyutils.nvv_detect.model import model_input

    return [(r.utt, r.starts, model_input(r.logits, r.emb, feature_ids, context, embed), r.events) for r in rows]


def train_sets(train_sets: Sequence[Tuple[str, list]], dev_sets: Sequence[Tuple[str, list]], l2: float = 1e-2,
               context: int = 1, balance: float = 0.0, real_weight: float = 4.0, log=print,
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
        from pyutils.nvv_detect.model import default_feature_ids

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
    W, b, mu, sigma, final = fit(X, y, len(classes), l2, balance=balance, sample_weight=sw)
    det = Detector({"W": W, "b": b, "mu": mu, "sigma": sigma, "classes": np.array(classes),
                    "thresholds": np.full(len(classes) - 1, 0.5), "hop_s": np.float64(HOP_S),
                    "context": np.int64(context), "feature_ids": fids, "embed": np.int64(embed)})
    det.thresholds, _ = tune_thresholds(det, dev, real_ids, tune_on=tune_on)
    sources = choose_sources(det, dev, naive, real_ids, tune_on)
    counts = match_counts({u: ev for u, _, _, ev in dev},
                          {u: det.events(u, t, f, naive[u]) for u, t, f, _ in dev}, [u for u, *_ in dev])
    report = {"train_utts": len(tr), "tune_on": tune_on, "train_patches": int((y >= 0).sum()),
              "patches_per_class": {c: int((y == i).sum()) for i, c in enumerate(classes)},
              "dev_utts": len(dev), "real_dev_utts": len(real_ids), "l2": l2, "balance": balance,
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
          l2: float = 1e-2, context: int = 1, balance: float = 0.0, real_weight: float = 4.0,
          log=print) -> Tuple[Detector, dict]:
    """Features computed here (no cache), then :func:`train_sets`."""
    from pyutils.nvv_detect.features import compute

    feats = Features(hop_s=HOP_S, context=0)
    trs = [("real", compute(real_train_utts(train_variants), feats))] if train_variants > 0 else []
    trs += [("corpus", compute(iter_corpus_utts(c, "train"), feats)) for c in corpora]
    devs = [("real", compute(devset_dir_utts(d), feats)) for d in real_dev]
    devs += [("corpus", compute(iter_corpus_utts(c, "dev"), feats)) for c in corpora]
    return train_sets(trs, devs, l2, context, balance, real_weight, log, feats.feature_ids)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", default=[],
                    help="a chorus-synth nvv corpus dir (its train split trains, its dev split tunes)")
    ap.add_argument("--real-dev", type=Path, action="append", default=[],
                    help="a dir of `python -m pyutils.nvv_detect.devset --split dev`")
    ap.add_argument("--train-feats", type=Path, action="append", default=[],
                    help="cached features (pyutils.nvv_detect.features) to train on; replaces --corpus/--real-dev")
    ap.add_argument("--dev-feats", type=Path, action="append", default=[],
                    help="cached features to choose thresholds and per-tag sources on")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--train-variants", type=int, default=12)
    ap.add_argument("--l2", type=float, default=1e-2)
    ap.add_argument("--context", type=int, default=1)
    ap.add_argument("--balance", type=float, default=0.0, help="class-weight exponent (0: none, 1: balanced)")
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
            from pyutils.nvv_detect.features import load

            if a.corpus or a.real_dev:
                raise ValueError("give either --train-feats/--dev-feats or --corpus/--real-dev")
            det, report = train_sets([load(p) for p in a.train_feats], [load(p) for p in a.dev_feats],
                                     a.l2, a.context, a.balance, a.real_weight, embed=a.embed, tune_on=a.tune_on)
        else:
            det, report = train(a.corpus, a.real_dev, a.train_variants, a.l2, a.context, a.balance,
                                a.real_weight)
        det.save(a.out)
        if a.report:
            from pyutils.datadir.io import atomic_write

            with atomic_write(a.report) as f:
                f.write(json.dumps(report, indent=1) + "\n")
    except (DetectorError, DevsetError, BankError, TaggerError, OSError, ValueError) as e:
        print(f"nvv_detect.train: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect.train: model -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
