#!/usr/bin/env python3
"""Simple physical measures of each simulated fault kind, inside its interval.

Evidence for the fault detector's class boundaries (egs/sqa RESULTS.md,
"Generalisation"): on the corpus' single-fault recordings (no pause, interval
>= 0.6 s), per 20 ms frame energy ``e`` (dB) and spectrum, medians per kind of

* ``floor``: 10th percentile of ``e`` inside the interval, relative to the
  recording's 90th percentile (how far the gaps between words are filled);
* ``rise``: that floor minus the same percentile outside the interval;
* ``flat``: spectral flatness (100 Hz - 7 kHz) of the quietest 30 % of frames
  inside (1 = white, near 0 = tonal or speech-like);
* ``dyn``: standard deviation of ``e`` inside (level fluctuation);
* ``lag``: correlation, over the quieter half of the frames inside, of ``e``
  with the energy 100 ms earlier (energy in the gaps that follows the speech
  before it, as a reverberation tail or an echo does, gives a high value).

    python benchmarks/sqa_fault_physics.py egs/sqa/corpus/sqa_mini3_default [--split train]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import numpy as np
import soundfile as sf

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from pyutils.io import read_jsonl  # noqa: E402

FRAME_S = 0.02
LAG_FRAMES = 5          # 100 ms


def measures(x: np.ndarray, sr: int, start: float, end: float) -> tuple | None:
    """(floor, rise, flat, dyn, lag) of the interval [start, end) s of ``x``; None if too short."""
    n = int(FRAME_S * sr)
    m = len(x) // n
    if m < 2 * LAG_FRAMES + 10:
        return None
    fr = x[: m * n].reshape(m, n)
    e = 10 * np.log10((fr ** 2).mean(1) + 1e-10)
    tc = (np.arange(m) + 0.5) * FRAME_S
    ins = (tc >= start) & (tc < end)
    if ins.sum() < 2 * LAG_FRAMES + 5:
        return None
    top = np.percentile(e, 90)
    floor = np.percentile(e[ins], 10) - top
    out = ~ins
    rise = floor - (np.percentile(e[out], 10) - top) if out.sum() >= 10 else np.nan
    spec = np.abs(np.fft.rfft(fr * np.hanning(n), axis=1)) ** 2 + 1e-12
    f = np.fft.rfftfreq(n, 1 / sr)
    sp = spec[:, (f > 100) & (f < 7000)]
    flatness = np.exp(np.log(sp).mean(1)) / sp.mean(1)
    low = ins & (e <= np.percentile(e[ins], 30))
    idx = np.nonzero(ins & (e <= np.median(e[ins])))[0]
    idx = idx[idx >= LAG_FRAMES]
    a, b = e[idx], e[idx - LAG_FRAMES]
    lag = float(np.corrcoef(a, b)[0, 1]) if len(idx) > 3 and a.std() > 0 and b.std() > 0 else np.nan
    return floor, rise, float(flatness[low].mean()), float(np.std(e[ins])), lag


def single_fault_recordings(corpus: str, split: str):
    """(fault, mono float64 samples, rate) of each recording with exactly one noise or
    distortion fault of >= 0.6 s and nothing else (``faults/<split>.jsonl``)."""
    for r in read_jsonl(os.path.join(corpus, "faults", f"{split}.jsonl")):
        d = r["details"]
        if len(d) != 1 or d[0]["type"] == "pause" or d[0]["end"] - d[0]["start"] < 0.6:
            continue
        x, sr = sf.read(os.path.join(corpus, "wav", f"{r['utt_id']}.wav"), dtype="float64", always_2d=True)
        yield d[0], x.mean(1), sr


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="chorus-synth sqa output dir (faults/<split>.jsonl, wav/)")
    p.add_argument("--split", default="train")
    a = p.parse_args(argv)
    acc = collections.defaultdict(list)
    for fault, x, sr in single_fault_recordings(a.corpus, a.split):
        v = measures(x, sr, fault["start"], fault["end"])
        if v is not None:
            acc[(fault["type"], fault["kind"])].append(v)
    print("| type | kind | n | floor (dB) | rise (dB) | flat | dyn (dB) | lag |")
    print("|---|---|---|---|---|---|---|---|")
    for (t, k), v in sorted(acc.items()):
        med = np.nanmedian(np.array(v), 0)
        print(f"| {t} | {k} | {len(v)} | {med[0]:.1f} | {med[1]:.1f} | {med[2]:.3f} | {med[3]:.1f} | {med[4]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
