#!/usr/bin/env python3
"""The ceiling of the vocoders: copy-synthesis of the test recordings, judged like the synthesis.

    cd egs/nvv_tts && PYTHONPATH=../.. ../../tools/venv/bin/python ../../benchmarks/tts_world_ceiling.py \
        --data dump/raw/test_en --config conf/train_fastspeech_world_default.yaml \
        --world-conf conf/world.yaml --max-utts 36 --work exp/world_ceiling

Each recording of the test dump (the report's first ``--max-utts`` utterances, in key order as stage 7
takes them) is analysed into exactly the features the acoustic model learns
(:func:`pyutils.tts.world.analyze`: log-mel envelope, log F0, voiced flag, coded aperiodicity, the
recipe's ``world.yaml`` and frame grid) and resynthesised by the vocoder stage 6 uses
(:class:`pyutils.tts.world.WorldVocoder`, ``--lifter``, ``--voiced-threshold``), then
loudness-normalised as stage 6 post-processes the synthesis (-23 dBFS active level). The
recordings and the resynthesis then go through the stage-7 judges: the pretrained Whisper judge
(WER, tags removed), DNSMOS P.835 OVRL and DistillMOS. If the resynthesis is close to the
recordings, WORLD is not what limits the synthesis; the acoustic model is.

``--hifigan --calib-scp TRAIN_WAV_SCP``: also the pretrained HiFi-GAN of :mod:`pyutils.tts.hifigan` on
the recordings' 16 kHz log-mel (the first 80 of the same features; its level offset fitted on the
first 20 utterances of the training set, as stage 6 does).

Prints a Markdown table; writes ``<work>/resynth/`` wavs and ``<work>/judge_*.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import soundfile as sf

from pyutils.io import atomic_write_lines, read_scp, read_text


def resynthesise(data: str, utts, cfg, out_dir: str) -> dict:
    from pyutils.tts.audio import normalise_loudness, to_submission_audio
    from pyutils.tts.world import WorldVocoder, analyze

    voc = WorldVocoder(cfg)
    wavs = dict(read_scp(os.path.join(data, "wav.scp")))
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for u in utts:
        x, sr = sf.read(wavs[u], dtype="float64", always_2d=True)
        if sr != cfg.fs:
            raise SystemExit(f"{data}/wav.scp: {u}: {sr} Hz, the config runs at {cfg.fs} Hz")
        y = normalise_loudness(voc(analyze(x.mean(axis=1), cfg)), cfg.fs)
        path = os.path.abspath(os.path.join(out_dir, f"{u}.wav"))
        sf.write(path, to_submission_audio(y, cfg.fs), cfg.fs, subtype="PCM_16")
        out[u] = path
    return out


def resynthesise_hifigan(data: str, utts, cfg, calib_scp: str, out_dir: str) -> dict:
    from pyutils.tts.audio import normalise_loudness, to_submission_audio
    from pyutils.tts.hifigan import HifiGanVocoder, fit_offset
    from pyutils.tts.world import _logmel

    calib = [sf.read(p, dtype="float64", always_2d=True)[0].mean(axis=1) for _, p in read_scp(calib_scp)[:20]]
    voc = HifiGanVocoder(fit_offset(calib, lambda x: _logmel(x, cfg), cfg.hop_length), cfg.hop_length)
    wavs = dict(read_scp(os.path.join(data, "wav.scp")))
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for u in utts:
        x = sf.read(wavs[u], dtype="float64", always_2d=True)[0].mean(axis=1)
        y = normalise_loudness(voc(_logmel(x, cfg)), cfg.fs)
        path = os.path.abspath(os.path.join(out_dir, f"{u}.wav"))
        sf.write(path, to_submission_audio(y, cfg.fs), cfg.fs, subtype="PCM_16")
        out[u] = path
    return out


def judge(scp_rows: dict, lang: str, model: str, out_txt: str) -> dict:
    from pyutils.whisper.judge import Judge

    j = Judge(model, lang)
    hyp = {}
    for u, path in scp_rows.items():
        x, sr = sf.read(path, dtype="float32", always_2d=True)
        hyp[u] = j.transcribe(x.mean(axis=1))      # 16 kHz (checked by the caller)
    atomic_write_lines(out_txt, [f"{u} {t}\n" for u, t in hyp.items()])
    return hyp


def quality(scp_rows: dict) -> dict:
    from pyutils.judges.mos import DistillMOS
    from pyutils.tts.evaluate import dnsmos_scores, load_16k

    wav = {u: load_16k(p) for u, p in scp_rows.items()}
    dn = dnsmos_scores(wav)
    dm = DistillMOS()
    return {"OVRL": float(np.mean([v["OVRL"] for v in dn.values()])),
            "DistillMOS": float(np.mean([dm.score(x) for x in wav.values()]))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="test dump dir (wav.scp, text.tagged)")
    ap.add_argument("--config", required=True, help="TTS training config (frame grid, log-mel)")
    ap.add_argument("--world-conf", required=True)
    ap.add_argument("--lifter", type=int, default=80)
    ap.add_argument("--voiced-threshold", type=float, default=0.5)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--judge-model", default="base")
    ap.add_argument("--max-utts", type=int, default=36, help="first N utterances in key order (0 = all)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--hifigan", action="store_true", help="also the pretrained HiFi-GAN (pyutils/tts/hifigan.py)")
    ap.add_argument("--calib-scp", help="--hifigan: wav.scp to fit its level offset on (the training set)")
    a = ap.parse_args(argv)

    from pyutils.asr.wer import error_rate
    from pyutils.tts.world import WorldConfig

    cfg = WorldConfig.load(a.config, a.world_conf, a.lifter, a.voiced_threshold)
    refs = read_text(os.path.join(a.data, "text.tagged"))
    utts = sorted(refs)[: a.max_utts] if a.max_utts else sorted(refs)
    refs = {u: refs[u] for u in utts}
    real = {u: p for u, p in read_scp(os.path.join(a.data, "wav.scp")) if u in refs}
    t0 = time.time()
    resyn = resynthesise(a.data, utts, cfg, os.path.join(a.work, "resynth"))
    t_voc = time.time() - t0
    sets = [("recordings", "real", real), (f"WORLD copy-synthesis (lifter {a.lifter})", "world", resyn)]
    if a.hifigan:
        if not a.calib_scp:
            ap.error("--hifigan needs --calib-scp")
        t1 = time.time()
        sets.append(("HiFi-GAN copy-synthesis (universal, from the 16 kHz log-mel)", "hifigan",
                     resynthesise_hifigan(a.data, utts, cfg, a.calib_scp, os.path.join(a.work, "resynth_hifigan"))))
        print(f"HiFi-GAN: {time.time() - t1:.0f} s", file=sys.stderr)
    rows = []
    for name, key, scp in sets:
        hyp = judge(scp, a.lang, a.judge_model, os.path.join(a.work, f"judge_{key}.txt"))
        er = error_rate(refs, hyp, a.lang, nvv_tags=False)
        q = quality(scp)
        rows.append(f"| {name} | {er['error_rate_pct']:.2f} % | {q['OVRL']:.2f} | {q['DistillMOS']:.2f} |")
        print(f"{name}: done ({time.time() - t0:.0f} s)", file=sys.stderr)
    print(f"{len(utts)} test utterances of {a.data}; analysis + WORLD synthesis {t_voc:.0f} s\n")
    print("| audio | judge WER | DNSMOS OVRL | DistillMOS |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
