"""Per-tag thresholds and per-tag sources of the NVV detectors, chosen on the dev sets.

Thresholds (:func:`coordinate_ascent`): coordinate ascent over tags (two sweeps over the grid
``GRID`` = 0.10..0.90, step 0.05) of the micro event F1 of
:func:`pyutils.nvv_detect.events.match_counts` (``F1 = 2PR / (P + R)`` of the true/false
positives and misses summed over tags); a tag with no dev event keeps 0.5; of equal scores
the lower threshold wins. ``tune_on="all"``: every tag on all dev utterances; ``"split"``: a
tag with events in the real dev utterances (ids in ``real_dev``) is tuned on those alone, any
other tag on the rest (the corpus dev split).

Sources (:func:`choose_sources`, the YAMNet detector): per tag, the naive zero-shot mapping
replaces the classifier where its event F1 on the same dev utterances is higher. Never tuned
on a test set.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.events import frames_to_events, match_counts, micro, prf

GRID = np.round(np.arange(0.10, 0.901, 0.05), 2)


def choose_sources(det, dev, naive: Dict[str, np.ndarray], real_dev: Sequence[str],
                   tune_on: str = "split") -> Dict[str, list]:
    """Per tag of the YAMNet detector ``det``: the naive mapping replaces the classifier when its
    event F1 on the tag's dev utterances (real dev for the recorded tags, else the corpus dev) is
    higher. Sets ``det.naive_tags``; returns ``{tag: [F1 model, F1 naive]}``."""
    from pyutils.nvv_detect.yamnet_features import NAIVE_THRESHOLD

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


def coordinate_ascent(probs: Sequence[Tuple[str, np.ndarray, np.ndarray]], ref: Dict[str, List[dict]],
                      tags: Sequence[str], to_events, real_dev: Sequence[str] = (), sweeps: int = 2,
                      tune_on: str = "split") -> Tuple[np.ndarray, Dict[str, List[int]]]:
    """Per-tag thresholds maximising the micro event F1 of ``to_events(utt, starts, probs,
    tags, thresholds)`` on the dev utterances ``probs`` = ``[(utt, starts, (N, T) probs)]``
    (``real_dev``, ``tune_on``: see the module docstring)."""
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
