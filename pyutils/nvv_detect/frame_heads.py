"""NVV detector on frozen Whisper-encoder frames: a small dilated 1-D conv head, per-frame tag
posteriors, events from runs of frames (the detector of ``local/nvv_asr.sh --asr_method cascade``).

    python -m pyutils.nvv_detect.frame_heads --train-feats feats/wf_corpus_train.1.npz ... \\
        --dev-feats feats/wf_corpus_dev.1.npz ... \\
        --out exp/.../nvv_detector.npz [--report detector_report.json]
    python -m pyutils.nvv_detect.detect --model exp/.../nvv_detector.npz ...

Input per 40 ms frame ``f`` (:mod:`pyutils.nvv_detect.whisper_frames`): the pooled states ``x_f`` of
the chosen encoder blocks. Standardised, ``z_f = (x_f - mu) / sigma``.

Head: ``h_1 = GELU(conv_{k=3}(z))``, ``h_2 = GELU(conv_{k=5, dilation 2}(h_1))``,
``h_3 = GELU(conv_{k=5, dilation 4}(h_2))``, ``P(k | f) = softmax(conv_{k=1}(h_3))_k`` over
``none`` + the 16 tags; ``HIDDEN`` channels, receptive field 27 frames (1.08 s: about one
laugh), zero padding at the utterance's edges.

Fit: minimise ``-sum_f w_f log P(y_f | f) / sum_f w_f`` by Adam (``EPOCHS`` passes, batches of
``BATCH`` utterances sorted by length, dropout ``DROPOUT`` on input and hidden layers, weight
decay, seed 0); ``y_f``: the tag of the event holding the frame's centre, else ``none``
(:func:`pyutils.nvv_detect.whisper_frames.frame_labels`); ``w_f`` = ``real_weight`` (4) on frames of real
talkers, 1 on corpus frames.
Tag windows from tagged transcripts (:mod:`pyutils.nvv_detect.weak_labels`): ``--labels spans``
takes each window as the sound's span (the frame cross-entropy above; the recipe's
``--detector_labels transcript``).

Events: per-tag thresholds ``theta`` chosen on the dev sets by coordinate ascent of the micro
event F1 (:func:`pyutils.nvv_detect.thresholds.coordinate_ascent`), frames -> runs -> onsets and
offsets (:func:`pyutils.nvv_detect.events.frame_runs_to_events`).

Ensemble (``--heads N``): N heads fitted alike on the same standardised frames, head ``j`` with
seed ``seed + 1000 j`` (its own initialisation, dropout and batch order); the detector's
posteriors are their mean, ``P(k | f) = (1/N) sum_j P_j(k | f)``, and the thresholds are tuned
on (and applied to) that mean. Averaging lowers the variance one seed's head has (a head that
misses a whole tag is outvoted by the others). Epochs per head by default ``ceil(EPOCHS / N)``
(the cost of one head), at least ``MIN_STEPS`` optimiser steps (:func:`epochs_per_head`).

Model file: one ``.npz`` of plain arrays beside ``<file>.sha256`` (``kind`` = ``whisper_frames``,
``classes``, ``thresholds``, ``mu``, ``sigma``, ``layers``, ``frame_s``,
``dilations``, ``w0..w3``, ``b0..b3``; an ensemble adds ``heads`` = N and heads 2..N as
``h<j>_w0..h<j>_b3``, j = 1..N-1: a file without ``heads`` is one head); loading checks the
SHA-256, nothing is unpickled. A file with ``yamnet`` = 1 (YAMNet logits beside the frames, the
unadopted ``--detector whisper_yamnet``, removed after commit 9e77449) is refused, and so is a
file of the YAMNet-patch detector (``feature_ids``; ``--detector yamnet``, not adopted, removed
after commit c9e6e28).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError, load_arrays, save_arrays
from pyutils.nvv_detect.utt_sources import readable_audio
from pyutils.nvv_detect.whisper_frames import FRAME_S, WhisperFrames, frame_labels

KIND = "whisper_frames"
HIDDEN, DILATIONS, KERNELS = 128, (1, 2, 4), (3, 5, 5)
EPOCHS, BATCH, LR, DROPOUT, WEIGHT_DECAY = 12, 16, 2e-3, 0.2, 1e-4
HEADS, SEED_STRIDE, MIN_STEPS = 1, 1000, 100


def forward(weights: Sequence, biases: Sequence, z, dilations: Sequence[int] = DILATIONS,
            dropout: float = 0.0, training: bool = False):
    """Logits ``(B, K, T)`` of standardised frames ``z`` ``(B, D, T)`` (torch tensors)."""
    import torch.nn.functional as F

    h = F.dropout(z, dropout, training)
    for w, b, d in zip(weights[:-1], biases[:-1], dilations):
        h = F.gelu(F.conv1d(h, w, b, padding=d * (w.shape[-1] - 1) // 2, dilation=d))
        h = F.dropout(h, dropout, training)
    return F.conv1d(h, weights[-1], biases[-1])


class FrameDetector:
    """A fitted head: posteriors per frame and events (see the module docstring)."""

    def __init__(self, arrays: Dict[str, np.ndarray], path: str = "<memory>"):
        need = ("kind", "classes", "thresholds", "mu", "sigma", "layers", "frame_s", "dilations")
        missing = [k for k in need if k not in arrays]
        if "kind" not in arrays and "feature_ids" in arrays:
            raise DetectorError(f"{path}: a YAMNet-patch detector (--detector yamnet, not adopted and removed after "
                                "commit c9e6e28): fit a Whisper-frame detector (stage 5 of local/nvv_asr.sh "
                                "--asr_method cascade), or read it with that commit's code")
        if missing or str(arrays.get("kind")) != KIND:
            raise DetectorError(f"{path}: not a Whisper-frame detector (arrays {missing} missing)")
        if "yamnet" in arrays and int(arrays["yamnet"]):
            raise DetectorError(f"{path}: a Whisper-frame detector with YAMNet logits beside the frames "
                                "(--detector whisper_yamnet, not adopted and removed after commit 9e77449): fit it "
                                "again (stage 5 of local/nvv_asr.sh --asr_method cascade), or read it with that "
                                "commit's code")
        self.classes = [str(c) for c in arrays["classes"]]
        self.thresholds = arrays["thresholds"].astype(np.float64)
        self.mu, self.sigma = arrays["mu"].astype(np.float32), arrays["sigma"].astype(np.float32)
        self.layers = tuple(int(n) for n in arrays["layers"])
        self.frame_s = float(arrays["frame_s"])
        self.dilations = tuple(int(d) for d in arrays["dilations"])
        n = len(self.dilations) + 1
        n_heads = int(arrays["heads"]) if "heads" in arrays else 1
        if n_heads < 1:
            raise DetectorError(f"{path}: heads = {n_heads}, need >= 1")
        self.heads: List[Tuple[List[np.ndarray], List[np.ndarray]]] = []
        for j in range(n_heads):
            pre = f"h{j}_" if j else ""
            if any(f"{pre}w{i}" not in arrays or f"{pre}b{i}" not in arrays for i in range(n)):
                raise DetectorError(f"{path}: head {j + 1} of {n_heads}: weights {pre}w0..{pre}w{n - 1}, "
                                    f"{pre}b0..{pre}b{n - 1} missing")
            self.heads.append(([arrays[f"{pre}w{i}"].astype(np.float32) for i in range(n)],
                               [arrays[f"{pre}b{i}"].astype(np.float32) for i in range(n)]))
        d = 512 * len(self.layers)
        if (self.classes[0] != "none" or self.thresholds.shape != (len(self.classes) - 1,)
                or self.mu.shape != (d,) or self.sigma.shape != (d,) or abs(self.frame_s - FRAME_S) > 1e-9
                or any(w[0].shape[1] != d or w[-1].shape[0] != len(self.classes)
                       or any(w[i + 1].shape[1] != w[i].shape[0] for i in range(n - 1)) for w, _ in self.heads)):
            raise DetectorError(f"{path}: model arrays have inconsistent shapes")
        self._tw = None

    @property
    def tags(self) -> List[str]:
        return self.classes[1:]

    @classmethod
    def load(cls, path) -> "FrameDetector":
        return cls(load_arrays(Path(path), missing="; fit one with `python -m pyutils.nvv_detect.frame_heads`"), str(path))

    def arrays(self) -> Dict[str, np.ndarray]:
        out = {"kind": np.array(KIND), "classes": np.array(self.classes),
               "thresholds": self.thresholds.astype(np.float32), "mu": self.mu, "sigma": self.sigma,
               "layers": np.asarray(self.layers, dtype=np.int64), "frame_s": np.float64(self.frame_s),
               "dilations": np.asarray(self.dilations, dtype=np.int64)}
        for j, (ws, bs) in enumerate(self.heads):
            pre = f"h{j}_" if j else ""
            out.update({f"{pre}w{i}": w for i, w in enumerate(ws)})
            out.update({f"{pre}b{i}": b for i, b in enumerate(bs)})
        if len(self.heads) > 1:
            out["heads"] = np.int64(len(self.heads))
        return out

    def save(self, path) -> None:
        save_arrays(self.arrays(), Path(path))

    def probs(self, x: np.ndarray) -> np.ndarray:
        """(T, K) posteriors of one utterance's input frames ``x`` (T, D): the mean over the heads."""
        import torch

        if self._tw is None:
            self._tw = [([torch.from_numpy(w) for w in ws], [torch.from_numpy(b) for b in bs]) for ws, bs in self.heads]
        z = torch.from_numpy(((np.asarray(x, dtype=np.float32) - self.mu) / self.sigma).T[None].copy())
        with torch.inference_mode():
            p = sum(torch.softmax(forward(*tw, z, self.dilations)[0].T, dim=-1) for tw in self._tw) / len(self._tw)
        return p.numpy().astype(np.float64)

    def events_of(self, utt: str, x: np.ndarray, thresholds: Optional[np.ndarray] = None) -> List[dict]:
        """Events of one utterance, each with the heads' mean posteriors (``probs``)."""
        from pyutils.nvv_detect.events import frame_runs_to_events

        p = self.probs(x)[:, 1:]
        return frame_runs_to_events(utt, np.arange(len(p)) * self.frame_s, p, self.tags,
                                    self.thresholds if thresholds is None else thresholds, self.frame_s,
                                    with_probs=True)


def frame_inputs(rows) -> List[Tuple[str, np.ndarray, List[dict]]]:
    """``(utt, input frames, events)`` of cached frame rows."""
    return [(r.utt, r.frames.astype(np.float32), r.events) for r in rows]


def epochs_per_head(heads: int, n_utts: int = 0, batch: int = BATCH) -> int:
    """The default epochs of each of ``heads`` heads: ``EPOCHS`` shared, ``ceil(EPOCHS / heads)``,
    but at least ``MIN_STEPS`` optimiser steps per head, ``ceil(MIN_STEPS / ceil(n_utts / batch))``
    epochs (a small corpus: the ci preset's 144 utterances give 9 batches, 12 epochs)."""
    e = max(1, -(-EPOCHS // max(1, heads)))
    if n_utts > 0:
        e = max(e, -(-MIN_STEPS // -(-n_utts // batch)))
    return e


def fit_head(train: Sequence[Tuple[np.ndarray, np.ndarray, float]], n_classes: int, epochs: int = EPOCHS,
             hidden: int = HIDDEN, seed: int = 0, batch: int = BATCH, lr: float = LR, log=None,
             norm: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> Tuple[list, list, np.ndarray, np.ndarray]:
    """``[(x (T, D), labels (T,), weight)]`` -> (weights, biases, mu, sigma) as numpy arrays;
    ``norm``: (mu, sigma) already computed on the same frames (the other heads of an ensemble)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if norm is None:
        allx = np.concatenate([x for x, _, _ in train])
        mu = allx.mean(axis=0).astype(np.float32)
        sigma = (allx.std(axis=0) + 1e-3).astype(np.float32)
        del allx
    else:
        mu, sigma = norm
    d = len(mu)
    shapes = [(hidden, d, KERNELS[0])] + [(hidden, hidden, k) for k in KERNELS[1:]] + [(n_classes, hidden, 1)]
    ws, bs = [], []
    for s in shapes:
        w = torch.empty(s)
        torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
        ws.append(w.requires_grad_())
        bs.append(torch.zeros(s[0], requires_grad=True))
    opt = torch.optim.AdamW(ws + bs, lr=lr, weight_decay=WEIGHT_DECAY)
    order = np.argsort([len(x) for x, _, _ in train])
    batches = [order[i:i + batch] for i in range(0, len(order), batch)]
    total = epochs * len(batches)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(1, total), pct_start=0.1)
    for ep in range(epochs):
        tot, n = 0.0, 0.0
        for bi in rng.permutation(len(batches)):
            idx = batches[bi]
            T = max(len(train[i][0]) for i in idx)
            z = np.zeros((len(idx), d, T), dtype=np.float32)
            y = np.full((len(idx), T), -100, dtype=np.int64)
            w = np.zeros((len(idx), T), dtype=np.float32)
            for j, i in enumerate(idx):
                x, lab, wt = train[i]
                z[j, :, :len(x)] = ((x - mu) / sigma).T
                y[j, :len(x)] = lab
                w[j, :len(x)] = wt
            logits = forward(ws, bs, torch.from_numpy(z), DILATIONS, DROPOUT, True)
            wt = torch.from_numpy(w)
            ce = F.cross_entropy(logits, torch.from_numpy(y), reduction="none", ignore_index=-100)
            loss = (ce * wt).sum() / wt.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot, n = tot + float(loss.detach()) * float(wt.sum()), n + float(wt.sum())
        if log:
            log(f"epoch {ep + 1}/{epochs}: loss {tot / max(n, 1e-9):.4f}")
    return ([w.detach().numpy().copy() for w in ws], [b.detach().numpy().copy() for b in bs], mu, sigma)


def train_head(train_sets: Sequence[Tuple[str, Tuple[int, ...], list]],
               dev_sets: Sequence[Tuple[str, Tuple[int, ...], list]], real_weight: float = 4.0,
               epochs: Optional[int] = None, tune_on: str = "all", threads: int = 0, log=print, seed: int = 0,
               heads: int = HEADS, labels: str = "times") -> Tuple[FrameDetector, dict]:
    """Fit on cached frame sets ``[(kind, layers, rows)]`` (:func:`pyutils.nvv_detect.whisper_frames.load`),
    thresholds on the dev sets; ``heads``: an ensemble of that many heads (seeds
    ``seed + 1000 j``), thresholds on their mean posteriors; ``epochs`` per head, None:
    :func:`epochs_per_head`; ``labels``: ``times`` (the events are exact: frame cross-entropy),
    ``spans`` (windows from tagged transcripts, :mod:`pyutils.nvv_detect.weak_labels`, sets of kind
    ``weak``, taken as the sounds' spans: the same frame cross-entropy)."""
    import torch

    from pyutils.nvv_detect.events import frame_runs_to_events, micro, prf
    from pyutils.nvv_detect.thresholds import coordinate_ascent
    from pyutils.tags import challenge_tags

    t0, c0 = time.time(), time.process_time()
    if threads:
        torch.set_num_threads(threads)
    if not train_sets or not dev_sets:
        raise DetectorError("need at least one training and one dev frames set")
    if heads < 1 or (epochs is not None and epochs < 1):
        raise DetectorError(f"heads and epochs must be >= 1, got heads {heads}, epochs {epochs}")
    layers = {s[1] for s in list(train_sets) + list(dev_sets)}
    if len(layers) != 1:
        raise DetectorError(f"frame sets of different encoder blocks: {sorted(layers)}")
    classes = ["none"] + list(challenge_tags())
    if labels not in ("times", "spans"):
        raise DetectorError(f"labels must be times or spans, got {labels!r}")
    if labels == "times" and any(kind == "weak" for kind, _, _ in train_sets):
        raise DetectorError("a train set of tag windows (kind weak, pyutils.nvv_detect.weak_labels) has no exact "
                            "event times: fit it with --labels spans")
    tr, n_windows = [], 0
    for kind, _, rows in train_sets:
        for _, x, ev in frame_inputs(rows):
            n_windows += len(ev) if kind == "weak" else 0
            tr.append((x, frame_labels(len(x), ev, classes), real_weight if kind == "real" else 1.0))
    dev, real_ids = [], []
    for kind, _, rows in dev_sets:
        part = frame_inputs(rows)
        dev += part
        real_ids += [u for u, _, _ in part] if kind == "real" else []
    epochs = epochs or epochs_per_head(heads, len(tr))
    log(f"train: {len(tr)} utterances ({sum(len(x) for x, _, _ in tr)} frames"
        f"{f', {n_windows} tag windows' if labels != 'times' else ''}), dev: {len(dev)} ({len(real_ids)} real); "
        f"{heads} head(s) x {epochs} epochs")
    fitted, norm = {}, None
    for j in range(heads):
        if heads > 1:
            log(f"head {j + 1}/{heads} (seed {seed + SEED_STRIDE * j})")
        ws, bs, mu, sigma = fit_head(tr, len(classes), epochs, seed=seed + SEED_STRIDE * j, log=log, norm=norm)
        norm = (mu, sigma)
        pre = f"h{j}_" if j else ""
        fitted.update({f"{pre}w{i}": w for i, w in enumerate(ws)})
        fitted.update({f"{pre}b{i}": b for i, b in enumerate(bs)})
    det = FrameDetector({"kind": np.array(KIND), "classes": np.array(classes),
                         "thresholds": np.full(len(classes) - 1, 0.5), "mu": mu, "sigma": sigma,
                         "layers": np.asarray(next(iter(layers)), dtype=np.int64), "frame_s": np.float64(FRAME_S),
                         "dilations": np.asarray(DILATIONS, dtype=np.int64),
                         "heads": np.int64(heads), **fitted})
    probs = [(u, np.arange(len(x)) * FRAME_S, det.probs(x)[:, 1:]) for u, x, _ in dev]
    ref = {u: ev for u, _, ev in dev}
    det.thresholds, counts = coordinate_ascent(probs, ref, det.tags, frame_runs_to_events, real_ids, tune_on=tune_on)
    report = {"detector": KIND, "layers": list(det.layers), "train_utts": len(tr),
              "train_frames": int(sum(len(x) for x, _, _ in tr)), "dev_utts": len(dev), "real_dev_utts": len(real_ids),
              "real_weight": real_weight, "epochs": epochs, "heads": heads, "seed": seed, "tune_on": tune_on,
              "labels": labels, "train_kinds": sorted({k for k, _, _ in train_sets}),
              **({"train_windows": n_windows} if labels != "times" else {}),
              "seconds": round(time.time() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1),
              "thresholds": {t: float(v) for t, v in zip(det.tags, det.thresholds)}, "dev_counts": counts,
              "dev_prf": {t: [round(v, 3) for v in prf(*c)] for t, c in sorted(counts.items())},
              "dev_micro": [round(v, 3) for v in micro(counts)]}
    log(f"fit + thresholds {report['seconds']} s; dev micro P/R/F1 {report['dev_micro']}")
    return det, report


def detect_entries(det: FrameDetector, entries: Dict[str, str], threads: int = 1, log=None) -> List[dict]:
    """Events of ``{utt: wav.scp value}`` (any audio; an unreadable entry: no events, one ``log`` line)."""
    wf = WhisperFrames(det.layers, threads=threads)
    rows: List[dict] = []
    for utt, x in readable_audio(entries, log):
        rows += det.events_of(utt, wf(x))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train-feats", type=Path, action="append", default=[], required=True,
                    help="cached frames (pyutils.nvv_detect.whisper_frames) to train on")
    ap.add_argument("--dev-feats", type=Path, action="append", default=[], required=True,
                    help="cached frames to choose the thresholds on")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--real-weight", type=float, default=4.0, help="weight of real-talker frames")
    ap.add_argument("--epochs", type=int, help=f"epochs per head (default: {EPOCHS} shared among the heads, "
                                                 f"ceil({EPOCHS} / heads) each, >= {MIN_STEPS} steps per head)")
    ap.add_argument("--tune-on", choices=("split", "all"), default="all")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0, help="initialisation and batch order (head j: seed + 1000 j)")
    ap.add_argument("--heads", type=int, default=HEADS, help="an ensemble of this many heads, posteriors averaged")
    ap.add_argument("--labels", choices=("times", "spans"), default="times",
                    help="the train sets' events: exact times (frame cross-entropy: times) or tag windows of "
                         "pyutils.nvv_detect.weak_labels taken as the sounds' spans (the same loss: spans)")
    ap.add_argument("--report", type=Path)
    a = ap.parse_args(argv)
    from pyutils.nvv_detect.whisper_frames import load

    try:
        det, report = train_head([load(p) for p in a.train_feats], [load(p) for p in a.dev_feats], a.real_weight,
                                 a.epochs, a.tune_on, a.threads, seed=a.seed, heads=a.heads, labels=a.labels)
        det.save(a.out)
        if a.report:
            from pyutils.datadir.io import atomic_write

            with atomic_write(a.report) as f:
                f.write(json.dumps(report, indent=1) + "\n")
    except (DetectorError, OSError, ValueError) as e:
        print(f"nvv_detect.frame_heads: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect.frame_heads: model -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
