"""The ``sqa`` mini corpus: clean speech + faults with exact intervals and scores.

Each recording is one or two sentences of English (3-6 s) from one voice, then
:func:`pyutils.synth.faults.apply_random_faults` adds 0-3 faults.

Voices (:func:`sqa_voices`, English): the flite voices, then espeak-ng's
English accents (8) crossed with its natural-sounding voice variants (~60),
each with its own pitch, rate and vocal-tract warp -- about 500 voices, in a
fixed order (first the flite ones, then a fixed shuffle), of which a preset
uses the first ``voices``.  Other languages use :func:`pyutils.synth.speech.voices`.
With ``--voices bank`` (the default) every ``NEURAL_EVERY``-th voice of that order (from the
second on) is a neural voice of the voice bank instead (:mod:`pyutils.synth.voice_bank`):
two piper joe settings, then one Kokoro style or mix, repeating (default preset: 11 of 64
voices, 3 of them Kokoro; Kokoro renders ~9x slower than piper, so it stays a small share),
so the espeak-ng diversity the held-out-voice generalisation rests on stays 5/6 of the voices.

Split ``test_real`` (English only, evaluation only, never trained on): the
real human recordings of Debian's ``pocketsphinx-testdata`` (LibriVox read
speech and spoken card names, :mod:`pyutils.corpora.pocketsphinx_testdata`),
each used ``real_copies`` times with different random faults (pause points
from :func:`pyutils.synth.faults.pause_points`).  Absent package = no split.  Pauses go
only at word boundaries we know exactly: the sentences are synthesised in
chunks of 3-5 words, joined by short natural gaps (40-120 ms), and the chunk
joins are the pause candidates.  Real speech in ``train`` only: chunks of the
recordings that PyPI sdists ship (:mod:`pyutils.corpora.packaged_speech`,
``real_train_copies`` copies each), all with their own random faults.  Babble noise is made from two other
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
    "ci": {"train": 150, "dev": 30, "test": 30, "voices": 16, "real_copies": 2, "real_train_copies": 1},
    "default": {"train": 1200, "dev": 150, "test": 150, "voices": 64, "real_copies": 8,
                "real_train_copies": 10},
    "large": {"train": 8000, "dev": 500, "test": 500, "voices": 400, "real_copies": 20,
              "real_train_copies": 40},
}
SPLITS = ("train", "dev", "test")
REAL_SPLIT = "test_real"
KIND_ID = 22
REAL_CHUNK_S = (2.5, 7.0)   # training chunks of the packaged real recordings (seconds)

FLITE_VOICES = ("slt", "rms", "awb", "kal16", "kal")
ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
                  "en-gb-x-gbcwmd", "en-029", "en-us-nyc")
# espeak-ng variants that sound like a person (robots, whisper, "demonic" left out);
# names as in espeak-ng-data/voices/!v (case matters)
ESPEAK_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f4", "f5",
                   "Alex", "Alicia", "Andrea", "Andy", "Annie", "Denis", "Diogo", "Gene", "Henrique",
                   "Hugo", "Jacky", "Lee", "Marco", "Mario", "Michael", "Mike", "Storm", "Tweaky",
                   "adam", "anika", "antonio", "aunty", "belinda", "benjamin", "boris", "caleb",
                   "croak", "david", "ed", "edward", "gustave", "iven", "iven2", "john", "klatt",
                   "klatt2", "klatt3", "linda", "marcelo", "max", "michel", "miguel", "norbert",
                   "pablo", "paul", "pedro", "quincy", "rob", "robert", "sandro", "shelby", "steph",
                   "travis", "victor")


#: with --voices bank, voices 1, 1+k, 1+2k, ... of the inventory are neural (k = NEURAL_EVERY)
NEURAL_EVERY = 6


def _neural_sequence(count: int) -> List[dict]:
    """``count`` bank voices in the order piper, piper, Kokoro, piper, piper, Kokoro, ..."""
    from pyutils.synth.voice_bank import bank_voices

    inv = bank_voices("en")
    piper = [v for v in inv if v["engine"] == "piper"]
    kokoro = [v for v in inv if v["engine"] == "kokoro"]
    out, ip, ik = [], 0, 0
    for i in range(count):
        if i % 3 == 2:
            out.append(kokoro[ik % len(kokoro)])
            ik += 1
        else:
            out.append(piper[ip % len(piper)])
            ip += 1
    return [dict(v, group=v["engine"]) for v in out]


def sqa_voices(lang: str, n: int, source: str = "bank") -> List[dict]:
    """The first ``n`` voices of the SQA inventory of ``lang`` (see the module docstring);
    ``source`` "bank" puts a neural voice at every ``NEURAL_EVERY``-th place, "espeak" keeps
    the flite/espeak-ng inventory."""
    if source not in ("bank", "espeak"):
        raise ValueError(f"unknown voice source {source!r} (bank or espeak)")
    if lang != "en":
        return voices(lang, n)
    import shutil

    out = []
    if shutil.which("flite"):
        out += [{"id": "", "engine": "flite", "name": v, "speed": 160, "pitch": 50, "warp": 1.0,
                 "group": "flite"} for v in FLITE_VOICES]
    combos = [(a, v) for a in ESPEAK_ACCENTS for v in ESPEAK_VARIANTS]
    rng = np.random.default_rng(20251)          # fixed: the inventory never depends on --seed
    for k in rng.permutation(len(combos)):
        accent, var = combos[int(k)]
        out.append({"id": "", "engine": "espeak", "name": f"{accent}+{var}",
                    "speed": int(rng.integers(140, 176)), "pitch": int(rng.integers(30, 71)),
                    "warp": round(float(rng.uniform(0.9, 1.12)), 3), "group": accent})
    if n > len(out):
        raise ValueError(f"{lang}: asked for {n} SQA voices, only {len(out)} defined")
    out = out[:n]
    if source == "bank":
        slots = list(range(1, n, NEURAL_EVERY))
        for i, v in zip(slots, _neural_sequence(len(slots))):
            out[i] = v
    for i, v in enumerate(out):
        v["id"] = f"sqa_v{i:03d}"
    return out


def plan(lang: str, sizes: Dict[str, int], n_voices: int, seed: int, voice_source: str = "bank") -> List[dict]:
    total = sum(sizes[s] for s in SPLITS)
    pool = sentence_pool(lang, 2 * total + 64, seed + 7919)
    vs = sqa_voices(lang, n_voices, voice_source)
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
    items += _plan_real(lang, int(sizes.get("real_copies", 0)), vs, pool, seed)
    items += _plan_real_train(lang, int(sizes.get("real_train_copies", 0)), vs, pool, seed)
    return items


def cut_at_quiet(x: np.ndarray, sr: int, min_s: float = REAL_CHUNK_S[0],
                 max_s: float = REAL_CHUNK_S[1]) -> List[tuple]:
    """``[(start_s, end_s), ...]``: ``x`` cut into chunks of ``min_s``..``max_s`` seconds, each cut
    where the 200 ms moving energy is lowest in that window (a pause, where there is one).
    A last piece shorter than ``min_s`` joins the chunk before it when that stays under
    ``max_s + min_s``, else it is dropped.  A recording of at most ``max_s`` is one chunk, whole."""
    if len(x) / sr <= max_s:
        return [(0.0, len(x) / sr)]
    n = int(0.02 * sr)
    m = len(x) // n
    e = np.mean(np.square(x[: m * n].reshape(m, n), dtype=np.float64), axis=1)
    e = np.convolve(e, np.ones(10) / 10, mode="same")
    lo, hi = int(round(min_s / 0.02)), int(round(max_s / 0.02))
    cuts, start = [], 0
    while m - start > hi:
        k = start + lo + int(np.argmin(e[start + lo:start + hi + 1]))
        cuts.append((start, k))
        start = k
    if m - start >= lo:
        cuts.append((start, m))
    elif cuts and m - cuts[-1][0] <= hi + lo:
        cuts[-1] = (cuts[-1][0], m)
    return [(a * 0.02, b * 0.02) for a, b in cuts]


def real_train_chunks() -> List[tuple]:
    """``[(chunk_id, wav, start_s, end_s, speaker), ...]``: the real recordings that PyPI sdists
    ship (:mod:`pyutils.corpora.packaged_speech`; empty if not fetched) cut by :func:`cut_at_quiet`."""
    from pyutils.corpora.packaged_speech import available
    from pyutils.synth.audio import read_wav

    out = []
    for name, wav, spk in available():
        x, sr = read_wav(wav)
        spans = cut_at_quiet(np.asarray(x, dtype=np.float64), sr)
        out += [(f"{name}_{k:02d}", wav, a, b, spk) for k, (a, b) in enumerate(spans)]
    return out


def _plan_real_train(lang: str, copies: int, vs: List[dict], pool: List[str], seed: int) -> List[dict]:
    """Training recordings from real speech: each chunk ``copies`` times with its own faults."""
    if lang != "en" or copies <= 0:
        return []
    chunks = real_train_chunks()
    if not chunks:
        print("sqa: no packaged real speech (make -C tools real_speech): training on synthetic voices only",
              flush=True)
        return []

    def item(c, ci, chunk, babble):
        cid, wav, a, b, spk = chunk
        return {"kind": "sqa", "utt_id": f"real_{spk}-train-r{c:02d}{ci:02d}", "split": "train",
                "lang": lang, "spk": f"real_{spk}", "real_wav": wav, "real_span": [a, b],
                "sentences": [cid], "babble": babble, "seed": [seed, KIND_ID, 5, c * 1000 + ci]}

    return _copies(chunks, copies, np.random.default_rng([seed, KIND_ID, 4]), vs, pool, item)


def _copies(sources: list, copies: int, rng: np.random.Generator, vs: List[dict], pool: List[str],
            make_item) -> List[dict]:
    """``make_item(copy, index, source, babble)`` for every copy of every real source; the
    babble of each item is two sentences of two other voices, drawn from ``rng`` in that order."""
    items = []
    for c in range(copies):
        for ci, src in enumerate(sources):
            others = [vs[int(j)] for j in rng.choice(len(vs), size=2, replace=False)]
            babble = [pool[int(k)] for k in rng.choice(len(pool), size=2, replace=False)]
            items.append(make_item(c, ci, src, [[o, s] for o, s in zip(others, babble)]))
    return items


def real_clips() -> List[tuple]:
    """``[(clip_id, wav_path, transcript), ...]`` of pocketsphinx-testdata (empty if not installed)."""
    from pyutils.corpora.pocketsphinx_testdata import ROOT, SUBSETS, read_subset

    if not (ROOT / "librivox" / SUBSETS["librivox"]).is_file():
        return []
    clips = []
    for subset in SUBSETS:
        clips += [(u, str(w), t) for u, (w, t) in sorted(read_subset(ROOT, subset).items())]
    return clips


def _plan_real(lang: str, copies: int, vs: List[dict], pool: List[str], seed: int) -> List[dict]:
    if lang != "en" or copies <= 0:
        return []
    clips = real_clips()
    if not clips:
        print("sqa: pocketsphinx-testdata not installed: no test_real split", flush=True)
        return []

    def item(c, ci, clip, babble):
        cid, wav, text = clip
        spk = "real_" + cid.split("_")[0]
        return {"kind": "sqa", "utt_id": f"{spk}-{REAL_SPLIT}-{c:02d}{ci:02d}", "split": REAL_SPLIT,
                "lang": lang, "spk": spk, "real_wav": wav, "sentences": [text], "babble": babble,
                "seed": [seed, KIND_ID, 3, c * 1000 + ci]}

    return _copies(clips, copies, np.random.default_rng([seed, KIND_ID, 2]), vs, pool, item)


def _real(item: dict, rng: np.random.Generator):
    """A real recording at 16 kHz, peak-normalised like the synthetic ones; pause points by energy."""
    from pyutils.audio import resample
    from pyutils.synth.audio import read_wav
    from pyutils.synth.faults import pause_points

    x, sr = read_wav(item["real_wav"])
    if item.get("real_span"):
        a, b = item["real_span"]
        x = x[int(round(a * sr)):int(round(b * sr))]
    x = resample(x.astype(np.float64), sr, SAMPLE_RATE).astype(np.float32).astype(np.float64)
    x = x - np.mean(x)
    x = x * (db_to_amp(-3 + rng.uniform(-2, 2)) / (np.abs(x).max() + 1e-9))
    return x.astype(np.float32), pause_points(x.astype(np.float32), SAMPLE_RATE)


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
    x, joins = _real(item, rng) if item.get("real_wav") else _clean(item, rng)

    def babble():
        return [speak(s, item["lang"], v, seed=int(item["seed"][-1])) for v, s in item["babble"]]

    y, intervals, details = apply_random_faults(x, rng, sr, pause_at=joins, babble_sources=babble)
    dur = len(y) / sr
    score = round(quality_score(details, dur, rng), 3)
    wav = os.path.abspath(f"{out_dir}/wav/{item['utt_id']}.wav")
    write_wav(wav, y, sr)
    return {"utt_id": item["utt_id"], "split": item["split"], "spk": item["spk"],
            "dur": round(dur, 4), "wav": wav, "score": score, "faults": intervals,
            "details": details, "text": " ".join(item["sentences"]),
            "voice_group": "real" if item.get("real_wav") else item["voice"].get("group", "")}


def plan_from_args(args) -> List[dict]:
    p = preset_sizes(PRESETS, SPLITS, args)
    if p["voices"] < 2:
        from pyutils.synth.io import SynthArgError
        raise SynthArgError(f"--num-voices {p['voices']}: the sqa corpus needs at least 2 voices "
                            "(babble noise mixes two of them)")
    items = plan(args.lang, p, p["voices"], args.seed, getattr(args, "voices", "bank"))
    from pyutils.synth.speech import check_engines

    used = [it["voice"] for it in items if "voice" in it] + [v for it in items for v, _ in it["babble"]]
    check_engines(used)                       # a missing voice package: one message, before any work
    return items


def finalize(out_dir: str, metas: List[dict], args) -> Dict[str, int]:
    """Kaldi data dirs (with the clean ``text``), ``ref/{split}.jsonl``, ``faults/{split}.jsonl``."""
    from pyutils.io import write_jsonl
    from pyutils.synth.io import write_datadir

    splits = SPLITS + ((REAL_SPLIT,) if any(m["split"] == REAL_SPLIT for m in metas) else ())
    for split in splits:
        rows = sorted((m for m in metas if m["split"] == split), key=lambda m: m["utt_id"])
        write_datadir(f"{out_dir}/data/{split}", rows, text=True)
        write_jsonl(f"{out_dir}/ref/{split}.jsonl",
                    [{"utt_id": m["utt_id"], "score": m["score"], "faults": m["faults"]}
                     for m in rows])
        write_jsonl(f"{out_dir}/faults/{split}.jsonl",
                    [{"utt_id": m["utt_id"], "duration": m["dur"], "details": m["details"],
                      "voice_group": m.get("voice_group", "")}
                     for m in rows])
    return {s: sum(m["split"] == s for m in metas) for s in splits}
