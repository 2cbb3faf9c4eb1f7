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
- ``cascade, no VAD``: the same with ``--no-vad``;
- ``cascade --pack``: clips of <= 10 s decoded several to one 30 s window.

Figures: WER (Whisper's English normaliser both sides, ``pyutils.asr.real_speech``),
empty outputs, wall seconds, CPU seconds (all threads) and the real-time factors
``RTF = wall / audio`` and ``RTF_cpu2 = CPU / audio / 2`` (what the run costs on two
idle cores; the wall figure depends on the machine's load, printed with it).

Long inputs: the 10 clips end to end with pauses of 0.4-1.2 s (``long1``, ~41 s), the same
four times in shuffled orders (``long4``, ~2.7 min), and the lecture (no transcript: how
far the words reach). For each, WER against the joined references, the time of the last
word against the duration, the loop/fallback notes, and what Whisper's first 30 s alone
(the old ``decode_dir``, which cut there) would score.

Guards (``--skip-robustness`` to leave out): words written on five inputs without speech
(near-silence, white and coloured noise, synthetic music, mains hum) and WER on the clips
in white noise at 5 and 0 dB SNR, with the guards and without (temperature 0 only, no
thresholds, no VAD, no loop collapse).

Placement (``--skip-placement``): the clips with recorded NVVs of the bank's test split
(``tools/models/nvv_bank``, if installed) inserted at known times, scored by the Track 1
scorer with the true times as the detector's events, and with no detector at all.

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

from pyutils.asr.longform import SR, LongformTranscriber, Transcript  # noqa: E402
from pyutils.audio import to_mono_16k  # noqa: E402
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
               ("cascade without VAD", False),
               ("cascade --pack (clips <= 10 s several to a window)", "pack")]
    for name, vad in systems:
        model = Judge("base", "en", 1, threads) if vad is None else \
            LongformTranscriber("base", "en", 1, threads, vad=vad is not False)
        hyps, tags, notes = {}, 0, []
        with Meter() as m:
            if vad == "pack":
                for u, t in zip(clips, model.transcribe_packed([x for x, _ in clips.values()])):
                    words, events = extract(t.words, "en")
                    hyps[u], tags = "".join(w.text for w in words).strip(), tags + len(events)
            for u, (x, _) in clips.items() if vad != "pack" else ():
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


def non_speech_inputs(seed: int = 0) -> dict:
    """{name: audio}: inputs with no speech at all (deterministic)."""
    rng = np.random.default_rng(seed)
    t10 = np.arange(10 * SR) / SR
    white = rng.standard_normal(10 * SR)
    pink = np.cumsum(rng.standard_normal(10 * SR))
    pink = np.diff(pink, prepend=0.0) * 0.02 + np.convolve(white, np.ones(8) / 8, mode="same")
    notes, music = 220.0 * 2 ** (rng.integers(0, 12, 40) / 12), np.zeros(20 * SR)
    for k, f in enumerate(notes):  # 40 notes of 0.5 s, three harmonics, decaying
        n = np.arange(SR // 2) / SR
        note = sum(np.sin(2 * np.pi * f * h * n) / h for h in (1, 2, 3))
        music[k * SR // 2:(k + 1) * SR // 2] = note * np.exp(-4 * n)
    hum = sum(np.sin(2 * np.pi * 50 * h * t10) / h for h in (1, 2, 3, 5))
    out = {"near-silence 60 s (-60 dBFS noise)": 1e-3 * rng.standard_normal(60 * SR),
           "white noise 10 s": 0.1 * white, "coloured noise 10 s": 0.3 * pink / np.abs(pink).max(),
           "music (synthetic tones) 20 s": 0.2 * music, "mains hum 10 s": 0.1 * hum}
    return {k: v.astype(np.float32) for k, v in out.items()}


def add_noise(x: np.ndarray, snr_db: float, rng) -> np.ndarray:
    """``x`` plus white noise at ``snr_db`` (power ratio over the whole clip)."""
    n = rng.standard_normal(len(x))
    n *= np.sqrt(np.mean(x ** 2) / (np.mean(n ** 2) * 10 ** (snr_db / 10)))
    return (x + n).astype(np.float32)


def robustness_rows(clips: dict, threads: int) -> list:
    """What the guards do: words written on non-speech, WER on speech in noise, with and without."""
    systems = [("guards on (default)", LongformTranscriber("base", "en", 1, threads, vad=True)),
               ("guards off (T=0 only, no thresholds, no VAD, no loop collapse)",
                LongformTranscriber("base", "en", 1, threads, vad=False, guards=False))]
    refs = {u: r for u, (_, r) in clips.items()}
    rows = []
    for name, tr in systems:
        row = {"name": name}
        for what, x in non_speech_inputs().items():
            row[what] = len(tr.transcribe(x).words)
        for snr in (5, 0):
            rng = np.random.default_rng(snr)
            hyps, empty, loops = {}, 0, 0
            for u, (x, _) in clips.items():
                t = tr.transcribe(add_noise(x, snr, rng))
                hyps[u] = t.text
                empty += not t.text
                loops += any("loop" in n for n in t.notes)
            row[f"WER % at {snr} dB SNR"] = f"{wer_counts(refs, hyps)['WER']:.1f} ({empty} empty, {loops} loops)"
        rows.append(row)
    return rows


def bank_clips(split: str = "test") -> list:
    """[(tag, audio)] of the recorded NVV bank's ``split`` (tools/models/nvv_bank), if installed."""
    import json

    index = ROOT / "tools" / "models" / "nvv_bank" / "index.jsonl"
    if not index.is_file():
        return []
    out = []
    for line in index.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        wav = index.parent / f"{row['clip_id']}.wav"
        if row.get("split") == split and wav.is_file():
            x, sr = read_wav_scp_entry(str(wav))
            out.append((row["tag"], to_mono_16k(x, sr)))
    return sorted(out, key=lambda ta: ta[0])


def placement_rows(clips: dict, threads: int) -> tuple[list, int]:
    """Track 1 score of tags placed by time, with the true event times as the 'detector'.

    Utterances: each real clip with one recorded NVV (the bank's test split, in turn) before
    it (even clips) or after it (odd clips), 0.3 s apart, and one long utterance: the ten
    clips end to end with an NVV after every other clip. The reference puts the tag at the
    same place; ``--events`` gets each inserted NVV's true start and end.
    """
    from pyutils.asr.nvv_words import ANNOTATION_RE, Event, merge_events
    from pyutils.asr.placement import tagged_transcript
    from pyutils.scoring.track1 import score_track1

    bank = bank_clips()
    if not bank:
        return [], 0
    gap = np.zeros(int(0.3 * SR), np.float32)
    utts, k = {}, 0
    long_parts, long_ref, long_events, t_long = [], [], [], 0.0
    for i, (u, (x, ref)) in enumerate(sorted(clips.items())):
        tag, nvv = bank[k % len(bank)]
        k += 1
        before = i % 2 == 0
        audio = np.concatenate([nvv, gap, x] if before else [x, gap, nvv])
        t0 = 0.0 if before else (len(x) + len(gap)) / SR
        utts[u] = (audio, f"[{tag}] {ref}" if before else f"{ref} [{tag}]", [Event(tag, t0, t0 + len(nvv) / SR)])
        long_parts += [x, gap]
        long_ref.append(ref)
        t_long += (len(x) + len(gap)) / SR
        if i % 2 == 1:
            tag, nvv = bank[k % len(bank)]
            k += 1
            long_parts += [nvv, gap]
            long_ref.append(f"[{tag}]")
            long_events.append(Event(tag, t_long, t_long + len(nvv) / SR))
            t_long += (len(nvv) + len(gap)) / SR
    utts["long"] = (np.concatenate(long_parts), " ".join(long_ref), long_events)
    tr = LongformTranscriber("base", "en", 1, threads, vad=True)
    refs = [{"utt_id": u, "language": "en", "text_with_nvvs": r} for u, (_, r, _) in utts.items()]
    outs = {"text only (Whisper's own NVV words; no detector)": {}, "true event times + text NVVs": {},
            "true event times, text NVVs off": {}}
    for u, (audio, _, events) in utts.items():
        t = tr.transcribe(audio)
        words, text_events = extract(t.words, "en")
        names = list(outs)
        outs[names[0]][u] = tagged_transcript(words, text_events, "en")
        outs[names[1]][u] = tagged_transcript(words, merge_events(text_events, events), "en")
        plain = [w for w in t.words if not ANNOTATION_RE.search(w.text) and "[" not in w.text]
        outs[names[2]][u] = tagged_transcript(plain, events, "en")
    rows = []
    for name, hyp in outs.items():
        s = score_track1(refs, [{"utt_id": u, "text_with_nvvs": h} for u, h in hyp.items()],
                         single_language=True)
        rows.append((name, s))
    return rows, sum(len(e) for _, _, e in utts.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--md", type=Path, help="also write the tables as markdown here")
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--skip-robustness", action="store_true")
    ap.add_argument("--skip-placement", action="store_true")
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
    if not a.skip_robustness:
        rrows = robustness_rows(clips, a.threads)
        cols = [k for k in rrows[0] if k != "name"]
        out += ["", "Guards: words written on inputs without speech, and WER on the clips in white noise:", "",
                "| system | " + " | ".join(cols) + " |", "| --- |" + " --- |" * len(cols)]
        out += ["| " + r["name"] + " | " + " | ".join(str(r[c]) for c in cols) + " |" for r in rrows]
    if not a.skip_placement:
        prows, n_events = placement_rows(clips, a.threads)
        if prows:
            out += ["", f"Tags placed by time: the clips with {n_events} recorded NVVs (tools/models/nvv_bank, "
                    "test split) inserted, 11 utterances, Track 1 scorer (en):", "",
                    "| system | Track1Score | F1 | P | R | mNTD | tagged WER |",
                    "| --- | --- | --- | --- | --- | --- | --- |"]
            for name, sc in prows:
                e = sc["en"]
                out.append(f"| {name} | {e['Track1Score']:.2f} | {e['F1_micro']:.3f} | {e['precision']:.3f} | "
                           f"{e['recall']:.3f} | {e['mNTD']:.3f} | {e['tagged_transcript_error']:.3f} |")
        else:
            out += ["", "Tags placed by time: skipped (no tools/models/nvv_bank/index.jsonl)"]
    text = "\n".join(out) + "\n"
    from pyutils.io import print_report

    print_report(text, a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
