"""Objective TTS metrics that need no model: Fréchet distance, cosine
similarity, per-tag realisation table.

Pure numpy/scipy, unit-tested in tests/test_tts_metrics.py.
"""

from __future__ import annotations

import collections
import os
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
from scipy import linalg

from pyutils.tags import TAG_RE, normalize_tag_label


def frechet_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Fréchet distance between Gaussians fitted to two embedding sets (rows = samples):

        FD = ||mu_x - mu_y||^2 + Tr(S_x + S_y - 2 (S_x S_y)^{1/2})

    (Dowson & Landau 1982; the FID/FAD formula). With fewer samples than
    dimensions the covariances are rank-deficient and the estimate is biased
    upwards; compare against a real-vs-real split of the same size.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"need two (n, d) arrays with the same d, got {x.shape} and {y.shape}")
    if len(x) < 2 or len(y) < 2:
        raise ValueError("need at least 2 samples per set")
    mu_x, mu_y = x.mean(0), y.mean(0)
    s_x = np.atleast_2d(np.cov(x, rowvar=False))
    s_y = np.atleast_2d(np.cov(y, rowvar=False))
    covmean = linalg.sqrtm(s_x @ s_y)
    if not np.isfinite(covmean).all():  # near-singular product: regularise (as in FID code)
        eps = 1e-6 * np.eye(len(s_x))
        covmean = linalg.sqrtm((s_x + eps) @ (s_y + eps))
    covmean = np.real(covmean)
    diff = mu_x - mu_y
    return float(max(0.0, diff @ diff + np.trace(s_x) + np.trace(s_y) - 2.0 * np.trace(covmean)))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def tag_counts(text: str) -> collections.Counter:
    """Multiset of (normalised) tags in a tagged text."""
    return collections.Counter(normalize_tag_label(m.group(1).replace("_", " ")) for m in TAG_RE.finditer(text))


def per_tag_table(refs: Mapping[str, str], hyps: Mapping[str, str]) -> Dict[str, Dict[str, float]]:
    """Per tag: how often the input asked for it, how often the ASR found it.

    Within one utterance a requested tag counts as realised at most as many
    times as the ASR output contains it (multiset intersection); ``recall`` =
    realised / requested, ``precision`` = realised / tags of that kind in the
    ASR output of the same utterances. Utterances missing from ``hyps`` count
    as empty output. Position is not checked here (Track 1 F1 does that).
    """
    req: collections.Counter = collections.Counter()
    found: collections.Counter = collections.Counter()
    hyp_n: collections.Counter = collections.Counter()
    for uid, ref in refs.items():
        r = tag_counts(ref)
        h = tag_counts(hyps.get(uid, ""))
        req.update(r)
        hyp_n.update(h)
        found.update(r & h)
    table = {}
    for tag in sorted(set(req) | set(hyp_n)):
        table[tag] = {
            "requested": req[tag],
            "found": found[tag],
            "in_hyp": hyp_n[tag],
            "recall": found[tag] / req[tag] if req[tag] else float("nan"),
            "precision": found[tag] / hyp_n[tag] if hyp_n[tag] else float("nan"),
        }
    return table


def split_half(x: np.ndarray, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """Random halves of a sample set (for a real-vs-real Fréchet reference)."""
    idx = np.random.default_rng(seed).permutation(len(x))
    h = len(x) // 2
    return x[idx[:h]], x[idx[h:2 * h]]


def token_spans(tokens: Sequence[str], durations: Sequence[float], total_s: float) -> List[Tuple[str, float, float]]:
    """Times of each input token in the output audio from per-token durations
    (any unit; scaled so they add up to ``total_s``). Extra trailing durations
    (e.g. an end-of-sequence token) are kept in the total but not returned."""
    d = np.asarray(durations, dtype=np.float64)
    if d.sum() <= 0:
        return []
    edges = np.concatenate([[0.0], np.cumsum(d)]) / d.sum() * total_s
    return [(tok, float(edges[i]), float(edges[i + 1])) for i, tok in enumerate(tokens[: len(d)])]


def read_durations(path) -> Dict[str, List[float]]:
    """``{utt_id: [duration per input token, ...]}`` of a ``tts_inference`` durations file (``{}`` if absent)."""
    out: Dict[str, List[float]] = {}
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 1:
                    out[parts[0]] = [float(v) for v in parts[1:]]
    return out
