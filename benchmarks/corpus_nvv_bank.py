#!/usr/bin/env python3
"""The recorded NVV bank, and how real the NVVs of the mini corpus are, judged by YAMNet.

    PYTHONPATH=. tools/venv/bin/python benchmarks/corpus_nvv_bank.py [--preset default] [--weights 1 4]

Prints (Markdown):

1. every clip of ``conf/nvv_bank.tsv``: tag, split, talker, status and YAMNet's
   agreement (score of the best AudioSet class of its tag, on the installed 16 kHz clip;
   "heard" as :meth:`pyutils.audio_tagger.YamNet.heard`: that class in the top 3 and >= 0.15);
2. per class: clips used per split, mean agreement, share heard;
3. the share of recorded NVV events in the corpora of the preset (plans only, all splits,
   en and zh), per ``--nvv-bank-weight``;
4. the test split rendered with generated sounds and with the bank: the share of its NVV
   events of the 14 tags YAMNet has classes for whose class YAMNet hears inside the event
   (the interval [start, end] of ``events/test.jsonl``, patches every 0.24 s), per tag.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from pyutils.audio_tagger import TAG_CLASSES, YamNet, judge_scores
from pyutils.synth import nvv_bank, nvv_bank_index
from pyutils.synth.nvv_corpus import PRESETS, SPLITS, plan, render
from pyutils.tags import challenge_tags


def clip_table(tagger: YamNet) -> list:
    rows = nvv_bank.read_manifest()
    idx = {c["clip_id"]: c for cs in nvv_bank_index.load_index().values() for c in cs}
    print("## Clips (conf/nvv_bank.tsv)\n")
    print("| clip | tag | split | status | YAMNet class | agreement | heard | YAMNet top 3 |")
    print("|---|---|---|---|---|---|---|---|")
    out = []
    for r in rows:
        heard, score = None, r["yamnet_score"]
        if r["clip_id"] in idx:
            x = nvv_bank_index._clip_audio(idx[r["clip_id"]]["wav"])
            s = tagger.interval_scores(x, 16000)
            heard, best = judge_scores(s, tagger, r["tag"])
            score = f"{best:.3f}" if best is not None else ""
        out.append({**r, "heard": heard, "agree": float(score) if score else None})
        print(f"| {r['clip_id']} | {r['tag']} | {r['split'] or '-'} | {r['status']} | {r['yamnet_class']} | "
              f"{score} | {'' if heard is None else ('yes' if heard else 'no')} | {r['yamnet_top']} |")
    return out


def class_table(clips: list) -> None:
    print("\n## Classes\n")
    print("| tag | train | dev | test | rejected | mean agreement (used) | heard (used) |")
    print("|---|---|---|---|---|---|---|")
    for tag in challenge_tags():
        used = [c for c in clips if c["tag"] == tag and c["status"] == "used"]
        rej = sum(c["tag"] == tag and c["status"] != "used" for c in clips)
        if not used and not rej:
            continue
        n = {s: sum(c["split"] == s for c in used) for s in SPLITS}
        agree = [c["agree"] for c in used if c["agree"] is not None]
        heard = [c["heard"] for c in used if c["heard"] is not None]
        print(f"| {tag} | {n['train']} | {n['dev']} | {n['test']} | {rej} | "
              f"{np.mean(agree):.3f} | {sum(heard)}/{len(heard)} |")


def real_share(preset: str, weights, seed: int) -> None:
    print(f"\n## Recorded share of the NVV events ({preset} preset, all splits)\n")
    print("| lang | --nvv-bank-weight | events | recorded | share |")
    print("|---|---|---|---|---|")
    cfg = PRESETS[preset]
    per_tag = {}
    for lang in ("en", "zh"):
        for w in weights:
            items = plan(lang, {s: cfg[s] for s in SPLITS}, cfg["voices"], seed, nvv_sounds="bank", bank_weight=w)
            idx = nvv_bank_index.load_index()
            n = rec = 0
            for it in items:
                for e in it["events"]:
                    n += 1
                    rec += bool(idx.get((e["tag"], it["split"])))
            print(f"| {lang} | {w} | {n} | {rec} | {100 * rec / n:.1f} % |")
            if lang == "en":
                per_tag[w] = {t: [0, 0] for t in challenge_tags()}
                for it in items:
                    for e in it["events"]:
                        per_tag[w][e["tag"]][0 if idx.get((e["tag"], it["split"])) else 1] += 1
    print("\nPer tag, en (recorded/generated events): " + "; ".join(
        f"weight {w}: " + ", ".join(f"{t} {a}/{b}" for t, (a, b) in counts.items())
        for w, counts in per_tag.items()))


def heard_in_test(tagger: YamNet, preset: str, weights, seed: int, lang: str) -> None:
    cfg = PRESETS[preset]
    sizes = {s: cfg[s] for s in SPLITS}
    print(f"\n## YAMNet on the test recordings ({lang}, {preset} preset, {cfg['test']} utterances)\n")
    print("| corpus | NVVs of the 14 known tags | heard | share | recorded among them | per tag (heard/events) |")
    print("|---|---|---|---|---|---|")
    confs = [("generated", 1)] + [("bank", w) for w in weights]
    for mode, w in confs:
        items = [it for it in plan(lang, sizes, cfg["voices"], seed, nvv_sounds=mode, bank_weight=w) if it["split"] == "test"]
        per = defaultdict(lambda: [0, 0])
        n = heard = rec = 0
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="nvvbank_bench_") as d:
            (Path(d) / "wav").mkdir()
            for it in items:
                meta = render(it, d)
                if not meta["events"]:
                    continue
                import soundfile as sf

                x, sr = sf.read(meta["wav"], dtype="float32")
                for e in meta["events"]:
                    if e["tag"] not in TAG_CLASSES:
                        continue
                    s = tagger.interval_scores(x, sr, e["start"], e["end"])
                    h = bool(judge_scores(s, tagger, e["tag"])[0])
                    n += 1
                    heard += h
                    rec += e["source"] == "recorded"
                    per[e["tag"]][0] += h
                    per[e["tag"]][1] += 1
        tags = ", ".join(f"{t} {a}/{b}" for t, (a, b) in sorted(per.items()))
        name = "generated" if mode == "generated" else f"bank, weight {w}"
        print(f"| {name} | {n} | {heard} | {100 * heard / max(n, 1):.1f} % | {rec} | {tags} |")
        print(f"  ({name}: {time.time() - t0:.0f} s)", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="default")
    ap.add_argument("--lang", default="en", help="language of the rendered test split")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", type=int, nargs="+", default=[1, 4], help="--nvv-bank-weight values")
    a = ap.parse_args(argv)
    tagger = YamNet.load()
    clips = clip_table(tagger)
    class_table(clips)
    real_share(a.preset, a.weights, a.seed)
    heard_in_test(tagger, a.preset, a.weights, a.seed, a.lang)
    return 0


if __name__ == "__main__":
    sys.exit(main())
