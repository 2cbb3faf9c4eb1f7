"""VLSP 2025 voice-conversion score.

``Score = 0.4 * [SIM(ref, out) - SIM(src, out)] + 0.3 * MOS + 0.3 * (100 - WER)``,
every component on 0..100 (SIM: speaker similarity x 100, MOS: predicted MOS
rescaled to 0..100, WER in percent). The component models (speaker encoder,
MOS predictor, ASR) live in the vivc recipe; this module only combines them.

Averaging: the score is linear in its components, so the mean of the
per-utterance scores equals the score of the mean components. Both are
computed and reported (``Score`` and ``Score_mean_of_utterances``); they
agree to rounding error, which the JSON shows.

Input: TSV with a header, or JSONL, one row per converted utterance with
columns ``utt`` (or ``converted``), ``sim_ref_out``, ``sim_src_out``, ``mos``,
``wer``. Codes: MISSING_REQUIRED_FIELD, INVALID_VALUE (not a finite number),
VALUE_OUT_OF_RANGE (outside 0..100), DUPLICATE_UTT_ID, EMPTY_FILE, and the id
set codes when ``--ref`` lists the expected utterances.
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Mapping, Optional

from pyutils.scoring.errors import ScoringError
from pyutils.io import iter_lines
from pyutils.scoring.io import check_id_sets

COMPONENTS = ("sim_ref_out", "sim_src_out", "mos", "wer")
ID_KEYS = ("utt", "converted", "utt_id", "name")
WEIGHTS = {"SIM_gain": 0.4, "MOS": 0.3, "100-WER": 0.3}


def combine(sim_ref_out: float, sim_src_out: float, mos: float, wer: float) -> float:
    return 0.4 * (sim_ref_out - sim_src_out) + 0.3 * mos + 0.3 * (100.0 - wer)


def _read_rows(path: str) -> List[tuple]:
    """-> [(line, dict of raw values)] from TSV (header) or JSONL (by first char)."""
    lines = [text for _, text in iter_lines(path, bom="strip")]
    first = next((ln for ln in lines if ln.strip()), "")
    rows = []
    if first.lstrip().startswith("{"):
        for k, ln in enumerate(lines, 1):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as exc:
                raise ScoringError("INVALID_JSON", f"invalid JSON: {exc.msg}", path, k) from None
            if not isinstance(obj, dict):
                raise ScoringError("INVALID_JSONL_RECORD", "each line must be a JSON object", path, k)
            rows.append((k, obj))
        return rows
    header = None
    for k, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        cells = ln.split("\t")
        if header is None:
            header = [c.strip() for c in cells]
            continue
        if len(cells) != len(header):
            raise ScoringError("INVALID_TSV_ROW", f"{len(cells)} columns, header has {len(header)}", path, k)
        rows.append((k, dict(zip(header, (c.strip() for c in cells)))))
    return rows


def _number(obj, key, path, line) -> float:
    if key not in obj:
        raise ScoringError("MISSING_REQUIRED_FIELD", f"missing column {key!r}", path, line)
    raw = obj[key]
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError):
        raise ScoringError("INVALID_VALUE", f"{key} must be a number, got {raw!r}", path, line) from None
    if not math.isfinite(value):
        raise ScoringError("INVALID_VALUE", f"{key} must be finite, got {raw!r}", path, line)
    if not 0.0 <= value <= 100.0:
        raise ScoringError("VALUE_OUT_OF_RANGE", f"{key}={value} is outside 0..100", path, line)
    return value


def load_components(path: str) -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    lines: Dict[str, int] = {}
    for line, obj in _read_rows(path):
        key = next((k for k in ID_KEYS if k in obj), None)
        if key is None or not str(obj[key]).strip():
            raise ScoringError("MISSING_REQUIRED_FIELD", f"missing utterance column (one of {', '.join(ID_KEYS)})",
                               path, line)
        utt = str(obj[key]).strip()
        if utt in out:
            raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utterance {utt!r} (first on line {lines[utt]})",
                               path, line)
        out[utt] = {c: _number(obj, c, path, line) for c in COMPONENTS}
        lines[utt] = line
    if not out:
        raise ScoringError("EMPTY_FILE", "no rows", path)
    return out


def score_vc(rows: Mapping[str, Mapping[str, float]]) -> Dict[str, Any]:
    """rows: {utt: {sim_ref_out, sim_src_out, mos, wer}} (0..100) -> result dict."""
    n = len(rows)
    if n == 0:
        raise ScoringError("EMPTY_FILE", "no utterances to score")
    means = {c: math.fsum(r[c] for r in rows.values()) / n for c in COMPONENTS}
    per_utt = {u: combine(r["sim_ref_out"], r["sim_src_out"], r["mos"], r["wer"]) for u, r in rows.items()}
    score = combine(means["sim_ref_out"], means["sim_src_out"], means["mos"], means["wer"])
    return {
        "num_utterances": n,
        "SIM_ref_out": means["sim_ref_out"],
        "SIM_src_out": means["sim_src_out"],
        "SIM_gain": means["sim_ref_out"] - means["sim_src_out"],
        "MOS": means["mos"],
        "WER": means["wer"],
        "Score": score,
        "Score_mean_of_utterances": math.fsum(per_utt.values()) / n,
        "score_definition": "0.4*(SIM_ref_out - SIM_src_out) + 0.3*MOS + 0.3*(100 - WER), components "
                            "averaged over utterances first (identical to averaging per-utterance scores "
                            "since the score is linear)",
        "contributions": {"0.4*SIM_gain": 0.4 * (means["sim_ref_out"] - means["sim_src_out"]),
                          "0.3*MOS": 0.3 * means["mos"], "0.3*(100-WER)": 0.3 * (100.0 - means["wer"])},
        "per_utterance": per_utt,
    }


def _expected_ids(path: str) -> List[str]:
    """Expected names: JSONL/TSV with an id column, or one name per line."""
    lines = [text for _, text in iter_lines(path, bom="strip")]
    first = next((ln for ln in lines if ln.strip()), "")
    if not first.lstrip().startswith("{") and not any(k in first.strip().split("\t") for k in ID_KEYS):
        return [ln.split()[0] for ln in lines if ln.strip()]
    ids = []
    for line, obj in _read_rows(path):
        key = next((k for k in ID_KEYS if k in obj), None)
        if key is None:
            raise ScoringError("MISSING_REQUIRED_FIELD", "no utterance column", path, line)
        ids.append(str(obj[key]).strip())
    return ids


def score_vc_files(hyp_path: str, ref_path: Optional[str] = None) -> Dict[str, Any]:
    rows = load_components(hyp_path)
    if ref_path:
        check_id_sets(_expected_ids(ref_path), rows.keys(), hyp_path, what="utterance")
    return score_vc(rows)


def summary_lines(r: Mapping[str, Any]) -> List[str]:
    return [f"VLSP 2025 VC score over {r['num_utterances']} utterances",
            f"  SIM(ref,out)={r['SIM_ref_out']:.2f} SIM(src,out)={r['SIM_src_out']:.2f} "
            f"SIM_gain={r['SIM_gain']:.2f} MOS={r['MOS']:.2f} WER={r['WER']:.2f}",
            f"  Score = 0.4*{r['SIM_gain']:.2f} + 0.3*{r['MOS']:.2f} + 0.3*(100-{r['WER']:.2f}) = {r['Score']:.4f}"
            f"  (mean of per-utterance scores: {r['Score_mean_of_utterances']:.4f})"]
