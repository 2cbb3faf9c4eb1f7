"""Non-learned SQA baselines, reported beside the model.

- score: DNSMOS P.835 overall MOS (``speechmos.dnsmos``, ONNX models shipped in
  the wheel), clipped to [1, 5];
- pause: silero-vad (ONNX model shipped in the wheel) speech segments; a pause
  is a gap between two speech segments lasting at least ``min_pause`` s;
- noise: energy floor. Per 20 ms frame, energy ``E = 10 log10(mean(x^2))`` dB;
  the local floor is the minimum of ``E`` over a 300 ms window; frames whose
  floor exceeds ``noise_db`` are noisy (speech alone has quiet gaps between
  syllables; added noise lifts them);
- distortion: clipping. Per frame, the fraction of samples within 1% of the
  frame's peak (flat tops); frames above ``clip_frac`` are distorted. Only
  clipping-like distortions can be found this way.

Each detector's one or two thresholds are tuned on dev with the scorer, like
the model's post-processing. Stages::

    python -m pyutils.sqa.baselines measure --wav-scp W --utt2dur D --out M.jsonl
    python -m pyutils.sqa.baselines tune --measures dev/M.jsonl --ref dev/ref.jsonl --out params.json
    python -m pyutils.sqa.baselines hyp --measures test/M.jsonl --params params.json --outdir test/
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Dict, List

import numpy as np
from scipy.ndimage import minimum_filter1d

from pyutils.sqa.audio import AudioError, load_checked
from pyutils.sqa.common import FAULTS, FRAME_SHIFT, SAMPLE_RATE, num_grid_frames
from pyutils.io import atomic_write, read_jsonl, read_scp, write_jsonl
from pyutils.sqa.postproc import smooth_and_threshold
from pyutils.sqa.common import frames_to_intervals

FRAME = int(FRAME_SHIFT * SAMPLE_RATE)
DEFAULT_PARAMS = {"min_pause": 0.3, "noise_db": -45.0, "clip_frac": 0.05}
GRID = {"min_pause": [0.15, 0.2, 0.3, 0.4, 0.6, 0.8],
        "noise_db": [-70.0, -65.0, -60.0, -55.0, -50.0, -45.0, -40.0, -35.0, -30.0],
        "clip_frac": [0.02, 0.04, 0.08, 0.15, 0.3]}


def frame_energy_db(x: np.ndarray, n: int) -> np.ndarray:
    """(n,) energy in dB of the 20 ms grid frames (zero-padded at the end)."""
    x = np.pad(x, (0, max(0, n * FRAME - len(x))))[: n * FRAME].reshape(n, FRAME)
    return 10.0 * np.log10(np.mean(x.astype(np.float64) ** 2, axis=1) + 1e-12)


def clip_fraction(x: np.ndarray, n: int, floor: float = 0.02) -> np.ndarray:
    """(n,) per frame: fraction of samples within 1% of that frame's peak.

    Clipped audio sits on flat tops, so many samples share the frame maximum;
    natural speech reaches its frame peak at one or two samples. Frames whose
    peak is below ``floor`` (near silence) get 0.
    """
    x = np.abs(np.pad(x, (0, max(0, n * FRAME - len(x))))[: n * FRAME].reshape(n, FRAME))
    peak = x.max(axis=1, keepdims=True)
    frac = (x >= 0.99 * peak).mean(axis=1)
    frac[peak[:, 0] < floor] = 0.0
    return frac


class DnsmosP835:
    """DNSMOS P.835 (SIG/BAK/OVRL) as a dict: :class:`pyutils.sqa.embed.DnsmosP835` (one ONNX
    thread, non-overlapping 9.01 s windows, short audio tiled to one window)."""

    def __init__(self):
        from pyutils.sqa.embed import DnsmosP835 as P835

        self._p835 = P835()

    def __call__(self, x: np.ndarray) -> dict:
        sig, bak, ovr = self._p835(x)
        return {"sig_mos": float(sig), "bak_mos": float(bak), "ovrl_mos": float(ovr)}


class Measurer:
    """Loads silero-vad (and DNSMOS) once; ``measure(x)`` -> raw numbers per recording."""

    def __init__(self, use_dnsmos: bool = True):
        from silero_vad import get_speech_timestamps, load_silero_vad

        self.vad = load_silero_vad(onnx=True)
        self.get_ts = get_speech_timestamps
        self.dnsmos = DnsmosP835() if use_dnsmos else None

    def measure(self, x: np.ndarray, duration: float) -> dict:
        import torch

        n = num_grid_frames(duration)
        peak = float(np.max(np.abs(x)))
        xin = x / peak * 0.9 if peak > 1.0 else x
        mos = self.dnsmos(xin) if self.dnsmos is not None else {"ovrl_mos": 3.0}
        ts = self.get_ts(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), self.vad,
                         sampling_rate=SAMPLE_RATE, return_seconds=True, min_silence_duration_ms=60,
                         speech_pad_ms=0)
        return {"duration": duration,
                "dnsmos": mos,
                "speech": [[float(t["start"]), float(t["end"])] for t in ts],
                "energy_db": np.round(frame_energy_db(x, n), 1).tolist(),
                "clip_frac": np.round(clip_fraction(x, n), 4).tolist()}


def pauses_from_speech(speech: List[List[float]], min_pause: float) -> List[List[float]]:
    """Gaps of at least ``min_pause`` s between consecutive speech segments."""
    out = []
    for (_, e0), (s1, _) in zip(speech[:-1], speech[1:]):
        if s1 - e0 >= min_pause:
            out.append([round(e0, 3), round(s1, 3)])
    return out


def hyp_row(utt: str, m: dict, params: dict) -> dict:
    e = np.asarray(m["energy_db"])
    floor = minimum_filter1d(e, size=15, mode="nearest") if len(e) else e
    noise = smooth_and_threshold((floor > params["noise_db"]).astype(np.float32), 1, 0.5, 0.1, 0.2)
    clip = smooth_and_threshold((np.asarray(m["clip_frac"]) > params["clip_frac"]).astype(np.float32),
                                1, 0.5, 0.3, 0.04)
    dur = m["duration"]

    def clipped(ivs):
        return [[s, round(min(e_, dur), 3)] for s, e_ in ivs if s < dur and min(e_, dur) > s]

    score = float(np.clip(m["dnsmos"]["ovrl_mos"], 1.0, 5.0))
    return {"utt_id": utt, "score": round(score, 4),
            "faults": {"noise": clipped(frames_to_intervals(noise)),
                       "distortion": clipped(frames_to_intervals(clip)),
                       "pause": pauses_from_speech(m["speech"], params["min_pause"])}}


def load_measures(path: str) -> Dict[str, dict]:
    return {r["utt_id"]: r for r in read_jsonl(path)}


def tune(measures: Dict[str, dict], ref_rows: List[dict]) -> tuple:
    """Per-detector grid search maximising that fault's F1 + IoU on dev."""
    from pyutils.scoring.sqa import score_sqa
    from pyutils.sqa.postproc import fault_metrics

    best = {}
    which = {"min_pause": "pause", "noise_db": "noise", "clip_frac": "distortion"}
    ref_rows = [r for r in ref_rows if r["utt_id"] in measures]
    for key, values in GRID.items():
        fault = which[key]
        scored = []
        for v in values:
            params = {**DEFAULT_PARAMS, key: v}
            res = score_sqa(ref_rows, [hyp_row(r["utt_id"], measures[r["utt_id"]], params) for r in ref_rows])
            f1, iou = fault_metrics(res, fault)
            scored.append((f1 + iou, v, f1, iou))
        top = max(scored)
        best[key] = top[1]
        print(f"{fault}: {key}={top[1]} dev F1 {top[2]:.4f} IoU {top[3]:.4f}", flush=True)
    return best


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.baselines", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="raw DNSMOS / VAD / energy / clipping per recording")
    m.add_argument("--wav-scp", required=True)
    m.add_argument("--utt2dur", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--no-dnsmos", action="store_true", help="skip DNSMOS (dev: only thresholds are tuned)")
    t = sub.add_parser("tune", help="thresholds on dev")
    t.add_argument("--measures", required=True)
    t.add_argument("--ref", required=True)
    t.add_argument("--out", required=True)
    h = sub.add_parser("hyp", help="hypothesis JSONL from measures + tuned thresholds")
    h.add_argument("--measures", required=True)
    h.add_argument("--params", required=True)
    h.add_argument("--all-ids", help="wav.scp of the full set: recordings without measures get "
                                     "a neutral row (score 3, no faults)")
    h.add_argument("--outdir", required=True)
    args = p.parse_args(argv)

    if args.cmd == "measure":
        durs = {k: float(v) for k, v in read_scp(args.utt2dur)}
        meas, rows, skipped, t0 = Measurer(not args.no_dnsmos), [], 0, time.time()
        for utt, entry in read_scp(args.wav_scp):
            try:
                x = load_checked(entry, name=utt)
            except AudioError as exc:
                print(f"WARNING: skipping {exc}", flush=True)
                skipped += 1
                continue
            rows.append({"utt_id": utt, **meas.measure(x, durs.get(utt, len(x) / SAMPLE_RATE))})
        write_jsonl(args.out, rows)
        print(f"measured {len(rows)} recordings, skipped {skipped}, {time.time() - t0:.1f} s", flush=True)
        return 0
    if args.cmd == "tune":
        params = tune(load_measures(args.measures), read_jsonl(args.ref))
        with atomic_write(args.out) as f:
            json.dump(params, f, indent=2)
        return 0
    with open(args.params, encoding="utf-8") as f:
        params = {**DEFAULT_PARAMS, **json.load(f)}
    measures = load_measures(args.measures)
    rows = [hyp_row(u, measures[u], params) for u in sorted(measures)]
    if args.all_ids:
        missing = sorted({u for u, _ in read_scp(args.all_ids)} - set(measures))
        if missing:
            print(f"WARNING: {len(missing)} recordings have no measures (bad audio); neutral rows written",
                  flush=True)
        rows += [{"utt_id": u, "score": 3.0, "faults": {f: [] for f in FAULTS}} for u in missing]
        rows.sort(key=lambda r: r["utt_id"])
    os.makedirs(args.outdir, exist_ok=True)
    write_jsonl(os.path.join(args.outdir, "hyp_combined.jsonl"), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
