"""A tiny NVV-tagged corpus for a language ``chorus-synth nvv`` does not offer (e.g. vi).

For proving a forked recipe end to end (``utils/fork_recipe.sh ... --lang vi`` then
``./run.sh --preset ci --mini_dir DIR``). It reuses the mini-corpus building blocks of
``pyutils.synth`` (sentence grammar, espeak-ng voices, synthetic NVV sounds) but keeps
the layout simple: each utterance is speech with 0-2 NVV events at word boundaries,
written ``word [tag] word`` (space-separated languages only).

    python -m pyutils.asr.tagged_corpus --lang vi --out DIR [--num-train 120 --num-dev 20 --num-test 20]

Writes DIR/wav/*.wav, DIR/data/{train,dev,test}/{wav.scp,text,utt2spk,spk2utt,utt2dur},
DIR/.done (the contract of ``chorus-synth nvv``, without events/ and ref/).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import soundfile as sf

from pyutils.synth.nvv_sounds import synthesize
from pyutils.synth.sentences import split_pool
from pyutils.synth.speech import speak, voices
from pyutils.tags import challenge_tags

SR = 16000


def build(lang: str, out: str, sizes: dict, n_voices: int = 4, seed: int = 0) -> None:
    pools = split_pool(lang, sizes, seed)
    vs = voices(lang, n_voices)
    tags = challenge_tags()
    rng = np.random.default_rng(seed)
    os.makedirs(f"{out}/wav", exist_ok=True)
    for split, n in sizes.items():
        rows = []
        for i in range(n):
            words = pools[split][i % len(pools[split])].split()
            v = vs[i % len(vs)]
            n_ev = int(rng.choice(3, p=(0.2, 0.5, 0.3)))
            pos = sorted(int(rng.integers(0, len(words) + 1)) for _ in range(n_ev))
            evs = [(p, tags[int(rng.integers(len(tags)))]) for p in pos]
            # speech chunks between event positions
            audio, text, start = [np.zeros(int(0.15 * SR), np.float32)], [], 0
            for p, tag in evs + [(len(words), None)]:
                chunk = words[start:p]
                if chunk:
                    x = np.asarray(speak(" ".join(chunk), lang, v, seed=seed * 100000 + i), np.float32)
                    audio += [x / max(1e-6, float(np.abs(x).max())) * 0.6, np.zeros(int(0.08 * SR), np.float32)]
                    text += chunk
                if tag is not None:
                    y = np.asarray(synthesize(tag, rng, SR), np.float32)
                    audio += [y, np.zeros(int(0.08 * SR), np.float32)]
                    text.append(f"[{tag}]")
                start = p
            y = np.concatenate(audio + [np.zeros(int(0.15 * SR), np.float32)])
            utt = f"{v['id']}-{split}-{i:05d}"
            wav = os.path.abspath(f"{out}/wav/{utt}.wav")
            sf.write(wav, np.clip(y, -0.99, 0.99), SR, subtype="PCM_16")
            rows.append((utt, wav, " ".join(text), v["id"], len(y) / SR))
        rows.sort()
        d = f"{out}/data/{split}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/wav.scp", "w", encoding="utf-8") as f:
            f.writelines(f"{u} {w}\n" for u, w, *_ in rows)
        with open(f"{d}/text", "w", encoding="utf-8") as f:
            f.writelines(f"{u} {t}\n" for u, _, t, *_ in rows)
        with open(f"{d}/utt2spk", "w", encoding="utf-8") as f:
            f.writelines(f"{u} {s}\n" for u, _, _, s, _ in rows)
        with open(f"{d}/utt2dur", "w", encoding="utf-8") as f:
            f.writelines(f"{u} {dur:.3f}\n" for u, *_, dur in rows)
        spk = {}
        for u, _, _, s, _ in rows:
            spk.setdefault(s, []).append(u)
        with open(f"{d}/spk2utt", "w", encoding="utf-8") as f:
            f.writelines(f"{s} {' '.join(us)}\n" for s, us in sorted(spk.items()))
        print(f"tagged_corpus: {d}: {len(rows)} utterances", file=sys.stderr)
    open(f"{out}/.done", "w").close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lang", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--num-train", type=int, default=120)
    p.add_argument("--num-dev", type=int, default=20)
    p.add_argument("--num-test", type=int, default=20)
    p.add_argument("--num-voices", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if os.path.exists(f"{a.out}/.done"):
        print(f"tagged_corpus: {a.out}/.done exists, nothing to do", file=sys.stderr)
        return 0
    build(a.lang, a.out, {"train": a.num_train, "dev": a.num_dev, "test": a.num_test}, a.num_voices, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
