"""Per-tag thresholds of the NVV detector, chosen on the dev sets.

Thresholds (:func:`coordinate_ascent`): coordinate ascent over tags (two sweeps over the grid
``GRID`` = 0.10..0.90, step 0.05) of the micro event F1 of
:func:`pyutils.nvv_detect.events.match_counts` (``F1 = 2PR / (P + R)`` of the true/false
positives and misses summed over tags); a tag with no dev event keeps 0.5; of equal scores
the lower threshold wins. ``tune_on="all"``: every tag on all dev utterances; ``"split"``: a
tag with events in the real dev utterances (ids in ``real_dev``) is tuned on those alone, any
other tag on the rest (the corpus dev split). Never tuned on a test set.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.events import match_counts, micro

GRID = np.round(np.arange(0.10, 0.901, 0.05), 2)


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
