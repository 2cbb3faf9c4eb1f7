"""Write RESULTS.md of an NVV-ASR experiment (ESPnet RESULTS.md style, one block per test set).

Each scored test set gets a block with a machine-checkable line ``Track1Score: <value>``,
the Track 1 components (tag F1 / mNTD / tagged WER or CER), a per-tag table, the
NV-Bench text metrics when available, and the decoding RTF. The header records the
environment (versions, cores, load), data, model, decoding settings and timing, so a
reader can tell how the numbers were obtained.

    python -m pyutils.asr.results --exp EXP --inference-tag TAG --test-sets "dev test" --lang en --out EXP/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
from typing import List, Optional
from pyutils.io import atomic_write
from pyutils.jobs.stage_times import markdown as stage_times_markdown


def _load(path: str) -> Optional[dict]:
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _fmt(v, nd: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def _versions() -> str:
    out = [f"python {platform.python_version()}"]
    try:
        from importlib.metadata import version

        for pkg in ("torch", "espnet", "sentencepiece"):
            try:
                out.append(f"{pkg} {version(pkg)}")
            except Exception:
                pass
    except Exception:
        pass
    return ", ".join(out)


def _load_avg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _model_summary(exp: str) -> dict:
    info = {}
    log = os.path.join(exp, "train.log")
    if not os.path.exists(log):
        return info
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = re.search(r"Total Number of model parameters: ([0-9.]+ ?[KMG]?)", text)
    if m:
        info["params"] = m.group(1)
    epochs = re.findall(r"(\d+)epoch results: \[train\] (.*?)\[valid\] (.*?)(?:, \[|$)", text, re.M)
    if epochs:
        last = epochs[-1]
        info["epochs"] = int(last[0])
        acc = re.search(r"acc=([0-9.]+)", last[2])
        if acc:
            info["valid_acc"] = float(acc.group(1))
    return info


def _config_excerpt(path: str, keys: List[str]) -> str:
    try:
        import yaml

        with open(path, encoding="utf-8") as f:
            cfg = yaml.safe_load(f) or {}
    except Exception:
        return ""
    parts = []
    for k in keys:
        if k in cfg:
            v = cfg[k]
            if isinstance(v, dict):
                v = ", ".join(f"{a}={b}" for a, b in v.items()
                              if a in ("output_size", "num_blocks", "linear_units", "attention_heads", "ctc_weight"))
            parts.append(f"{k}: {v}")
    return "; ".join(parts)


def set_block(name: str, d: str) -> List[str]:
    t1 = _load(os.path.join(d, "score", "track1.json"))
    nvb = _load(os.path.join(d, "score", "nvbench.json"))
    wer = _load(os.path.join(d, "score", "wer.json"))
    rtf = _load(os.path.join(d, "rtf.json"))
    out = [f"## {name}", ""]
    if t1 is not None:
        lang_res = None
        for key in ("en", "zh"):
            r = t1.get(key) if isinstance(t1.get(key), dict) else None
            if r is not None:
                lang_res = r
        if lang_res is None and "Track1Score" in t1:
            lang_res = t1
        score = lang_res.get("Track1Score") if lang_res else None
        out.append(f"Track1Score: {_fmt(score)}")
        out.append("")
        if lang_res:
            ec = lang_res.get("event_counts", {})
            err_name = lang_res.get("tagged_transcript_error_name", "Err")
            out += [
                f"| utts | tag P | tag R | tag F1 (collar {lang_res.get('f1_collar')}) | mNTD | tagged {err_name} | ref events | hyp events |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|",
                f"| {lang_res.get('num_utterances')} | {_fmt(100 * lang_res['precision'])} | {_fmt(100 * lang_res['recall'])} "
                f"| {_fmt(100 * lang_res['F1_micro'])} | {_fmt(lang_res['mNTD'], 3)} "
                f"| {_fmt(100 * lang_res['tagged_transcript_error'])} | {ec.get('reference')} | {ec.get('prediction')} |",
                "",
                "Per tag (tags present in reference or hypothesis):",
                "",
                "| tag | ref | hyp | TP | P | R | F1 |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for tag, c in lang_res.get("per_tag", {}).items():
                if c.get("reference", 0) or c.get("prediction", 0):
                    out.append(f"| {tag} | {c['reference']} | {c['prediction']} | {c['tp']} | {_fmt(100 * c['precision'])} "
                               f"| {_fmt(100 * c['recall'])} | {_fmt(100 * c['f1'])} |")
            out.append("")
    elif wer is not None:
        out += [f"{wer.get('name', 'WER')}: {_fmt(wer.get('error_rate_pct'))} % "
                f"(ref units {wer.get('ref_units')}, edits {wer.get('edits')})", ""]
    else:
        out += ["(not scored: no reference text)", ""]
    if nvb is not None:
        flat = {k: v for k, v in _flatten(nvb).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        keep = {k: v for k, v in flat.items() if re.search(r"(cer|wer|pcer|ocer)", k, re.I)}
        if keep:
            out.append("NV-Bench metrics (chorus-score nvbench): "
                       + ", ".join(f"{k}={_fmt(v, 4)}" for k, v in sorted(keep.items())[:10]))
            out.append("")
    if rtf is not None:
        only = f"; {_fmt(rtf.get('rtf_decode'), 4)} decoding only" if rtf.get("decode_only_s") else ""
        out.append(f"RTF: {_fmt(rtf.get('rtf_jobs'), 4)} (decode jobs incl. model load, {rtf.get('jobs')} jobs, "
                   f"{_fmt(rtf.get('audio_s'), 1)} s audio){only}")
        out.append("")
    return out


def _flatten(d, prefix=""):
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}." if not isinstance(v, (int, float, str)) or isinstance(v, bool) else f"{prefix}{k}"))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[f"{prefix}{k}"] = v
    return out


def _cascade_lines(exp: str) -> List[str]:
    """Model/decoding lines of a cascade exp dir (local/nvv_asr_cascade.sh)."""
    rep = _load(os.path.join(exp, "detector_report.json")) or {}
    sha = "?"
    try:
        with open(os.path.join(exp, "nvv_detector.npz.sha256"), encoding="utf-8") as f:
            sha = (f.read().split() or ["?"])[0][:12]
    except OSError:
        pass
    if rep:
        fitted = (f"encoder block(s) {','.join(map(str, rep.get('layers', [])))}; "
                  f"fitted on {rep.get('train_utts')} utterances "
                  f"({rep.get('train_frames')} frames of 40 ms), tuned on {rep.get('dev_utts')} dev utterances "
                  f"({rep.get('real_dev_utts', 0)} real), dev event P/R/F1 {rep.get('dev_micro')}")
    else:
        fitted = "no detector_report.json"
    return [f"- model: cascade (`--asr_method cascade`): frozen Whisper base text with word times "
            f"(faster-whisper int8, greedy, VAD, long-form) + NVV detector on frozen Whisper base encoder frames "
            f"(a 1-D conv head, `pyutils.nvv_detect.frame_heads`) `nvv_detector.npz` "
            f"(sha256 {sha}...; {fitted}); events placed at the nearest word/character boundary by time",
            "- decoding: `pyutils.nvv_detect.detect` -> " + _naming_step(exp) + "`pyutils.asr.cascade --events`"]


def _naming_step(exp: str) -> str:
    """The stage-6 naming step as the decode logs show it ran (none with ``--nvv_naming false``)."""
    import glob

    if not glob.glob(os.path.join(exp, "decode_*", "*", "logdir", "asr_inference.naming.log")):
        return ""
    if os.path.isfile(os.path.join(exp, "nvv_namer.npz")):
        return "`pyutils.nvv_detect.naming` (namer `nvv_namer.npz` fitted on labelled real clips) -> "
    return ("`pyutils.nvv_detect.naming` (zero-shot: YAMNet + Whisper subtitle labels where YAMNet "
            "recognises the sound, else the detector's tag) -> ")


def build(exp: str, decode_root: str, inference_tag: str, test_sets: List[str], lang: str, preset: str,
          asr_config: str, inference_config: str, data: str, asr_method: str = "espnet",
          stage_times: str = "") -> str:
    ms = _model_summary(exp)
    cfg = os.path.join(exp, "config.yaml")
    lines = [
        f"# NVV-aware ASR ({lang}): {os.path.basename(os.path.abspath(exp))}",
        "",
        "<!-- Generated by pyutils/asr/results.py from the exp dir; numbers are measured, not edited. -->",
        "",
        f"- host: {os.cpu_count()} CPU cores, "
        f"load average at writing {_load_avg()} (shared machine: timings are pessimistic)",
        f"- environment: {_versions()}",
        f"- preset: {preset}; data: {data}",
    ]
    if asr_method == "cascade":
        lines += _cascade_lines(exp)
    else:
        lines += [
            f"- model: `{asr_config}` ({_config_excerpt(cfg, ['encoder', 'encoder_conf', 'decoder_conf', 'model_conf'])}); "
            f"parameters: {ms.get('params', '?')}; epochs: {ms.get('epochs', '?')}; last valid acc: {_fmt(ms.get('valid_acc'), 3)}",
            f"- decoding: `{inference_config}` ({_config_excerpt(inference_config, ['beam_size', 'ctc_weight', 'lm_weight', 'penalty', 'maxlenratio'])}), "
            f"model `{inference_tag}`"]
    lines.append("")
    for name in test_sets:
        d = os.path.join(decode_root, name)
        if os.path.isdir(d):
            lines += set_block(name, d)
    table = os.path.join(decode_root, "real_speech", "table.md")
    if os.path.isfile(table):
        with open(table, encoding="utf-8") as f:
            lines += ["## Real speech", "", f.read().rstrip("\n"), ""]
    if stage_times:
        lines += stage_times_markdown(stage_times, "## Time per stage (this run, up to the scoring)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exp", required=True)
    p.add_argument("--inference-tag", required=True)
    p.add_argument("--decode-root", default=None, help="default: EXP/INFERENCE_TAG")
    p.add_argument("--test-sets", required=True, help="space-separated")
    p.add_argument("--lang", required=True)
    p.add_argument("--preset", default="")
    p.add_argument("--asr-method", default="espnet", choices=("espnet", "cascade"))
    p.add_argument("--asr-config", default="")
    p.add_argument("--inference-config", default="")
    p.add_argument("--data", default="")
    p.add_argument("--stage-times", default="", help="stage_times.tsv of the run (utils/stage_prelude.sh)")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    text = build(a.exp, a.decode_root or os.path.join(a.exp, a.inference_tag), a.inference_tag, a.test_sets.split(), a.lang, a.preset, a.asr_config,
                 a.inference_config, a.data, a.asr_method, a.stage_times)
    with atomic_write(a.out) as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
