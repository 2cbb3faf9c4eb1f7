#!/usr/bin/env python3
"""How far each recording's noise floor lies under its speech, per talker.

floor SNR (dB) = 20 log10(active_rms / floor_rms), where ``active_rms`` is the
speech-activity level of :func:`pyutils.synth.audio.active_rms` (RMS over the 20 ms
frames within 30 dB of the loudest) and ``floor_rms`` the ``--percentile``-th
percentile (default 5) of the 20 ms frame RMS values.  The simulator labels added
noise at 0-25 dB SNR and draws benign channel floors 30-65 dB under the speech
(``pyutils/synth/faults.py``, ``pyutils/synth/channel.py``), so a real source whose
own floor sits near 25 dB is on the edge of the noise label.

Reads a data dir (``wav.scp``; ``utt2spk`` to group, else one group).  With
``--ref`` it keeps only recordings whose reference holds no noise interval and
leaves the frames inside their other fault intervals out of the floor (an
inserted digital-silence pause would otherwise be the floor): what is left is the
real source's own floor.  Prints one row per
recording and a per-talker summary (10th/50th/90th percentile, share under
``--edge`` dB).  Example, from ``egs/sqa``::

    python ../../benchmarks/sqa_floor_snr.py data/test_real --ref dump/test_real/ref.jsonl
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import numpy as np

from pyutils.sqa.audio import AudioError, load_audio
from pyutils.sqa.breakdown import load_utt2spk
from pyutils.io import read_jsonl, read_scp
from pyutils.synth import SAMPLE_RATE
from pyutils.synth.audio import active_rms, frame_power

FRAME_S = 0.02


def floor_snr_db(x: np.ndarray, sr: int = SAMPLE_RATE, percentile: float = 5.0,
                 skip: list | tuple = ()) -> float:
    """20 log10(active_rms / p-th percentile of the 20 ms frame RMS); inf for digital silence.

    ``skip``: ``[start, end]`` intervals (s) whose frames are left out of the floor."""
    frames = np.sqrt(frame_power(x, sr, FRAME_S))
    m = len(frames)
    if m == 0:
        raise ValueError(f"shorter than one {FRAME_S * 1000:.0f} ms frame")
    t = (np.arange(m) + 0.5) * FRAME_S
    keep = np.ones(m, dtype=bool)
    for start, end in skip:
        keep &= ~((t >= start) & (t < end))
    if not keep.any():
        raise ValueError("every frame lies inside a skipped interval")
    floor = float(np.percentile(frames[keep], percentile))
    speech = active_rms(x, sr, FRAME_S)
    if speech <= 0:
        raise ValueError("no signal")
    return float("inf") if floor <= 0 else 20.0 * np.log10(speech / floor)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data_dir", help="a data dir with wav.scp (and utt2spk to group by talker)")
    p.add_argument("--ref", default=None, help="ref.jsonl: keep only recordings without a noise interval")
    p.add_argument("--percentile", type=float, default=5.0, help="frame-RMS percentile taken as the floor")
    p.add_argument("--edge", type=float, default=25.0, help="the noise label's edge (dB) for the share column")
    p.add_argument("--quiet", action="store_true", help="summary only")
    a = p.parse_args(argv)
    spk_path = os.path.join(a.data_dir, "utt2spk")
    utt2spk = load_utt2spk(spk_path) if os.path.exists(spk_path) else {}
    skip = None
    if a.ref:  # {utt: the intervals of its other faults}, recordings without noise only
        skip = {r["utt_id"]: [iv for ivs in r.get("faults", {}).values() for iv in ivs]
                for r in read_jsonl(a.ref) if not r.get("faults", {}).get("noise")}
    by_spk = defaultdict(list)
    for utt, entry in read_scp(os.path.join(a.data_dir, "wav.scp")):
        if skip is not None and utt not in skip:
            continue
        try:
            snr = floor_snr_db(load_audio(entry, name=utt), percentile=a.percentile,
                               skip=skip[utt] if skip is not None else ())
        except (AudioError, ValueError) as exc:
            print(f"{utt}: skipped ({exc})", file=sys.stderr)
            continue
        by_spk[utt2spk.get(utt, "all")].append(snr)
        if not a.quiet:
            print(f"{utt}\t{snr:.1f}")
    print(f"\n| talker | recordings | p10 | p50 | p90 | under {a.edge:g} dB |")
    print("|---|---|---|---|---|---|")
    for spk in sorted(by_spk):
        v = np.array(by_spk[spk])
        q = np.percentile(v, [10, 50, 90])
        print(f"| {spk} | {len(v)} | {q[0]:.1f} | {q[1]:.1f} | {q[2]:.1f} | {np.mean(v < a.edge):.0%} |")
    return 0 if by_spk else 1


if __name__ == "__main__":
    sys.exit(main())
