"""Where a model loses its points, per fault kind: a table for the recipe's report.

The scorer (``chorus-score sqa``) sees fault *types* only.  A simulated corpus also knows
each fault's *kind* (``faults/<split>.jsonl`` of ``chorus-synth sqa``: warble, gain jumps,
babble, ...), so on such a split this module tells, for every kind:

- ``found``: share of the recordings holding the kind where the model predicts the kind's
  fault type somewhere (utterance level, as F1 counts it);
- ``covered``: share of the kind's reference frames (pooled over its recordings) (20 ms grid of the scorer: frame k
  belongs to [s, e) when s <= (2k+1)/100 < e) inside predicted intervals of the same type;
- ``false alarms``: recordings without a fault type in the reference where the model
  predicts it, listed by the kinds those recordings do hold (what the alarm sits on);
- score error by the number of faults a recording holds and the most of them of one type
  (mean predicted minus mean reference): a model that rates many-fault recordings too
  well, or cannot tell two bursts of a fault from one, shows it here.
- false alarms per source speaker, when a split has few of them (``utt2spk``; the real
  splits): real talkers differ in their own room and microphone, and one talker whose
  floor sits at the edge of what the simulator calls noise can hold most of a split's
  noise alarms.

``python -m pyutils.sqa.breakdown --faults data/test/faults.jsonl --ref data/test/ref.jsonl
--hyp exp/sqa_default/infer_test/hyp.jsonl`` prints the markdown; the report calls
:func:`markdown` itself.  Every file is validated: a bad row raises ``ValueError`` naming the
file and line.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter, defaultdict
from typing import Dict, List, Tuple

from pyutils.datadir.io import DataDirError, read_kv
from pyutils.scoring.errors import ScoringError
from pyutils.scoring.sqa import frame_iou, frame_ranges, parse_row
from pyutils.sqa.common import FAULTS
from pyutils.io import read_jsonl


def load_kinds(path: str) -> Dict[str, List[Tuple[str, str, float, float]]]:
    """``{utt_id: [(type, kind, start, end), ...]}`` from a corpus ``faults/<split>.jsonl``."""
    out: Dict[str, List[Tuple[str, str, float, float]]] = {}
    for line, row in enumerate(read_jsonl(path), 1):
        where = f"{path}:{line}"
        if not isinstance(row, dict) or not isinstance(row.get("utt_id"), str) or not row["utt_id"]:
            raise ValueError(f"{where}: a row needs a non-empty string utt_id")
        details = row.get("details")
        if not isinstance(details, list):
            raise ValueError(f"{where} ({row['utt_id']}): 'details' must be a list")
        faults = []
        for d in details:
            ok = (isinstance(d, dict) and d.get("type") in FAULTS and isinstance(d.get("kind"), str)
                  and all(isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)
                          and math.isfinite(d[k]) for k in ("start", "end")))
            if not ok or d["end"] < d["start"]:
                raise ValueError(f"{where} ({row['utt_id']}): each detail needs type in {FAULTS}, a string "
                                 f"kind and finite start <= end, got {d!r}")
            faults.append((d["type"], d["kind"], float(d["start"]), float(d["end"])))
        if row["utt_id"] in out:
            raise ValueError(f"{where}: utt_id {row['utt_id']!r} appears twice")
        out[row["utt_id"]] = faults
    return out


def load_rows(path: str) -> Dict[str, Tuple[float, dict]]:
    """``{utt: (score, {type: intervals})}`` of a ref or hyp file, checked by the scorer's parser."""
    rows = {}
    for line, obj in enumerate(read_jsonl(path), 1):
        utt, score, faults = parse_row(obj, path, line)
        rows[utt] = (score, faults)
    return rows


def load_utt2spk(path: str) -> Dict[str, str]:
    """``{utt: speaker}`` of a Kaldi ``utt2spk`` through the data-dir reader (its errors name
    the line; a speaker with spaces names the utterance)."""
    out = read_kv(path)
    for utt, spk in out.items():
        if len(spk.split()) != 1:
            raise DataDirError(f"{path}: utterance {utt!r}: expected 'utt speaker', got speaker {spk!r}")
    return out


def breakdown(kinds: dict, refs: dict, hyps: dict, utt2spk: Dict[str, str] | None = None) -> dict:
    """Per-kind detection, false alarms and score error by fault count (module docstring).

    ``kinds`` from :func:`load_kinds`; ``refs`` / ``hyps`` ``{utt: (score, {type: intervals})}``;
    ``utt2spk`` (optional) adds false alarms per speaker.
    Recordings missing from ``kinds`` or ``hyps`` are left out (the scorer reports them)."""
    utts = sorted(u for u in refs if u in kinds and u in hyps)
    per_kind = defaultdict(lambda: {"n": 0, "found": 0, "ref_frames": 0, "covered_frames": 0})
    alarms: Dict[str, Counter] = {f: Counter() for f in FAULTS}
    by_count = defaultdict(lambda: {"n": 0, "ref": 0.0, "hyp": 0.0})
    # speaker -> type -> [false alarms, recordings without the type in the reference]
    by_spk: Dict[str, Dict[str, List[int]]] = defaultdict(lambda: {f: [0, 0] for f in FAULTS})
    for u in utts:
        ref_score, ref_faults = refs[u]
        hyp_score, hyp_faults = hyps[u]
        for ftype, kind, start, end in kinds[u]:
            k = per_kind[(ftype, kind)]
            k["n"] += 1
            k["found"] += bool(hyp_faults.get(ftype))
            ref_n = sum(b - a for a, b in frame_ranges([(start, end)]))
            _, inter, _ = frame_iou([(start, end)], hyp_faults.get(ftype, []))
            k["ref_frames"] += ref_n
            k["covered_frames"] += inter
        for ftype in FAULTS:
            if ref_faults.get(ftype):
                continue
            if utt2spk is not None:
                by_spk[utt2spk.get(u, "?")][ftype][1] += 1
            if hyp_faults.get(ftype):
                held = sorted({kind for _, kind, _, _ in kinds[u]}) or ["no fault"]
                alarms[ftype][" + ".join(held)] += 1
                if utt2spk is not None:
                    by_spk[utt2spk.get(u, "?")][ftype][0] += 1
        per_type = Counter(ftype for ftype, _, _, _ in kinds[u])
        c = by_count[(len(kinds[u]), max(per_type.values(), default=0))]
        c["n"] += 1
        c["ref"] += ref_score
        c["hyp"] += hyp_score
    rows = []
    for (ftype, kind), k in sorted(per_kind.items(), key=lambda x: (FAULTS.index(x[0][0]), x[0][1])):
        rows.append({"type": ftype, "kind": kind, "n": k["n"], "found": k["found"] / k["n"],
                     "covered": k["covered_frames"] / k["ref_frames"] if k["ref_frames"] else float("nan")})
    counts = [{"faults": n, "same_type": same, "n": c["n"], "ref": c["ref"] / c["n"], "hyp": c["hyp"] / c["n"]}
              for (n, same), c in sorted(by_count.items())]
    return {"recordings": len(utts), "kinds": rows,
            "false_alarms": {f: alarms[f].most_common() for f in FAULTS}, "by_fault_count": counts,
            "false_alarms_by_speaker": {k: dict(v) for k, v in sorted(by_spk.items())}}


MAX_SPEAKER_ROWS = 12    # the per-speaker table is printed for splits with at most this many talkers


def markdown(b: dict, max_alarm_groups: int = 4) -> List[str]:
    """Report lines for :func:`breakdown`'s result."""
    lines = [f"Per fault kind ({b['recordings']} recordings; found = share of the kind's recordings "
             "where the model predicts its type; covered = share of its reference frames inside "
             "predicted intervals of that type):", "",
             "| type | kind | recordings | found | covered |", "|---|---|---|---|---|"]
    for r in b["kinds"]:
        cov = "n/a" if math.isnan(r["covered"]) else f"{r['covered']:.2f}"
        lines.append(f"| {r['type']} | {r['kind']} | {r['n']} | {r['found']:.2f} | {cov} |")
    lines.append("")
    parts = []
    for f in FAULTS:
        groups = b["false_alarms"][f]
        if groups:
            total = sum(n for _, n in groups)
            shown = ", ".join(f"{g} {n}" for g, n in groups[:max_alarm_groups])
            more = sum(n for _, n in groups[max_alarm_groups:])
            parts.append(f"{f} {total} ({shown}{f', other {more}' if more else ''})")
    lines.append("False alarms, by the kinds the recording holds: " + ("; ".join(parts) if parts else "none") + ".")
    lines += ["", "Score by the number of faults in the recording (and the most of them of one type):", "",
              "| faults | of one type | recordings | mean reference | mean predicted | predicted - reference |",
              "|---|---|---|---|---|---|"]
    for c in b["by_fault_count"]:
        lines.append(f"| {c['faults']} | {c['same_type']} | {c['n']} | {c['ref']:.2f} | {c['hyp']:.2f} "
                     f"| {c['hyp'] - c['ref']:+.2f} |")
    spk = b.get("false_alarms_by_speaker") or {}
    if 0 < len(spk) <= MAX_SPEAKER_ROWS:
        lines += ["", "False alarms per speaker (recordings with the type predicted / recordings without "
                  "it in the reference):", "", "| speaker | " + " | ".join(FAULTS) + " |",
                  "|---|" + "---|" * len(FAULTS)]
        for name, per in spk.items():
            lines.append(f"| {name} | " + " | ".join(f"{per[f][0]} / {per[f][1]}" for f in FAULTS) + " |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyutils.sqa.breakdown", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--faults", required=True, help="faults/<split>.jsonl of the corpus (kinds and intervals)")
    p.add_argument("--ref", required=True, help="reference rows (ref.jsonl)")
    p.add_argument("--hyp", required=True, help="the model's rows (hyp.jsonl)")
    p.add_argument("--utt2spk", help="utt2spk of the split: adds false alarms per speaker")
    a = p.parse_args(argv)
    try:
        b = breakdown(load_kinds(a.faults), load_rows(a.ref), load_rows(a.hyp),
                      load_utt2spk(a.utt2spk) if a.utt2spk else None)
    except (OSError, ValueError, ScoringError) as exc:
        print(f"breakdown: {exc}", file=sys.stderr)
        return 1
    print("\n".join(markdown(b)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
