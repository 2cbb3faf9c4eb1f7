"""A tiny corpus in chorus-synth nvv's layout (data/{train,dev,test}, events/<split>.jsonl with exact
event times, .done): what the cascade recipe tests give as --mini_dir."""

import json
from pathlib import Path

import numpy as np
import soundfile as sf


def noise(sec, seed, sr=16000):
    return (np.random.default_rng(seed).normal(size=int(sec * sr)) * 0.05).astype(np.float32)


def tiny_mini_corpus(d: Path):
    """Three utterances per split, spk1, a noise burst (the 'laugh') at 1.0-1.5 s in each."""
    for s in ("train", "dev", "test"):
        dd = d / "data" / s
        dd.mkdir(parents=True)
        ids = [f"spk1-{s}{i}" for i in range(3)]
        rows = []
        for i, u in enumerate(ids):
            x = noise(2.0, i) * 0.02
            x[16000:24000] += noise(0.5, 10 + i) * 10          # the event, 1.0-1.5 s
            sf.write(d / f"{u}.wav", x, 16000, subtype="PCM_16")
            rows.append({"utt_id": u, "events": [{"tag": "laugh", "start": 1.0, "end": 1.5}]})
        (dd / "wav.scp").write_text("".join(f"{u} {d / (u + '.wav')}\n" for u in ids))
        (dd / "text").write_text("".join(f"{u} hello [laugh] there\n" for u in ids))
        (dd / "utt2spk").write_text("".join(f"{u} spk1\n" for u in ids))
        (dd / "spk2utt").write_text("spk1 " + " ".join(ids) + "\n")
        (dd / "utt2dur").write_text("".join(f"{u} 2.0\n" for u in ids))
        (d / "events").mkdir(exist_ok=True)
        (d / "events" / f"{s}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / ".done").write_text("")
