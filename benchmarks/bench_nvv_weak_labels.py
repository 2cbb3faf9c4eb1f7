"""Weak labels against exact event times: the Whisper-frame detector fitted on tag windows derived
from tagged transcripts alone, on a ``chorus-synth nvv`` corpus whose event times are hidden.

    PYTHONPATH=$PWD tools/venv/bin/python benchmarks/bench_nvv_weak_labels.py --corpus CORPUS --lang en \\
        --work bench_out/weak_labels [--max-train N] [--heads 3] [--seed 0] [--md table.md]

1. Windows of the train and dev splits from ``data/<split>/{wav.scp,text}`` only
   (:func:`pyutils.nvv_detect.weak_labels.derive`, cached in ``WORK/weak_<split>``), compared with
   the true events of ``events/<split>.jsonl`` (the i-th tag of an utterance is its i-th event):
   onset error ``|window start - event start|`` (median, 90th percentile), the share of events
   inside their window (``s_w <= s_e`` and ``e_e <= e_w``; also with 0.1 s and ``MARGIN_S`` = 0.2 s
   of slack), window length.
2. Whisper frames of the train (first ``--max-train``), dev and test splits
   (:mod:`pyutils.nvv_detect.whisper_frames`, cached ``WORK/wf_<split>.npz``).
3. Detectors on the same frames, seed and ensemble (:func:`pyutils.nvv_detect.frame_heads.train_head`):
   ``times`` (frame cross-entropy on the true events, thresholds on the dev split's true events)
   and ``spans`` (``--labels spans``: the same loss on the derived train windows taken as the sounds'
   spans, thresholds on the dev split's derived windows: no true time is used). The windows loss
   (``windows``, measured in ``pyutils/nvv_detect/README.md``, not adopted) was removed after
   commit 9e77449.
4. Each detector's events on the test split, placed on one cached frozen-Whisper decoding of it
   (``pyutils.asr.cascade --details``, as ``benchmarks/bench_cascade_detector.py`` does), scored by
   ``chorus-score track1`` against the test references.
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

import numpy as np  # noqa: E402

MARGIN_S = 0.2  # slack of the "within the margin" column (the margin of the removed windows loss)


def window_quality(weak: Path, corpus: Path, split: str) -> dict:
    """Derived windows against the true events (see the module docstring)."""
    from pyutils.io import read_jsonl

    true = {r["utt_id"]: sorted(r["events"], key=lambda e: e.get("order", 0))
            for r in read_jsonl(corpus / "events" / f"{split}.jsonl")}
    wins: dict = {}
    for r in read_jsonl(weak / "windows.jsonl"):
        wins.setdefault(r["utt_id"], []).append(r)
    onset, offset, inside, inside_tol, inside_m, length, pairs = [], [], [], [], [], [], 0
    for u, ws in wins.items():
        ev = true.get(u, [])
        if len(ev) != len(ws):
            raise SystemExit(f"{u}: {len(ws)} windows for {len(ev)} true events")
        for w, e in zip(ws, ev):
            if w["tag"] != e["tag"]:
                raise SystemExit(f"{u}: window tag {w['tag']} against event {e['tag']}")
            pairs += 1
            onset.append(abs(w["start"] - e["start"]))
            offset.append(abs(w["end"] - e["end"]))
            inside.append(w["start"] <= e["start"] and e["end"] <= w["end"])
            inside_tol.append(w["start"] - 0.1 <= e["start"] and e["end"] <= w["end"] + 0.1)
            inside_m.append(w["start"] - MARGIN_S <= e["start"] and e["end"] <= w["end"] + MARGIN_S)
            length.append(w["end"] - w["start"])
    kept = [line.split()[0] for line in (weak / "wav.scp").read_text(encoding="utf-8").splitlines() if line.strip()]
    n_true = sum(len(true.get(u, [])) for u in kept)
    return {"events": n_true, "windows": pairs, "onset_median": float(np.median(onset)),
            "onset_p90": float(np.percentile(onset, 90)), "offset_median": float(np.median(offset)),
            "inside": float(np.mean(inside)), "inside_0.1": float(np.mean(inside_tol)),
            "inside_margin": float(np.mean(inside_m)), "window_median": float(np.median(length)),
            "event_median": float(np.median([e["end"] - e["start"] for u in kept for e in true.get(u, [])]))}


def frames_of(work: Path, corpus: Path, split: str, max_utts: int):
    from pyutils.nvv_detect import whisper_frames as wf
    from pyutils.nvv_detect.utt_sources import iter_corpus_utts

    path = work / f"wf_{split}{'_' + str(max_utts) if max_utts else ''}.npz"
    if not path.is_file():
        t0 = time.time()
        utts = (u for i, u in enumerate(iter_corpus_utts(corpus, split)) if not max_utts or i < max_utts)
        enc = wf.WhisperFrames(wf.DEFAULT_LAYERS, threads=2)
        wf.save(wf.compute(utts, enc), "corpus", enc.layers, path)
        print(f"frames {split}: {time.time() - t0:.0f} s", file=sys.stderr)
    return wf.load(path)


def weak_set(frames, weak: Path):
    """The corpus frames of the utterances the windows kept, the windows in place of the events."""
    from pyutils.io import read_jsonl
    from pyutils.nvv_detect.whisper_frames import FrameUtt

    kind, layers, rows = frames
    kept = {line.split()[0] for line in (weak / "wav.scp").read_text(encoding="utf-8").splitlines() if line.strip()}
    wins: dict = {}
    for r in read_jsonl(weak / "windows.jsonl"):
        wins.setdefault(r["utt_id"], []).append({"tag": r["tag"], "start": r["start"], "end": r["end"]})
    return "weak", layers, [FrameUtt(r.utt, r.frames, wins.get(r.utt, [])) for r in rows if r.utt in kept]


def score(work: Path, name: str, det, test, details: dict, refs_path: Path, lang: str) -> dict:
    """Track 1 scores of ``det``'s events on the test frames, placed on the cached Whisper words."""
    from pyutils.asr.longform import Word
    from pyutils.asr.nvv_words import Event, merge_events
    from pyutils.asr.placement import tagged_transcript
    from pyutils.io import read_jsonl, write_jsonl
    from pyutils.nvv_detect.events import match_counts, micro

    ev = {r.utt: det.events_of(r.utt, r.frames.astype(np.float32)) for r in test[2]} if det is not None else {}
    hyp = []
    for r in read_jsonl(refs_path):
        d = details.get(r["utt_id"], {})
        words = [Word(w, s, e, p) for w, s, e, p in d.get("words", [])]
        text_ev = [Event(e["tag"], e["start"], e["end"], e["score"], "text")
                   for e in d.get("events", []) if e["source"] == "text"]
        dev = [Event(e["tag"], e["start"], e["end"], e["score"], "detector") for e in ev.get(r["utt_id"], [])]
        text = tagged_transcript(words, merge_events(text_ev, dev), lang)
        hyp.append({"utt_id": r["utt_id"], "text_with_nvvs": text})
    out = work / "score" / name
    write_jsonl(out / "hyp.jsonl", hyp)
    subprocess.run([str(REPO / "tools" / "venv" / "bin" / "chorus-score"), "track1", "--ref", str(refs_path),
                    "--hyp", str(out / "hyp.jsonl"), "--output-json", str(out / "track1.json"),
                    "--single-language"], check=True, cwd=str(REPO), stdout=subprocess.DEVNULL)
    res = json.loads((out / "track1.json").read_text(encoding="utf-8"))
    res = res.get(lang, res) if isinstance(res.get(lang), dict) else res
    ref_ev = {r.utt: r.events for r in test[2]}
    f1 = micro(match_counts(ref_ev, ev, list(ref_ev)))[2]
    return {"Track1Score": res["Track1Score"], "event_F1": f1, "F1_micro": res.get("F1_micro"), "mNTD": res.get("mNTD")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--lang", choices=("en", "zh"), required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--max-train", type=int, default=0, help="corpus train utterances (0: all)")
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="epochs per head (0: frame_heads.epochs_per_head)")
    ap.add_argument("--variants", default="times,spans", help="comma-separated: times, spans")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    from pyutils.nvv_detect.frame_heads import train_head
    from pyutils.nvv_detect.weak_labels import derive

    t0 = time.time()
    a.work.mkdir(parents=True, exist_ok=True)
    weak, quality = {}, {}
    for split, mx in (("train", a.max_train), ("dev", 0)):
        d = a.work / f"weak_{split}{'_' + str(mx) if mx else ''}"
        if not (d / "report.json").is_file():
            rep = derive(a.corpus / "data" / split, d, a.lang, mx, a.threads, log=lambda m: print(m, file=sys.stderr))
            print(f"windows {split}: {rep['seconds']} s", file=sys.stderr)
        weak[split] = d
        quality[split] = {**window_quality(d, a.corpus, split),
                          **{k: v for k, v in json.loads((d / "report.json").read_text()).items()
                             if k in ("utterances", "kept", "aligned", "aligned_widened", "skipped", "seconds")}}
        print(f"window quality {split}: {quality[split]}", file=sys.stderr)
    fr = {s: frames_of(a.work, a.corpus, s, a.max_train if s == "train" else 0) for s in ("train", "dev", "test")}
    ws = {s: weak_set(fr[s], weak[s]) for s in ("train", "dev")}
    test_scp = a.corpus / "data" / "test" / "wav.scp"
    det_dir = a.work / "whisper_test"
    if not (det_dir / "details.jsonl").is_file():
        det_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pyutils.asr.cascade", "--wav-scp", str(test_scp), "--lang", a.lang,
                        "--jsonl", str(det_dir / "hyp.jsonl"), "--details", str(det_dir / "details.jsonl"),
                        "--threads", str(a.threads), "--no-progress", "--pack"], check=True, cwd=str(REPO))
    details = {r["utt_id"]: r for r in map(json.loads, (det_dir / "details.jsonl").read_text().splitlines())}
    refs = a.corpus / "ref" / "test.jsonl"
    rows = [("no detector", None, score(a.work, "none", None, fr["test"], details, refs, a.lang))]
    fits = {"times": ([fr["train"]], [fr["dev"]], "times"),
            "spans": ([ws["train"]], [ws["dev"]], "spans")}
    for v in a.variants.split(","):
        tr, dv, labels = fits[v]
        det, rep = train_head(tr, dv, threads=a.threads, seed=a.seed, heads=a.heads, epochs=a.epochs or None,
                              labels=labels, log=lambda m: print(m, file=sys.stderr))
        det.save(a.work / f"det_{v}.npz")
        s = score(a.work, v, det, fr["test"], details, refs, a.lang)
        rows.append((v, rep, s))
        print(v, s, f"fit {rep['seconds']} s", file=sys.stderr)
    q = quality["train"]
    lines = [f"Weak labels ({a.lang}; corpus {a.corpus.name}, {len(fr['train'][2])} train utterances, "
             f"{a.heads} head(s), seed {a.seed})", "",
             "| split | events | windows | onset error median / p90 (s) | events inside window | within 0.1 s | "
             "within the margin | window / event median (s) | widened utts |", "| --- |" + " ---: |" * 8]
    for split, q in quality.items():
        lines.append(f"| {split} | {q['events']} | {q['windows']} | {q['onset_median']:.3f} / {q['onset_p90']:.3f} | "
                     f"{100 * q['inside']:.1f} % | {100 * q['inside_0.1']:.1f} % | {100 * q['inside_margin']:.1f} % | "
                     f"{q['window_median']:.2f} / "
                     f"{q['event_median']:.2f} | {q['aligned_widened']} of {q['aligned']} |")
    lines += ["", "| labels | test Track1Score | event F1 | tag F1 | mNTD | dev micro P/R/F1 (own dev refs) |",
              "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name, rep, s in rows:
        lines.append(f"| {name} | {s['Track1Score']:.2f} | {s['event_F1']:.3f} | {s['F1_micro']:.3f} | "
                     f"{s['mNTD']:.3f} | {rep['dev_micro'] if rep else '-'} |")
    lines.append(f"\nwall {time.time() - t0:.0f} s")
    from pyutils.io import print_report

    print_report("\n".join(lines) + "\n", a.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
