"""The C path of the Track 1 scorer: utterances queued and scored a batch per call of ``track1_native.c``.

Why two paths: the C scorer (built by ``make -C tools native``) is what makes
scoring a large submission fast (~2x less CPU than Python: the small dynamic
programmes per utterance were most of the time), but it is optional (a fresh
clone without a compiler, a stale build) and gives no per-utterance
alignment, which ``--per-utt-report`` needs. The Python path
(:meth:`pyutils.scoring.track1_counts.LangAccumulator.add`) is the reference:
the tests check both give bit-identical results on random data.
"""

from __future__ import annotations

from array import array
from typing import Iterable, List, Optional

from pyutils.scoring import native
from pyutils.scoring.track1_counts import LangAccumulator
from pyutils.scoring.track1_table import ReferenceTable


class NativeBatch:
    """Utterances of one language queued for the C scorer (``track1_native.c``).

    Each submission row adds its codes (lexical units, events packed as
    ``position * 16 + tag``) and the reference row it is scored against;
    every :attr:`SIZE` rows one C call scores them all and adds the sums to
    the language's :class:`LangAccumulator` (mNTD values by scoring slot, as
    the Python path). Per-tag counts stay in arrays until :meth:`finish`.
    """

    SIZE = 4096

    def __init__(self, acc: LangAccumulator, table: ReferenceTable) -> None:
        self.acc, self.table = acc, table
        nt = table.n_tags
        self.tag_tp, self.tag_ref, self.tag_pred = (array("q", [0]) * nt for _ in range(3))
        self.confusion = array("q", [0]) * (nt * nt)
        self._clear()

    def _clear(self) -> None:
        self.rows, self.slots = array("Q"), array("Q")
        self.lex, self.lex_starts = array("I"), array("Q", [0])
        self.events, self.event_starts = array("Q"), array("Q", [0])

    def add(self, row: int, slot: int, lex_codes: Iterable[int], events: Optional[List[int]]) -> None:
        self.rows.append(row)
        self.slots.append(slot)
        self.lex.extend(lex_codes)
        self.lex_starts.append(len(self.lex))
        if events:
            self.events.extend(events)
        self.event_starts.append(len(self.events))
        if len(self.rows) >= self.SIZE:
            self.flush()

    def flush(self) -> None:
        k = len(self.rows)
        if not k:
            return
        t, acc, buf = self.table, self.acc, native.ffi.from_buffer
        edits, tp = array("q", [0]) * k, array("q", [0]) * k
        mntd = array("d", [0.0]) * k
        n_ref, n_pred = sum(self.tag_ref), sum(self.tag_pred)
        # (an empty array has no buffer to lend: one unused element is added)
        lex = self.lex if len(self.lex) else array("I", [0])
        events = self.events if len(self.events) else array("Q", [0])
        if native.lib.score_batch(
                buf("uint32_t[]", t.lexical), buf("uint64_t[]", t.lexical_starts), buf("uint64_t[]", t.events),
                buf("uint64_t[]", t.event_starts), buf("uint64_t[]", self.rows), k, buf("uint32_t[]", lex),
                buf("uint64_t[]", self.lex_starts), buf("uint64_t[]", events), buf("uint64_t[]", self.event_starts),
                t.n_tags, acc.collar, buf("int64_t[]", edits), buf("int64_t[]", tp), buf("double[]", mntd),
                buf("int64_t[]", self.tag_tp), buf("int64_t[]", self.tag_ref), buf("int64_t[]", self.tag_pred),
                buf("int64_t[]", self.confusion)) != 0:
            raise MemoryError("track1_native.score_batch: out of memory")
        batch_tp = sum(tp)
        acc.n_utts += k
        acc.edits += sum(edits)
        acc.tp += batch_tp
        acc.fp += sum(self.tag_pred) - n_pred - batch_tp
        acc.fn += sum(self.tag_ref) - n_ref - batch_tp
        ls, es = t.lexical_starts, t.event_starts
        acc.ref_tokens += sum([ls[r + 1] - ls[r] + es[r + 1] - es[r] for r in self.rows])
        values, has = acc.mntd_values, acc.has_mntd
        for slot, value in zip(self.slots, mntd):
            if value == value:  # NaN: no reference event, no mNTD
                values[slot] = value
                has[slot] = 1
        self._clear()

    def finish(self) -> None:
        self.flush()
        self.acc.absorb(self)
