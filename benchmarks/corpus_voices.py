"""How well the pretrained Whisper judge hears the nvv mini corpus, per voice source.

Renders the first ``--num-test`` test utterances of a preset's corpus exactly as
``chorus-synth nvv`` does (same plan, same bytes) in three forms and lets the judge
(Whisper base, ``pyutils.whisper.judge``, greedy) transcribe each:

* ``corpus``: the test recordings themselves (speech chunks between NVV events);
* ``chunks``: the same speech chunks joined by 0.1 s pauses, no events (what chunking costs);
* ``clean``:  each sentence rendered whole in the same voice, no events.

Error rate as the recipes count it (``pyutils.asr.wer.error_rate``, tags removed):
WER = sum edits / sum reference words (CER for zh).  ``--time-preset`` also times a
cold ``chorus-synth nvv`` run of that preset (``--nj``, local pool, no speech cache).

    tools/venv/bin/python benchmarks/corpus_voices.py --lang en --voices bank --num-test 50
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyutils.asr.wer import error_rate  # noqa: E402
from pyutils.asr.tags_text import strip_tags  # noqa: E402
from pyutils.synth import SAMPLE_RATE, nvv_corpus  # noqa: E402
from pyutils.synth.audio import read_wav, silence, write_wav  # noqa: E402
from pyutils.synth.cli import DEFAULT_BANK_WEIGHT  # noqa: E402
from pyutils.synth.speech import speak, speak_chunks  # noqa: E402


def source_name(v: dict) -> str:
    """A voice in a few characters: engine, name, speed, warp."""
    return f"{v['engine']}:{v['name']}@{v['speed']}/{v['warp']}"


def test_items(lang: str, preset: str, voices: str, seed: int, n: int, cache: str | None) -> list:
    sizes = dict(nvv_corpus.PRESETS[preset])
    # the default corpus: recorded NVVs where the bank has them, drawn as chorus-synth does
    items = nvv_corpus.plan(lang, sizes, sizes["voices"], seed, nvv_sounds="bank",
                            bank_weight=DEFAULT_BANK_WEIGHT, voice_source=voices, speech_cache=cache)
    return [it for it in items if it["split"] == "test"][:n]


def _chunks(item: dict) -> list:
    """The speech chunks of an utterance (the words between its events)."""
    sep = nvv_corpus._sep(item["lang"])
    cuts = sorted({e["position"] for e in item["events"]} | {0, len(item["units"])})
    return [sep.join(item["units"][a:b]) for a, b in zip(cuts, cuts[1:]) if b > a]


def render_forms(items: list, work: Path) -> dict:
    forms = {"corpus": {}, "chunks": {}, "clean": {}}
    t = {k: 0.0 for k in forms}
    for d in forms:
        (work / d / "wav").mkdir(parents=True, exist_ok=True)
    for it in items:
        lang, v, cache = it["lang"], it["voice"], it.get("speech_cache")
        t0 = time.time()
        meta = nvv_corpus.render(it, str(work / "corpus"))
        forms["corpus"][it["utt_id"]] = meta["wav"]
        t1 = time.time()
        parts = speak_chunks(_chunks(it), lang, v, seed=int(it["seed"][-1]), cache=cache)
        gap = silence(0.1)
        y = np.concatenate([gap] + [x for p in parts for x in (p, gap)])
        path = str(work / "chunks" / "wav" / f"{it['utt_id']}.wav")
        write_wav(path, 0.5 * y / max(1e-6, float(np.abs(y).max())), SAMPLE_RATE)
        forms["chunks"][it["utt_id"]] = path
        t2 = time.time()
        y = speak(it["sentence"], lang, v, seed=int(it["seed"][-1]), cache=cache)
        y = np.concatenate([silence(0.1), y, silence(0.1)])
        path = str(work / "clean" / "wav" / f"{it['utt_id']}.wav")
        write_wav(path, 0.5 * y / max(1e-6, float(np.abs(y).max())), SAMPLE_RATE)
        forms["clean"][it["utt_id"]] = path
        t3 = time.time()
        t["corpus"] += t1 - t0
        t["chunks"] += t2 - t1
        t["clean"] += t3 - t2
    return forms, t


def _whisper_norm(lang: str):
    """Whisper's own English normaliser (openai-whisper ``EnglishTextNormalizer``: number words
    -> digits, British -> American spelling, punctuation and fillers removed), or None."""
    if lang != "en":
        return None
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()


def judge_forms(forms: dict, refs: dict, spk: dict, lang: str, threads: int) -> dict:
    """Error rate of each form, overall and per voice, and every utterance's hypothesis.

    ``error_rate_pct`` counts as the recipes do; ``whisper_norm_pct`` (English) first applies
    Whisper's normaliser to reference and hypothesis alike, so "twenty" / "20" and
    "neighbour" / "neighbor" are not counted as errors (how Whisper's own WERs are reported).
    """
    from pyutils.whisper.judge import Judge

    judge = Judge(lang=lang, threads=threads)
    norm = _whisper_norm(lang)
    out = {}
    for name, wavs in forms.items():
        hyps = {u: judge.transcribe(read_wav(p)[0]) for u, p in wavs.items()}
        res = error_rate(refs, hyps, lang, nvv_tags=False)
        per_voice = {}
        for v in sorted(set(spk.values())):
            us = [u for u in refs if spk[u] == v]
            r = error_rate({u: refs[u] for u in us}, hyps, lang, nvv_tags=False)
            per_voice[v] = {"utts": len(us), "edits": r["edits"], "ref_units": r["ref_units"],
                            "error_rate_pct": r["error_rate_pct"]}
        worst = sorted(((u, refs[u], hyps[u]) for u in refs
                        if strip_tags(refs[u]).lower().strip(" .") != hyps[u].lower().strip(" .")),
                       key=lambda r: r[0])
        out[name] = {"error_rate_pct": res["error_rate_pct"], "metric": res["name"],
                     "edits": res["edits"], "ref_units": res["ref_units"], "per_voice": per_voice,
                     "examples": worst, "hyps": hyps}
        if norm is not None:
            nref = {u: norm(strip_tags(r)) for u, r in refs.items()}
            nres = error_rate(nref, {u: norm(h) for u, h in hyps.items()}, lang, nvv_tags=False)
            out[name]["whisper_norm_pct"] = nres["error_rate_pct"]
    return out


def time_preset(lang: str, preset: str, voices: str, nj: int, work: Path) -> float:
    out = work / f"nvv_{lang}_{preset}_{voices}"
    cmd = [sys.executable, "-m", "pyutils.synth.cli", "nvv", "--lang", lang, "--preset", preset,
           "--voices", voices, "--out", str(out), "--nj", str(nj), "--speech-cache", "none",
           "--overwrite"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.time()
    subprocess.run(cmd, check=True, env=env)
    return time.time() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", default="en")
    ap.add_argument("--voices", choices=["bank", "espeak"], default="bank")
    ap.add_argument("--preset", default="default", help="corpus whose test utterances are judged")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-test", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1, help="judge CPU threads")
    ap.add_argument("--work", default=None, help="keep the rendered audio here (default: a temp dir)")
    ap.add_argument("--time-preset", default=None, help="also time a cold chorus-synth run of this preset")
    ap.add_argument("--nj", type=int, default=2)
    ap.add_argument("--json", default=None, help="write the figures here too")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        items = test_items(a.lang, a.preset, a.voices, a.seed, a.num_test, str(work / "speech_cache"))
        refs = {it["utt_id"]: nvv_corpus.tagged_text(it["units"], it["events"], it["lang"]) for it in items}
        forms, secs = render_forms(items, work)
        res = {"lang": a.lang, "voices": a.voices, "preset": a.preset, "num_test": len(items),
               "render_s": {k: round(v, 1) for k, v in secs.items()},
               "voices_of": {it["utt_id"]: source_name(it["voice"]) for it in items},
               "judge": judge_forms(forms, refs, {it["utt_id"]: it["spk"] for it in items},
                                    a.lang, a.threads)}
        if a.time_preset:
            res["time_preset"] = {"preset": a.time_preset, "nj": a.nj,
                                  "seconds": round(time_preset(a.lang, a.time_preset, a.voices, a.nj, work), 1)}
    for name, r in res["judge"].items():
        wn = f", Whisper-normalised {r['whisper_norm_pct']:.2f} %" if "whisper_norm_pct" in r else ""
        print(f"{a.lang} {a.voices} {name:7s} {r['metric']} {r['error_rate_pct']:6.2f} % "
              f"({r['edits']}/{r['ref_units']}, {len(items)} utts{wn})")
        bad = {v: x for v, x in r["per_voice"].items() if x["edits"]}
        print("    per voice (edits/units): " + ", ".join(
            f"{v} [{res['voices_of'][next(u for u in refs if u.startswith(v + '-'))]}] "
            f"{x['edits']}/{x['ref_units']}" for v, x in bad.items()))
        for u, ref, hyp in r["examples"][:3]:
            print(f"    {u}: {strip_tags(ref)!r} -> {hyp!r}")
    print(f"render seconds: {res['render_s']}")
    if "time_preset" in res:
        print(f"chorus-synth nvv --preset {a.time_preset} --nj {a.nj} (cold): {res['time_preset']['seconds']} s")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
