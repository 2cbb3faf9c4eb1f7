"""Writers for Kaldi data dirs and JSONL (atomic: temp file, then rename)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, List


def write_text(path: str | os.PathLike, lines: Iterable[str]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> None:
    write_text(path, (json.dumps(r, ensure_ascii=False, sort_keys=False) for r in rows))


def read_jsonl(path: str | os.PathLike) -> List[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{i}: bad JSON: {e}") from e
    return out


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
