"""Split a data dir into N parts (Kaldi's split_data.sh layout).

``split_data_dir("data/train", 4)`` writes ``data/train/split4/{1..4}/``, each
a complete data dir. By default a speaker's utterances stay in one part (as
Kaldi does, so per-speaker CMVN/adaptation work); ``per_utt=True`` splits by
utterance into ``split4utt/``. Parts are contiguous in byte order and
balanced by utterance count.
"""

from __future__ import annotations

from pathlib import Path

from .datadir import load_data_dir, sorted_ids
from .io import DataDirError


def balanced_contiguous(sizes: list[int], n: int) -> list[list[int]]:
    """Cut ``sizes`` (in order) into ``n`` non-empty runs of near-equal sums.

    Greedy: each part aims at (remaining total / remaining parts) and takes the
    next group only if that brings it closer to the aim, always leaving at
    least one group for every later part. Returns the group indices per part.
    """
    if n > len(sizes):
        raise ValueError(f"cannot split {len(sizes)} groups into {n} non-empty parts")
    parts: list[list[int]] = []
    i, remaining = 0, sum(sizes)
    for p in range(n):
        left_parts = n - p
        if left_parts == 1:
            parts.append(list(range(i, len(sizes))))
            break
        target = remaining / left_parts
        part, count = [i], sizes[i]
        i += 1
        while len(sizes) - i > left_parts - 1 and abs(count + sizes[i] - target) <= abs(count - target):
            part.append(i)
            count += sizes[i]
            i += 1
        parts.append(part)
        remaining -= count
    return parts


def split_data_dir(path, n: int, *, per_utt: bool = False) -> list[Path]:
    """Write ``path/split{n}[utt]/{1..n}``; return the part folders."""
    path = Path(path)
    if n < 1:
        raise ValueError("number of splits must be >= 1")
    data = load_data_dir(path)
    if not data.utt2spk:
        raise DataDirError(f"{path}/utt2spk: missing or empty")
    if per_utt:
        groups = [[u] for u in data.utts]
    else:
        by_spk: dict[str, list[str]] = {}
        for utt in data.utts:
            by_spk.setdefault(data.utt2spk[utt], []).append(utt)
        groups = [by_spk[s] for s in sorted_ids(by_spk)]
    if n > len(groups):
        what = "utterances" if per_utt else "speakers"
        hint = "" if per_utt else " (use --per-utt to split by utterance)"
        raise DataDirError(f"{path}: cannot split {len(groups)} {what} into {n} parts{hint}")
    out_root = path / f"split{n}{'utt' if per_utt else ''}"
    parts = balanced_contiguous([len(g) for g in groups], n)
    dirs = []
    for k, idxs in enumerate(parts, 1):
        utts = [u for gi in idxs for u in groups[gi]]
        dirs.append(data.subset(utts).write(out_root / str(k)))
    return dirs
