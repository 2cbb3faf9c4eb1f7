"""Per-language Track 1 sums: TP/FP/FN per tag, tagged edits, mNTD by scoring slot, tag confusion.

Per language (en: words, collar 2; zh: characters, collar 5), as the official protocol v1.0.0:

- ``F1_micro``: per tag, one-to-one matching of reference events and predicted
  events mapped into reference coordinates (|p-g| <= collar); TP pooled over
  tags and utterances, FP = #pred - TP, FN = #ref - TP;
  P = TP / (TP + FP), R = TP / (TP + FN), F1 = 2PR / (P + R) (0 when a denominator is 0).
- ``mNTD``: mean over reference utterances with >= 1 event of
  cost(monotone event alignment) / max(#ref, #pred), clipped to [0, 1]
  (0 when no utterance has an event).
- ``tagged_transcript_error`` (WER en / CER zh): sum of Levenshtein distances
  between tagged-token sequences / sum of reference tagged tokens.
- ``Track1Score = 100 * [0.70 F1 + 0.20 (1 - mNTD) + 0.10 (1 - min(Err, 1))]``
  clipped to [0, 100] and rounded to 12 decimals (as the official script).

Tag confusion (beyond the official script): diagonal = per-tag TP; the
remaining reference and predicted events of an utterance are paired,
regardless of tag, within the collar (earliest-first sweep) -> off-diagonal
cells (reference tag row, predicted tag column); still unpaired references
go to column ``<none>`` (missed) and predictions to row ``<none>``
(inserted). Row sums = reference counts, column sums = predicted counts.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections import Counter
from typing import Any, Dict, List, Sequence, Tuple

from pyutils.scoring import align
from pyutils.scoring.errors import ScoringError
from pyutils.scoring.textnorm import Event, Parsed

PROTOCOL_NAME = "NVVSpeech Challenge Track 1 evaluation (re-implemented by chorus-score)"
PROTOCOL_VERSION = "1.0.0"
COLLAR = {"en": 2, "zh": 5}
WEIGHTS = {"F1": 0.70, "mNTD": 0.20, "Err": 0.10}
NONE_TAG = "<none>"


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


_TAG_OF = operator.itemgetter(2)  # Event.tag


class LangAccumulator:
    """Counts of one language, filled utterance by utterance.

    Per tag only the TP are counted per utterance; reference and predicted
    counts are tallied with ``Counter.update`` and FP/FN, the confusion
    diagonal and its ``<none>`` row/column are derived in :meth:`result`.
    """

    def __init__(self, language: str, tags: Sequence[str], n_utts: int, keep_details: bool) -> None:
        self.language = language
        self.collar = COLLAR[language]
        self.tags = list(tags)
        self.n_utts = 0
        self.tp = self.fp = self.fn = 0
        self.edits = 0
        self.ref_tokens = 0
        # mNTD per utterance, by position in scoring order: the mean is summed
        # in that order, so the float result is bit-identical to the official
        # script's whatever order the submission rows arrive in.
        self.mntd_values = array("d", [0.0]) * n_utts
        self.has_mntd = bytearray(n_utts)
        self.ref_counts: Counter = Counter()
        self.pred_counts: Counter = Counter()
        self.tp_counts: Counter = Counter()
        self.off_diagonal: Counter = Counter()  # (reference tag, predicted tag) -> pairs
        self.keep_details = keep_details

    def add(self, slot: int, ref: Parsed, hyp: Parsed):
        """Score the utterance at position ``slot`` of this language's scoring order from token codes (see :class:`ReferenceTable`).

        Returns ``(edits, mapped events, mNTD or None)`` when details are kept.
        """
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
                self.has_mntd[slot] = 1  # mNTD 0.0
            return None
        collar = self.collar
        # 1) tagged-token edit distance (rapidfuzz).
        if ref.tagged == hyp.tagged:
            edits = 0
        else:
            edits = align.edit_distance(ref.tagged, hyp.tagged)
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
            self.mntd_values[slot] = value
            self.has_mntd[slot] = 1
        if self.keep_details:
            return edits, mapped, value
        return None

    def absorb(self, batch) -> None:
        """Add the per-tag counts and confusion pairs that ``batch`` (a
        :class:`pyutils.scoring.track1_batch.NativeBatch`) accumulated."""
        tags, nt = self.tags, len(self.tags)
        for k, tag in enumerate(tags):
            if batch.tag_ref[k]:
                self.ref_counts[tag] += batch.tag_ref[k]
            if batch.tag_pred[k]:
                self.pred_counts[tag] += batch.tag_pred[k]
            if batch.tag_tp[k]:
                self.tp_counts[tag] += batch.tag_tp[k]
        for k, n in enumerate(batch.confusion):
            if n:
                self.off_diagonal[tags[k // nt], tags[k % nt]] += n

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
        n_mntd = self.has_mntd.count(1)
        mntd = sum(itertools.compress(self.mntd_values, self.has_mntd)) / n_mntd if n_mntd else 0.0
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
            "mNTD_num_utterances": n_mntd,
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
