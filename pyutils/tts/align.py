"""Token durations by forced alignment, for duration-based TTS (ESPnet FastSpeech).

ESPnet's FastSpeech/FastSpeech2 need, per utterance, the number of feature frames
of every input token plus one for the ``<eos>`` the model appends
(``utt d1 d2 ... dN dEOS``, summing to the utterance's frame count). ESPnet recipes
take them from a Tacotron2 teacher or from the Montreal Forced Aligner; neither fits
here (no teacher worth the name trains in the CPU budget, MFA is not installed), so
this module trains a small aligner on the training data itself, the classic way:

* features: ESPnet's own ``LogMelFbank`` with the TTS config's settings (so the
  frame count is the TTS model's: :mod:`pyutils.tts.fbank`), as 13 cepstra + deltas +
  delta-deltas, mean/variance normalised per speaker;
* model: a left-to-right HMM per utterance made of one Gaussian (diagonal) per
  state, tied across utterances by token; phones and tags have ``--states``
  states (each at least one frame), pause tokens (``|``, punctuation and the final
  ``<eos>``) one state that may also take no frame at all, all tied to one silence
  model;
* training: flat start (tokens spread evenly over the voiced region), then Viterbi
  re-estimation for ``--iters`` rounds;
* known event times (the mini corpus's ``events.jsonl``: exact sample spans of
  every NVV) pin each tag token to its span: inside the span only the tag's states
  are allowed, and the tag nowhere else. A tag written as several tokens
  (``[laugh] [laugh]~2 [laugh]~3``, front-end ``--tag-parts``) is pinned as a whole,
  its parts share the span in order (each part its own states, so they learn the
  onset, middle and end of the event). A tag without a span is aligned like any
  token.

The Viterbi search is our own (a few lines, numba-compiled) because no installed
library does a forced alignment with optional (skippable) tokens and pinned spans.
An utterance with fewer frames than required states is retried with one state per
token, then split proportionally; both fallbacks are counted and named in the log.

    python -m pyutils.tts.align --config conf/tuning/train_fastspeech_mini.yaml \
        --train dump/raw/train_en --align dump/raw/train_en --align dump/raw/dev_en \
        --out-dir exp/align_en

writes ``<set>/durations`` for every ``--align`` set and ``<out-dir>/align_stats.json``.

One module: the HMM, its training loop and the duration read-out share the state layout
and the per-token state counts (split, each part would need the others' internals).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.datadir.io import read_kv, read_wav_scp_entry
from pyutils.io import InputError, atomic_write, iter_jsonl
from pyutils.tts.fbank import FbankConfigError, cepstra, feature_extractor, logmel
from pyutils.tts.frontend import tag_part_of

PAUSE_TOKENS = frozenset({"|", ",", ".", "?", "!"})
EOS = "<eos>"
SIL_MODEL = "<sil>"


class AlignError(ValueError):
    """Input the aligner cannot use (the message names the file / utterance)."""


def log(msg: str) -> None:
    print(f"align: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- HMM topology
class Topology:
    """States of one utterance: model ids, token of each state, predecessor ranges."""

    def __init__(self, tokens: Sequence[str], n_states: int, model_index: Dict[Tuple[str, int], int]):
        seq = list(tokens) + [EOS]
        self.tokens = seq
        self.skippable = [t in PAUSE_TOKENS or t == EOS for t in seq]
        models, owner, first_state = [], [], []
        for i, t in enumerate(seq):
            first_state.append(len(models))
            if self.skippable[i]:
                models.append(model_index[(SIL_MODEL, 0)])
                owner.append(i)
            else:
                for k in range(n_states):
                    models.append(model_index.setdefault((t, k), len(model_index)))
                    owner.append(i)
        self.models = np.asarray(models, dtype=np.int64)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.first_state = first_state
        n = len(models)
        self.lo = np.arange(-1, n - 1, dtype=np.int64)     # default: from s-1
        self.start = np.zeros(n, dtype=np.bool_)
        self.end = np.zeros(n, dtype=np.bool_)
        last_state = [first_state[i + 1] - 1 if i + 1 < len(seq) else n - 1 for i in range(len(seq))]
        for i in range(len(seq)):
            s = first_state[i]
            j = i - 1                         # earliest token we may come from: skip pauses back
            while j >= 0 and self.skippable[j]:
                j -= 1
            if j >= 0:
                self.lo[s] = last_state[j]
            else:
                self.lo[s] = 0 if i > 0 else -1
                self.start[s] = True
            if i > 0 and all(self.skippable[:i]):
                self.start[s] = True
        for i in range(len(seq)):
            if all(self.skippable[i + 1:]):
                self.end[last_state[i]] = True
        self.lo[0] = -1
        self.start[0] = True


def _viterbi_py(ll, lo, start, end):
    """Reference implementation (used when numba is missing): state path or None."""
    T, S = ll.shape
    neg = -np.inf
    delta = np.full(S, neg)
    delta[start] = ll[0, start]
    back = np.zeros((T, S), dtype=np.int64)
    for t in range(1, T):
        new = np.full(S, neg)
        for s in range(S):
            best, arg = delta[s], s
            a = lo[s] if lo[s] >= 0 else s
            for p in range(a, s):
                if delta[p] > best:
                    best, arg = delta[p], p
            new[s] = best + ll[t, s]
            back[t, s] = arg
        delta = new
    cand = np.where(end, delta, neg)
    s = int(np.argmax(cand))
    if not np.isfinite(cand[s]):
        return None
    path = np.empty(T, dtype=np.int64)
    for t in range(T - 1, -1, -1):
        path[t] = s
        s = back[t, s]
    return path


try:  # numba is installed with librosa; the pure-numpy fallback keeps this importable without it
    import numba

    @numba.njit(cache=True)
    def _viterbi_nb(ll, lo, start, end):  # pragma: no cover - compiled
        T, S = ll.shape
        neg = -np.inf
        delta = np.full(S, neg)
        for s in range(S):
            if start[s]:
                delta[s] = ll[0, s]
        back = np.zeros((T, S), dtype=np.int64)
        new = np.empty(S)
        for t in range(1, T):
            for s in range(S):
                best = delta[s]
                arg = s
                a = lo[s] if lo[s] >= 0 else s
                for p in range(a, s):
                    if delta[p] > best:
                        best = delta[p]
                        arg = p
                new[s] = best + ll[t, s]
                back[t, s] = arg
            for s in range(S):
                delta[s] = new[s]
        bs = -1
        bv = neg
        for s in range(S):
            if end[s] and delta[s] > bv:
                bv = delta[s]
                bs = s
        path = np.empty(T, dtype=np.int64)
        if bs < 0:
            path[:] = -1
            return path
        s = bs
        for t in range(T - 1, -1, -1):
            path[t] = s
            s = back[t, s]
        return path

    def viterbi(ll, lo, start, end):
        path = _viterbi_nb(np.ascontiguousarray(ll, dtype=np.float64), lo, start, end)
        return None if path[0] < 0 else path
except ImportError:  # pragma: no cover
    viterbi = _viterbi_py


# ---------------------------------------------------------------- the aligner
class Aligner:
    """Tied diagonal Gaussians per (token, state) + one silence model."""

    def __init__(self, n_states: int = 2):
        self.n_states = n_states
        self.index: Dict[Tuple[str, int], int] = {(SIL_MODEL, 0): 0}
        self.mean: Optional[np.ndarray] = None
        self.var: Optional[np.ndarray] = None

    def topology(self, tokens: Sequence[str], n_states: Optional[int] = None) -> Topology:
        return Topology(tokens, n_states or self.n_states, self.index)

    def loglik(self, x: np.ndarray, models: np.ndarray) -> np.ndarray:
        """(T, S) Gaussian log-likelihoods (constant dropped) of frames x under the states' models."""
        n = len(self.index)
        if len(self.mean) < n:      # a token unseen in training: the normalised features' N(0, 1)
            k = n - len(self.mean)
            self.mean = np.concatenate([self.mean, np.zeros((k, self.mean.shape[1]))])
            self.var = np.concatenate([self.var, np.ones((k, self.var.shape[1]))])
        m, iv = self.mean[models], 1.0 / self.var[models]     # (S, D)
        x = x.astype(np.float64)
        quad = (x * x) @ iv.T - 2.0 * x @ (m * iv).T + (m * m * iv).sum(-1)[None]
        return -0.5 * (quad + np.log(self.var[models]).sum(-1)[None])

    def estimate(self, stats: Tuple[np.ndarray, np.ndarray, np.ndarray], global_var: np.ndarray) -> None:
        cnt, s1, s2 = stats
        n = len(self.index)
        prev_m = self.mean if self.mean is not None and len(self.mean) == n else None
        mean = np.zeros((n, s1.shape[1])); var = np.tile(global_var, (n, 1))
        ok = cnt > 0
        mean[ok] = s1[ok] / cnt[ok, None]
        var[ok] = s2[ok] / cnt[ok, None] - mean[ok] ** 2
        if prev_m is not None:
            mean[~ok] = prev_m[~ok]
        var = np.maximum(var, 0.05 * global_var[None])
        self.mean, self.var = mean, var


def tag_group(tokens: Sequence[str], i: int) -> List[int]:
    """Indices of tag token ``i`` and of its parts 2, 3, ... that follow it."""
    group = [i]
    while group[-1] + 1 < len(tokens) and tag_part_of(tokens[group[-1] + 1]) == (tokens[i], len(group) + 1):
        group.append(group[-1] + 1)
    return group


def pinned_mask(topo: Topology, T: int, spans: Dict[int, Tuple[int, int]]) -> Optional[np.ndarray]:
    """Boolean (T, S) of allowed states, from {tag token index: (first frame, end frame)};
    the tag's parts (:func:`tag_group`) share its span."""
    if not spans:
        return None
    allowed = np.ones((T, len(topo.models)), dtype=bool)
    for i, (a, b) in spans.items():
        states = np.isin(topo.owner, tag_group(topo.tokens, i))
        allowed[:, states] = False
        allowed[a:b, :] = False
        allowed[a:b, states] = True
    return allowed


def event_spans(tokens: Sequence[str], events: List[dict], hop_s: float, T: int) -> Dict[int, Tuple[int, int]]:
    """Tag token index -> frame span, matching the k-th tag token to the k-th event in time."""
    tag_pos = [i for i, t in enumerate(tokens) if t.startswith("[") and t.endswith("]")]
    evs = sorted(events, key=lambda e: (float(e["start"]), int(e.get("order", 0))))
    if len(tag_pos) != len(evs):
        return {}
    out = {}
    for i, e in zip(tag_pos, evs):
        if tokens[i][1:-1].replace("_", " ") != str(e["tag"]).replace("_", " "):
            return {}
        a = int(round(float(e["start"]) / hop_s)); b = int(round(float(e["end"]) / hop_s))
        a = min(max(a, 0), T - 1); b = min(max(b, a + 1), T)
        out[i] = (a, b)
    # spans must be ordered and disjoint
    prev = 0
    for i in sorted(out):
        a, b = out[i]
        if a < prev:
            return {}
        prev = b
    return out


def flat_path(topo: Topology, x: np.ndarray) -> np.ndarray:
    """Initial state path: pauses on low-energy edges, other states evenly over the rest."""
    T = len(x)
    e = x[:, 0]
    thr = 0.5 * (np.percentile(e, 10) + np.percentile(e, 90))
    voiced = np.nonzero(e > thr)[0]
    a, b = (int(voiced[0]), int(voiced[-1]) + 1) if len(voiced) else (0, T)
    speech_states = np.nonzero(~np.isin(topo.owner, [i for i, s in enumerate(topo.skippable) if s]))[0]
    path = np.zeros(T, dtype=np.int64)          # state 0 = first token's first state
    sil_first = topo.first_state[0] if topo.skippable[0] else None
    sil_last = len(topo.models) - 1             # <eos>
    if len(speech_states) == 0 or b - a < len(speech_states):
        return np.linspace(0, len(topo.models) - 1e-9, T).astype(np.int64)
    bounds = np.linspace(a, b, len(speech_states) + 1).astype(int)
    for k, s in enumerate(speech_states):
        path[bounds[k]:bounds[k + 1]] = s
    path[:a] = sil_first if sil_first is not None else speech_states[0]
    path[b:] = sil_last
    return path


class Utt:
    __slots__ = ("uid", "spk", "tokens", "x", "spans")

    def __init__(self, uid, spk, tokens, x, spans):
        self.uid, self.spk, self.tokens, self.x, self.spans = uid, spk, tokens, x, spans


def load_set(set_dir: str, fe, hop_s: float) -> List[Utt]:
    """Features, tokens and pinned event spans of one dumped data dir."""
    text = read_kv(os.path.join(set_dir, "text"))
    wavs = read_kv(os.path.join(set_dir, "wav.scp"))
    u2s_path = os.path.join(set_dir, "utt2spk")
    utt2spk = read_kv(u2s_path) if os.path.isfile(u2s_path) else {}
    events: Dict[str, List[dict]] = {}
    ev_path = os.path.join(set_dir, "events.jsonl")
    if os.path.isfile(ev_path):
        for lineno, row in iter_jsonl(ev_path):  # InputError (file:line) on a line that is not an object
            try:
                events[str(row["utt_id"])] = list(row.get("events") or [])
            except (KeyError, TypeError) as e:
                raise AlignError(f"{ev_path}:{lineno}: bad event row ({e})") from None
    utts = []
    for uid, toks in text.items():
        if uid not in wavs:
            raise AlignError(f"{set_dir}/wav.scp: no audio for utterance {uid}")
        x, sr = read_wav_scp_entry(wavs[uid])
        x = x.mean(axis=1) if x.ndim == 2 else x
        feats = cepstra(logmel(fe, x))
        tokens = toks.split()
        if not tokens:
            raise AlignError(f"{set_dir}/text: {uid}: no tokens")
        spans = event_spans(tokens, events.get(uid, []), hop_s, len(feats)) if uid in events else {}
        utts.append(Utt(uid, utt2spk.get(uid, uid), tokens, feats, spans))
    return utts


def normalise_per_speaker(utts: List[Utt]) -> None:
    by_spk: Dict[str, List[Utt]] = {}
    for u in utts:
        by_spk.setdefault(u.spk, []).append(u)
    for group in by_spk.values():
        allx = np.concatenate([u.x for u in group])
        mu, sd = allx.mean(0), allx.std(0) + 1e-5
        for u in group:
            u.x = ((u.x - mu) / sd).astype(np.float32)


def align_utt(al: Aligner, u: Utt, counts: Dict[str, int]) -> Tuple[np.ndarray, Topology]:
    """State path of one utterance (with fallbacks), and its topology."""
    for n_states in (al.n_states, 1):
        topo = al.topology(u.tokens, n_states)
        ll = al.loglik(u.x, topo.models)
        mask = pinned_mask(topo, len(u.x), u.spans)
        if mask is not None:
            ll = np.where(mask, ll, -np.inf)
        path = viterbi(ll, topo.lo, topo.start, topo.end)
        if path is None and mask is not None:      # pinned spans impossible: drop them
            path = viterbi(al.loglik(u.x, topo.models), topo.lo, topo.start, topo.end)
            if path is not None:
                counts["spans_dropped"] += 1
        if path is not None:
            if n_states != al.n_states:
                counts["one_state"] += 1
            return path, topo
    counts["proportional"] += 1
    return None, al.topology(u.tokens, 1)


def durations_of(path: Optional[np.ndarray], topo: Topology, T: int) -> np.ndarray:
    n_tok = len(topo.tokens)
    if path is None:
        # fewer frames than tokens: proportional split (counted and logged by the caller)
        bounds = np.linspace(0, T, n_tok + 1).round().astype(int)
        return np.diff(bounds)
    return np.bincount(topo.owner[path], minlength=n_tok)


def reduce_durations(d: np.ndarray, r: int, T: int) -> np.ndarray:
    """Frame durations -> durations in units of ``r`` frames summing to ``T // r``.

    ESPnet's FastSpeech with ``reduction_factor`` r expands tokens to ``T // r``
    decoder steps. Token boundaries are rounded to the nearest step, so the
    total is exact and no boundary moves by more than r/2 frames.
    """
    if r <= 1:
        return d
    cum = np.minimum(np.round(np.cumsum(d) / r).astype(int), T // r)
    cum[-1] = T // r
    return np.diff(np.concatenate([[0], cum]))


def train(al: Aligner, utts: List[Utt], iters: int) -> List[float]:
    dim = utts[0].x.shape[1]
    allx = np.concatenate([u.x for u in utts])
    gvar = allx.var(0) + 1e-5
    paths = [(flat_path(al.topology(u.tokens), u.x), al.topology(u.tokens)) for u in utts]
    history = []
    for it in range(iters + 1):
        n = len(al.index)
        cnt = np.zeros(n); s1 = np.zeros((n, dim)); s2 = np.zeros((n, dim))
        for u, (path, topo) in zip(utts, paths):
            if path is None:
                continue
            m = topo.models[path]
            np.add.at(cnt, m, 1)
            np.add.at(s1, m, u.x)
            np.add.at(s2, m, u.x.astype(np.float64) ** 2)
        al.estimate((cnt, s1, s2), gvar)
        if it == iters:
            break
        counts = {"spans_dropped": 0, "one_state": 0, "proportional": 0}
        tot = 0.0
        new_paths = []
        for u in utts:
            path, topo = align_utt(al, u, counts)
            if path is not None:
                tot += float(al.loglik(u.x, topo.models)[np.arange(len(path)), path].sum())
            new_paths.append((path, topo))
        paths = new_paths
        history.append(tot / len(allx))
        log(f"iteration {it + 1}/{iters}: mean log-likelihood per frame {history[-1]:.3f} {counts}")
    return history


def write_durations(al: Aligner, utts: List[Utt], path: str, reduction_factor: int = 1) -> Dict[str, int]:
    counts = {"spans_dropped": 0, "one_state": 0, "proportional": 0}
    rows = []
    for u in utts:
        p, topo = align_utt(al, u, counts)
        d = durations_of(p, topo, len(u.x))
        assert int(d.sum()) == len(u.x) and len(d) == len(u.tokens) + 1
        d = reduce_durations(d, reduction_factor, len(u.x))
        rows.append(f"{u.uid} {' '.join(str(int(v)) for v in d)}\n")
        if p is None:
            log(f"warning: {u.uid}: {len(u.tokens)} tokens in {len(u.x)} frames; durations split proportionally")
    with atomic_write(path) as f:
        f.writelines(rows)
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Token durations by forced alignment (see module doc).")
    ap.add_argument("--config", required=True, help="TTS training config (feats_extract_conf is used)")
    ap.add_argument("--train", required=True, action="append", help="data dir(s) to train the aligner on")
    ap.add_argument("--align", required=True, action="append", help="data dir(s) to write durations for")
    ap.add_argument("--out-dir", required=True, help="where align_stats.json goes")
    ap.add_argument("--states", type=int, default=2, help="HMM states per phone/tag token (min frames)")
    ap.add_argument("--iters", type=int, default=6)
    a = ap.parse_args(argv)
    import yaml

    t0 = time.time()
    try:
        with open(a.config, encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
        fe = feature_extractor(config)
        reduction_factor = int((config.get("tts_conf") or {}).get("reduction_factor", 1) or 1)
        conf = fe.get_parameters()
        hop_s = float(conf["n_shift"]) / float(conf["fs"])
        sets: Dict[str, List[Utt]] = {}
        for d in dict.fromkeys(a.train + a.align):
            sets[d] = load_set(d, fe, hop_s)
            normalise_per_speaker(sets[d])
            n_pinned = sum(bool(u.spans) for u in sets[d])
            log(f"{d}: {len(sets[d])} utterances, {sum(len(u.x) for u in sets[d])} frames, "
                f"event spans pinned in {n_pinned}")
        al = Aligner(a.states)
        train_utts = [u for d in a.train for u in sets[d]]
        history = train(al, train_utts, a.iters)
        tag_parts = max([tag_part_of(t)[1] for u in train_utts for t in u.tokens] + [1])
        stats = {"iters": a.iters, "states": a.states, "reduction_factor": reduction_factor,
                 "tag_parts": tag_parts, "loglik_per_frame": history, "sets": {}}
        for d in a.align:
            counts = write_durations(al, sets[d], os.path.join(d, "durations"), reduction_factor)
            stats["sets"][d] = dict(counts, utts=len(sets[d]),
                                    pinned=sum(bool(u.spans) for u in sets[d]))
            log(f"{d}/durations written ({counts})")
    except (AlignError, FbankConfigError, InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    stats["seconds"] = round(time.time() - t0, 1)
    os.makedirs(a.out_dir, exist_ok=True)
    with atomic_write(os.path.join(a.out_dir, "align_stats.json")) as f:
        json.dump(stats, f, indent=1)
    log(f"done in {stats['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
