"""``chorus-sqa``: diagnose audio files with a trained SQA model.

    chorus-sqa --model exp/sqa_default recordings/ take1.wav [--json]

Prints, per file, the predicted quality score (1-5) and each fault found with
its time intervals, e.g. ``noise 1.20–2.35 s``. Files that cannot be used
(unreadable, empty, shorter than 0.1 s) are reported and skipped; the count
is printed at the end. Exit status: 0 if at least one file was diagnosed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from pyutils.sqa.audio import AudioError, load_audio
from pyutils.sqa.common import FAULTS, SAMPLE_RATE

AUDIO_EXTS = (".wav", ".flac", ".ogg", ".mp3", ".opus", ".aiff", ".aif")


def find_audio(paths):
    """Files given directly, plus audio files found recursively in directories (sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                out += [os.path.join(root, f) for f in files if f.lower().endswith(AUDIO_EXTS)]
        else:
            out.append(p)
    return sorted(dict.fromkeys(out))


def load_diagnoser(model_dir: str):
    """-> callable(x) -> row dict, using model.pt and postproc.json of ``model_dir``."""
    from pyutils.sqa.features import extract
    from pyutils.sqa.infer import predict
    from pyutils.sqa.model import load_model
    from pyutils.sqa.postproc import DEFAULT_PARAMS, make_row

    model_path = os.path.join(model_dir, "model.pt")
    if not os.path.exists(model_path):
        raise SystemExit(f"chorus-sqa: no model.pt in {model_dir} (train one: egs/sqa/run.sh)")
    model, mean, std, extra = load_model(model_path)
    feats_cfg = extra.get("features") or {"n_mels": int(mean.shape[0]), "vad": False}
    pp_path = os.path.join(model_dir, "postproc.json")
    if os.path.exists(pp_path):
        try:
            with open(pp_path, encoding="utf-8") as f:
                params = json.load(f)["params"]
            if not isinstance(params, dict):
                raise TypeError("'params' is not an object")
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{pp_path}: not a post-processing file from the SQA recipe ({e})")
    else:
        print(f"chorus-sqa: warning: no {pp_path}; using default post-processing", file=sys.stderr)
        params = {f: dict(DEFAULT_PARAMS) for f in FAULTS}

    def diagnose(x, name):
        dur = len(x) / SAMPLE_RATE
        o = predict(model, mean, std, extract(x, feats_cfg), dur)
        row = make_row(name, o["score"], o["frame_probs"], o["utt_probs"], params, dur)
        row["duration"] = round(dur, 3)
        return row

    return diagnose


def format_row(path: str, row: dict) -> str:
    lines = [f"{path}: score {row['score']:.2f} / 5 ({row['duration']:.2f} s)"]
    found = False
    for f in FAULTS:
        for s, e in row["faults"][f]:
            lines.append(f"  {f} {s:.2f}–{e:.2f} s")
            found = True
    if not found:
        lines.append("  no faults found")
    return "\n".join(lines)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="chorus-sqa", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="trained model dir (exp/sqa_<tag> with model.pt, postproc.json)")
    p.add_argument("inputs", nargs="+", help="audio files and/or directories")
    p.add_argument("--json", action="store_true", help="one JSON object per file (chorus-score sqa format + path)")
    p.add_argument("--num-threads", type=_positive_int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.num_threads)
    files = find_audio(a.inputs)
    if not files:
        print("chorus-sqa: no audio files found in " + " ".join(a.inputs), file=sys.stderr)
        return 1
    from pyutils.sqa.model import ModelFileError
    try:
        diagnose = load_diagnoser(a.model)
    except (ModelFileError, ValueError, KeyError, OSError) as e:
        print(f"chorus-sqa: {e}", file=sys.stderr)
        return 2
    done, skipped = 0, 0
    for path in files:
        try:
            x = load_audio(path, name=path)
        except AudioError as exc:
            print(f"chorus-sqa: skipped {exc}", file=sys.stderr)
            skipped += 1
            continue
        row = diagnose(x, os.path.splitext(os.path.basename(path))[0])
        if a.json:
            print(json.dumps({"path": path, **row}, ensure_ascii=False))
        else:
            print(format_row(path, row))
        done += 1
    print(f"chorus-sqa: diagnosed {done} file(s), skipped {skipped} (unreadable, empty or too short)",
          file=sys.stderr)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
