#!/usr/bin/env python3
"""The text half of the Track 1 cascade on real speech: WER, speed, long inputs.

EVALUATION ONLY: Debian's pocketsphinx-testdata (10 real English clips, 91 words;
``pyutils.corpora.pocketsphinx_testdata``) and the 60 s lecture of
``tools/models/real_speech/silero_test.wav`` are never trained or tuned on.

Systems (all frozen Whisper base, int8, greedy, on the CPU):

- ``judge``: the zero-shot baseline, ``pyutils.whisper.judge`` (no timestamps, no VAD,
  a token cap of 12 per second);
- ``cascade``: ``pyutils.asr.longform`` as ``python -m pyutils.asr.cascade`` runs it (word
  timestamps, Silero VAD, temperature fallback, loop collapse) followed by the NVV-text
  mapping (``pyutils.asr.nvv_words``; tags then removed for WER, their count reported:
  on read speech every one is a false alarm);
- ``cascade, no VAD``: the same without ``--no-vad``'s VAD.

Figures: WER (Whisper's English normaliser both sides, ``pyutils.asr.real_speech``),
empty outputs, wall seconds, CPU seconds (all threads) and the real-time factors
``RTF = wall / audio`` and ``RTF_cpu2 = CPU / audio / 2`` (what the run costs on two
idle cores; the wall figure depends on the machine's load, printed with it).

Long inputs: the 10 clips end to end with pauses of 0.4-1.2 s (``long1``, ~41 s), the same
four times in shuffled orders (``long4``, ~2.7 min), and the lecture (no transcript: how
far the words reach). For each, WER against the joined references, the time of the last
word against the duration, the loop/fallback notes, and what Whisper's first 30 s alone
(the old ``decode_dir``, which cut there) would score.

    tools/venv/bin/python benchmarks/track1_cascade.py [--threads 2] [--md out.md] [--skip-long]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyutils.asr.longform import SR, LongformTranscriber, Transcript, to_mono_16k  # noqa: E402
from pyutils.asr.nvv_words import extract  # noqa: E402
from pyutils.asr.real_speech import wer_counts  # noqa: E402
from pyutils.corpora.pocketsphinx_testdata import ROOT as PS_ROOT, SUBSETS, read_subset  # noqa: E402
from pyutils.datadir.io import read_wav_scp_entry  # noqa: E402

LECTURE = ROOT / "tools" / "models" / "real_speech" / "silero_test.wav"


def load_clips() -> dict:
    rows = {}
    for subset in SUBSETS:
        rows.update(read_subset(PS_ROOT, subset))
    out = {}
    for utt, (wav, ref) in sorted(rows.items()):
        x, sr = read_wav_scp_entry(str(wav))
        out[utt] = (to_mono_16k(x, sr), ref)
    return out


def long_inputs(clips: dict, seed: int = 0) -> dict:
    """{name: (audio, joined reference)}: the clips end to end, once and four times shuffled."""
    rng = np.random.default_rng(seed)
    keys = sorted(clips)
    out = {}
    for name, rounds in (("long1", 1), ("long4", 4)):
        parts, refs = [], []
        for r in range(rounds):
            order = keys if r == 0 else list(rng.permutation(keys))
            for k in order:
                parts += [clips[k][0], np.zeros(int(SR * rng.uniform(0.4, 1.2)), np.float32)]
                refs.append(clips[k][1])
        out[name] = (np.concatenate(parts), " ".join(refs))
    return out


class Meter:
    def __enter__(self):
        self.wall, self.cpu = time.time(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.time() - self.wall, time.process_time() - self.cpu


def run_cascade(tr: LongformTranscriber, audio: np.ndarray) -> tuple[str, int, Transcript]:
    t = tr.transcribe(audio)
    words, events = extract(t.words, "en")
    return "".join(w.text for w in words).strip(), len(events), t


def text_rows(clips: dict, threads: int) -> tuple[list, dict]:
    from pyutils.whisper.judge import Judge

    refs = {u: r for u, (_, r) in clips.items()}
    audio_s = sum(len(x) for x, _ in clips.values()) / SR
    rows, hyps_by = [], {}
    systems = [("judge: zero-shot Whisper base (faster-whisper greedy, no timestamps)", None),
               ("cascade: word timestamps + VAD + fallback + loop guard", True),
               ("cascade without VAD", False)]
    for name, vad in systems:
        model = Judge("base", "en", 1, threads) if vad is None else LongformTranscriber("base", "en", 1, threads, vad=vad)
        hyps, tags, notes = {}, 0, []
        with Meter() as m:
            for u, (x, _) in clips.items():
                if vad is None:
                    hyps[u] = model.transcribe(x)
                else:
                    hyps[u], n, t = run_cascade(model, x)
                    tags += n
                    notes += [f"{u}: {s}" for s in t.notes]
        c = wer_counts(refs, hyps)
        rows.append((name, c, sum(not h for h in hyps.values()), tags if vad is not None else "-", m, audio_s, notes))
        hyps_by[name] = hyps
    return rows, hyps_by


def long_rows(clips: dict, threads: int) -> list:
    tr = LongformTranscriber("base", "en", 1, threads, vad=True)
    from pyutils.whisper.judge import Judge

    judge = Judge("base", "en", 1, threads)
    rows = []
    items = list(long_inputs(clips).items())
    if LECTURE.is_file():
        x, sr = read_wav_scp_entry(str(LECTURE))
        items.append(("lecture", (to_mono_16k(x, sr), None)))
    for name, (audio, ref) in items:
        with Meter() as m:
            text, tags, t = run_cascade(tr, audio)
        last = t.words[-1].end if t.words else 0.0
        row = {"name": name, "dur": len(audio) / SR, "words": len(t.words), "last": last, "tags": tags,
               "notes": "; ".join(t.notes) or "-", "m": m}
        if ref is not None:
            row["wer"] = wer_counts({"x": ref}, {"x": text})
            with Meter() as mj:
                jtext = judge.transcribe(audio)
            row["judge_wer"], row["judge_m"] = wer_counts({"x": ref}, {"x": jtext}), mj
            row["cut30_wer"] = wer_counts({"x": ref}, {"x": judge.transcribe(audio[:30 * SR])})
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--md", type=Path, help="also write the tables as markdown here")
    ap.add_argument("--skip-long", action="store_true")
    a = ap.parse_args(argv)
    clips = load_clips()
    load0 = os.getloadavg()[0]
    rows, _ = text_rows(clips, a.threads)
    n_words = rows[0][1]["N"]
    out = [f"Real English speech, never trained on: {len(clips)} clips of Debian pocketsphinx-testdata, "
           f"{n_words} words, {rows[0][5]:.1f} s; {a.threads} threads; load average {load0:.1f} at the start.",
           "", "| system | WER % | S | D | I | empty | NVV tags from text | wall s | CPU s | RTF | RTF_cpu2 |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, c, empty, tags, m, audio_s, notes in rows:
        out.append(f"| {name} | {c['WER']:.1f} | {c['S']} | {c['D']} | {c['I']} | {empty} | {tags} | "
                   f"{m.wall:.1f} | {m.cpu:.1f} | {m.wall / audio_s:.3f} | {m.cpu / audio_s / 2:.3f} |")
        out += [f"  - note: {n}" for n in notes]
    if not a.skip_long:
        load1 = os.getloadavg()[0]
        out += ["", f"Long inputs (load average {load1:.1f} at the start):", "",
                "| input | s | cascade WER % | words | last word ends at s | NVV tags | notes | wall s | CPU s | "
                "RTF | RTF_cpu2 | judge WER % | first 30 s only WER % |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in long_rows(clips, a.threads):
            m = r["m"]
            w = lambda key: f"{r[key]['WER']:.1f}" if key in r else "-"  # noqa: E731
            out.append(f"| {r['name']} | {r['dur']:.1f} | {w('wer')} | {r['words']} | {r['last']:.1f} | {r['tags']} | "
                       f"{r['notes']} | {m.wall:.1f} | {m.cpu:.1f} | {m.wall / r['dur']:.3f} | "
                       f"{m.cpu / r['dur'] / 2:.3f} | {w('judge_wer')} | {w('cut30_wer')} |")
    text = "\n".join(out) + "\n"
    print(text)
    if a.md:
        a.md.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
