"""Name each located NVV event from knowledge of real sounds; abstain when unsure.

    python -m pyutils.nvv_detect.naming name --wav-scp data/test/wav.scp --events events.jsonl \\
        --out events.named.jsonl [--model namer.npz] [--min-prob 0.4] [--no-whisper]
    python -m pyutils.nvv_detect.naming fit --data data/deeply_train [--data ...] [--windows weak_train] --out namer.npz

The frame detector (:mod:`pyutils.nvv_detect.frame_heads`) finds WHERE an NVV is; its idea of
WHAT it is comes from a few dozen recordings. Here each event ``e`` (its crop ``x_e``: the span
padded by 0.25 s, at least 1 s; :func:`pyutils.nvv_detect.whisper_label_scores.crop`) is named
from three sources over the challenge tags ``k``:

- YAMNet (AudioSet, real recordings of laughs, coughs, sneezes, sighs, breathing, snoring, ...):
  ``y_k = max_patches max_{c in CLASSES[k]} sigmoid(l_c)`` over the crop's patches
  (:data:`CLASSES`; yawn has no AudioSet class: ``y_yawn`` = the mean of the other tags);
- Whisper's subtitle labels: ``w_k = log P("(laughs)" | x_e)``
  (:mod:`pyutils.nvv_detect.whisper_label_scores`), as ``w_k - logsumexp_j w_j``;
- the detector heads' mean posterior over the event's frames ``h_k`` (the event row's
  ``probs``; absent: a flat distribution, i.e. no vote).

Zero-shot fusion (product of experts), ``z_k = log y_k + a_w (w_k - lse w) + a_h log h_k``
(``a_w`` 0.3, ``a_h`` 0), applied where YAMNet recognises the sound, ``max_k y_k >= KNOWN_MIN``
(Whisper, the costlier source, is asked only where YAMNet's top two tags lie within
``YAMNET_DECISIVE`` of each other in ``log y``);
elsewhere the heads' own distribution ``z_k = log h_k`` stays (a sound no AudioSet class
matches, e.g. the mini corpus's generated sounds, is left to the detector). A fitted namer
(``fit``: multinomial logistic regression on ``[log y, w - lse w, mean YAMNet embedding]`` of
labelled clips (``--data``) or of the crops of a corpus's tag windows (``--windows``,
:func:`window_clips`), L2 ``--l2``) replaces the first two terms by its logits, everywhere, beside
the heads (trained on the same corpus) at ``a_h`` = 1 (``FITTED_A_H``).
``p = softmax(z)``; the event gets ``argmax_k p_k`` when ``max_k p_k >= min_prob`` and is
dropped otherwise: a tag of the wrong class costs a false alarm AND a miss, no tag only the miss.
Zero-shot, an event left to the heads is dropped too when their score is below
``UNKNOWN_MIN_SCORE``: no source is sure what it is.

Model file (``fit``): npz of plain arrays beside its ``.sha256`` (``kind`` = ``nvv_namer``,
``tags``, ``W``, ``b``, ``mu``, ``sigma``, ``a_w``, ``a_h``, ``min_prob``), never unpickled.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from pyutils.audio_tagger import TAG_CLASSES
from pyutils.nvv_detect.arrays import DetectorError, load_arrays, save_arrays
from pyutils.nvv_detect.whisper_label_scores import crop, softmax

KIND = "nvv_namer"
#: zero-shot defaults: Whisper's weight, the heads' weight, the abstention threshold
A_W, A_H, MIN_PROB = 0.3, 0.0, 0.0
#: zero-shot: YAMNet must give one of the tags' AudioSet classes at least this score for the
#: knowledge sources to name the event; below it they do not recognise the sound and the heads'
#: own distribution stays (the int8 scores step ..., 0.18, 0.32, 0.5, ...: 0.3 asks for 0.32)
KNOWN_MIN = 0.3
#: a fitted namer: the heads were trained on the same real corpus, their posteriors weigh as much
#: as the namer's (Deeply NVV test speakers in speech: namer alone 55.77, heads alone 68.99, both 72.79)
FITTED_A_H = 1.0
#: zero-shot: where YAMNet's best tag leads the second by this much in ``log y``, Whisper is not
#: asked (its weighted term would have to differ by 1 / a_w = 3.3 nats the other way: on 438 real
#: Deeply NVV clips it never did, and 17-21 % of the clips skip the costlier source)
YAMNET_DECISIVE = 1.0
#: zero-shot: an event YAMNet does not recognise (below ``KNOWN_MIN``) keeps the heads' tag only
#: where the detector's own score reaches this; else it is dropped. Real audio, default en
#: detector, dev splits: below 0.5, 0 of 5 such events on Deeply NVV dev speakers in speech were
#: right (4 of the wrong class, 1 on speech), 1 of 1 on the generated mini dev split, whose
#: sounds YAMNet does not know but the heads do (50 of 53 such events score >= 0.7)
UNKNOWN_MIN_SCORE = 0.5
#: detected events closer than this (s) are one sound, named once (:func:`merge_close`). Zero-shot
#: (the heads learned from game and generated sounds and cut a real cough or laugh into pieces):
#: 1.0 s (Deeply NVV test speakers in speech 38.82 -> 42.46 against 0.3 s; alone, the right tag
#: alone 33 % -> 36 %; the mini test 73.07 -> 69.72). A fitted namer (heads trained on the same
#: real corpus find whole sounds): 0.3 s (1.0 s: 54.69 -> 51.28 with the default heads)
MERGE_GAP_S, FITTED_MERGE_GAP_S = 1.0, 0.3
EMBED_DIM = 1024

#: AudioSet classes (YAMNet's display names) that name a tag here beside the TTS judge's
#: :data:`pyutils.audio_tagger.TAG_CLASSES` (kept fixed there, so that judged figures stay
#: comparable). AudioSet's ontology files Snort (air forced out through the nose) under Breathing,
#: beside Snoring: it names a breath (Deeply NVV train/dev clips, zero-shot: breath recall
#: 0.16 -> 0.47, macro 0.468 -> 0.499 against Snort naming a snore)
WIDER_CLASSES: Dict[str, Sequence[str]] = {
    "breath": ("Wheeze", "Snort"), "laugh": ("Baby laughter", "Snicker"), "cry": ("Baby cry, infant cry",),
    "burp": ("Hiccup",), "lipsmack": ("Chewing, mastication",),
}
#: challenge tag -> the AudioSet classes that name it (yawn has none)
CLASSES: Dict[str, Sequence[str]] = {t: tuple(TAG_CLASSES.get(t, ())) + tuple(WIDER_CLASSES.get(t, ()))
                                     for t in (*TAG_CLASSES, *WIDER_CLASSES)}


def _lse(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1, keepdims=True)
    return m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))


class Evidence:
    """Per-crop evidence of the two knowledge sources: YAMNet tag scores (+ embeddings) and
    Whisper label log-likelihoods."""

    def __init__(self, tags: Sequence[str], whisper: bool = True, embed: bool = False, threads: int = 1):
        from pyutils.nvv_detect.yamnet_features import Features

        self.tags = list(tags)
        self.feats = Features(num_threads=threads, embed=embed)
        tagger = self.feats.tagger
        self.class_ids = [tagger.class_ids(CLASSES.get(t, ())) for t in self.tags]
        self.whisper = None
        if whisper:
            from pyutils.nvv_detect.whisper_label_scores import WhisperLabelScorer

            self.whisper = WhisperLabelScorer(self.tags, threads=threads)

    def yamnet(self, crops: Sequence[np.ndarray]):
        """(E, K) tag scores ``y_k`` and (E, 1024) mean embeddings (None without ``embed``)."""
        from scipy.special import expit

        ys, embs = [], []
        for x in crops:
            if len(x) < 16000:
                x = np.pad(x, (0, 16000 - len(x)))
            _, lg, emb = self.feats.logits_emb(x, 16000)
            s = expit(lg).max(axis=0)
            ys.append([s[ids].max() if ids else np.nan for ids in self.class_ids])
            embs.append(emb.mean(axis=0) if emb is not None else None)
        y = np.asarray(ys, dtype=np.float64).reshape(len(crops), len(self.tags))
        if y.size:                      # a tag without an AudioSet class: the mean of the others
            y = np.where(np.isnan(y), np.nanmean(y, axis=1, keepdims=True), y)
        return np.clip(y, 1e-4, 1.0), (np.stack(embs) if embs and embs[0] is not None else None)

    def whisper_scores(self, crops: Sequence[np.ndarray]) -> Optional[np.ndarray]:
        """(E, K) ``w_k - logsumexp_j w_j``, or None without Whisper."""
        if self.whisper is None or not crops:
            return None
        w = np.concatenate([self.whisper.scores(crops[i:i + 8]) for i in range(0, len(crops), 8)])
        return w - _lse(w)

    def features(self, crops: Sequence[np.ndarray], known_min: float = 0.0,
                 decisive: Optional[float] = None) -> Dict[str, Optional[np.ndarray]]:
        """The evidence of each crop; Whisper runs only on the crops where YAMNet reaches
        ``known_min`` and, with ``decisive``, where YAMNet's best tag leads the second by less than
        ``decisive`` in ``log y`` (the others' ``w`` rows are 0: the zero-shot namer does not read
        them, or has YAMNet's choice)."""
        y, emb = self.yamnet(crops)
        w = None
        if self.whisper is not None:
            ask = y.max(axis=1) >= known_min
            if decisive is not None and y.shape[1] > 1:
                top2 = np.sort(np.log(y), axis=1)[:, -2:]
                ask &= (top2[:, 1] - top2[:, 0]) < decisive
            rows = np.flatnonzero(ask) if len(crops) else np.zeros(0, dtype=int)
            w = np.zeros((len(crops), len(self.tags)))
            if len(rows):
                w[rows] = self.whisper_scores([crops[i] for i in rows])
        return {"log_y": np.log(y), "w": w, "emb": emb}


class Namer:
    """Zero-shot fusion, or a fitted logistic regression over the evidence (module docstring)."""

    def __init__(self, tags: Sequence[str], a_w: float = A_W, a_h: float = A_H, min_prob: float = MIN_PROB,
                 W: Optional[np.ndarray] = None, b: Optional[np.ndarray] = None,
                 mu: Optional[np.ndarray] = None, sigma: Optional[np.ndarray] = None,
                 known_min: float = KNOWN_MIN):
        self.tags = list(tags)
        self.a_w, self.a_h, self.min_prob = float(a_w), float(a_h), float(min_prob)
        self.known_min = float(known_min)
        self.W, self.b, self.mu, self.sigma = W, b, mu, sigma

    @property
    def fitted(self) -> bool:
        return self.W is not None

    @property
    def embed(self) -> bool:
        return self.fitted and self.W.shape[0] > 2 * len(self.tags)

    @classmethod
    def load(cls, path: Path) -> "Namer":
        a = load_arrays(Path(path), missing="; fit one with `python -m pyutils.nvv_detect.naming fit`")
        if str(a.get("kind", "")) != KIND:
            raise DetectorError(f"{path}: not an NVV namer file (kind {a.get('kind')!r})")
        return cls([str(t) for t in a["tags"]], float(a["a_w"]), float(a["a_h"]), float(a["min_prob"]),
                   a["W"], a["b"], a["mu"], a["sigma"])

    def save(self, path: Path) -> None:
        save_arrays({"kind": np.array(KIND), "tags": np.array(self.tags), "W": self.W, "b": self.b,
                     "mu": self.mu, "sigma": self.sigma, "a_w": np.array(self.a_w),
                     "a_h": np.array(self.a_h), "min_prob": np.array(self.min_prob)}, path)

    def design(self, ev: Dict[str, Optional[np.ndarray]]) -> np.ndarray:
        """The fitted model's input rows ``[log y, w - lse w (0 without Whisper), emb]``."""
        n = len(ev["log_y"])
        w = ev["w"] if ev["w"] is not None else np.zeros((n, len(self.tags)))
        parts = [ev["log_y"], w]
        if self.embed or (not self.fitted and ev.get("emb") is not None):
            if ev.get("emb") is None:
                raise DetectorError("this namer reads YAMNet embeddings: none were computed")
            parts.append(ev["emb"])
        return np.concatenate(parts, axis=1)

    def logits(self, ev: Dict[str, Optional[np.ndarray]], heads: Optional[np.ndarray] = None) -> np.ndarray:
        """(E, K) fused ``z`` (module docstring); ``heads``: (E, K) posteriors or None."""
        if self.fitted:
            z = ((self.design(ev) - self.mu) / self.sigma) @ self.W + self.b
        else:
            z = ev["log_y"] + (self.a_w * ev["w"] if ev["w"] is not None else 0.0)
        if heads is None:
            return z
        log_h = np.log(np.clip(heads, 1e-4, None))
        log_h = log_h - np.log(np.exp(log_h).sum(axis=1, keepdims=True))
        if self.a_h:
            z = z + self.a_h * log_h
        return np.where(self.left_to_heads(ev)[:, None], log_h, z)

    def left_to_heads(self, ev: Dict[str, Optional[np.ndarray]]) -> np.ndarray:
        """(E,) bool: zero-shot, the events no tag's AudioSet class recognises (``max_k y_k <
        known_min``): the heads name them (given heads); always False for a fitted namer."""
        if self.fitted or self.known_min <= 0:
            return np.zeros(len(ev["log_y"]), dtype=bool)
        return np.exp(ev["log_y"]).max(axis=1) < self.known_min

    def probs(self, ev, heads=None) -> np.ndarray:
        return softmax(self.logits(ev, heads), axis=1)


def heads_matrix(events: Sequence[dict], tags: Sequence[str]) -> Optional[np.ndarray]:
    """(E, K) of the events' ``probs`` (the heads' mean posteriors); a row without them is flat;
    None when no event has them."""
    if not any(isinstance(e.get("probs"), dict) for e in events):
        return None
    out = np.full((len(events), len(tags)), 1.0 / len(tags))
    for i, e in enumerate(events):
        p = e.get("probs")
        if isinstance(p, dict):
            out[i] = [max(float(p.get(t, 0.0)), 0.0) for t in tags]
    return out


def merge_close(events: List[dict], gap_s: float) -> List[dict]:
    """Events of one utterance whose gap is at most ``gap_s`` become one span, whatever their tags
    (the heads cut one real sound into runs of different tags: it is named once); the merged
    event keeps the tag and ``probs`` of its longest part, its ``score`` the maximum."""
    out: List[dict] = []
    for e in sorted(events, key=lambda r: float(r["start"])):
        if out and float(e["start"]) - float(out[-1]["end"]) <= gap_s:
            last = out[-1]
            longest = max(last["_parts"], key=lambda r: float(r["end"]) - float(r["start"]))
            if float(e["end"]) - float(e["start"]) > float(longest["end"]) - float(longest["start"]):
                longest = e
            merged = {**longest, "start": last["start"], "end": max(float(last["end"]), float(e["end"])),
                      "score": max(float(last.get("score", 1.0)), float(e.get("score", 1.0))),
                      "_parts": last["_parts"] + [e]}
            out[-1] = merged
        else:
            out.append({**e, "_parts": [e]})
    return [{k: v for k, v in r.items() if k != "_parts"} for r in out]


def name_events(namer: Namer, evidence: Evidence, audio: np.ndarray, events: List[dict],
                merge_gap_s: Optional[float] = None) -> List[dict]:
    """The events of one utterance, close ones merged (:func:`merge_close`; ``merge_gap_s`` None:
    ``MERGE_GAP_S`` zero-shot, ``FITTED_MERGE_GAP_S`` with a fitted namer), renamed (``tag``;
    ``detected_as`` keeps the detector's tag, ``name_p`` the fused probability); those below
    ``min_prob`` dropped."""
    if not events:
        return []
    zero_shot = not namer.fitted
    if merge_gap_s is None:
        merge_gap_s = MERGE_GAP_S if zero_shot else FITTED_MERGE_GAP_S
    if merge_gap_s >= 0:
        events = merge_close(events, merge_gap_s)
    crops = [crop(audio, float(e["start"]), float(e["end"])) for e in events]
    heads = heads_matrix(events, namer.tags)
    if zero_shot:   # Whisper only where YAMNet recognises the sound (with heads to fall back on) and is unsure
        ev = evidence.features(crops, namer.known_min if heads is not None else 0.0, YAMNET_DECISIVE)
    else:           # a fitted namer reads every crop's evidence
        ev = evidence.features(crops)
    p = namer.probs(ev, heads)
    doubtful = np.zeros(len(events), dtype=bool)
    if heads is not None:   # left to the heads, who are unsure
        scores = np.array([float(e.get("score", 1.0)) for e in events])
        doubtful = namer.left_to_heads(ev) & (scores < UNKNOWN_MIN_SCORE)
    out = []
    for e, row, drop in zip(events, p, doubtful):
        k = int(row.argmax())
        if drop or row[k] < namer.min_prob:
            continue
        r = {key: v for key, v in e.items() if key != "probs"}
        r.update(tag=namer.tags[k], detected_as=e["tag"], name_p=round(float(row[k]), 4))
        out.append(r)
    return out


def fit(X: np.ndarray, y: np.ndarray, n_classes: int, l2: float, max_iter: int = 300) -> tuple:
    """Multinomial logistic regression on standardised ``z = (x - mu) / sigma`` by L-BFGS (scipy):
    ``(W, b, mu, sigma)`` minimising ``-mean_n log softmax(z_n W + b)_{y_n} + (l2 / 2) ||W||^2``."""
    from scipy.optimize import minimize

    mu, sigma = X.mean(axis=0), X.std(axis=0) + 1e-3
    Z = (X - mu) / sigma
    n, d = Z.shape
    Y = np.zeros((n, n_classes))
    Y[np.arange(n), y] = 1.0

    def loss(theta):
        W, b = theta[: d * n_classes].reshape(d, n_classes), theta[d * n_classes:]
        a = Z @ W + b
        logp = a - _lse(a)
        G = (np.exp(logp) - Y) / n
        val = -(logp * Y).sum() / n + 0.5 * l2 * (W * W).sum()
        return val, np.concatenate([(Z.T @ G + l2 * W).ravel(), G.sum(axis=0)])

    res = minimize(loss, np.zeros(d * n_classes + n_classes), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter})
    return res.x[: d * n_classes].reshape(d, n_classes), res.x[d * n_classes:], mu, sigma


def labelled_clips(data_dirs: Sequence[Path], tags: Sequence[str]):
    """``(utt, crop, tag)`` of Kaldi data dirs whose ``text`` is one tag (``[cough]``); the crop is
    the clip's event span from the corpus events file when there is one, else the whole clip."""
    from pyutils.datadir.io import read_kv
    from pyutils.nvv_detect.utt_sources import read_corpus_events, readable_audio
    from pyutils.tags import TAG_RE

    for d in data_dirs:
        text = read_kv(d / "text")
        # the event spans: EVENTS/<split>.jsonl beside or above the data dir (chorus-prep
        # deeply_nvv: OUT/events/<split>.jsonl; chorus-synth nvv: CORPUS/events/<split>.jsonl)
        cands = [d.parent / "events" / f"{d.name}.jsonl", d.parent.parent / "events" / f"{d.name}.jsonl"]
        found_ev = next((c for c in cands if c.is_file()), None)
        spans = read_corpus_events(found_ev) if found_ev else {}
        log = lambda m: print(f"naming: {d}: {m}", file=sys.stderr)  # noqa: E731
        for utt, x in readable_audio(read_kv(d / "wav.scp"), log):
            found = TAG_RE.findall(text.get(utt, ""))
            if len(found) != 1 or found[0] not in tags:
                log(f"{utt}: text is not one challenge tag: skipped")
                continue
            ev = spans.get(utt)
            s, e = (float(ev[0]["start"]), float(ev[0]["end"])) if ev else (0.0, len(x) / 16000)
            yield utt, crop(x, s, e), found[0]


def window_clips(weak_dirs: Sequence[Path], tags: Sequence[str]):
    """``(utt, crop, tag)`` of the tag windows of :func:`pyutils.nvv_detect.weak_labels.derive` dirs
    (a real corpus's tagged transcripts without times): each window's crop, named by its tag. A
    window that two tags share (tags standing together) names no single sound: skipped."""
    from pyutils.audio import to_mono_16k
    from pyutils.nvv_detect.utt_sources import weak_dir_utts

    for d in weak_dirs:
        for utt, x, sr, wins in weak_dir_utts(Path(d)):
            shared = Counter((w["start"], w["end"]) for w in wins)
            x = to_mono_16k(x, sr)
            for w in wins:
                if shared[(w["start"], w["end"])] == 1 and w["tag"] in tags:
                    yield utt, crop(x, w["start"], w["end"]), w["tag"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("name", help="rename (or drop) the events of a wav.scp")
    n.add_argument("--wav-scp", type=Path, required=True)
    n.add_argument("--events", type=Path, required=True)
    n.add_argument("--out", required=True)
    n.add_argument("--model", type=Path, help="a fitted namer (default: the zero-shot fusion)")
    n.add_argument("--min-prob", type=float, help=f"abstain below this fused probability (zero-shot: {MIN_PROB})")
    n.add_argument("--a-w", type=float, default=A_W, help="zero-shot: weight of Whisper's label scores")
    n.add_argument("--a-h", type=float, help=f"weight of the detector heads' posteriors (default {A_H})")
    n.add_argument("--no-whisper", action="store_true", help="YAMNet (and the heads) only")
    n.add_argument("--known-min", type=float, default=KNOWN_MIN,
                   help="zero-shot: the heads' tag stays where no tag's AudioSet class reaches this YAMNet score (0: never)")
    n.add_argument("--merge-gap", type=float, default=None,
                   help=f"merge detected events this close (s) into one before naming (negative: never; default "
                        f"{MERGE_GAP_S} zero-shot, {FITTED_MERGE_GAP_S} with a fitted --model)")
    n.add_argument("--threads", type=int, default=1)
    f = sub.add_parser("fit", help="fit a namer on labelled clips (text = one tag) and/or tag windows")
    f.add_argument("--data", type=Path, action="append", default=[], help="a data dir of clips whose text is one tag")
    f.add_argument("--windows", type=Path, action="append", default=[],
                   help="a tag-window dir of pyutils.nvv_detect.weak_labels (a corpus of tagged transcripts)")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--l2", type=float, default=0.03)
    f.add_argument("--embed", action="store_true", help="also the mean YAMNet embedding of the clip")
    f.add_argument("--min-prob", type=float, default=MIN_PROB)
    f.add_argument("--a-h", type=float, default=FITTED_A_H,
                   help="weight of the heads' posteriors beside the fitted namer (its corpus trained the heads too)")
    f.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)

    from pyutils.audio_tagger import TaggerError
    from pyutils.datadir.io import DataDirError, read_kv
    from pyutils.nvv_detect.events import read_events, write_events
    from pyutils.tags import challenge_tags
    from pyutils.whisper.weights import WhisperWeightsError

    tags = challenge_tags()
    try:
        if a.cmd == "fit":
            ev = Evidence(tags, embed=a.embed, threads=a.threads)
            rows = list(labelled_clips(a.data, tags)) + list(window_clips(a.windows, tags))
            if not rows:
                raise DetectorError(f"{', '.join(map(str, a.data + a.windows)) or 'no --data/--windows'}: "
                                    f"no clip whose text is one challenge tag, no tag window")
            feats = ev.features([r[1] for r in rows])
            namer = Namer(tags, a_h=a.a_h, min_prob=a.min_prob)
            X = namer.design(feats)
            y = np.array([tags.index(r[2]) for r in rows])
            namer.W, namer.b, namer.mu, namer.sigma = fit(X, y, len(tags), a.l2)
            acc = float((namer.probs(feats).argmax(axis=1) == y).mean())
            namer.save(a.out)
            print(f"naming: fitted on {len(rows)} clips ({len(set(y.tolist()))} tags), train accuracy {acc:.3f} -> {a.out}")
            return 0
        namer = Namer.load(a.model) if a.model else Namer(tags, a_w=a.a_w)
        if a.min_prob is not None:
            namer.min_prob = a.min_prob
        if a.a_h is not None:
            namer.a_h = a.a_h
        namer.known_min = a.known_min
        evidence = Evidence(namer.tags, whisper=not a.no_whisper, embed=namer.embed, threads=a.threads)
        events = read_events(str(a.events))
        from pyutils.nvv_detect.utt_sources import readable_audio

        log = lambda m: print(f"naming: {m}", file=sys.stderr)  # noqa: E731
        wanted = {u: e for u, e in read_kv(a.wav_scp).items() if u in events}
        out, n_in = [], sum(len(v) for v in events.values())
        for utt, x in readable_audio(wanted, log):
            out.extend(name_events(namer, evidence, x, events[utt], a.merge_gap))
        write_events(out, a.out)
        renamed = sum(r["tag"] != r["detected_as"] for r in out)
        print(f"naming: {n_in} events -> {len(out)} named ({renamed} renamed; "
              f"{n_in - len(out)} fewer: merged with a neighbour or below --min-prob) -> {a.out}")
    except (DetectorError, TaggerError, DataDirError, WhisperWeightsError, OSError, ValueError) as e:
        print(f"naming: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
