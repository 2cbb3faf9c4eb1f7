"""Track 1 reports: the summary lines of ``chorus-score track1`` and the ``--per-utt-report`` file."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from pyutils.scoring import align
from pyutils.scoring.io import OrderedSpool
from pyutils.scoring.textnorm import LANGUAGES, Event, Parsed
from pyutils.scoring.track1_counts import COLLAR, PROTOCOL_NAME, PROTOCOL_VERSION
from pyutils.scoring.track1_table import ReferenceTable


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


REPORT_HEADER = ("# chorus-score track1 per-utterance report\n"
                 "# REF/HYP: normalised lexical units; [tag]@k = event at reference boundary k\n"
                 "# (k lexical units of the reference before it; hypothesis tags are mapped\n"
                 "# into reference coordinates by the protocol's minimum-edit alignment).\n\n")


def utterance_report(utt_id: str, language: str, ref: Parsed, hyp: Parsed, mapped: Sequence[Event],
                     edits: int, mntd: Optional[float]) -> str:
    """The report block of one utterance (``ref``/``hyp`` parsed as strings; ``mapped`` in reference coordinates)."""
    collar = COLLAR[language]
    n_ref = max(len(ref.tagged), 1)
    shown = "-" if mntd is None else f"{mntd:.3f}"
    out = [f"== {utt_id} ({language})  tagged_edits={edits}/{len(ref.tagged)} ({edits / n_ref:.3f})  mNTD={shown}",
           "  REF: " + _render(ref, ref.events),
           "  HYP: " + _render(hyp, mapped)]
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


class PerUttReport:
    """``--per-utt-report``: blocks made while scoring, written in scoring order.

    The blocks go to an :class:`~pyutils.scoring.io.OrderedSpool` (a temp file
    next to the report) as the submission is streamed, in whatever order its
    rows come; :meth:`commit` writes the report atomically (English first,
    utt_id ascending). Nothing is written at ``path`` unless scoring succeeded
    and :meth:`commit` was called. Use as a context manager.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._spool: Optional[OrderedSpool] = None
        self._words: List[str] = []

    def start(self, table: ReferenceTable) -> None:
        self._spool = OrderedSpool(len(table.lines), self.path)
        self._words = table.words()

    def put(self, rank: int, utt_id: str, language: str, ref: Parsed, hyp: Parsed, edits: int,
            mapped: Sequence[Event], mntd: Optional[float]) -> None:
        """``ref`` as codes (from the reference table), ``hyp`` as parsed strings."""
        words = self._words
        ref = tuple.__new__(Parsed, (tuple(words[c] for c in ref.lexical), tuple(words[c] for c in ref.tagged),
                                     ref.events))
        self._spool.put(rank, utterance_report(utt_id, language, ref, hyp, mapped, edits, mntd))

    def commit(self) -> None:
        self._spool.write_to(REPORT_HEADER)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> "PerUttReport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

