"""The ``sqa`` mini corpus: clean speech + faults with exact intervals and scores.

Each recording is one or two sentences of English (3-6 s) from one voice, then
:func:`pyutils.synth.faults.apply_random_faults` adds 0-3 faults.  Pauses go
only at word boundaries we know exactly: the sentences are synthesised in
chunks of 3-5 words, joined by short natural gaps (40-120 ms), and the chunk
joins are the pause candidates.  Babble noise is made from two other
utterances of other voices.  The reference score is
:func:`pyutils.synth.faults.quality_score`.
"""

from __future__ import annotations

import os
from typing import Dict, List

import numpy as np

from pyutils.synth import SAMPLE_RATE, preset_sizes
from pyutils.synth.audio import db_to_amp, silence, write_wav
from pyutils.synth.faults import apply_random_faults, quality_score
from pyutils.synth.sentences import sentence_pool
from pyutils.synth.speech import speak, speak_chunks, voices

PRESETS = {
    "ci": {"train": 150, "dev": 30, "test": 30, "voices": 8},
    "default": {"train": 1200, "dev": 150, "test": 150, "voices": 16},
    "large": {"train": 8000, "dev": 500, "test": 500, "voices": 24},
}
SPLITS = ("train", "dev", "test")
KIND_ID = 22


def plan(lang: str, sizes: Dict[str, int], n_voices: int, seed: int) -> List[dict]:
    total = sum(sizes[s] for s in SPLITS)
    pool = sentence_pool(lang, 2 * total + 64, seed + 7919)
    vs = voices(lang, n_voices)
    rng = np.random.default_rng([seed, KIND_ID, 0])
    items, gidx = [], 0
    for split in SPLITS:
        for i in range(sizes[split]):
            v = vs[int(rng.integers(len(vs)))]
            others = [vs[int(j)] for j in rng.choice(len(vs), size=2, replace=False)]
            babble = [pool[int(k)] for k in rng.choice(len(pool), size=2, replace=False)]
            items.append({"kind": "sqa", "utt_id": f"{v['id']}-{split}-{i:05d}", "split": split,
                          "lang": lang, "spk": v["id"], "voice": v,
                          "sentences": (pool[2 * gidx:2 * gidx + 2]
                                        if len(pool[2 * gidx].split()) < 7 else [pool[2 * gidx]]),
                          "babble": [[o, s] for o, s in zip(others, babble)],
                          "seed": [seed, KIND_ID, 1, gidx]})
            gidx += 1
    return items


def _clean(item: dict, rng: np.random.Generator):
    """Chunked clean speech and its chunk-join sample positions."""
    sr = SAMPLE_RATE
    uttseed = int(item["seed"][-1]) * 1000 + int(item["seed"][0])
    texts, firsts = [], []
    for si, sent in enumerate(item["sentences"]):
        ws = sent.split()
        i = 0
        while i < len(ws):
            k = int(rng.integers(3, 6))
            texts.append(" ".join(ws[i:i + k]))
            firsts.append(i == 0 and si > 0)
            i += k
    audio = speak_chunks(texts, item["lang"], item["voice"], seed=uttseed)
    parts, joins = [silence(rng.uniform(0.15, 0.3))], []
    pos = len(parts[0])
    for ci, x in enumerate(audio):
        if ci:
            g = silence(rng.uniform(0.25, 0.35) if firsts[ci] else rng.uniform(0.04, 0.12))
            joins.append(pos + len(g) // 2)
            parts.append(g)
            pos += len(g)
        parts.append(x)
        pos += len(x)
    parts.append(silence(rng.uniform(0.15, 0.3)))
    y = np.concatenate(parts)
    y = y * (db_to_amp(-3 + rng.uniform(-2, 2)) / (np.abs(y).max() + 1e-9))
    y = y + db_to_amp(-72) * rng.standard_normal(len(y))
    return y.astype(np.float32), joins


def render(item: dict, out_dir: str) -> dict:
    sr = SAMPLE_RATE
    rng = np.random.default_rng(item["seed"])
    x, joins = _clean(item, rng)

    def babble():
        return [speak(s, item["lang"], v, seed=int(item["seed"][-1])) for v, s in item["babble"]]

    y, intervals, details = apply_random_faults(x, rng, sr, pause_at=joins, babble_sources=babble)
    dur = len(y) / sr
    score = round(quality_score(details, dur, rng), 3)
    wav = os.path.abspath(f"{out_dir}/wav/{item['utt_id']}.wav")
    write_wav(wav, y, sr)
    return {"utt_id": item["utt_id"], "split": item["split"], "spk": item["spk"],
            "dur": round(dur, 4), "wav": wav, "score": score, "faults": intervals,
            "details": details, "text": " ".join(item["sentences"])}


def plan_from_args(args) -> List[dict]:
    p = preset_sizes(PRESETS, SPLITS, args)
    if p["voices"] < 2:
        from pyutils.synth.io import SynthArgError
        raise SynthArgError(f"--num-voices {p['voices']}: the sqa corpus needs at least 2 voices "
                            "(babble noise mixes two of them)")
    return plan(args.lang, p, p["voices"], args.seed)


def finalize(out_dir: str, metas: List[dict], args) -> Dict[str, int]:
    """Kaldi data dirs (with the clean ``text``), ``ref/{split}.jsonl``, ``faults/{split}.jsonl``."""
    from pyutils.synth.io import write_datadir, write_jsonl

    for split in SPLITS:
        rows = sorted((m for m in metas if m["split"] == split), key=lambda m: m["utt_id"])
        write_datadir(f"{out_dir}/data/{split}", rows, text=True)
        write_jsonl(f"{out_dir}/ref/{split}.jsonl",
                    [{"utt_id": m["utt_id"], "score": m["score"], "faults": m["faults"]}
                     for m in rows])
        write_jsonl(f"{out_dir}/faults/{split}.jsonl",
                    [{"utt_id": m["utt_id"], "duration": m["dur"], "details": m["details"]}
                     for m in rows])
    return {s: sum(m["split"] == s for m in metas) for s in SPLITS}
