#!/usr/bin/env python3
"""A tuning (DEV) set of real talkers for the kNN conversion, kept apart from the vieneu evaluation clips.

    pip download --no-deps --no-binary :all: pyannote-audio==4.0.7 -d /tmp/vcdev
    tar xzf /tmp/vcdev/pyannote_audio-4.0.7.tar.gz -C /tmp/vcdev
    PYTHONPATH=. tools/venv/bin/python benchmarks/vc_devset.py \
        --ami /tmp/vcdev/pyannote_audio-4.0.7/tests/data /tmp/vcdev/pyannote_audio-4.0.7/src/pyannote/audio/sample \
        --real tools/models/real_speech --out /tmp/vcdev/set

Material (none of it Vietnamese, none of it the vieneu clips, none of it an
ASR-evaluation-only corpus): the AMI meeting excerpts of the ``pyannote-audio``
sdist (``tests/data/*.wav`` with their RTTM speaker turns) and the real
recordings under ``tools/models/real_speech`` (CMU ARCTIC, Silero's test clip).
From the RTTM turns, for each speaker, the longest stretch spoken by that
speaker alone (turns of one speaker less than 0.6 s apart merged, nobody else
speaking in it), 2 to 8 s long, is cut to 16 kHz mono; ``real_speech`` gives
its files (the long one cut to its first 6 s of speech).

Pairs: each clip is a source for the next ``--refs-per-source`` clips of other
speakers in a fixed shuffled order. Output: ``OUT/clips/*.wav`` and
``OUT/dev.tsv`` (``source<TAB>reference<TAB>name``, the pairs-list format of
:mod:`pyutils.vc.pairs`). No transcripts: ``bench_knnvc.py --pseudo-text``
measures WER against the judge's transcript of each source (the content the
conversion must keep).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

import numpy as np

SR = 16000


def read_rttm(paths: List[str]) -> Dict[str, List[Tuple[float, float, str]]]:
    """file id -> [(start, end, speaker)] from RTTM ``SPEAKER file chan start dur ... speaker`` lines."""
    turns: Dict[str, List[Tuple[float, float, str]]] = defaultdict(list)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                fields = line.split()
                if not fields or fields[0] != "SPEAKER":
                    continue
                if len(fields) < 8:
                    raise ValueError(f"{path}:{line_no}: RTTM line with {len(fields)} fields")
                start, dur = float(fields[3]), float(fields[4])
                turns[fields[1]].append((start, start + dur, fields[7]))
    return turns


def solo_stretches(turns: List[Tuple[float, float, str]], gap: float = 0.3) -> List[Tuple[float, float, str]]:
    """Stretches where one speaker talks alone: that speaker's turns merged across gaps < ``gap``,
    kept only if no other speaker's turn overlaps them."""
    out = []
    by_spk: Dict[str, List[Tuple[float, float]]] = defaultdict(list)
    for s, e, spk in turns:
        by_spk[spk].append((s, e))
    for spk, segs in by_spk.items():
        merged: List[List[float]] = []
        for s, e in sorted(segs):
            if merged and s - merged[-1][1] < gap:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        others = [(s, e) for s, e, o in turns if o != spk]
        for s, e in merged:
            if not any(os_ < e and oe > s for os_, oe in others):
                out.append((s, e, spk))
    return out


def _ascii(name: str) -> str:
    """File ids without accents (the sdist names ``trn00``'s audio ``trñ00.wav``)."""
    import unicodedata

    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()


def _pick(best, wav: str, stretches, args) -> None:
    """Keep each speaker's longest stretch of ``min_s``..``max_s`` seconds (cut at ``max_s``)."""
    for s, e, spk in stretches:
        dur = min(e - s, args.max_s)
        if dur >= args.min_s and dur > best.get(spk, (0.0,))[0]:
            best[spk] = (dur, wav, s, s + dur)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ami", required=True, nargs="+",
                    help="folders with AMI wav + rttm (pyannote-audio sdist tests/data, src/pyannote/audio/sample)")
    ap.add_argument("--real", default="tools/models/real_speech")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-s", type=float, default=2.0)
    ap.add_argument("--gap", type=float, default=0.6, help="merge one speaker's turns closer than this")
    ap.add_argument("--max-s", type=float, default=8.0)
    ap.add_argument("--refs-per-source", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import soundfile as sf

    from pyutils.io import atomic_write
    from pyutils.vc.convert import write_pcm16
    from pyutils.audio import load_audio

    clips_dir = os.path.join(args.out, "clips")
    os.makedirs(clips_dir, exist_ok=True)
    best: Dict[str, Tuple[float, str, float, float]] = {}
    for folder in args.ami:
        turns = read_rttm(sorted(glob.glob(os.path.join(folder, "*.rttm"))))
        wavs = {_ascii(os.path.basename(w)[:-4]): w for w in glob.glob(os.path.join(folder, "*.wav"))}
        for fid, tt in turns.items():
            if _ascii(fid) in wavs:
                _pick(best, wavs[_ascii(fid)], solo_stretches(tt, args.gap), args)
    clips = []
    for spk in sorted(best):
        _, wav, s, e = best[spk]
        x, sr = sf.read(wav, dtype="float32", always_2d=True)
        x = x[:, 0]
        if sr != SR:
            sys.exit(f"error: {wav}: {sr} Hz (the AMI excerpts are 16 kHz)")
        name = "ami_" + _ascii(spk) + ".wav"
        write_pcm16(os.path.join(clips_dir, name), x[int(s * SR):int(e * SR)])
        clips.append((spk, name))
    for path in sorted(glob.glob(os.path.join(args.real, "*.wav"))):
        x = load_audio(path, SR)[0]
        base = os.path.splitext(os.path.basename(path))[0]
        if x.size > args.max_s * SR:       # the long clip: its first 6 s after the leading silence
            active = np.flatnonzero(np.abs(x) > 0.02 * np.abs(x).max())
            start = int(active[0]) if active.size else 0
            x = x[start:start + 6 * SR]
        spk = "arctic" if base.startswith("arctic") else base
        write_pcm16(os.path.join(clips_dir, "real_" + base + ".wav"), x)
        clips.append((spk, "real_" + base + ".wav"))
    rng = np.random.default_rng(args.seed)
    order = list(rng.permutation(len(clips)))
    lines = []
    for pos, i in enumerate(order):
        spk, name = clips[i]
        picked = 0
        for step in range(1, len(order)):
            j = order[(pos + step) % len(order)]
            if clips[j][0] == spk:
                continue
            pid = f"{os.path.splitext(name)[0]}-to-{os.path.splitext(clips[j][1])[0]}"
            lines.append(f"clips/{name}\tclips/{clips[j][1]}\t{pid}.wav\n")
            picked += 1
            if picked == args.refs_per_source:
                break
    with atomic_write(os.path.join(args.out, "dev.tsv")) as f:
        f.writelines(lines)
    print(f"{len(clips)} clips of {len({c[0] for c in clips})} speakers, {len(lines)} pairs -> "
          f"{os.path.join(args.out, 'dev.tsv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
