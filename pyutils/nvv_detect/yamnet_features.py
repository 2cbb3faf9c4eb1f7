"""Cached YAMNet features of the detector's training and tuning sets (stage 4 of
``local/nvv_asr.sh --asr_method cascade``).

    python -m pyutils.nvv_detect.features --corpus CORPUS --split train --out feats/corpus_train.npz
    python -m pyutils.nvv_detect.features --devset-split train --variants 12 --out feats/real_train.npz
    python -m pyutils.nvv_detect.features --data-dir data/nvv_real_dev --out feats/real_dev.npz
    python -m pyutils.nvv_detect.features --check-devset     # exit 0 when its material is installed
    (--max-utts N: the first N only; --part J --parts N: every N-th utterance from the J-th, for N jobs)

Sources: a ``chorus-synth nvv`` corpus split (``CORPUS/data/<split>/wav.scp`` with the exact
event times of ``CORPUS/events/<split>.jsonl``), the real-speech utterances of
:func:`pyutils.nvv_detect.devset.build` (``--devset-split``), or a data dir written by
:func:`pyutils.nvv_detect.devset.write` (``--data-dir``: ``wav.scp`` + ``events.jsonl``).

What is stored is what every detector variant is computed from, so that fitting and
threshold choice (stage 5) never run YAMNet again: per utterance the patch start times
``t_i`` (every ``hop_s`` = 0.24 s), the raw logits ``l_i`` of all 521 AudioSet classes
(:class:`pyutils.nvv_detect.model.Features`; the model picks its classes and stacks the
neighbours at fit time) and the naive zero-shot scores of the 16 tags
(:func:`pyutils.nvv_detect.model.naive_probs`) and the 1024-d YAMNet embeddings
(:func:`pyutils.nvv_detect.model.embedding_session`, stored as float16).

File: one ``.npz`` of plain arrays (never unpickled) beside ``<file>.sha256``:
``utts`` (U,), ``offsets`` (U + 1,: utterance ``u`` owns patches ``offsets[u]:offsets[u+1]``),
``starts`` (N,), ``logits`` (N, 521) float32, ``naive`` (N, 16) float32, ``emb`` (N, 1024) float16, ``events`` (U,)
JSON text of each utterance's reference events, ``kind`` ("corpus" or "real": real talkers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, List, NamedTuple, Tuple

import numpy as np

from pyutils.nvv_detect.model import HOP_S, DetectorError, Features, load_arrays, naive_probs, save_arrays

KINDS = ("corpus", "real")


class Utt(NamedTuple):
    utt: str
    starts: np.ndarray
    logits: np.ndarray      # (n, 521)
    naive: np.ndarray       # (n, 16)
    events: List[dict]
    emb: np.ndarray | None = None   # (n, 1024) YAMNet embeddings


def compute(utts: Iterable[Tuple[str, np.ndarray, int, List[dict]]], feats: Features | None = None,
            log=None) -> List[Utt]:
    """YAMNet logits and naive scores of ``(utt, audio, sr, events)`` items."""
    from pyutils.tags import challenge_tags

    feats = feats or Features(hop_s=HOP_S, context=0, embed=True)
    tags = challenge_tags()
    out = []
    for n, (u, x, sr, ev) in enumerate(utts, 1):
        t, lg, emb = feats.logits_emb(x, sr)
        out.append(Utt(u, t, lg.astype(np.float32), naive_probs(feats.tagger, lg, tags).astype(np.float32),
                       list(ev), None if emb is None else emb.astype(np.float16)))
        if log and n % 200 == 0:
            log(f"features: {n} utterances")
    return out


def save(rows: List[Utt], kind: str, path: Path) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not rows:
        raise DetectorError(f"{path}: no utterances to store")
    offsets = np.cumsum([0] + [len(r.starts) for r in rows]).astype(np.int64)
    emb = {} if any(r.emb is None for r in rows) else {"emb": np.concatenate([r.emb for r in rows]).astype(np.float16)}
    save_arrays({**emb, "utts": np.array([r.utt for r in rows]), "offsets": offsets,
                 "starts": np.concatenate([r.starts for r in rows]).astype(np.float64),
                 "logits": np.concatenate([r.logits for r in rows]).astype(np.float32),
                 "naive": np.concatenate([r.naive for r in rows]).astype(np.float32),
                 "events": np.array([json.dumps(r.events, ensure_ascii=False) for r in rows]),
                 "kind": np.array(kind)}, Path(path))


def load(path: Path) -> Tuple[str, List[Utt]]:
    """``(kind, rows)`` of a features file; its SHA-256 is checked first."""
    a = load_arrays(Path(path), missing=" (stage 4 of local/nvv_asr.sh writes them)",
                    mismatch=": recompute the features")
    need = ("utts", "offsets", "starts", "logits", "naive", "events", "kind")
    if any(k not in a for k in need):
        raise DetectorError(f"{path}: arrays {[k for k in need if k not in a]} missing")
    off, kind = a["offsets"], str(a["kind"])
    if (kind not in KINDS or len(off) != len(a["utts"]) + 1 or off[-1] != len(a["starts"])
            or a["logits"].shape != (len(a["starts"]), 521) or len(a["naive"]) != len(a["starts"])):
        raise DetectorError(f"{path}: inconsistent arrays")
    rows = []
    for i, u in enumerate(a["utts"]):
        s = slice(int(off[i]), int(off[i + 1]))
        try:
            ev = json.loads(str(a["events"][i]))
        except ValueError as e:
            raise DetectorError(f"{path}: utterance {u}: bad events: {e}") from e
        rows.append(Utt(str(u), a["starts"][s], a["logits"][s], a["naive"][s], ev,
                        a["emb"][s] if "emb" in a else None))
    return kind, rows


def main(argv=None) -> int:
    from pyutils.nvv_detect.train import add_utt_source_args, utts_from_args

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--check-devset", action="store_true",
                     help="exit 0 if the real-NVV set material (tools/models/real_speech, nvv_bank) is installed, "
                          "else 3 with the reason")
    add_utt_source_args(ap, src)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if not a.check_devset and a.out is None:
        ap.error("--out is required")
    if not 1 <= a.part <= a.parts:
        ap.error(f"need 1 <= --part <= --parts, got {a.part} of {a.parts}")
    from pyutils.audio_tagger import TaggerError
    from pyutils.nvv_detect.devset import DevsetError
    from pyutils.synth.nvv_bank import BankError

    try:
        if a.check_devset:
            from pyutils.nvv_detect.devset import bank_clips, segments

            for split in ("train", "dev"):
                segments(split)
                bank_clips(split)
            print("nvv_detect.features: the real-NVV set material is installed")
            return 0
        utts, kind = utts_from_args(a)
        feats = Features(hop_s=HOP_S, context=0, num_threads=a.threads, embed=True)
        rows = compute(utts, feats, log=lambda m: print(m, file=sys.stderr))
        save(rows, kind, a.out)
    except (DetectorError, DevsetError, BankError, TaggerError, OSError, ValueError) as e:
        print(f"nvv_detect.features: error: {e}", file=sys.stderr)
        return 3 if a.check_devset else 1
    print(f"nvv_detect.features: {len(rows)} utterances, {sum(len(r.starts) for r in rows)} patches -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
