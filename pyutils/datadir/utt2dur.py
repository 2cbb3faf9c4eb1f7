"""Compute utt2dur (and reco2dur) of a data dir, in parallel.

With segments, an utterance lasts ``end - start``; otherwise the audio of
its wav.scp entry is measured: plain files through their header
(soundfile), pipes by running them and counting samples. Threads are
enough: the work is I/O or in subprocesses.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .datadir import load_data_dir
from .io import AudioReadError, wav_scp_entry_duration, write_kv


def recording_durations(wav_scp: dict[str, str], nj: int | None = None,
                        progress: bool = False) -> dict[str, float]:
    """reco -> seconds for every wav.scp entry; AudioReadError names the id."""
    nj = nj or min(8, os.cpu_count() or 1)
    items = list(wav_scp.items())

    def one(item):
        reco, entry = item
        try:
            return reco, wav_scp_entry_duration(entry)
        except AudioReadError as e:
            raise AudioReadError(f"wav.scp: recording {reco!r}: {e}") from None

    out = {}
    with ThreadPoolExecutor(max_workers=nj) as pool:
        for k, (reco, dur) in enumerate(pool.map(one, items), 1):
            out[reco] = dur
            if progress and (k % 1000 == 0 or k == len(items)):
                print(f"utt2dur: {k}/{len(items)} recordings", file=sys.stderr)
    return out


def compute_utt2dur(path, nj: int | None = None, *, write_reco2dur: bool = True,
                    progress: bool = False) -> dict[str, float]:
    """Write ``path/utt2dur`` (and ``reco2dur``); return utt -> seconds."""
    path = Path(path)
    data = load_data_dir(path)
    seg = data.segments
    if seg is not None:
        utt2dur = {u: end - start for u, (_r, start, end) in seg.items()}
        if write_reco2dur and data.wav_scp:
            write_kv(path / "reco2dur", {r: f"{d:.3f}" for r, d in
                                         recording_durations(data.wav_scp, nj, progress).items()})
    else:
        utt2dur = recording_durations(data.wav_scp, nj, progress)
        if write_reco2dur:
            write_kv(path / "reco2dur", {r: f"{d:.3f}" for r, d in utt2dur.items()})
    write_kv(path / "utt2dur", {u: f"{d:.3f}" for u, d in utt2dur.items()})
    return utt2dur
