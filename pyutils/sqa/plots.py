"""Figures for SQA: spectrogram with reference vs predicted fault bands, and a
calibration scatter of predicted vs reference scores.

``python -m pyutils.sqa.plots --infer-dir exp/sqa_default/infer_test --ref data/test/ref.jsonl \
    --wav-scp dump/test/wav.scp --num 4 --outdir exp/sqa_default/plots_test``
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from pyutils.sqa.common import FAULTS, FRAME_SHIFT, SAMPLE_RATE
from pyutils.io import read_jsonl, read_scp

COLORS = {"noise": "tab:orange", "distortion": "tab:red", "pause": "tab:blue"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recording(path, x, ref, hyp, frame_probs=None, title=""):
    """Spectrogram (top) and, per fault, a lane: reference band above, prediction below."""
    from pyutils.sqa.features import fbank

    plt = _plt()
    dur = len(x) / SAMPLE_RATE
    fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(11, 5.5), sharex=True,
                                   gridspec_kw={"height_ratios": [2.2, 1.6]})
    mel = fbank(x, 80).T
    ax0.imshow(mel, origin="lower", aspect="auto", extent=[0, dur, 0, mel.shape[0]], cmap="magma",
               vmin=np.percentile(mel, 5), vmax=mel.max())
    ax0.set_ylabel("mel bin")
    ax0.set_title(title, fontsize=10)
    for k, f in enumerate(FAULTS):
        y0 = (len(FAULTS) - 1 - k) * 1.2
        for s, e in (ref or {}).get(f, []):
            ax1.add_patch(plt.Rectangle((s, y0 + 0.55), e - s, 0.4, color=COLORS[f], alpha=0.85))
        for s, e in (hyp or {}).get(f, []):
            ax1.add_patch(plt.Rectangle((s, y0 + 0.05), e - s, 0.4, color=COLORS[f], alpha=0.45,
                                        hatch="//", ec="black", lw=0.5))
        if frame_probs is not None:
            t = (np.arange(len(frame_probs)) + 0.5) * FRAME_SHIFT
            ax1.plot(t, y0 + 0.05 + 0.9 * frame_probs[:, k], color="black", lw=0.7)
        ax1.axhline(y0 - 0.1, color="grey", lw=0.4)
    ax1.set_yticks([(len(FAULTS) - 1 - k) * 1.2 + 0.5 for k in range(len(FAULTS))])
    ax1.set_yticklabels([f"{f}\nref ▲ / hyp ▼" for f in FAULTS], fontsize=8)
    ax1.set_ylim(-0.2, len(FAULTS) * 1.2)
    ax1.set_xlim(0, dur)
    ax1.set_xlabel("time (s)   [solid: reference; hatched: predicted; line: frame probability]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_calibration(path, ref_scores, hyp_scores, title="predicted vs reference score"):
    plt = _plt()
    r = float(np.corrcoef(ref_scores, hyp_scores)[0, 1]) if len(ref_scores) > 1 and np.std(hyp_scores) > 0 else 0.0
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(ref_scores, hyp_scores, s=12, alpha=0.6)
    ax.plot([1, 5], [1, 5], color="grey", lw=1, ls="--")
    ax.set_xlim(0.9, 5.1)
    ax.set_ylim(0.9, 5.1)
    ax.set_xlabel("reference score")
    ax.set_ylabel("predicted score")
    ax.set_title(f"{title}\nPCC {r:.3f}, n = {len(ref_scores)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pick_examples(ref_rows, num):
    """A few recordings covering every fault, then a clean one (deterministic)."""
    chosen = []
    for f in FAULTS:
        for r in ref_rows:
            if r.get("faults", {}).get(f) and r["utt_id"] not in chosen:
                chosen.append(r["utt_id"])
                break
    for r in ref_rows:
        if not any(r.get("faults", {}).get(f) for f in FAULTS) and r["utt_id"] not in chosen:
            chosen.append(r["utt_id"])
            break
    for r in ref_rows:
        if len(chosen) >= num:
            break
        if r["utt_id"] not in chosen:
            chosen.append(r["utt_id"])
    return chosen[:num]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.plots", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--infer-dir", required=True, help="dir with hyp.jsonl and outputs.npz")
    p.add_argument("--ref", required=True)
    p.add_argument("--wav-scp", required=True)
    p.add_argument("--num", type=int, default=4)
    p.add_argument("--outdir", required=True)
    a = p.parse_args(argv)
    from pyutils.sqa.audio import AudioError, load_checked
    from pyutils.sqa.postproc import load_outputs

    os.makedirs(a.outdir, exist_ok=True)
    refs = {r["utt_id"]: r for r in read_jsonl(a.ref)}
    hyps = {r["utt_id"]: r for r in read_jsonl(os.path.join(a.infer_dir, "hyp.jsonl"))}
    outs_path = os.path.join(a.infer_dir, "outputs.npz")
    outs = load_outputs(outs_path) if os.path.exists(outs_path) else {}
    wavs = dict(read_scp(a.wav_scp))
    ids = sorted(set(refs) & set(hyps))
    plot_calibration(os.path.join(a.outdir, "calibration.png"), [refs[u]["score"] for u in ids],
                     [hyps[u]["score"] for u in ids])
    for utt in pick_examples([refs[u] for u in ids if u in wavs], a.num):
        try:
            x = load_checked(wavs[utt], name=utt)
        except AudioError as exc:
            print(f"WARNING: no plot: {exc}", flush=True)
            continue
        title = f"{utt}: reference score {refs[utt]['score']:.2f}, predicted {hyps[utt]['score']:.2f}"
        out = outs.get(utt)
        plot_recording(os.path.join(a.outdir, f"{utt}.png"), x, refs[utt].get("faults"), hyps[utt]["faults"],
                       out["frame_probs"] if out else None, title)
    print(f"plots -> {a.outdir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
