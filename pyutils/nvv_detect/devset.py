"""Real-NVV dev and test sets: real speech with real NVV recordings spliced in at word boundaries.

    python -m pyutils.nvv_detect.devset --split dev --out data/nvv_real_dev
    python -m pyutils.nvv_detect.devset --split test --out data/nvv_real_test
    python -m pyutils.nvv_detect.devset --check     # exit 0 when its material is installed, else 3 and why

Speech: the real talkers of ``tools/models/real_speech`` (``make -C tools real_speech``),
cut into segments in pauses between words; ``conf/nvv_detect_speech.json`` gives each
segment's split (train / dev / test never share a stretch of speech) and the words with
their times. The clips ship without transcripts: the reference words are frozen Whisper
base's transcript (faster-whisper int8, greedy, word timestamps), stored in that file.

NVVs: the recorded clips of ``tools/models/nvv_bank`` of the same split (``dev`` or
``test``; talker groups disjoint from ``train``, see :mod:`pyutils.synth.nvv_bank`), i.e.
laugh, cough, moan, hum and gasp. No other tag has a recording, so no other tag is in
these sets. The ``train`` split (detector training only, :mod:`pyutils.nvv_detect.frame_heads`)
cycles through all 16 tags with :func:`pyutils.synth.nvv_bank_index.event_sound`: a bank train
clip (speed-perturbed) where the bank has the tag, the generated sound otherwise.

Construction (deterministic: ``numpy.random.default_rng(SEEDS[split])``): each segment
gives ``--variants`` utterances; variant 0 has no event (ordinary speech, for false
alarms), the others 1 or 2 events; every utterance also gets pauses alone (2 in variant 0,
1 in the others: 0.3-0.8 s at the noise floor, no event), so that a pause is never a cue.
An event goes to a word boundary ``k`` (0..N, the number of words before it): the audio is cut at the middle of the pause between word
``k-1`` and word ``k`` and ``pause + clip + pause`` is inserted (pauses 0.10-0.25 s of
the segment's own quietest 10 ms frames' level, as white noise). The clip is scaled to
``peak_clip = peak_speech * 10^(g/20)``, ``g ~ U(-6, 0)`` dB. Event times are exact
(sample positions of the inserted clip); the reference text has ``[tag]`` after the
``k``-th word.

Output (a Kaldi data dir): ``wav/<utt>.wav`` (16 kHz PCM16), ``wav.scp``, ``text``
(tagged reference), ``utt2spk``, ``spk2utt``, ``ref.jsonl`` (Track 1 reference rows
``{"utt_id", "language": "en", "text_with_nvvs"}``, scored by ``chorus-score track1``),
``events.jsonl`` (ground truth in the detector's form ``{"utt_id", "tag", "start", "end",
"clip"}``). All files are written to a temporary dir, then renamed into place.

``--clips-from PREP`` (a user's corpus, e.g. ``chorus-prep deeply_nvv``; ``db.sh``
``DEEPLY_NVV``): the NVVs are that corpus's clips of the same split (its speakers), cut
to their event spans, spliced in the same way (:func:`build_with_clips`), for train too:

    python -m pyutils.nvv_detect.devset --split train --clips-from data/deeply_nvv --out data/deeply_real_train
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from pyutils.io import atomic_dir

REPO = Path(__file__).resolve().parents[2]
SPEECH_CONF = REPO / "conf" / "nvv_detect_speech.json"
SR = 16000
SEEDS = {"train": 11, "dev": 23, "test": 37}
SPLITS = tuple(SEEDS)


class DevsetError(RuntimeError):
    """Missing or damaged inputs; the message names the file."""


def speech_dir() -> Path:
    from pyutils.corpora.packaged_speech import DEFAULT_DIR

    return Path(os.environ.get("CHORUS_REAL_SPEECH_DIR", DEFAULT_DIR))


def load_speech_conf(path: Path = SPEECH_CONF) -> dict:
    try:
        conf = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DevsetError(f"{path}: cannot read the speech segments: {e}") from e
    for split, segs in conf.get("segments", {}).items():
        for i, seg in enumerate(segs):
            if len(seg) != 3 or seg[0] not in conf.get("clips", {}) or not seg[1] < seg[2]:
                raise DevsetError(f"{path}: segments.{split}[{i}] = {seg!r} is not [clip, t0 < t1]")
    return conf


def _read_clip(name: str, conf: dict) -> np.ndarray:
    import soundfile as sf

    path = speech_dir() / f"{name}.wav"
    if not path.is_file():
        raise DevsetError(f"{path} is missing; run `make -C tools real_speech`")
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != conf["clips"][name]["sha256"]:
        raise DevsetError(f"{path}: SHA-256 {got} is not the one the word times were made for")
    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    if sr != SR:
        raise DevsetError(f"{path}: sample rate {sr}, expected {SR}")
    return x.mean(axis=1)


def segments(split: str, conf: dict | None = None) -> List[Tuple[str, np.ndarray, List[list]]]:
    """``[(segment_id, audio, [[word, start, end], ...])]`` of a split; times relative to the cut."""
    conf = conf or load_speech_conf()
    out = []
    for name, t0, t1 in conf["segments"][split]:
        x = _read_clip(name, conf)
        a, b = int(round(t0 * SR)), min(len(x), int(round(t1 * SR)))
        words = [[w, round(s - t0, 3), round(e - t0, 3)] for w, s, e in conf["clips"][name]["words"]
                 if s >= t0 - 1e-6 and e <= t1 + 1e-6]
        out.append((f"{name}_{int(round(t0 * 100)):05d}", x[a:b].copy(), words))
    return out


def bank_clips(split: str) -> List[dict]:
    from pyutils.synth.nvv_bank_index import load_index

    clips = [c for (tag, s), rows in sorted(load_index().items()) if s == split for c in rows]
    if not clips:
        raise DevsetError(f"the NVV bank has no {split} clips; run `make -C tools nvv_bank`")
    return sorted(clips, key=lambda c: c["clip_id"])


def _cut_points(words: List[list], n: int) -> List[int]:
    """Sample index of boundary k = 0..N: the middle of the pause before word k."""
    cuts = [0]
    for i in range(1, len(words)):
        cuts.append(int(round(0.5 * (words[i - 1][2] + words[i][1]) * SR)))
    cuts.append(n)
    return cuts


def _noise_level(x: np.ndarray) -> float:
    frames = x[: len(x) // 160 * 160].reshape(-1, 160)
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    return float(np.percentile(rms, 5)) if len(rms) else 1e-4


def splice(x: np.ndarray, words: List[list], inserts: List[Tuple[int, Optional[str], Optional[np.ndarray]]],
           rng: np.random.Generator) -> Tuple[np.ndarray, List[dict], str]:
    """Insert ``(boundary k, tag, clip)`` into speech ``x`` -> (audio, events, tagged text).

    ``clip = None`` inserts a pause alone (0.3-0.8 s of noise at the floor level), no event.
    """
    cuts = _cut_points(words, len(x))
    floor = max(_noise_level(x), 1e-5)
    peak = float(np.abs(x).max()) or 1.0
    pieces, events, t = [], [], 0
    prev = 0
    tags_at: Dict[int, List[str]] = {}
    for k, tag, clip in sorted(inserts, key=lambda r: r[0]):
        pieces.append(x[prev:cuts[k]])
        t += cuts[k] - prev
        prev = cuts[k]
        if clip is None:                # a pause alone (a negative: silence is no NVV)
            pause = rng.normal(0, floor, int(rng.uniform(0.3, 0.8) * SR))
            pieces.append(pause)
            t += len(pause)
            continue
        gain = peak * 10 ** (rng.uniform(-6, 0) / 20) / (np.abs(clip).max() + 1e-12)
        pre = rng.normal(0, floor, int(rng.uniform(0.10, 0.25) * SR))
        post = rng.normal(0, floor, int(rng.uniform(0.10, 0.25) * SR))
        body = clip * gain
        start = t + len(pre)
        pieces += [pre, body, post]
        t += len(pre) + len(body) + len(post)
        events.append({"tag": tag, "start": round(start / SR, 6), "end": round((start + len(body)) / SR, 6)})
        tags_at.setdefault(k, []).append(tag)
    pieces.append(x[prev:])
    toks = []
    for k in range(len(words) + 1):
        toks += [f"[{tag}]" for tag in tags_at.get(k, [])]
        if k < len(words):
            toks.append(words[k][0])
    y = np.concatenate([p.astype(np.float32) for p in pieces])
    return np.clip(y, -1, 1), events, " ".join(toks)


def _spliced_utt(x, words, inserts: list, n_pauses: int, rng, utt_id: str, seg_id: str) -> dict:
    """One utterance: ``inserts`` (word position, tag, audio, clip id) and ``n_pauses`` pauses
    alone spliced into the segment ``x``; each event keeps the clip it came from."""
    for _ in range(n_pauses):
        inserts.append((int(rng.integers(0, len(words) + 1)), None, None, None))
    y, events, text = splice(x, words, [r[:3] for r in inserts], rng)
    real = [r for r in sorted(inserts, key=lambda r: r[0]) if r[1] is not None]
    for ev, r in zip(events, real):
        ev["clip"] = r[3]
    return {"utt_id": utt_id, "spk": f"nvvreal_{seg_id.split('_')[0]}", "audio": y, "events": events, "text": text}


def build(split: str, variants: int = 6) -> List[dict]:
    """The utterances of a split: ``[{"utt_id", "audio", "events", "text", "spk"}]``."""
    from pyutils.synth.nvv_bank_index import _clip_audio, event_sound
    from pyutils.tags import challenge_tags

    if split not in SPLITS:
        raise DevsetError(f"split must be one of {SPLITS}, got {split!r}")
    rng = np.random.default_rng(SEEDS[split])
    clips = bank_clips(split)
    order = list(rng.permutation(len(clips)))
    all_tags = list(rng.permutation(challenge_tags()))
    nxt = 0
    utts = []
    for seg_id, x, words in segments(split):
        for v in range(variants):
            n_ev = 0 if v == 0 else int(rng.integers(1, 3))
            inserts = []
            for _ in range(n_ev):
                k = int(rng.integers(0, len(words) + 1))
                if split == "train":        # every tag: bank train clip (speed-perturbed) or generated
                    tag = all_tags[nxt % len(all_tags)]
                    audio, prov = event_sound(tag, "train", rng)
                    inserts.append((k, tag, audio.astype(np.float64), prov.get("clip", "generated")))
                else:
                    c = clips[order[nxt % len(order)]]
                    audio = _clip_audio(c["wav"]).astype(np.float64)
                    inserts.append((k, c["tag"], audio - audio.mean(), c["clip_id"]))
                nxt += 1
            utts.append(_spliced_utt(x, words, inserts, 2 if v == 0 else 1, rng,
                                     f"nvvreal_{split}_{seg_id}_v{v}", seg_id))
    return utts


def prep_clips(prep: Path, split: str) -> List[dict]:
    """NVV clips of a ``chorus-prep`` output with event spans (``chorus-prep deeply_nvv``: one clip,
    one event): ``[{"clip_id", "tag", "audio"}]`` of ``PREP/<split>``, each cut to its event span
    (``PREP/events/<split>.jsonl``), 16 kHz mono, sorted by id."""
    from pyutils.synth.nvv_bank import decode

    prep = Path(prep)
    scp_path, evp = prep / split / "wav.scp", prep / "events" / f"{split}.jsonl"
    if not scp_path.is_file() or not evp.is_file():
        raise DevsetError(f"{prep}: no {split}/wav.scp or events/{split}.jsonl (run chorus-prep first)")
    scp = dict(ln.split(" ", 1) for ln in scp_path.read_text(encoding="utf-8").splitlines() if " " in ln)
    clips = []
    for n, line in enumerate(evp.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            utt, evs, path = row["utt_id"], row["events"], scp[row["utt_id"]]
        except (ValueError, KeyError, TypeError) as e:
            raise DevsetError(f"{evp}:{n}: bad events row or utterance not in {scp_path} ({e})") from None
        if len(evs) != 1:
            continue
        if path.endswith("|"):
            raise DevsetError(f"{scp_path}: {utt}: a pipe; the clips must be 16 kHz mono files")
        x = decode(Path(path).read_bytes(), SR).astype(np.float64)
        x = x[max(0, int(evs[0]["start"] * SR)):int(evs[0]["end"] * SR)]
        if len(x) >= SR // 10:
            clips.append({"clip_id": utt, "tag": evs[0]["tag"], "audio": x - x.mean()})
    if not clips:
        raise DevsetError(f"{evp}: no clip with one event")
    return sorted(clips, key=lambda c: c["clip_id"])


def build_with_clips(split: str, clips: List[dict], variants: int = 0, prefix: str = "deeply") -> List[dict]:
    """Like :func:`build`'s dev/test construction, with ``clips`` (:func:`prep_clips`) for the NVVs of
    any split: the real-speech segments of ``split``, variant 0 without an event, the others 1-2
    clips each in a permuted order, pauses alone as in :func:`build`. ``variants`` 0: as many
    variants as it takes to use every clip once (the last variant wraps round)."""
    if split not in SPLITS:
        raise DevsetError(f"split must be one of {SPLITS}, got {split!r}")
    if not clips:
        raise DevsetError(f"no clips for the {split} set")
    rng = np.random.default_rng(SEEDS[split] + 1000)
    order = list(rng.permutation(len(clips)))
    segs = segments(split)
    nxt, v, utts = 0, 0, []
    while (v < variants) if variants else (v == 0 or nxt < len(clips)):
        for seg_id, x, words in segs:
            n_ev = 0 if v == 0 else int(rng.integers(1, 3))
            inserts = []
            for _ in range(n_ev):
                c = clips[order[nxt % len(order)]]
                inserts.append((int(rng.integers(0, len(words) + 1)), c["tag"], c["audio"], c["clip_id"]))
                nxt += 1
            utts.append(_spliced_utt(x, words, inserts, 2 if v == 0 else 1, rng,
                                     f"{prefix}_{split}_{seg_id}_v{v:03d}", seg_id))
        v += 1
    return utts


def write(utts: List[dict], out: Path) -> None:
    """Kaldi data dir + ref.jsonl + events.jsonl, written to a temp dir and renamed."""
    import soundfile as sf

    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        (tmp / "wav").mkdir()
        utts = sorted(utts, key=lambda u: u["utt_id"])
        scp, text, u2s, ref, ev = [], [], [], [], []
        for u in utts:
            sf.write(str(tmp / "wav" / f"{u['utt_id']}.wav"), u["audio"], SR, subtype="PCM_16")
            scp.append(f"{u['utt_id']} {out / 'wav' / (u['utt_id'] + '.wav')}\n")
            text.append(f"{u['utt_id']} {u['text']}\n")
            u2s.append(f"{u['utt_id']} {u['spk']}\n")
            ref.append(json.dumps({"utt_id": u["utt_id"], "language": "en", "text_with_nvvs": u["text"]},
                                  ensure_ascii=False) + "\n")
            ev += [json.dumps({"utt_id": u["utt_id"], **e}) + "\n" for e in u["events"]]
        spk: Dict[str, List[str]] = {}
        for u in utts:
            spk.setdefault(u["spk"], []).append(u["utt_id"])
        files = {"wav.scp": scp, "text": text, "utt2spk": u2s, "ref.jsonl": ref, "events.jsonl": ev,
                 "spk2utt": [f"{s} {' '.join(ids)}\n" for s, ids in sorted(spk.items())]}
        for name, lines in files.items():
            (tmp / name).write_text("".join(lines), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 0 if the material of the sets (tools/models/real_speech, nvv_bank) is installed, "
                         "else 3 with the reason (the cascade recipe's --detector_real auto)")
    ap.add_argument("--split", choices=SPLITS)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--variants", type=int, default=None,
                    help="utterances per speech segment (first: no event); default 6, with --clips-from "
                         "as many as use every clip once")
    ap.add_argument("--clips-from", type=Path, default=None,
                    help="take the NVVs from a chorus-prep output with event spans (chorus-prep deeply_nvv): "
                         "the clips of its --split, for any split (train included)")
    a = ap.parse_args(argv)
    if not a.check and (a.split is None or a.out is None):
        ap.error("--split and --out are required (or --check)")
    from pyutils.synth.nvv_bank import BankError

    if a.check:
        try:
            for split in ("train", "dev"):
                segments(split)
                bank_clips(split)
        except (DevsetError, BankError, OSError, ValueError) as e:
            print(f"nvv_detect.devset: error: {e}", file=sys.stderr)
            return 3
        print("nvv_detect.devset: the real-NVV set material is installed")
        return 0
    try:
        if a.clips_from:
            utts = build_with_clips(a.split, prep_clips(a.clips_from, a.split), a.variants or 0)
        else:
            utts = build(a.split, 6 if a.variants is None else a.variants)
        write(utts, a.out)
    except (DevsetError, BankError, OSError) as e:
        print(f"nvv_detect.devset: error: {e}", file=sys.stderr)
        return 1
    n_ev = sum(len(u["events"]) for u in utts)
    print(f"nvv_detect.devset: {a.split}: {len(utts)} utterances, {n_ev} events -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
