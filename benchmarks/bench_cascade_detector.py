"""The Whisper-frame detector of the Track 1 cascade (heads, epochs, seeds, encoder blocks), scored on the
mini corpus test split and the real-NVV test set, against no detector.

    PYTHONPATH=$PWD tools/venv/bin/python benchmarks/bench_cascade_detector.py --corpus CORPUS --lang en \\
        --work bench_out/cascade_det_en [--md table.md] [--heads 3 --epochs 4 --seed 0 --layers 5] [--frame-model M]

Once per set (cached under ``--work``): frozen Whisper-encoder frames
(:mod:`pyutils.nvv_detect.whisper_frames`) of the corpus train/dev/test splits and of the
real-NVV train/dev/test sets (:mod:`pyutils.nvv_detect.devset`: English talkers; their train/dev
sets are used for both languages, as stage 4 of the recipe does), and one frozen-Whisper
decoding of each test set without events (``pyutils.asr.cascade --details``: words with times
and the NVVs Whisper wrote as text). The detector is fitted as stage 5 fits it
(:func:`pyutils.nvv_detect.frame_heads.train_head`; ``--frame-model``: a fitted one instead), its
events on each test set are merged with the text events and placed on the cached words as
``pyutils.asr.cascade`` does (:func:`pyutils.asr.nvv_words.merge_events`,
:func:`pyutils.asr.placement.tagged_transcript`), and the Track 1 scorer scores the result; event
F1 (:func:`pyutils.nvv_detect.events.match_counts`) beside it. The Whisper text is the same in
every row: only the tags differ (on the ci corpus this path reproduced the recipe's stage 7
Track1Score to the last digit). Files already in ``--work`` (``wf/<set>.npz``,
``whisper/<set>/details.jsonl``) are used as they are, e.g. the recipe's stage 6 details.
(The YAMNet-patch detector's variants went with it, not adopted; code: ``git show c9e6e28``.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pyutils.nvv_detect import devset  # noqa: E402
from pyutils.nvv_detect.events import match_counts, micro  # noqa: E402
from pyutils.nvv_detect.frame_heads import FrameDetector, frame_inputs, train_head  # noqa: E402
from pyutils.nvv_detect.utt_sources import devset_dir_utts, iter_corpus_utts, real_train_utts  # noqa: E402

#: the row of the fitted detector (the one before it: no detector, the NVVs Whisper writes as text)
FRAME_VARIANT = "Whisper-frame head"


def frames_set(work: Path, name: str, make, kind: str, layers):
    from pyutils.nvv_detect import whisper_frames as frames

    path = work / "wf" / f"{name}.npz"
    if not path.is_file():
        t0 = time.time()
        wf = frames.WhisperFrames(layers)
        frames.save(frames.compute(make(), wf), kind, wf.layers, path)
        print(f"frames {name}: {time.time() - t0:.0f} s", file=sys.stderr)
    return frames.load(path)


def transcripts(work: Path, name: str, wav_scp: Path, lang: str) -> dict:
    out = work / "whisper" / name
    det = out / "details.jsonl"
    if not det.is_file():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pyutils.asr.cascade", "--wav-scp", str(wav_scp), "--lang", lang,
                        "--jsonl", str(out / "hyp.jsonl"), "--details", str(det), "--threads", "2",
                        "--no-progress"], check=True, cwd=str(REPO))
    return {r["utt_id"]: r for r in map(json.loads, det.read_text(encoding="utf-8").splitlines())}


def track1(details: dict, events: dict, refs: list, lang: str) -> dict:
    from pyutils.asr.longform import Word
    from pyutils.asr.nvv_words import Event, merge_events
    from pyutils.asr.placement import tagged_transcript
    from pyutils.scoring.track1 import score_track1

    hyp = []
    for r in refs:
        d = details.get(r["utt_id"], {})
        words = [Word(w, s, e, p) for w, s, e, p in d.get("words", [])]
        text_ev = [Event(e["tag"], e["start"], e["end"], e["score"], "text")
                   for e in d.get("events", []) if e["source"] == "text"]
        det = [Event(e["tag"], e["start"], e["end"], e["score"], "detector") for e in events.get(r["utt_id"], [])]
        hyp.append({"utt_id": r["utt_id"], "text_with_nvvs": tagged_transcript(words, merge_events(text_ev, det), lang)})
    res = score_track1(refs, hyp, single_language=True)
    return res.get(lang) or res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a chorus-synth nvv corpus (train/dev/test, events/)")
    ap.add_argument("--lang", choices=("en", "zh"), required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--max-train", type=int, default=0, help="corpus train utterances (0: all)")
    ap.add_argument("--variants", default="", help="names (prefixes) of the rows after 'no detector' separated by ;, "
                                                   f"default all (one: {FRAME_VARIANT!r})")
    ap.add_argument("--layers", default="5", help="encoder blocks the heads read (--frame-model: its own)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the heads fitted here")
    ap.add_argument("--heads", type=int, default=1, help="heads of the ensemble fitted here")
    ap.add_argument("--epochs", type=int, default=0, help="epochs per head (0: the module's default, "
                                                          "pyutils.nvv_detect.frame_heads.epochs_per_head)")
    ap.add_argument("--frame-model", type=Path, help="a fitted Whisper-frame detector (e.g. the recipe's stage 5 "
                                                     "nvv_detector.npz, fitted on the same sets) used as the "
                                                     "'Whisper-frame head' row instead of fitting it again")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    t0 = time.time()
    mt = a.max_train
    real_test = a.work / "real_test"
    if not (real_test / "ref.jsonl").is_file():
        devset.write(devset.build("test"), real_test)
    tests = {"corpus test": ("corpus_test", a.corpus / "data" / "test" / "wav.scp", a.corpus / "ref" / "test.jsonl",
                             a.lang),
             "real test (en)": ("real_test", real_test / "wav.scp", real_test / "ref.jsonl", "en")}
    whisper = {k: transcripts(a.work, v[0], v[1], v[3]) for k, v in tests.items()}
    refs = {k: [json.loads(x) for x in v[2].read_text(encoding="utf-8").splitlines()] for k, v in tests.items()}
    makers = {"corpus_train": (lambda: (u for i, u in enumerate(iter_corpus_utts(a.corpus, "train")) if not mt or i < mt),
                               "corpus"),
              "corpus_dev": (lambda: iter_corpus_utts(a.corpus, "dev"), "corpus"),
              "corpus_test": (lambda: iter_corpus_utts(a.corpus, "test"), "corpus"),
              "real_train": (lambda: real_train_utts(12), "real"), "real_dev": (lambda: real_train_utts(6, "dev"), "real"),
              "real_test": (lambda: devset_dir_utts(real_test), "real")}
    fit_row = not a.variants or any(FRAME_VARIANT.startswith(p) for p in a.variants.split(";"))
    names = [FRAME_VARIANT] if fit_row else []
    det = FrameDetector.load(a.frame_model) if a.frame_model and names else None
    if not names or det is not None:   # nothing to fit: the test sets alone
        makers = {k: v for k, v in makers.items() if k.endswith("_test")}
    layers = list(det.layers) if det is not None else [int(v) for v in a.layers.split(",")]
    (a.work / "wf").mkdir(parents=True, exist_ok=True)
    wsets = {k: frames_set(a.work, k, m, kind, layers) for k, (m, kind) in makers.items()}
    rows = []
    for name in ["no detector"] + names:
        cells = []
        if name == FRAME_VARIANT and det is None:
            det, rep = train_head([wsets["corpus_train"], wsets["real_train"]], [wsets["corpus_dev"], wsets["real_dev"]],
                                  log=lambda m: None, seed=a.seed, heads=a.heads, epochs=a.epochs or None)
            print(f"{name}: {a.heads} head(s) x {rep['epochs']} epochs, seed {a.seed}: fit + thresholds "
                  f"{rep['seconds']} s wall, {rep['cpu_seconds']} s CPU", file=sys.stderr)
        for k, (set_name, *_r) in tests.items():
            rws = wsets[set_name][2]
            ev = {u: det.events_of(u, x) for u, x, _ in frame_inputs(rws)} if name == FRAME_VARIANT else {}
            ref_ev = {r.utt: r.events for r in rws}
            f1 = micro(match_counts(ref_ev, ev, list(ref_ev)))[2]
            s = track1(whisper[k], ev, refs[k], tests[k][3])
            cells.append((s["Track1Score"], f1, s["F1_micro"], s["mNTD"], s["tagged_transcript_error"]))
        rows.append((name, cells))
        print(name, cells, file=sys.stderr)
    lines = [f"Detector variants ({a.lang}; corpus {a.corpus.name}; Whisper text fixed, only the tags differ)", "",
             "| variant | " + " | ".join(f"{k} Track1Score | {k} event F1 | {k} tag F1 | {k} mNTD" for k in tests) + " |",
             "| --- |" + " ---: | ---: | ---: | ---: |" * len(tests)]
    for name, cells in rows:
        lines.append(f"| {name} | " + " | ".join(f"{c[0]:.2f} | {c[1]:.3f} | {c[2]:.3f} | {c[3]:.3f}" for c in cells) + " |")
    lines.append(f"\nwall {time.time() - t0:.0f} s")
    text = "\n".join(lines) + "\n"
    from pyutils.io import print_report

    print_report(text, a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
