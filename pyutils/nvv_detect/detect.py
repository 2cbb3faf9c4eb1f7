"""NVV events of a wav.scp as JSONL (the Track 1 cascade's ``--events``), from a fitted
Whisper-frame detector.

    python -m pyutils.nvv_detect.detect --wav-scp data/test/wav.scp --model exp/.../nvv_detector.npz \\
        --out events.jsonl [--threads 1]

The model file is the one stage 5 of ``local/nvv_asr.sh --asr_method cascade`` fits
(:class:`pyutils.nvv_detect.frame_heads.FrameDetector`: heads on frozen Whisper-encoder frames).
Any audio format, rate, channels or length is read; an entry that cannot be read gives no
events and one line on stderr, the others go on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyutils.nvv_detect.arrays import DetectorError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wav-scp", type=Path, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", type=Path, required=True,
                    help="a fitted detector (stage 5 of the cascade recipe: <asr_exp>/nvv_detector.npz)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    from pyutils.datadir.io import DataDirError, read_kv
    from pyutils.nvv_detect.events import write_events
    from pyutils.nvv_detect.frame_heads import FrameDetector, detect_entries
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        det = FrameDetector.load(a.model)
        entries = read_kv(a.wav_scp)
        rows = detect_entries(det, entries, a.threads, lambda m: print(f"nvv_detect: {m}", file=sys.stderr))
        write_events(rows, a.out)
    except (DetectorError, DataDirError, WhisperWeightsError, OSError, ValueError) as e:
        print(f"nvv_detect: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect: {len(rows)} events in {len(entries)} files -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
