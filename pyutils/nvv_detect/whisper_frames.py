"""Whisper-encoder frames of the NVV detector's sets (stage 4 of ``local/nvv_asr.sh
--asr_method cascade``), cached as plain arrays.

    python -m pyutils.nvv_detect.whisper_frames --corpus CORPUS --split train --out feats/wf_corpus_train.npz
    python -m pyutils.nvv_detect.whisper_frames --devset-split train --variants 12 --out feats/wf_real_train.npz
    (--max-utts N: the first N only; --part J --parts N: every N-th utterance from the J-th, for N
    jobs; --layers 5, the default, or e.g. 4,6: two blocks side by side)

Features. The frozen Whisper base audio encoder (:class:`pyutils.vc.features.WhisperContent`:
80-bin log-mel, two convolutions, ``h_l = Block_l(h_{l-1})``, one 512-d state per 20 ms,
inputs encoded unpadded in windows of <= 30 s) gives the states of the blocks ``layers``
side by side; two consecutive 20 ms frames are averaged, ``x_f = (h_{2f} + h_{2f+1}) / 2``:
one frame per ``FRAME_S`` = 40 ms (a tenth of a word; the events' positions need no finer
grid). Whisper's training data had laughs, coughs and "hmm" in it: its states separate them
from speech (``pyutils.nvv_detect.frame_heads`` fits a small frame classifier on them).

Cached file: one ``.npz`` beside ``<file>.sha256`` (written and checked by
:func:`pyutils.nvv_detect.arrays.save_arrays` / ``load_arrays``; never unpickled): ``utts``
(U,), ``offsets`` (U + 1,), ``frames`` (N, D) float16, ``events`` (U,) JSON text of the
reference events, ``kind`` ("corpus" or "real"), ``frame_s``, ``layers``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, List, NamedTuple, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError, load_arrays, save_arrays
from pyutils.nvv_detect.utt_sources import add_utt_source_args, utts_from_args

FRAME_S = 0.04
POOL = 2                      # 20 ms encoder frames per detector frame
DEFAULT_LAYERS = (5,)
KINDS = ("corpus", "real", "weak")    # weak: the events are tag windows (pyutils.nvv_detect.weak_labels)


class FrameUtt(NamedTuple):
    utt: str
    frames: np.ndarray          # (T, D)
    events: List[dict]


class WhisperFrames:
    """Pooled frozen-encoder states of 16 kHz mono audio (see the module docstring)."""

    def __init__(self, layers: Sequence[int] = DEFAULT_LAYERS, model: str = "base", threads: int = 0):
        from pyutils.vc.features import WhisperContent

        self.layers = tuple(sorted(set(int(n) for n in layers)))
        self.encoder = WhisperContent(model, threads=threads, layers=self.layers)

    @property
    def dim(self) -> int:
        return 512 * len(self.layers)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """(T, D) float32, ``T = floor(len(x) / 640)`` (at least 1 for >= 20 ms of audio)."""
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        if x.size < 640:
            x = np.pad(x, (0, 640 - x.size))
        h = self.encoder.features(x)
        n = max(1, len(h) // POOL)
        h = h[: n * POOL] if len(h) >= POOL else np.repeat(h, POOL, axis=0)
        return h.reshape(n, POOL, -1).mean(axis=1)


def frame_labels(n: int, events: Sequence[dict], classes: Sequence[str], frame_s: float = FRAME_S) -> np.ndarray:
    """Class index per frame: the tag of the event whose span ``[start, end)`` holds the
    frame's centre ``(f + 0.5) frame_s`` (the longest such event), else 0 (``none``)."""
    idx = {c: i for i, c in enumerate(classes)}
    y = np.zeros(n, dtype=np.int64)
    c = (np.arange(n) + 0.5) * frame_s
    for e in sorted(events, key=lambda e: e["end"] - e["start"]):
        if e["tag"] not in idx:
            raise DetectorError(f"event tag {e['tag']!r} is not one of the detector's classes")
        y[(c >= e["start"]) & (c < e["end"])] = idx[e["tag"]]
    return y


def compute(utts: Iterable[Tuple[str, np.ndarray, int, List[dict]]], wf: WhisperFrames, log=None) -> List[FrameUtt]:
    """Frames of ``(utt, audio, sr, events)`` items (audio resampled to 16 kHz mono)."""
    from pyutils.audio import to_mono_16k

    out = []
    for n, (u, x, sr, ev) in enumerate(utts, 1):
        out.append(FrameUtt(u, wf(to_mono_16k(np.asarray(x, dtype=np.float32), sr)).astype(np.float16), list(ev)))
        if log and n % 200 == 0:
            log(f"frames: {n} utterances")
    return out


def save(rows: List[FrameUtt], kind: str, layers: Sequence[int], path: Path) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not rows:
        raise DetectorError(f"{path}: no utterances to store")
    offsets = np.cumsum([0] + [len(r.frames) for r in rows]).astype(np.int64)
    save_arrays({"utts": np.array([r.utt for r in rows]), "offsets": offsets,
                 "frames": np.concatenate([r.frames for r in rows]).astype(np.float16),
                 "events": np.array([json.dumps(r.events, ensure_ascii=False) for r in rows]),
                 "kind": np.array(kind), "frame_s": np.float64(FRAME_S),
                 "layers": np.asarray(layers, dtype=np.int64)}, Path(path))


def load(path: Path) -> Tuple[str, Tuple[int, ...], List[FrameUtt]]:
    """``(kind, layers, rows)`` of a frames file; its SHA-256 is checked first."""
    a = load_arrays(Path(path), missing=" (stage 4 of local/nvv_asr.sh writes them)",
                    mismatch=": recompute the frames",
                    need=("utts", "offsets", "frames", "events", "kind", "frame_s", "layers"))
    off, kind = a["offsets"], str(a["kind"])
    if (kind not in KINDS or len(off) != len(a["utts"]) + 1 or off[-1] != len(a["frames"])
            or abs(float(a["frame_s"]) - FRAME_S) > 1e-9 or a["frames"].shape[1] != 512 * len(a["layers"])):
        raise DetectorError(f"{path}: inconsistent arrays")
    rows = []
    for i, u in enumerate(a["utts"]):
        try:
            ev = json.loads(str(a["events"][i]))
        except ValueError as e:
            raise DetectorError(f"{path}: utterance {u}: bad events: {e}") from e
        rows.append(FrameUtt(str(u), a["frames"][int(off[i]):int(off[i + 1])], ev))
    return kind, tuple(int(n) for n in a["layers"]), rows


def parse_layers(s: str) -> Tuple[int, ...]:
    try:
        out = tuple(int(v) for v in s.split(",") if v.strip())
    except ValueError:
        out = ()
    if not out:
        raise argparse.ArgumentTypeError(f"--layers: comma-separated block numbers (1-6), got {s!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    add_utt_source_args(ap, src)
    ap.add_argument("--layers", type=parse_layers, default=DEFAULT_LAYERS, help="encoder blocks, e.g. 4,6")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if not 1 <= a.part <= a.parts:
        ap.error(f"need 1 <= --part <= --parts, got {a.part} of {a.parts}")
    from pyutils.nvv_detect.devset import DevsetError
    from pyutils.synth.nvv_bank import BankError
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        utts, kind = utts_from_args(a)
        wf = WhisperFrames(a.layers, threads=a.threads)
        rows = compute(utts, wf, log=lambda m: print(m, file=sys.stderr))
        save(rows, kind, wf.layers, a.out)
    except (DetectorError, DevsetError, BankError, WhisperWeightsError, OSError, ValueError) as e:
        print(f"nvv_detect.whisper_frames: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect.whisper_frames: {len(rows)} utterances, {sum(len(r.frames) for r in rows)} frames -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
