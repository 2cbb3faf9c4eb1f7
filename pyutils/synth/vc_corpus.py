"""The ``vc`` mini corpus: multi-speaker Vietnamese speech split like VLSP 2025 VC.

Voices are espeak-ng ``vi`` with its variants, pitches, rates and
formant/pitch warps (:func:`pyutils.synth.speech.voices`).  A seeded
permutation holds some voices out as *target* speakers: they appear only in
``test_ref``.  The other (training) voices read training sentences, split per
utterance into ``train_text`` (with transcripts) and ``train_audio`` (audio
only), plus a few held-out sentences that form ``test_src``.
``pairs/test.tsv`` pairs every source with a reference recording of an unseen
target voice.  ``text`` holds NFC, lower-case transcripts with tone marks and
without punctuation.
"""

from __future__ import annotations

import os
import unicodedata
from typing import Dict, List

import numpy as np

from pyutils.synth import SAMPLE_RATE
from pyutils.synth.audio import db_to_amp, silence, write_wav
from pyutils.synth.sentences import split_pool
from pyutils.synth.speech import speak, voices

PRESETS = {
    "ci": {"voices": 8, "target_voices": 2, "utts_per_voice": 15, "pairs": 10, "src_per_voice": 3},
    "default": {"voices": 24, "target_voices": 6, "utts_per_voice": 60, "pairs": 40,
                "src_per_voice": 4},
    "large": {"voices": 48, "target_voices": 10, "utts_per_voice": 150, "pairs": 200,
              "src_per_voice": 8},
}
KIND_ID = 33
TEXT_FRACTION = 0.6           # share of each training voice's utterances with transcripts


def normalize_text(s: str) -> str:
    """NFC, lower-case, punctuation removed, whitespace collapsed (tone marks kept)."""
    s = unicodedata.normalize("NFC", s).lower()
    s = "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in s)
    return unicodedata.normalize("NFC", " ".join(s.split()))


def plan(cfg: Dict[str, int], seed: int) -> List[dict]:
    nv, nt, upv, nsrc = cfg["voices"], cfg["target_voices"], cfg["utts_per_voice"], cfg["src_per_voice"]
    if not 0 < nt < nv:
        raise ValueError(f"need 0 < target voices ({nt}) < voices ({nv})")
    vs = voices("vi", nv)
    rng = np.random.default_rng([seed, KIND_ID, 0])
    perm = rng.permutation(nv)
    targets = sorted(int(i) for i in perm[:nt])
    n_train_utts = (nv - nt) * (upv - nsrc)
    n_held = (nv - nt) * nsrc + nt * upv
    pools = split_pool("vi", {"train": max(1, n_train_utts // 2), "held": n_held}, seed + 31)
    items, gidx, hk = [], 0, 0
    for vi, v in enumerate(vs):
        if vi in targets:
            for i in range(upv):
                items.append(_item(v, "test_ref", f"{v['id']}-ref-{i:04d}", pools["held"][hk],
                                   seed, gidx))
                hk += 1
                gidx += 1
            continue
        n_text = int(round(TEXT_FRACTION * (upv - nsrc)))
        for i in range(upv - nsrc):
            sent = pools["train"][int(rng.integers(len(pools["train"])))]
            split = "train_text" if i < n_text else "train_audio"
            items.append(_item(v, split, f"{v['id']}-{split.split('_')[1]}-{i:04d}", sent, seed, gidx))
            gidx += 1
        for i in range(nsrc):
            items.append(_item(v, "test_src", f"{v['id']}-src-{i:04d}", pools["held"][hk], seed, gidx))
            hk += 1
            gidx += 1
    return items


def _item(v, split, utt_id, sentence, seed, gidx):
    return {"kind": "vc", "utt_id": utt_id, "split": split, "spk": v["id"], "voice": v,
            "sentence": sentence, "seed": [seed, KIND_ID, 1, gidx]}


def render(item: dict, out_dir: str) -> dict:
    sr = SAMPLE_RATE
    rng = np.random.default_rng(item["seed"])
    x = speak(item["sentence"], "vi", item["voice"], seed=int(item["seed"][-1]))
    x = x * (db_to_amp(-3 + rng.uniform(-2, 2)) / (np.abs(x).max() + 1e-9))
    y = np.concatenate([silence(rng.uniform(0.1, 0.25)), x, silence(rng.uniform(0.1, 0.25))])
    y = (y + db_to_amp(-72) * rng.standard_normal(len(y))).astype(np.float32)
    wav = os.path.abspath(f"{out_dir}/wav/{item['utt_id']}.wav")
    write_wav(wav, y, sr)
    return {"utt_id": item["utt_id"], "split": item["split"], "spk": item["spk"],
            "dur": round(len(y) / sr, 4), "wav": wav,
            "raw_text": item["sentence"], "text": normalize_text(item["sentence"])}


def config_from_args(args) -> Dict[str, int]:
    cfg = dict(PRESETS[args.preset])
    for key, attr in (("voices", "num_voices"), ("target_voices", "num_target_voices"),
                      ("utts_per_voice", "utts_per_voice"), ("pairs", "num_pairs")):
        v = getattr(args, attr, None)
        if v is not None:
            cfg[key] = v
    cfg["src_per_voice"] = min(cfg["src_per_voice"], max(1, cfg["utts_per_voice"] - 2))
    return cfg


def plan_from_args(args) -> List[dict]:
    return plan(config_from_args(args), args.seed)


SPLITS = ("train_text", "train_audio", "test_src", "test_ref")


def finalize(out_dir: str, metas: List[dict], args) -> Dict[str, int]:
    """Data dirs, ``pairs/test.tsv`` and ``spk_info.tsv`` (voice id -> engine settings, role)."""
    from pyutils.synth.io import write_datadir, write_text

    cfg = config_from_args(args)
    by_split = {s: sorted((m for m in metas if m["split"] == s), key=lambda m: m["utt_id"])
                for s in SPLITS}
    for s, rows in by_split.items():
        write_datadir(f"{out_dir}/data/{s}", rows, text=s in ("train_text", "test_src"))
    rng = np.random.default_rng([args.seed, KIND_ID, 2])
    srcs, refs = by_split["test_src"], by_split["test_ref"]
    ref_spks = sorted({m["spk"] for m in refs})
    pairs = []
    for k in range(cfg["pairs"]):
        src = srcs[k % len(srcs)]
        spk = ref_spks[k % len(ref_spks)]
        cands = [m for m in refs if m["spk"] == spk]
        tgt = cands[int(rng.integers(len(cands)))]
        pairs.append(f"{src['wav']}\t{tgt['wav']}\t{src['utt_id']}-to-{spk}-{k:04d}.wav")
    write_text(f"{out_dir}/pairs/test.tsv", pairs)
    roles = {m["spk"]: ("target" if m["split"] == "test_ref" else "train") for m in metas}
    vmeta = {}
    for it in plan_from_args(args):
        vmeta.setdefault(it["spk"], it["voice"])
    write_text(f"{out_dir}/spk_info.tsv",
               [f"{s}\t{roles[s]}\t{vmeta[s]['name']}\tpitch={vmeta[s]['pitch']}\t"
                f"speed={vmeta[s]['speed']}\twarp={vmeta[s]['warp']}" for s in sorted(roles)])
    out = {s: len(r) for s, r in by_split.items()}
    out["pairs"] = len(pairs)
    return out
