"""``chorus-sqa``: diagnose audio files with a trained SQA model.

    chorus-sqa --model exp/sqa_default recordings/ take1.wav [--json]

Prints, per file, the predicted quality score (1-5) and each fault found with
its time intervals, e.g. ``noise 1.20–2.35 s``, plus notes on the input
(resampled from 8/48 kHz, stereo mixed down, DC offset removed, clipped to the
rail).  Files are processed one at a time and each in windows of 28 s (+1 s of
context each side; :mod:`pyutils.sqa.stream`), so a folder of long files runs
in flat memory; a progress bar goes to stderr.  The score of a long file is the
duration-weighted mean of its windows' scores.

Bad input never stops the run: a silent or DC-only file gets the diagnosis
"no signal" (score 1, no faults); an unreadable or empty file, NaN/Inf samples
or a file shorter than 0.1 s gets a one-line error naming the file (also as
``{"path", "error"}`` with ``--json``); the counts are printed at the end.
Exit status: 0 if at least one file was diagnosed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from pyutils.cli_types import positive_int
from pyutils.sqa.audio import AudioError
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


CORE_S, CTX_S = 28.0, 1.0      # window core and context: 30 s = Whisper's longest input
SILENT_DB = -60.0               # a file whose peak (DC removed) stays below this has no signal


def load_diagnoser(model_dir: str):
    """-> callable(x16k, name) -> row dict, using model.pt and postproc.json of ``model_dir``.

    The callable also takes a list of windows (``[(audio, core_offset, core_len), ...]``
    or an iterator of them) for long files.
    """
    import numpy as np

    from pyutils.sqa.features import check_config, extract
    from pyutils.sqa.infer import predict
    from pyutils.sqa.model import load_model
    from pyutils.sqa.postproc import DEFAULT_PARAMS, make_row, read_postproc

    model_path = os.path.join(model_dir, "model.pt")
    if not os.path.exists(model_path):
        raise SystemExit(f"chorus-sqa: no model.pt in {model_dir} (train one: egs/sqa/run.sh)")
    model, mean, std, extra = load_model(model_path)
    try:
        feats_cfg = check_config(extra.get("features") or {"n_mels": int(mean.shape[0])})
    except ValueError as e:
        raise SystemExit(f"chorus-sqa: {model_path}: {e}") from None
    embedder = None
    if model.cfg.embed_dim > 0:
        from pyutils.sqa.embed import UttEmbedder

        embedder = UttEmbedder(extra.get("embed"))
        if embedder.dim != model.cfg.embed_dim:
            raise SystemExit(f"chorus-sqa: {model_path} expects {model.cfg.embed_dim}-dim embeddings, "
                             f"its embed config gives {embedder.dim}")
    pp_path = os.path.join(model_dir, "postproc.json")
    region = 0.0
    if os.path.exists(pp_path):
        params, region = read_postproc(pp_path)
    else:
        print(f"chorus-sqa: warning: no {pp_path}; using default post-processing", file=sys.stderr)
        params = {f: dict(DEFAULT_PARAMS) for f in FAULTS}
    frame = int(0.02 * SAMPLE_RATE)

    def run_windows(wins, name):
        probs, utt, scores, weights, total = [], [], [], [], 0
        for audio, off, n in wins:
            o = predict(model, mean, std, extract(audio, feats_cfg), len(audio) / SAMPLE_RATE,
                        embedder(audio) if embedder is not None else None)
            a, b = off // frame, -(-(off + n) // frame)
            probs.append(o["frame_probs"][a:b])
            utt.append(o["utt_probs"])
            scores.append(o["score"])
            weights.append(n)
            total += n
        if not probs:
            raise ValueError(f"{name}: no audio")
        dur = total / SAMPLE_RATE
        fp = np.concatenate(probs)
        row = make_row(name, float(np.average(scores, weights=weights)), fp, np.max(utt, axis=0), params, dur,
                       region)
        row["duration"] = round(dur, 3)
        return row

    def diagnose(x, name):
        if isinstance(x, np.ndarray):
            return run_windows([(x, 0, len(x))], name)
        return run_windows(x, name)

    return diagnose


def diagnose_file(path: str, diagnose) -> dict:
    """Check the input, then run ``diagnose`` window by window; raises AudioError for bad files."""
    import numpy as np

    from pyutils.sqa.audio import MIN_DURATION
    from pyutils.sqa.stream import RAIL, scan, windows

    sc = scan(path)
    if sc.duration < MIN_DURATION:
        raise AudioError(f"{path}: too short ({sc.duration:.3f} s < {MIN_DURATION} s)")
    notes, name = [], os.path.splitext(os.path.basename(path))[0]
    if sc.samplerate != SAMPLE_RATE:
        notes.append(f"resampled from {sc.samplerate} Hz to {SAMPLE_RATE} Hz"
                     + (" (band-limited to 4 kHz at the source)" if sc.samplerate <= 8000 else ""))
    if sc.channels > 1:
        notes.append(f"{sc.channels} channels mixed to mono")
    ac_db = 20 * np.log10(max(sc.ac_peak, 1e-12))
    if ac_db < SILENT_DB:
        what = f"DC only (constant {sc.dc:+.3f})" if abs(sc.dc) > 1e-4 else "silent"
        return {"utt_id": name, "score": 1.0, "faults": {f: [] for f in FAULTS},
                "duration": round(sc.duration, 3),
                "notes": notes + [f"no signal: {what}, peak {ac_db:.1f} dBFS after DC removal"]}
    remove_dc = 0.0
    if abs(sc.dc) > 0.01:
        remove_dc = sc.dc
        notes.append(f"DC offset {sc.dc:+.3f} removed")
    if sc.rail_frac > 0.001:
        notes.append(f"clipped: {100 * sc.rail_frac:.2f}% of samples at full scale (|x| >= {RAIL})")
    if sc.duration > 30.0:
        row = diagnose(windows(path, CORE_S, CTX_S, remove_dc), name)
    else:   # one window: the whole file (same result as the recipe's inference)
        row = diagnose(windows(path, 1e9, 0.0, remove_dc), name)
    if notes:
        row["notes"] = notes
    return row


def format_row(path: str, row: dict) -> str:
    lines = [f"{path}: score {row['score']:.2f} / 5 ({row['duration']:.2f} s)"]
    found = False
    for f in FAULTS:
        for s, e in row["faults"][f]:
            lines.append(f"  {f} {s:.2f}–{e:.2f} s")
            found = True
    if not found:
        lines.append("  no faults found")
    for note in row.get("notes", []):
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from pyutils.cli_types import tolerant_output
    tolerant_output()
    p = argparse.ArgumentParser(prog="chorus-sqa", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="trained model dir (exp/sqa_<tag> with model.pt, postproc.json)")
    p.add_argument("inputs", nargs="+", help="audio files and/or directories")
    p.add_argument("--json", action="store_true", help="one JSON object per file (chorus-score sqa format + path)")
    p.add_argument("--num-threads", type=positive_int, default=1)
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    a = p.parse_args(argv)
    from tqdm import tqdm

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
    bar = tqdm(files, desc="chorus-sqa", unit="file", file=sys.stderr, disable=a.no_progress,
               mininterval=1.0, dynamic_ncols=True)
    for path in bar:
        try:
            row = diagnose_file(path, diagnose)
        except AudioError as exc:
            bar.write(f"chorus-sqa: skipped {exc}", file=sys.stderr)
            if a.json:
                bar.write(json.dumps({"path": path, "error": str(exc)}, ensure_ascii=False), file=sys.stdout)
            skipped += 1
            continue
        text = json.dumps({"path": path, **row}, ensure_ascii=False) if a.json else format_row(path, row)
        bar.write(text, file=sys.stdout)
        done += 1
    bar.close()
    print(f"chorus-sqa: diagnosed {done} file(s), skipped {skipped} (unreadable, empty, too short or "
          f"non-finite)", file=sys.stderr)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
