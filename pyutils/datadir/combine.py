"""Concatenate data dirs (Kaldi's combine_data.sh).

Utterance ids must be distinct across sources (prefix them with
``copy_data_dir --utt-prefix`` first); a speaker or recording may appear in
several sources (spk2utt is rebuilt; a recording must then point to the same
audio). A keyed file is combined only if every source has it, except
``segments``: sources without it get whole-recording segments when their
utt2dur/reco2dur is known.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .datadir import DataDir, check_destination, file_kind, load_data_dir, spk2utt_from_utt2spk
from .io import DataDirError


def _whole_segments(d: DataDir) -> dict[str, str] | None:
    durs = d.files.get("utt2dur") or d.files.get("reco2dur")
    if durs is None or any(u not in durs for u in d.utts):
        return None
    return {u: f"{u} 0 {durs[u]}" for u in d.utts}


def combine_data_dirs(dest, srcs) -> DataDir:
    if not srcs:
        raise ValueError("combine: no source dirs")
    dest = check_destination(dest, srcs, "combine")
    dirs = [load_data_dir(s) for s in srcs]
    if any("segments" in d.files for d in dirs):
        for d in dirs:
            if "segments" not in d.files:
                seg = _whole_segments(d)
                if seg is None:
                    raise DataDirError(f"{d.path}: has no segments (others do) and no "
                                       "utt2dur to make whole-recording segments from")
                d.files["segments"] = seg
    names = sorted({n for d in dirs for n in d.files if n != "spk2utt"})
    out: dict[str, dict[str, str]] = {}
    for name in names:
        holders = [d for d in dirs if name in d.files]
        if len(holders) != len(dirs):
            print(f"combine: {name} is missing in {len(dirs) - len(holders)} of {len(dirs)} "
                  "sources; not combined", file=sys.stderr)
            continue
        merged: dict[str, str] = {}
        origin: dict[str, Path] = {}
        kind = file_kind(name)
        for d in dirs:
            for key, value in d.files[name].items():
                if key in merged:
                    if kind == "utt":
                        raise DataDirError(f"combine: utterance {key!r} is in both {origin[key]} "
                                           f"and {d.path}; give them distinct ids "
                                           "(copy_data_dir --utt-prefix)")
                    if merged[key] != value:
                        raise DataDirError(f"combine: {name} id {key!r} has different values "
                                           f"in {origin[key]} and {d.path}")
                    continue
                merged[key] = value
                origin[key] = d.path
        out[name] = merged
    if "utt2spk" not in out:
        raise DataDirError("combine: some source has no utt2spk")
    out["spk2utt"] = spk2utt_from_utt2spk(out["utt2spk"])
    meta = {k: v for k, v in dirs[0].meta.items() if all(d.meta.get(k) == v for d in dirs)}
    result = DataDir(Path(dest), out, meta)
    result.write()
    return result
