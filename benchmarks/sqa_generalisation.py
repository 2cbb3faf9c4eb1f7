#!/usr/bin/env python3
"""SQA generalisation: leave-one-family-out and held-out-voice splits.

Runs on the outputs of an ``egs/sqa`` run (stages 0-3 at least: the corpus'
``faults/<split>.jsonl`` with each fault's kind and each recording's voice
group, and ``dump/<set>/`` with features and utterance embeddings).  All
recordings of train, dev, test and test_real form one pool; each experiment
then trains a fresh model on part of it and tests on recordings it never saw
anything like:

* ``lofo:<family>``: train and dev without any recording that contains a fault
  of that family (:data:`pyutils.synth.faults.FAMILIES`), and the on-the-fly
  augmentation told not to make it either (``augment_exclude``); test on every
  pool recording outside dev that contains it;
* ``voices:<groups>``: train and dev without the held-out voice groups (flite,
  espeak accents); test on the pool recordings of those groups, and on
  ``test_real`` (real human speech, never trained on in any experiment).

Each test is scored with ``chorus-score sqa`` beside DNSMOS P.835 OVRL's PCC on
the same recordings (the anchor: knowledge from outside the simulator).  The
model, its post-processing (tuned on that experiment's dev) and the training
length (``--max-updates``) are the same for every experiment.

    python benchmarks/sqa_generalisation.py --recipe-dir egs/sqa --preset default \
        --max-updates 600 --out egs/sqa/exp/sqa_generalisation
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import yaml

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from pyutils.io import read_jsonl, read_scp, write_jsonl  # noqa: E402
from pyutils.sqa.train import load_config  # noqa: E402
from pyutils.synth.faults import FAMILIES  # noqa: E402

SETS = ("train", "dev", "test", "test_real")
FILES = ("feats.scp", "utt2dur", "wav.scp", "embed.scp")


def _absolute(line: str, root: str) -> str:
    """``utt path[:offset]`` with a relative path made absolute against ``root`` (the recipe dir)."""
    utt, rest = line.rstrip("\n").split(maxsplit=1)
    if not os.path.isabs(rest) and not rest.rstrip().endswith("|"):
        rest = os.path.join(os.path.abspath(root), rest)
    return f"{utt} {rest}\n"


def load_pool(recipe: str, corpus: str, dump: str = "dump"):
    """Per utterance: set, fault families, voice group; and the pooled dump dir lines."""
    info, lines = {}, {f: [] for f in FILES + ("ref.jsonl",)}
    for s in SETS:
        d = os.path.join(recipe, dump, s)
        fj = os.path.join(corpus, "faults", f"{s}.jsonl")
        if not os.path.isdir(d) or not os.path.exists(fj):
            print(f"note: no {s} set in {d} / {fj}; left out", flush=True)
            continue
        for r in read_jsonl(fj):
            info[r["utt_id"]] = {"set": s, "families": sorted({FAMILIES[x["kind"]] for x in r["details"]}),
                                 "group": r.get("voice_group", "")}
        for f in FILES:
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                lines[f] += [_absolute(ln, recipe) if f != "utt2dur" else ln for ln in fh if ln.strip()]
        lines["ref.jsonl"] += read_jsonl(os.path.join(d, "ref.jsonl"))
    for cfg in ("feats_config.json", "embed_config.json"):     # how the features were made
        path = os.path.join(recipe, dump, "train", cfg)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                lines[cfg] = fh.read()
    return info, lines


def write_subset(lines: dict, utts, out: str) -> str:
    keep = set(utts)
    os.makedirs(out, exist_ok=True)
    for f in FILES:
        with open(os.path.join(out, f), "w", encoding="utf-8") as fh:
            fh.writelines(sorted(ln for ln in lines[f] if ln.split(maxsplit=1)[0] in keep))
    write_jsonl(os.path.join(out, "ref.jsonl"), sorted((r for r in lines["ref.jsonl"] if r["utt_id"] in keep),
                                                       key=lambda r: r["utt_id"]))
    for cfg in ("feats_config.json", "embed_config.json"):
        if cfg in lines:
            with open(os.path.join(out, cfg), "w", encoding="utf-8") as fh:
                fh.write(lines[cfg])
    return out


def dnsmos_ovrl(recipe: str, tag: str, utts, wavs: dict, cache_path: str) -> dict:
    """DNSMOS P.835 OVRL per utterance: from the recipe's stage-4 measures where present, else computed."""
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8") as f:
            cache = json.load(f)
    for s in SETS:
        m = os.path.join(recipe, "exp", f"sqa_baselines_{tag}", s, "measures.jsonl")
        if os.path.exists(m):
            for r in read_jsonl(m):
                if "ovrl_mos" in r.get("dnsmos", {}) and r["dnsmos"]["ovrl_mos"] != 3.0:
                    cache.setdefault(r["utt_id"], r["dnsmos"]["ovrl_mos"])
    todo = [u for u in utts if u not in cache]
    if todo:
        from pyutils.sqa.audio import load_checked
        from pyutils.sqa.embed import DnsmosP835

        print(f"DNSMOS P.835 for {len(todo)} recordings", flush=True)
        d = DnsmosP835()
        for u in todo:
            cache[u] = float(d(load_checked(wavs[u]))[2])
        tmp = cache_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(cache, f)
        os.replace(tmp, cache_path)
    return cache


def plan(info: dict, families, groups, in_distribution: bool = True) -> list:
    """The experiments ``(name, train, dev, {test name: utts}, augment_exclude)`` over the pool
    ``info`` (:func:`load_pool`): one ``lofo:<family>`` per family (train and dev without any
    recording that holds it; test: every other pooled recording that does), one ``voices:<groups>``
    (train and dev without those voice groups; test: their train and test recordings, and
    ``test_real``), and the in-distribution split as the recipe has it."""
    by_set = {s: sorted(u for u, i in info.items() if i["set"] == s) for s in SETS}
    known = set(FAMILIES.values())
    out = []
    for fam in families:
        if fam not in known:
            raise ValueError(f"unknown family {fam!r}; known: {sorted(known)}")
        has = {u for u, i in info.items() if fam in i["families"]}
        train = [u for u in by_set["train"] if u not in has]
        dev = [u for u in by_set["dev"] if u not in has]
        test = sorted(u for u in has if info[u]["set"] != "dev")
        out.append((f"lofo:{fam}", train, dev, {f"with_{fam}": test}, [fam]))
    real = {"test_real": by_set["test_real"]} if by_set["test_real"] else {}
    if groups:
        held = {u for u, i in info.items() if i["group"] in groups}
        tests = {"heldout_voices": sorted(u for u in held if info[u]["set"] in ("train", "test")), **real}
        out.append((f"voices:{','.join(groups)}", [u for u in by_set["train"] if u not in held],
                    [u for u in by_set["dev"] if u not in held], tests, []))
    if in_distribution:
        out.append(("in_distribution", by_set["train"], by_set["dev"], {"test": by_set["test"], **real}, []))
    return out


def run_experiment(name, train, dev, tests, exclude, base_cfg, lines, stats, out, max_updates):
    """Train, tune post-processing on dev, score every test set; returns {test: result}."""
    from pyutils.scoring.sqa import score_sqa
    from pyutils.sqa import infer, postproc, train as train_mod

    d = os.path.join(out, name.replace(":", "_").replace(",", "+"))
    res_path = os.path.join(d, "results.json")
    if os.path.exists(res_path):
        with open(res_path, encoding="utf-8") as f:
            return json.load(f)
    cfg = dict(base_cfg, max_updates=max_updates, augment_exclude=list(exclude), max_minutes=0.0)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "train.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    tdir = write_subset(lines, train, os.path.join(d, "train"))
    ddir = write_subset(lines, dev, os.path.join(d, "dev"))
    mdir = os.path.join(d, "model")
    t0 = time.time()
    print(f"[{name}] train {len(train)} dev {len(dev)} tests "
          + ", ".join(f"{k} {len(v)}" for k, v in tests.items()) + f"; exclude {list(exclude)}", flush=True)
    if not os.path.exists(os.path.join(mdir, "model.pt")) or not os.path.exists(os.path.join(d, ".trained")):
        train_mod.main(["--config", os.path.join(d, "train.yaml"), "--train-dir", tdir,
                        "--train-ref", os.path.join(tdir, "ref.jsonl"), "--dev-dir", ddir,
                        "--dev-ref", os.path.join(ddir, "ref.jsonl"), "--stats", stats, "--outdir", mdir])
        open(os.path.join(d, ".trained"), "w").close()
    infer.main(["--model-dir", mdir, "--data-dir", ddir, "--outdir", os.path.join(mdir, "infer_dev")])
    postproc.main(["tune", "--quick", "--outputs", os.path.join(mdir, "infer_dev", "outputs.npz"),
                   "--ref", os.path.join(ddir, "ref.jsonl"), "--out", os.path.join(mdir, "postproc.json")])
    results = {}
    for tname, utts in tests.items():
        sdir = write_subset(lines, utts, os.path.join(d, f"test_{tname}"))
        odir = os.path.join(mdir, f"infer_{tname}")
        infer.main(["--model-dir", mdir, "--data-dir", sdir, "--outdir", odir,
                    "--postproc", os.path.join(mdir, "postproc.json")])
        ref, hyp = read_jsonl(os.path.join(sdir, "ref.jsonl")), read_jsonl(os.path.join(odir, "hyp.jsonl"))
        r = score_sqa(ref, hyp)
        results[tname] = {"n": len(ref), "Final": r["Final"], "PCC": r["PCC"], "F1_macro": r["F1_macro"],
                          "IoU_macro": r["IoU_macro"], "utts": sorted(utts)}
    results["_seconds"] = round(time.time() - t0, 1)
    with open(res_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    os.replace(res_path + ".tmp", res_path)
    return results


def pcc(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def write_table(rows, a, argv, t0, done: int, total: int) -> None:
    """RESULTS.md of the experiments finished so far (rewritten after each one)."""
    md = ["| experiment | test recordings | n | Final | PCC | F1_macro | IoU_macro | DNSMOS OVRL PCC |",
          "|---|---|---|---|---|---|---|---|"]
    md += [f"| {n} | {t} | {k} | **{f:.4f}** | {c:.4f} | {f1:.4f} | {iou:.4f} | {d:.4f} |"
           for n, t, k, f, c, f1, iou, d in rows]
    text = (f"# SQA generalisation ({a.preset} corpus, {a.max_updates} updates per model; "
            f"{done}/{total} experiments)\n\n"
            f"Command: `python benchmarks/sqa_generalisation.py {' '.join(argv or sys.argv[1:])}`; "
            f"{(time.time() - t0) / 60:.1f} min (experiments already done are read back).\n\n"
            + "\n".join(md) + "\n")
    with open(os.path.join(a.out, "RESULTS.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--recipe-dir", default="egs/sqa")
    p.add_argument("--preset", default="default", help="whose corpus (corpus/sqa_mini4_<preset>) and config")
    p.add_argument("--sqa-tag", "--tag", dest="tag", default=None,
                   help="the recipe's --sqa_tag of the baselines (default: the preset)")
    p.add_argument("--config", default=None, help="training config (default: conf/train_sqa_<preset>.yaml)")
    p.add_argument("--families", default="babble,music,reverb,codec,stutter",
                   help="comma-separated families to leave out, one experiment each")
    p.add_argument("--heldout-voices", default="flite,en-029,en-gb-x-gbcwmd",
                   help="voice groups held out together in the voices experiment ('' = none)")
    p.add_argument("--max-updates", type=int, default=600, help="training updates of every experiment")
    p.add_argument("--no-in-distribution", action="store_true",
                   help="skip the in-distribution experiment (e.g. when --max-updates equals the recipe's "
                        "and its default run, same data and seed, is the in-distribution figure)")
    p.add_argument("--dump-dir", default="dump",
                   help="the recipe's dump dir to read (relative to --recipe-dir), e.g. one made with "
                        "other stage-2 options")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    recipe = a.recipe_dir
    corpus = os.path.join(recipe, "corpus", f"sqa_mini4_{a.preset}")
    tag = a.tag or a.preset
    # the resolved config (defaults and any `base:` chain), written whole per experiment
    base_cfg = load_config(a.config or os.path.join(recipe, "conf", f"train_sqa_{a.preset}.yaml"))
    os.makedirs(a.out, exist_ok=True)
    info, lines = load_pool(recipe, corpus, a.dump_dir)
    stats = os.path.join(recipe, a.dump_dir, "train", "feats_stats.npz")
    dumped = {ln.split(maxsplit=1)[0] for ln in lines["embed.scp"]}
    wavs = {u: w for ln in lines["wav.scp"] for u, w in [ln.split(maxsplit=1)]}
    wavs = {u: w.strip() for u, w in wavs.items()}
    families = [f for f in a.families.split(",") if f]
    groups = [g for g in a.heldout_voices.split(",") if g]
    try:
        todo = plan(info, families, groups, in_distribution=not a.no_in_distribution)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    rows, t0 = [], time.time()
    for name, train, dev, tests, exclude in todo:
        train = [u for u in train if u in dumped]
        dev = [u for u in dev if u in dumped]
        tests = {k: [u for u in v if u in dumped] for k, v in tests.items()}
        res = run_experiment(name, train, dev, tests, exclude, base_cfg, lines, stats, a.out, a.max_updates)
        for tname, r in res.items():
            if tname.startswith("_"):
                continue
            refs = {row["utt_id"]: row["score"] for row in lines["ref.jsonl"]}
            ov = dnsmos_ovrl(recipe, tag, r["utts"], wavs, os.path.join(a.out, "dnsmos_ovrl.json"))
            d_pcc = pcc([refs[u] for u in r["utts"]], [ov[u] for u in r["utts"]])
            rows.append((name, tname, r["n"], r["Final"], r["PCC"], r["F1_macro"], r["IoU_macro"], d_pcc))
            print(f"{name} / {tname}: n={r['n']} Final {r['Final']:.4f} PCC {r['PCC']:.4f} "
                  f"F1 {r['F1_macro']:.4f} IoU {r['IoU_macro']:.4f} | DNSMOS OVRL PCC {d_pcc:.4f}", flush=True)
        write_table(rows, a, argv, t0, done=len({r[0] for r in rows}), total=len(todo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
