"""NVV event detection on real NVV recordings: a fitted Whisper-frame detector, per tag.

    PYTHONPATH=$PWD tools/venv/bin/python benchmarks/bench_nvv_detect.py --work bench_out/nvv_detect \\
        --model egs/nvv_asr_en/exp/asr_cascade_default_en/nvv_detector.npz [--corpus CORPUS] \\
        [--cascade-tree DIR] [--md table.md]

Sets: the real-NVV ``dev`` and ``test`` sets of :mod:`pyutils.nvv_detect.devset` (built
under ``--work`` when absent; real talkers, bank dev/test recordings of laugh, cough, moan,
hum, gasp) and, with ``--corpus``, that ``chorus-synth nvv`` corpus's ``test`` split (every
tag; generated sounds for the tags without a recording). Per set and tag: event precision,
recall and F1 (:func:`pyutils.nvv_detect.events.match_counts`: same tag, overlapping or
centres within 0.5 s, one to one) of the model. (The naive zero-shot AudioSet mapping this
benchmark compared against went with the YAMNet-patch detector; code: ``git show c9e6e28``.)

``--cascade-tree DIR``: a checkout holding ``pyutils/asr/cascade.py`` (the Track 1
cascade; ``.`` for this repository). The cascade runs on the real test set without and
with ``--events`` (the model's events), and ``chorus-score track1`` scores both against the set's ``ref.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pyutils.nvv_detect import devset  # noqa: E402
from pyutils.nvv_detect.events import match_counts, micro, prf, write_events  # noqa: E402
from pyutils.nvv_detect.frame_heads import FrameDetector  # noqa: E402
from pyutils.nvv_detect.utt_sources import corpus_utts, devset_dir_utts  # noqa: E402
from pyutils.nvv_detect.whisper_frames import WhisperFrames  # noqa: E402
from pyutils.tags import challenge_tags  # noqa: E402


def detect_all(det: FrameDetector, frames: WhisperFrames, utts):
    """Reference and model events, per utterance."""
    from pyutils.audio import to_mono_16k

    model_ev, ref = {}, {}
    for u, x, sr, ev in utts:
        model_ev[u] = det.events_of(u, frames(to_mono_16k(x, sr)))
        ref[u] = ev
    return ref, model_ev


def table(name: str, ref, systems) -> list:
    counts = {s: match_counts(ref, hyp, list(ref)) for s, hyp in systems.items()}
    n_ref = {t: sum(1 for evs in ref.values() for e in evs if e["tag"] == t) for t in challenge_tags()}
    lines = [f"### {name}: {len(ref)} utterances, {sum(n_ref.values())} reference events", "",
             "| tag | ref | " + " | ".join(f"{s} P | {s} R | {s} F1" for s in systems) + " |",
             "| --- | --- |" + " --- | --- | --- |" * len(systems)]
    for t in challenge_tags():
        cells = []
        for s in systems:
            c = counts[s].get(t, [0, 0, 0])
            if n_ref[t] == 0 and c[1] == 0:
                cells += ["-", "-", "-"]
                continue
            p, r, f = prf(*c)
            cells += [f"{p:.2f} ({c[0]}/{c[0] + c[1]})", f"{r:.2f}", f"{f:.2f}"]
        lines.append(f"| {t} | {n_ref[t]} | " + " | ".join(cells) + " |")
    cells = []
    for s in systems:
        p, r, f = micro(counts[s])
        cells += [f"{p:.2f}", f"{r:.2f}", f"**{f:.2f}**"]
    lines.append("| micro | " + str(sum(n_ref.values())) + " | " + " | ".join(cells) + " |")
    return lines + [""]


def run_cascade(tree: Path, data: Path, events: Path | None, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-m", "pyutils.asr.cascade", "--wav-scp", str(data / "wav.scp"), "--lang", "en",
           "--jsonl", str(out / "hyp.jsonl"), "--threads", "2"]
    if events is not None:
        cmd += ["--events", str(events)]
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, env=env, cwd=str(tree))
    subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "track1", "--single-language", "--ref", str(data / "ref.jsonl"),
                    "--hyp", str(out / "hyp.jsonl"), "--output-json", str(out / "score.json")],
                   check=True, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)),
                   stdout=subprocess.DEVNULL)
    return json.loads((out / "score.json").read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("bench_out/nvv_detect"))
    ap.add_argument("--model", type=Path, required=True, help="a fitted detector (the recipe's stage 5 nvv_detector.npz)")
    ap.add_argument("--corpus", type=Path, help="a chorus-synth nvv corpus: its test split is scored too")
    ap.add_argument("--cascade-tree", type=Path, help="a checkout with pyutils/asr/cascade.py")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    t0 = time.time()
    sets = {}
    for split in ("dev", "test"):
        d = a.work / f"real_{split}"
        if not (d / "ref.jsonl").is_file():
            devset.write(devset.build(split), d)
        sets[f"real {split} (bank {split} recordings in real speech)"] = (d, devset_dir_utts(d))
    if a.corpus:
        sets[f"corpus test ({a.corpus.name}, all tags)"] = (None, corpus_utts(a.corpus, "test"))
    det = FrameDetector.load(a.model)
    frames = WhisperFrames(det.layers, threads=1)
    lines = ["## NVV event detection (P (TP/predicted), R, F1 per tag)", ""]
    test_events = None
    for name, (d, utts) in sets.items():
        ref, m_ev = detect_all(det, frames, utts)
        lines += table(name, ref, {"model": m_ev})
        if name.startswith("real test"):
            test_events = a.work / "real_test_events.jsonl"
            write_events([e for u in sorted(m_ev) for e in m_ev[u]], str(test_events))
    if a.cascade_tree:
        data = a.work / "real_test"
        rows = []
        for label, ev in (("cascade, no events", None), ("cascade + detector events", test_events)):
            s = run_cascade(a.cascade_tree.resolve(), data.resolve(), ev and ev.resolve(),
                            (a.work / label.replace(" ", "_").replace(",", "").replace("+", "plus")).resolve())
            en = s.get("en") or s
            rows.append((label, s["FinalTrack1Score"], en.get("F1_micro"), en.get("mNTD"),
                         en.get("tagged_transcript_error")))
        lines += ["### Track 1 on the real test set (cascade = frozen Whisper base + placement)", "",
                  "| system | Track1Score | F1_micro | mNTD | Err_tagged |", "| --- | --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| {r[0]} | {r[1]:.2f} | " + " | ".join(
                f"{v:.3f}" if isinstance(v, (int, float)) else str(v) for v in r[2:]) + " |")
        lines.append("")
    lines.append(f"wall {time.time() - t0:.0f} s")
    text = "\n".join(lines) + "\n"
    from pyutils.io import print_report

    print_report(text, a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
