"""NVV events of a wav.scp as JSONL (the Track 1 cascade's ``--events``), from either kind of
model file.

    python -m pyutils.nvv_detect.detect --wav-scp data/test/wav.scp --out events.jsonl \\
        [--model pyutils/nvv_detect/nvv_detector.npz] [--naive] [--threads 1]

Model files (:func:`load_detector`): a head on Whisper-encoder frames (``kind`` =
``whisper_frames``, :mod:`pyutils.nvv_detect.frame_heads`, the recipe's default) or the YAMNet
detector (:mod:`pyutils.nvv_detect.yamnet_detector`, the shipped ``nvv_detector.npz``);
``--naive``: no model, the zero-shot AudioSet mapping
(:func:`pyutils.nvv_detect.yamnet_features.naive_events`). Any audio format, rate, channels or
length is read; an entry that cannot be read gives no events and one line on stderr, the others
go on.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from pyutils.nvv_detect.arrays import DetectorError, load_arrays
from pyutils.nvv_detect.yamnet_detector import DEFAULT_MODEL, Detector, detect_entries
from pyutils.nvv_detect.yamnet_features import HOP_S, Features


def load_detector(path: Optional[os.PathLike] = None):
    """A model file of either kind: :class:`pyutils.nvv_detect.yamnet_detector.Detector` (YAMNet patches) or, when its ``kind`` is
    ``whisper_frames``, :class:`pyutils.nvv_detect.frame_heads.FrameDetector`."""
    path = Path(path or DEFAULT_MODEL)
    arrays = load_arrays(path, missing="; fit one with stage 5 of local/nvv_asr.sh --asr_method cascade")
    if "kind" in arrays and str(arrays["kind"]) == "whisper_frames":
        from pyutils.nvv_detect.frame_heads import FrameDetector

        return FrameDetector(arrays, str(path))
    return Detector(arrays, str(path))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wav-scp", type=Path, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--naive", action="store_true", help="zero-shot AudioSet mapping instead of the model")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    from pyutils.audio_tagger import TaggerError
    from pyutils.datadir.io import DataDirError, read_kv
    from pyutils.nvv_detect.events import write_events
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        det = None if a.naive else load_detector(a.model)
        entries = read_kv(a.wav_scp)
        log = lambda m: print(f"nvv_detect: {m}", file=sys.stderr)  # noqa: E731
        if det is not None and not isinstance(det, Detector):
            from pyutils.nvv_detect.frame_heads import detect_entries as detect_frames

            rows = detect_frames(det, entries, a.threads, log)
            write_events(rows, a.out)
            print(f"nvv_detect: {len(rows)} events in {len(entries)} files -> {a.out}")
            return 0
        feats = Features(hop_s=det.hop_s if det else HOP_S, context=det.context if det else 0,
                         num_threads=a.threads, feature_ids=det.feature_ids if det else None,
                         embed=bool(det and det.embed))
        rows = detect_entries(det, feats, entries, log=log)
        write_events(rows, a.out)
    except (DetectorError, TaggerError, DataDirError, WhisperWeightsError, OSError, ValueError) as e:
        print(f"nvv_detect: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect: {len(rows)} events in {len(entries)} files -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
