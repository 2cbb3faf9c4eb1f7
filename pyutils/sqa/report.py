"""RESULTS.md for the SQA recipe: model vs baselines per test set.

``python -m pyutils.sqa.report --model-dir exp/sqa_default --test-sets "test" \
    --baseline-dir exp/sqa_baselines --out exp/sqa_default/RESULTS.md``

Each test set gets a section with a line ``Final: <value>`` (the model's
score, read by scripts), the per-fault F1/IoU table and the baselines scored
with the same ``chorus-score sqa`` on the same split.  With ``--data-dir`` and a
simulated split (``<data-dir>/<set>/faults.jsonl``, the kind of every fault) the
per-kind breakdown of :mod:`pyutils.sqa.breakdown` (found / covered per kind, false
alarms, score error by the number of faults, false alarms per speaker) goes to a
second file, ``--details-out`` (default: ``report_details.md`` beside ``--out``),
which the set's section names: RESULTS.md stays a short headline report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

from pyutils.jobs.stage_times import markdown as stage_times_markdown
from pyutils.sqa.common import FAULTS
from pyutils.io import atomic_write_text as write_text_atomic


def _load(path):
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return None


def _fmt(x):
    return "n/a" if x is None else f"{x:.4f}"


def _row(name, r):
    pf = r["per_fault"]
    cells = [name, _fmt(r["PCC"])] + [_fmt(pf[f]["F1"]) for f in FAULTS] + \
            [_fmt(pf[f]["IoU"]) for f in FAULTS] + [_fmt(r["F1_macro"]), _fmt(r["IoU_macro"]), f"**{_fmt(r['Final'])}**"]
    return "| " + " | ".join(cells) + " |"


def _train_summary(model_dir):
    path = os.path.join(model_dir, "train_log.tsv")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    if not rows:
        return None
    secs = sum(float(r[6]) for r in rows)
    best = min(rows, key=lambda r: float(r[2]))
    return len(rows), secs, best[0], float(best[2])


def _encoder_name(model_dir) -> str:
    try:
        import yaml

        with open(os.path.join(model_dir, "config.yaml"), encoding="utf-8") as f:
            enc = (yaml.safe_load(f).get("model") or {}).get("encoder", "gru")
    except OSError:
        return "conv + encoder"
    return {"gru": "conv + BiGRU", "tcn": "conv + TCN"}.get(enc, enc)


DETAILS_NAME = "report_details.md"


def _breakdown_lines(data_dir, model_dir, s) -> tuple:
    """``(tables, note)``: the per-kind tables of test set ``s`` when the data dir knows each fault's kind,
    or the report line saying why they were skipped (both [] for a split without kinds)."""
    if not data_dir:
        return [], []
    kinds = os.path.join(data_dir, s, "faults.jsonl")
    hyp = os.path.join(model_dir, f"infer_{s}", "hyp.jsonl")
    ref = os.path.join(data_dir, s, "ref.jsonl")
    if not all(os.path.exists(p) for p in (kinds, hyp, ref)):
        return [], []
    from pyutils.scoring.errors import ScoringError
    from pyutils.sqa import breakdown

    spk = os.path.join(data_dir, s, "utt2spk")
    try:
        b = breakdown.breakdown(breakdown.load_kinds(kinds), breakdown.load_rows(ref), breakdown.load_rows(hyp),
                                breakdown.load_utt2spk(spk) if os.path.exists(spk) else None)
    except (OSError, ValueError, ScoringError) as exc:   # a diagnostic table never fails the report
        return [], [f"Per-kind breakdown skipped: {exc}", ""]
    return breakdown.markdown(b) + [""], []


def build(model_dir, test_sets, baseline_dir, preset, wall_seconds=None, load=None, stage_times=None,
          data_dir=None, details_path=None) -> tuple:
    """``(results, details)``: the text of RESULTS.md and of the details file it names.

    ``details_path`` is how RESULTS.md names the details file (default
    ``<model_dir>/report_details.md``); the per-kind tables of every test set go there
    and the set's section in RESULTS.md gets one line pointing at them instead.
    """
    details_path = details_path or os.path.join(model_dir, DETAILS_NAME)
    title = f"{os.path.basename(os.path.normpath(model_dir))}, preset {preset}"
    lines = [f"# SQA results ({title})", ""]
    details = [f"# SQA results, details ({title})", "",
               "Per test set that knows the kind of each simulated fault (`<data-dir>/<set>/faults.jsonl`): "
               "the per-kind tables of `pyutils.sqa.breakdown`; the scores are in the RESULTS.md of the same run.",
               ""]
    n_header = len(details)
    lines.append(f"Generated on {platform.node() or 'host'}"
                 f" ({os.cpu_count()} CPUs). Final = 0.40 PCC + 0.30 F1_macro + 0.30 IoU_macro "
                 "(`chorus-score sqa`, 20 ms grid).")
    if wall_seconds:
        lines.append(f"Wall time of the stages whose outputs this file reports (stage_times.tsv, resumed runs "
                     f"included): {float(wall_seconds) / 60:.1f} min"
                     + (f" (load average at the end: {load})" if load else "") + ".")
    ts = _train_summary(model_dir)
    cfg_path = os.path.join(model_dir, "config.yaml")
    if ts:
        upd = ""
        try:
            import yaml

            with open(cfg_path, encoding="utf-8") as f:
                tc = yaml.safe_load(f) or {}
            if tc.get("max_updates"):
                upd = f"{tc['max_updates']} updates, "
            if tc.get("utt_embed"):
                upd += "score head fed utterance embeddings (pyutils.sqa.embed), "
        except OSError:
            pass
        lines.append(f"Training: {upd}{ts[0]} epochs in {ts[1] / 60:.1f} min; best dev loss {ts[3]:.4f} at "
                     f"epoch {ts[2]} (config: {cfg_path}).")
    pp = _load(os.path.join(model_dir, "postproc.json"))
    lines.append("")
    for s in test_sets:
        r = _load(os.path.join(model_dir, f"infer_{s}", "score.json"))
        lines.append(f"## {s}")
        lines.append("")
        if r is None:
            lines += ["No score: the model was not trained/inferred on this set.", ""]
            continue
        lines.append(f"Final: {r['Final']:.4f}")
        lines.append("")
        lines.append(f"Recordings: {r['num_recordings']}. PCC: {r['PCC']:.4f}. "
                     f"F1_macro: {r['F1_macro']:.4f}. IoU_macro: {r['IoU_macro']:.4f}.")
        lines.append("")
        head = ["system", "PCC"] + [f"F1 {f}" for f in FAULTS] + [f"IoU {f}" for f in FAULTS] + \
               ["F1_macro", "IoU_macro", "Final"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines.append(_row(f"model ({_encoder_name(model_dir)}, tuned post-proc.)", r))
        b = _load(os.path.join(baseline_dir, s, "score_combined.json")) if baseline_dir else None
        if b is not None:
            lines.append(_row("baselines combined", b))
            bpf = b["per_fault"]
            lines += ["", "Baselines (no learning; thresholds tuned on dev, same split, same scorer):", "",
                      f"- DNSMOS P.835 OVRL as the score: PCC {b['PCC']:.4f}",
                      f"- silero-vad gaps as pauses: F1 {_fmt(bpf['pause']['F1'])}, IoU {_fmt(bpf['pause']['IoU'])}",
                      f"- energy-floor noise detector: F1 {_fmt(bpf['noise']['F1'])}, IoU {_fmt(bpf['noise']['IoU'])}",
                      f"- clipping detector as distortion: F1 {_fmt(bpf['distortion']['F1'])}, "
                      f"IoU {_fmt(bpf['distortion']['IoU'])}"]
        else:
            lines.append("")
            lines.append("Baselines: not run (stage 4 skipped).")
        counts = ", ".join(f"{f} TP/FP/FN {r['per_fault'][f]['counts']['tp']}/{r['per_fault'][f]['counts']['fp']}/"
                           f"{r['per_fault'][f]['counts']['fn']}" for f in FAULTS)
        lines += ["", f"Model presence counts: {counts}.", ""]
        tables, note = _breakdown_lines(data_dir, model_dir, s)
        lines += note
        if tables:                     # to the details file; RESULTS.md names it
            details += [f"## {s}", ""] + tables
            lines += [f"Per fault kind, false alarms and score by the number of faults: `{details_path}`, "
                      f"section {s}.", ""]
        plots = os.path.join(model_dir, f"plots_{s}")
        if os.path.isdir(plots):
            lines += [f"Plots: `{plots}/` (spectrogram with reference vs predicted fault bands per "
                      "recording; `calibration.png` predicted vs reference score).", ""]
    if pp:
        lines += ["## Post-processing (tuned on dev)", ""]
        for f in FAULTS:
            prm = pp["params"][f]
            dv = pp.get("dev", {}).get(f, {})
            lines.append(f"- {f}: median {prm['median']} frames, threshold {prm['threshold']}, merge gaps < "
                         f"{prm['merge_gap']} s, min duration {prm['min_dur']} s, utterance gate "
                         f"{prm['utt_threshold']} (dev F1 {dv.get('f1', float('nan')):.4f}, "
                         f"IoU {dv.get('iou', float('nan')):.4f})")
        region = float(pp.get("region_threshold", 0.0) or 0.0)
        lines.append("- noise / distortion class per detected region (mean probability over the region >= "
                     f"{region}; `pyutils/sqa/postproc.py` step 6)" if region > 0 else
                     "- noise / distortion class per detected region: off (no threshold did better on dev)")
        lines.append("")
    lines += stage_times_markdown(stage_times)
    if len(details) == n_header:
        details += ["No test set of this run knows its fault kinds: no per-kind tables.", ""]
    return "\n".join(lines) + "\n", "\n".join(details).rstrip("\n") + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", required=True)
    p.add_argument("--test-sets", required=True, help="space-separated")
    p.add_argument("--baseline-dir")
    p.add_argument("--preset", default="?")
    p.add_argument("--wall-seconds")
    p.add_argument("--load", help="load average to note (shared machines)")
    p.add_argument("--stage-times", help="stage_times.tsv of the recipe (wall and CPU seconds per stage)")
    p.add_argument("--data-dir", help="data dir of the recipe: <dir>/<set>/faults.jsonl (simulated splits) "
                                      "adds the per-kind breakdown (to --details-out)")
    p.add_argument("--out", required=True)
    p.add_argument("--details-out", help=f"the per-kind tables (default: {DETAILS_NAME} beside --out); "
                                          "RESULTS.md names this path as given")
    a = p.parse_args(argv)
    details_out = a.details_out or os.path.join(os.path.dirname(a.out), DETAILS_NAME)
    results, details = build(a.model_dir, a.test_sets.split(), a.baseline_dir, a.preset, a.wall_seconds, a.load,
                             a.stage_times, a.data_dir, details_path=details_out)
    write_text_atomic(details_out, details)      # first: RESULTS.md never names a details file not written
    write_text_atomic(a.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
