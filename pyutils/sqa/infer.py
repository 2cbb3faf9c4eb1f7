"""Run a trained SQA model: frame probabilities, scores and the submission JSONL.

Usage::

    python -m pyutils.sqa.infer --model-dir exp/sqa_default --data-dir dump/test \
        --outdir exp/sqa_default/infer_test [--postproc exp/sqa_default/postproc.json]

Writes ``OUTDIR/outputs.npz`` (per-frame fault probabilities on the 20 ms grid,
utterance presence probabilities, scores, durations) and, when post-processing
parameters are given, ``OUTDIR/hyp.jsonl`` in ``chorus-score sqa`` format.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

from pyutils.sqa.common import num_grid_frames
from pyutils.io import read_scp, write_jsonl
from pyutils.sqa.model import ModelFileError, fit_length, load_model
from pyutils.sqa.postproc import make_row, read_postproc


def predict(model, mean, std, feats: np.ndarray, duration: float, embed: np.ndarray | None = None) -> dict:
    """One utterance: (T, F) features (+ its embedding) -> frame_probs (N, 3), utt_probs (3,), score."""
    n = num_grid_frames(duration)
    with torch.no_grad():
        x = (torch.from_numpy(np.array(feats, dtype=np.float32))[None] - mean) / std
        e = None if embed is None else torch.from_numpy(np.asarray(embed, dtype=np.float32))[None]
        out = model(x, torch.tensor([x.shape[1]]), e)
        probs = torch.sigmoid(fit_length(out["frame_logits"], n))[0].numpy()
        utt = torch.sigmoid(out["utt_logits"])[0].numpy()
    return {"frame_probs": probs.astype(np.float32), "utt_probs": utt.astype(np.float32),
            "score": float(out["score"][0]), "duration": float(duration)}


def fallback_row(utt: str) -> dict:
    """Row for a recording the model could not read: neutral score, no faults."""
    return {"utt_id": utt, "score": 3.0, "faults": {"noise": [], "distortion": [], "pause": []}}


def save_outputs(path: str, outputs: dict) -> None:
    utts = sorted(outputs)
    lens = [len(outputs[u]["frame_probs"]) for u in utts]
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    probs = np.concatenate([outputs[u]["frame_probs"] for u in utts]) if utts else np.zeros((0, 3), np.float32)
    tmp = path + ".tmp.npz"
    np.savez(tmp, utts=np.array(utts), offsets=offsets, frame_probs=probs,
             utt_probs=np.array([outputs[u]["utt_probs"] for u in utts]).reshape(-1, 3),
             scores=np.array([outputs[u]["score"] for u in utts]),
             durations=np.array([outputs[u]["duration"] for u in utts]))
    os.replace(tmp, path)


def _side_input(data_dir: str, name: str, loader, what: str, hint: str):
    """Load <data_dir>/<name> with ``loader``; a missing file is a FileNotFoundError that says how to make it."""
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"the model needs {what} but {path} is missing ({hint})")
    return loader(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.infer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", required=True, help="dir with model.pt")
    p.add_argument("--data-dir", required=True, help="dump dir with feats.scp and utt2dur")
    p.add_argument("--outdir", required=True)
    p.add_argument("--postproc", help="postproc.json; when given, hyp.jsonl is written")
    p.add_argument("--all-ids", help="wav.scp of the full set: recordings skipped at dump time "
                                     "(bad audio) get a fallback row (score 3, no faults) so the "
                                     "submission covers every id; their number is printed")
    p.add_argument("--num-threads", type=int, default=1)
    args = p.parse_args(argv)
    import kaldiio

    torch.set_num_threads(args.num_threads)
    try:
        model, mean, std, _ = load_model(os.path.join(args.model_dir, "model.pt"))
    except (ModelFileError, OSError) as e:
        print(f"pyutils.sqa.infer: {e}", file=sys.stderr)
        return 2
    durs = {k: float(v) for k, v in read_scp(os.path.join(args.data_dir, "utt2dur"))}
    from pyutils.sqa.embed import load_embeddings

    try:
        embeds = None
        if model.cfg.embed_dim > 0:
            embeds = _side_input(args.data_dir, "embed.scp", load_embeddings,
                                 "utterance embeddings", "stage 2 with --utt-embed true")
    except FileNotFoundError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    outputs, t0 = {}, time.time()
    for k, (utt, feats) in enumerate(kaldiio.load_scp_sequential(os.path.join(args.data_dir, "feats.scp")), 1):
        if utt not in durs:
            print(f"WARNING: {utt} has features but no utt2dur entry; skipped", flush=True)
            continue
        if embeds is not None and utt not in embeds:
            print(f"WARNING: {utt} has features but no embedding; skipped", flush=True)
            continue
        outputs[utt] = predict(model, mean, std, feats, durs[utt], None if embeds is None else embeds[utt])
        if k % 100 == 0:
            print(f"{k} utterances, {time.time() - t0:.1f} s", flush=True)
    save_outputs(os.path.join(args.outdir, "outputs.npz"), outputs)
    print(f"inferred {len(outputs)} utterances in {time.time() - t0:.1f} s", flush=True)
    if args.postproc:
        try:
            params, region = read_postproc(args.postproc)
        except (OSError, ValueError) as e:
            print(f"ERROR: {e}", file=sys.stderr)
            return 2
        rows = [make_row(u, o["score"], o["frame_probs"], o["utt_probs"], params, o["duration"], region)
                for u, o in sorted(outputs.items())]
        if args.all_ids:
            missing = sorted({u for u, _ in read_scp(args.all_ids)} - set(outputs))
            if missing:
                print(f"WARNING: {len(missing)} recordings had no features (unreadable, empty or too "
                      f"short; e.g. {missing[0]}): fallback rows with score 3 and no faults", flush=True)
            rows = sorted(rows + [fallback_row(u) for u in missing], key=lambda r: r["utt_id"])
        write_jsonl(os.path.join(args.outdir, "hyp.jsonl"), rows)
        print(f"wrote {len(rows)} rows -> {os.path.join(args.outdir, 'hyp.jsonl')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
