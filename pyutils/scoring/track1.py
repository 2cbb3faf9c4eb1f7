"""NVVSpeech Challenge (ISCSLP 2026) Track 1 score, official protocol v1.0.0.

Per language (en: words, collar 2; zh: characters, collar 5):

- ``F1_micro``: per tag, one-to-one matching of reference events and predicted
  events mapped into reference coordinates (|p-g| <= collar); TP pooled over
  tags and utterances, FP = #pred - TP, FN = #ref - TP; P, R, F1 (0 when a
  denominator is 0).
- ``mNTD``: mean over reference utterances with >= 1 event of
  cost(monotone event alignment) / max(#ref, #pred), clipped to [0, 1]
  (0 when no utterance has an event).
- ``tagged_transcript_error`` (WER en / CER zh): sum of Levenshtein distances
  between tagged-token sequences / sum of reference tagged tokens.
- ``Track1Score = 100 * [0.70 F1 + 0.20 (1 - mNTD) + 0.10 (1 - min(Err, 1))]``
  clipped to [0, 100] and rounded to 12 decimals (as the official script);
  ``FinalTrack1Score = (ZH + EN) / 2`` (rounded to 12 decimals).

Parsing/normalisation: :mod:`pyutils.scoring.textnorm`; alignment, matching
and mNTD: :mod:`pyutils.scoring.align`.

Decisions (where the brief or protocol leaves room; documented for users):

- *One language only*: the official script refuses a reference without both
  languages; here a reference with one language is scored for that language,
  the other's keys are ``null`` and ``FinalTrack1Score`` equals that
  language's score (``languages_scored`` and ``final_score_definition`` say so).
- ``language`` values are stripped and lower-cased before the check (as the
  official script), so ``" EN"`` is English; ``utt_id`` values are stripped.
- Validation order follows the official script: reference rows in file
  order (fields, language, duplicates, tags), then submission rows
  (fields, duplicates), then the id sets, then the submission's tags in
  scoring order (English before Mandarin, utt_id ascending). The first
  problem found is reported with its file and line.
- A language whose reference has no tagged token at all cannot give a
  tagged error rate: EMPTY_REFERENCE_TOKENS (as the official script).
- ``order`` of an event = its index within the utterance (text order).
- Tag confusion (beyond the official script): diagonal = per-tag TP; the
  remaining reference and predicted events of an utterance are paired,
  regardless of tag, within the collar (earliest-first sweep) -> off-diagonal
  cells (reference tag row, predicted tag column); still unpaired references
  go to column ``<none>`` (missed) and predictions to row ``<none>``
  (inserted). Row sums = reference counts, column sums = predicted counts.
"""

from __future__ import annotations

import contextlib
import gc
import operator
from collections import Counter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from pyutils.scoring import align
from pyutils.scoring.errors import ScoringError
from pyutils.scoring.io import check_id_sets, read_jsonl, require_field
from pyutils.scoring.textnorm import LANGUAGES, Event, Parsed, parse_tagged
from pyutils.tags import challenge_tags

PROTOCOL_NAME = "NVVSpeech Challenge Track 1 evaluation (re-implemented by chorus-score)"
PROTOCOL_VERSION = "1.0.0"
COLLAR = {"en": 2, "zh": 5}
WEIGHTS = {"F1": 0.70, "mNTD": 0.20, "Err": 0.10}
NONE_TAG = "<none>"


# --------------------------------------------------------------------------- loading
def load_reference_rows(rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]):
    """Validate reference rows -> {utt_id: (language, text, line, Parsed)}."""
    out: Dict[str, Tuple[str, str, int, Parsed]] = {}
    for line, obj in rows:
        utt_id, lang_raw, text = obj.get("utt_id"), obj.get("language"), obj.get("text_with_nvvs")
        if type(utt_id) is not str or type(lang_raw) is not str or type(text) is not str or not utt_id.strip():
            # slow path only to name the problem
            require_field(obj, "utt_id", path, line, nonempty=True)
            require_field(obj, "language", path, line)
            text = require_field(obj, "text_with_nvvs", path, line)
        utt_id = utt_id.strip()
        lang = lang_raw.strip().lower()
        if lang not in LANGUAGES:
            raise ScoringError("INVALID_LANGUAGE", f"language must be 'en' or 'zh', got {lang_raw!r}", path, line)
        if utt_id in out:
            raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt_id!r} (first on line {out[utt_id][2]})",
                               path, line)
        try:
            parsed = parse_tagged(text, lang)
        except ScoringError as exc:
            raise exc.located(path, line)
        out[utt_id] = (lang, text, line, parsed)
    return out


def load_submission_rows(rows: Iterable[Tuple[int, Mapping[str, Any]]], path: Optional[str]):
    """Validate submission rows (fields, duplicates) -> {utt_id: (text, line)}."""
    out: Dict[str, Tuple[str, int]] = {}
    for line, obj in rows:
        utt_id, text = obj.get("utt_id"), obj.get("text_with_nvvs")
        if type(utt_id) is not str or type(text) is not str or not utt_id.strip():
            require_field(obj, "utt_id", path, line, nonempty=True)
            text = require_field(obj, "text_with_nvvs", path, line)
        utt_id = utt_id.strip()
        if utt_id in out:
            raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt_id!r} (first on line {out[utt_id][1]})",
                               path, line)
        out[utt_id] = (text, line)
    return out


def _numbered(rows) -> List[Tuple[int, Mapping[str, Any]]]:
    rows = list(rows)
    if rows and isinstance(rows[0], tuple):
        return rows
    return [(i, r) for i, r in enumerate(rows, start=1)]


# --------------------------------------------------------------------------- scoring
_TAG_OF = operator.itemgetter(2)  # Event.tag


class _LangAccumulator:
    """Counts of one language, filled utterance by utterance.

    Per tag only the TP are counted per utterance; reference and predicted
    counts are tallied with ``Counter.update`` and FP/FN, the confusion
    diagonal and its ``<none>`` row/column are derived in :meth:`result`.
    """

    def __init__(self, language: str, tags: Sequence[str], keep_details: bool) -> None:
        self.language = language
        self.collar = COLLAR[language]
        self.tags = list(tags)
        self.n_utts = 0
        self.tp = self.fp = self.fn = 0
        self.edits = 0
        self.ref_tokens = 0
        self.mntd_values: List[float] = []
        self.ref_counts: Counter = Counter()
        self.pred_counts: Counter = Counter()
        self.tp_counts: Counter = Counter()
        self.off_diagonal: Counter = Counter()  # (reference tag, predicted tag) -> pairs
        self.keep_details = keep_details
        self.details: List[Dict[str, Any]] = []
        self.vocab: Dict[str, int] = {}
        self.direct = language == "zh" and _zh_tokens_exact(self.tags)

    def _codes(self, tokens: Sequence[str]):
        """Tokens as exact integer codes (rapidfuzz would otherwise hash strings).

        Mandarin units are single characters, which rapidfuzz compares by code
        point; only the 16 tags are hashed, and ``_zh_tokens_exact`` checks
        once that their hashes cannot collide with each other or a code point.
        """
        if self.direct:
            return tokens
        vocab = self.vocab
        add = vocab.setdefault
        return [add(t, len(vocab)) for t in tokens]

    def add(self, utt_id: str, ref: Parsed, hyp: Parsed) -> None:
        self.n_utts += 1
        self.ref_tokens += len(ref.tagged)
        ref_events = ref.events
        if ref.tagged == hyp.tagged and not self.keep_details:
            # No edit; every event a TP at distance 0; mNTD 0.0 (the DP's
            # all-diagonal path of zero-cost pairs).
            if ref_events:
                self.ref_counts.update(map(_TAG_OF, ref_events))
                self.pred_counts.update(map(_TAG_OF, ref_events))
                self.tp_counts.update(map(_TAG_OF, ref_events))
                self.tp += len(ref_events)
                self.mntd_values.append(0.0)
            return
        collar = self.collar
        # 1) tagged-token edit distance (rapidfuzz).
        if ref.tagged == hyp.tagged:
            edits = 0
        else:
            edits = align.edit_distance(self._codes(ref.tagged), self._codes(hyp.tagged))
        self.edits += edits
        # 2) predicted events in reference coordinates.
        if not hyp.events or ref.lexical == hyp.lexical:
            mapped = hyp.events
        else:
            bmap = align.boundary_map(ref.lexical, hyp.lexical, hyp.events[0].position)
            new = tuple.__new__
            mapped = tuple([new(Event, (bmap[e.position], e.order, e.tag)) for e in hyp.events])
        # 3) per-tag matching (positions are already sorted: both event lists
        #    are in text order and the boundary map is monotone).
        n_ref, n_hyp = len(ref_events), len(mapped)
        utt_tp = 0
        if n_ref:
            self.ref_counts.update(map(_TAG_OF, ref_events))
        if n_hyp:
            self.pred_counts.update(map(_TAG_OF, mapped))
        if n_ref and n_hyp:
            if n_ref == 1 and n_hyp == 1:
                g, p = ref_events[0], mapped[0]
                if g.tag == p.tag and abs(g.position - p.position) <= collar:
                    utt_tp = 1
                    self.tp_counts[g.tag] += 1
            else:
                by_ref: Dict[str, List[int]] = {}
                for e in ref_events:
                    by_ref.setdefault(e.tag, []).append(e.position)
                by_hyp: Dict[str, List[int]] = {}
                for e in mapped:
                    by_hyp.setdefault(e.tag, []).append(e.position)
                for tag, hp in by_hyp.items():
                    rp = by_ref.get(tag)
                    if rp:
                        k = align.count_matches_f1(rp, hp, collar)
                        if k:
                            self.tp_counts[tag] += k
                            utt_tp += k
            if n_ref > utt_tp and n_hyp > utt_tp:
                self._confuse(ref_events, mapped)  # pair leftovers of different tags
        self.tp += utt_tp
        self.fp += n_hyp - utt_tp
        self.fn += n_ref - utt_tp
        # 4) mNTD (only utterances with a reference event).
        value = None
        if n_ref:
            value = align.utterance_mntd(ref_events, mapped, len(ref.lexical))
            self.mntd_values.append(value)
        if self.keep_details:
            self.details.append({"utt_id": utt_id, "language": self.language, "ref": ref, "hyp": hyp,
                                 "mapped": mapped, "edits": edits, "mNTD": value})

    def _confuse(self, ref_events: Sequence[Event], mapped: Sequence[Event]) -> None:
        """Off-diagonal confusion pairs of one utterance (see module docstring).

        Same-tag events are paired by the sweep of :func:`align.sweep_pairs`
        (as many pairs as the protocol's TP); the leftovers are paired by the
        same sweep regardless of tag. Unpaired events end up in the ``<none>``
        row/column, derived from the totals in :meth:`result`.
        """
        collar = self.collar
        left_r = set(range(len(ref_events)))
        left_h = set(range(len(mapped)))
        for tag in {e.tag for e in ref_events} & {e.tag for e in mapped}:
            ri = [k for k, e in enumerate(ref_events) if e.tag == tag]
            hi = [k for k, e in enumerate(mapped) if e.tag == tag]
            for a, b in align.sweep_pairs([ref_events[k].position for k in ri],
                                          [mapped[k].position for k in hi], collar):
                left_r.discard(ri[a])
                left_h.discard(hi[b])
        rest_r = sorted(left_r)
        rest_h = sorted(left_h)
        for a, b in align.sweep_pairs([ref_events[k].position for k in rest_r],
                                      [mapped[k].position for k in rest_h], collar):
            self.off_diagonal[ref_events[rest_r[a]].tag, mapped[rest_h[b]].tag] += 1

    def confusion_table(self) -> Dict[str, Dict[str, int]]:
        labels = self.tags + [NONE_TAG]
        table = {r: {c: 0 for c in labels} for r in labels}
        for tag in self.tags:
            table[tag][tag] = self.tp_counts[tag]
        for (r, c), k in self.off_diagonal.items():
            table[r][c] += k
        for tag in self.tags:
            table[tag][NONE_TAG] = self.ref_counts[tag] - sum(table[tag][c] for c in self.tags)
            table[NONE_TAG][tag] = self.pred_counts[tag] - sum(table[r][tag] for r in self.tags)
        return table

    def result(self) -> Dict[str, Any]:
        if self.ref_tokens == 0:
            raise ScoringError("EMPTY_REFERENCE_TOKENS",
                               f"{self.language} reference has no lexical unit or tag at all; "
                               "the tagged error rate is undefined")
        precision, recall, f1 = safe_prf(self.tp, self.fp, self.fn)
        mntd = sum(self.mntd_values) / len(self.mntd_values) if self.mntd_values else 0.0
        err = self.edits / self.ref_tokens
        score = track1_score(f1, mntd, err)
        per_tag = {}
        for tag in self.tags:
            tp, n_ref, n_pred = self.tp_counts[tag], self.ref_counts[tag], self.pred_counts[tag]
            p, r, f = safe_prf(tp, n_pred - tp, n_ref - tp)
            per_tag[tag] = {"tp": tp, "fp": n_pred - tp, "fn": n_ref - tp, "reference": n_ref,
                            "prediction": n_pred, "precision": p, "recall": r, "f1": f}
        return {
            "language": self.language,
            "num_utterances": self.n_utts,
            "f1_collar": self.collar,
            "event_counts": {"tp": self.tp, "fp": self.fp, "fn": self.fn,
                             "reference": self.tp + self.fn, "prediction": self.tp + self.fp},
            "precision": precision,
            "recall": recall,
            "F1_micro": f1,
            "mNTD": mntd,
            "mNTD_num_utterances": len(self.mntd_values),
            "tagged_transcript_error": err,
            "tagged_transcript_error_name": "WER" if self.language == "en" else "CER",
            "tagged_edit_distance": self.edits,
            "tagged_reference_tokens": self.ref_tokens,
            "score_components": {
                "0.70*F1_micro": 100 * 0.70 * f1,
                "0.20*(1-mNTD)": 100 * 0.20 * (1.0 - mntd),
                "0.10*(1-min(Err,1))": 100 * 0.10 * (1.0 - min(err, 1.0)),
            },
            "Track1Score": score,
            "per_tag": per_tag,
            "confusion": {"rows": "reference tag", "columns": "predicted tag",
                          "none": NONE_TAG, "table": self.confusion_table()},
        }


def _zh_tokens_exact(tags: Sequence[str]) -> bool:
    hashes = {hash(f"[{t}]") & 0xFFFFFFFFFFFFFFFF for t in tags}
    return len(hashes) == len(tags) and min(hashes) > 0x10FFFF


def safe_prf(tp: int, fp: int, fn: int) -> Tuple[float, float, float]:
    """Precision, recall, F1 with 0 where a denominator is 0."""
    precision = tp / (tp + fp) if (tp + fp) else 0.0
    recall = tp / (tp + fn) if (tp + fn) else 0.0
    if precision + recall == 0.0:
        return precision, recall, 0.0
    return precision, recall, 2.0 * precision * recall / (precision + recall)


def track1_score(f1: float, mntd: float, err: float) -> float:
    """100 * [0.70 F1 + 0.20 (1 - mNTD) + 0.10 (1 - min(Err, 1))], clipped, 12 decimals."""
    value = 100.0 * (0.70 * f1 + 0.20 * (1.0 - mntd) + 0.10 * (1.0 - min(err, 1.0)))
    return round(max(0.0, min(100.0, value)), 12)


def score_loaded(refs: Mapping[str, Tuple[str, str, int, Parsed]], hyps: Mapping[str, Tuple[str, int]],
                 hyp_path: Optional[str] = None, keep_details: bool = False) -> Dict[str, Any]:
    """Score validated reference/submission maps (see :func:`load_reference_rows`)."""
    check_id_sets(refs.keys(), hyps.keys(), hyp_path)
    tags = challenge_tags()
    present = [lang for lang in LANGUAGES if any(r[0] == lang for r in refs.values())]
    results: Dict[str, Any] = {}
    details: List[Dict[str, Any]] = []
    for lang in present:
        acc = _LangAccumulator(lang, tags, keep_details)
        for utt_id in sorted(u for u, r in refs.items() if r[0] == lang):
            _, _, _, ref = refs[utt_id]
            text, line = hyps[utt_id]
            try:
                hyp = parse_tagged(text, lang)
            except ScoringError as exc:
                raise exc.located(hyp_path, line)
            acc.add(utt_id, ref, hyp)
        results[lang] = acc.result()
        details.extend(acc.details)
    en = results.get("en")
    zh = results.get("zh")
    if en and zh:
        final = round((en["Track1Score"] + zh["Track1Score"]) / 2.0, 12)
        definition = "(Track1Score_ZH + Track1Score_EN) / 2"
    else:
        only = present[0]
        final = results[only]["Track1Score"]
        definition = (f"reference holds {only} only: FinalTrack1Score = Track1Score_{only.upper()} "
                      "(the official leaderboard averages EN and ZH)")
    out: Dict[str, Any] = {
        "protocol": {"name": PROTOCOL_NAME, "version": PROTOCOL_VERSION, "valid_tags": tags,
                     "f1_collar": dict(COLLAR), "weights": dict(WEIGHTS),
                     "implementation": "pyutils.scoring.track1 (chorus-score track1)"},
        "languages_scored": present,
        "final_score_definition": definition,
        "Track1Score_EN": en["Track1Score"] if en else None,
        "Track1Score_ZH": zh["Track1Score"] if zh else None,
        "FinalTrack1Score": final,
        "en": en,
        "zh": zh,
    }
    out["scores"] = {k: out[k] for k in ("Track1Score_EN", "Track1Score_ZH", "FinalTrack1Score")}
    if keep_details:
        out["_details"] = details
    return out


@contextlib.contextmanager
def _cyclic_gc_paused():
    """Pause Python's cyclic garbage collector while scoring.

    Scoring builds only acyclic objects (tuples, lists, dicts), which reference
    counting frees at once; with tens of thousands of rows alive, the cyclic
    collector's generation scans cost ~20 % of the run for nothing. The
    previous state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def score_track1(ref_rows, hyp_rows, *, ref_path: Optional[str] = None, hyp_path: Optional[str] = None,
                 keep_details: bool = False) -> Dict[str, Any]:
    """Score Track 1 from rows (dicts, or ``(line_no, dict)`` pairs); raises ScoringError."""
    with _cyclic_gc_paused():
        refs = load_reference_rows(_numbered(ref_rows), ref_path)
        if not refs:
            raise ScoringError("EMPTY_JSONL", "reference contains no records", ref_path)
        hyps = load_submission_rows(_numbered(hyp_rows), hyp_path)
        return score_loaded(refs, hyps, hyp_path, keep_details)


def score_track1_files(ref_path: str, hyp_path: str, keep_details: bool = False) -> Dict[str, Any]:
    """Score Track 1 from two JSONL files; raises ScoringError."""
    with _cyclic_gc_paused():
        refs = load_reference_rows(read_jsonl(ref_path), ref_path)
        hyps = load_submission_rows(read_jsonl(hyp_path), hyp_path)
        return score_loaded(refs, hyps, hyp_path, keep_details)


# --------------------------------------------------------------------------- reporting
def summary_lines(result: Mapping[str, Any]) -> List[str]:
    lines = [f"{PROTOCOL_NAME} | protocol v{PROTOCOL_VERSION}"]
    for lang in LANGUAGES:
        r = result.get(lang)
        if not r:
            continue
        ev = r["event_counts"]
        lines.append(
            f"[{lang.upper()}] utts={r['num_utterances']} TP/FP/FN={ev['tp']}/{ev['fp']}/{ev['fn']} "
            f"P={r['precision']:.4f} R={r['recall']:.4f} F1_micro={r['F1_micro']:.6f} "
            f"mNTD={r['mNTD']:.6f} ({r['mNTD_num_utterances']} utts) "
            f"tagged_{r['tagged_transcript_error_name']}={r['tagged_transcript_error']:.6f} "
            f"Track1Score={r['Track1Score']:.6f}")
        c = r["score_components"]
        lines.append(f"      Track1Score = {c['0.70*F1_micro']:.4f} (0.70*F1) + {c['0.20*(1-mNTD)']:.4f} (0.20*(1-mNTD))"
                     f" + {c['0.10*(1-min(Err,1))']:.4f} (0.10*(1-min(Err,1)))")
        worst = sorted((t for t, c in r["per_tag"].items() if c["reference"] or c["prediction"]),
                       key=lambda t: (r["per_tag"][t]["f1"], t))[:3]
        if worst:
            lines.append("      lowest per-tag F1: " + ", ".join(
                f"{t}={r['per_tag'][t]['f1']:.3f} ({r['per_tag'][t]['reference']} ref)" for t in worst))
    for key in ("Track1Score_EN", "Track1Score_ZH"):
        if result[key] is not None:
            lines.append(f"{key:<17}: {result[key]:.6f}")
    lines.append(f"{'FinalTrack1Score':<17}: {result['FinalTrack1Score']:.6f}   [{result['final_score_definition']}]")
    return lines


def _render(parsed: Parsed, events: Sequence[Event]) -> str:
    """Lexical units with tags written ``[tag]@pos`` at their (reference) positions."""
    by_pos: Dict[int, List[Event]] = {}
    for e in events:
        by_pos.setdefault(e.position, []).append(e)
    words: List[str] = []
    units = parsed.lexical
    # Place each event after the lexical unit at its *own* position, but show
    # the position it has in reference coordinates.
    own = {e.order: e.position for e in parsed.events}
    own_by_pos: Dict[int, List[Event]] = {}
    for e in events:
        own_by_pos.setdefault(own[e.order], []).append(e)
    for k in range(len(units) + 1):
        for e in own_by_pos.get(k, ()):
            words.append(f"[{e.tag}]@{e.position}")
        if k < len(units):
            words.append(units[k])
    return " ".join(words) if words else "(empty)"


def per_utt_report(result: Mapping[str, Any]) -> str:
    """Readable per-utterance report (needs ``keep_details=True``)."""
    out = ["# chorus-score track1 per-utterance report",
           "# REF/HYP: normalised lexical units; [tag]@k = event at reference boundary k",
           "# (k lexical units of the reference before it; hypothesis tags are mapped",
           "# into reference coordinates by the protocol's minimum-edit alignment).", ""]
    for d in result.get("_details", []):
        ref, hyp, mapped = d["ref"], d["hyp"], d["mapped"]
        collar = COLLAR[d["language"]]
        n_ref = max(len(ref.tagged), 1)
        mntd = "-" if d["mNTD"] is None else f"{d['mNTD']:.3f}"
        out.append(f"== {d['utt_id']} ({d['language']})  tagged_edits={d['edits']}/{len(ref.tagged)}"
                   f" ({d['edits'] / n_ref:.3f})  mNTD={mntd}")
        out.append("  REF: " + _render(ref, ref.events))
        out.append("  HYP: " + _render(hyp, mapped))
        lines = []
        matched = set()
        for tag in {e.tag for e in ref.events} | {e.tag for e in mapped}:
            for g, p in align.match_events_f1([e for e in ref.events if e.tag == tag],
                                              [e for e in mapped if e.tag == tag], collar):
                matched.add(("r", g.order))
                matched.add(("h", p.order))
                lines.append((g.position, f"    TP   [{tag}] ref@{g.position} hyp@{p.position}"
                                          f" (|d|={abs(g.position - p.position)})"))
        for g in ref.events:
            if ("r", g.order) not in matched:
                lines.append((g.position, f"    MISS [{g.tag}] ref@{g.position}"))
        for p in mapped:
            if ("h", p.order) not in matched:
                lines.append((p.position, f"    FA   [{p.tag}] hyp@{p.position}"))
        out.extend(text for _, text in sorted(lines, key=lambda x: x[0]))
    return "\n".join(out) + "\n"


def public_result(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The result without internal per-utterance objects (for JSON)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}
