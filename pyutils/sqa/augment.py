"""On-the-fly fault augmentation with exact intervals (pyutils/synth/faults.py).

- a recording whose reference has no fault gets 1-3 random faults (pauses
  included: they shift the timeline, which is fine as nothing is labelled yet);
- a recording that already has faults gets one more noise or distortion fault
  only (no pause, so its labelled intervals stay on the same timeline); the
  new intervals are added to the old ones.

The reference score no longer applies to the result, so the training loop
gives augmented examples no score loss (see :mod:`pyutils.sqa.dataset`).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from pyutils.sqa.common import FAULTS, SAMPLE_RATE


def make_fault_augmenter(fault_sim, exclude=()) -> Callable:
    """``fault_sim`` is the module :mod:`pyutils.synth.faults`; ``exclude`` lists fault
    kinds, families or types it must never make (held-out-family training)."""
    exclude = tuple(exclude or ())
    fault_sim.allowed_kinds(exclude)   # unknown names fail now, not in a worker

    def augment(x: np.ndarray, rng: np.random.Generator, ref: Optional[dict]):
        old = {f: list((ref or {}).get("faults", {}).get(f, []) or []) for f in FAULTS}
        if not any(old.values()):
            y, ivs, _ = fault_sim.apply_random_faults(x, rng, SAMPLE_RATE, n_faults=int(rng.integers(1, 4)),
                                                      exclude=exclude)
            return y, {f: [list(map(float, iv)) for iv in ivs.get(f, [])] for f in FAULTS}
        y, ivs, _ = fault_sim.apply_random_faults(x, rng, SAMPLE_RATE, n_faults=1,
                                                  types=("noise", "distortion"), exclude=exclude)
        merged = {f: sorted(old[f] + [list(map(float, iv)) for iv in ivs.get(f, [])]) for f in FAULTS}
        return y, merged

    return augment
