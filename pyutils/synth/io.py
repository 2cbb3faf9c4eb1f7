"""Writers for the mini corpora's Kaldi data dirs (atomic: :mod:`pyutils.io`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, List

from pyutils.io import atomic_write_lines


def write_text(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """``lines`` (without line ends) one a line, atomically (:func:`pyutils.io.atomic_write_lines`)."""
    atomic_write_lines(path, (line + "\n" for line in lines))


def _c_sorted(keys):
    # LC_ALL=C order == byte order of the UTF-8 encoding
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def write_datadir(d: str | os.PathLike, rows: List[dict], text: bool = True,
                  text_key: str = "text") -> None:
    """Write wav.scp, utt2spk, spk2utt, utt2dur (and ``text``) for ``rows``.

    Each row needs ``utt_id``, ``spk``, ``dur``, ``wav`` (absolute path) and,
    with ``text``, ``row[text_key]``.  Files are sorted as under ``LC_ALL=C``.
    """
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    by = {r["utt_id"]: r for r in rows}
    ids = _c_sorted(by)
    write_text(d / "wav.scp", (f"{u} {by[u]['wav']}" for u in ids))
    write_text(d / "utt2spk", (f"{u} {by[u]['spk']}" for u in ids))
    write_text(d / "utt2dur", (f"{u} {by[u]['dur']:.4f}" for u in ids))
    spk2utt: dict = {}
    for u in ids:
        spk2utt.setdefault(by[u]["spk"], []).append(u)
    write_text(d / "spk2utt", (f"{s} {' '.join(spk2utt[s])}" for s in _c_sorted(spk2utt)))
    if text:
        write_text(d / "text", (f"{u} {by[u][text_key]}" for u in ids))


class SynthArgError(ValueError):
    """Arguments that cannot make a corpus (chorus-synth exits 2 with the message)."""
