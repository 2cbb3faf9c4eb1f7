#!/usr/bin/env python3
"""chorus-sqa on many long files: wall time per audio minute and peak memory.

Writes ``--num`` files of ``--minutes`` each (speech-like bursts in noise, some
at 8/48 kHz or stereo) plus, with ``--hour``, one 60-minute file, then runs
``chorus-sqa --json`` on the folder in a child process and reports its peak
resident memory (``ru_maxrss``).  Flat memory means the peak does not grow with
the number of files nor with a file's length: compare two ``--num`` values.

    python benchmarks/sqa_stream.py --model egs/sqa/exp/sqa_default --num 20 --minutes 1
    python benchmarks/sqa_stream.py --model egs/sqa/exp/sqa_default --num 1000 --minutes 1   # the issue's case
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import soundfile as sf


def speechlike(seconds: float, sr: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    f0 = rng.uniform(100, 220)
    voiced = np.sin(2 * np.pi * f0 * t) + 0.4 * np.sin(4 * np.pi * f0 * t)
    gate = (np.sin(2 * np.pi * rng.uniform(1.5, 3) * t) > 0.1).astype(float)
    return (0.2 * voiced * gate + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


def write_files(d: str, num: int, minutes: float, hour: bool) -> float:
    rng = np.random.default_rng(0)
    total = 0.0
    for i in range(num):
        sr = (16000, 8000, 48000)[i % 3]
        x = speechlike(60 * minutes, sr, rng)
        if i % 5 == 4:
            x = np.stack([x, 0.8 * x], axis=1)
        sf.write(os.path.join(d, f"f{i:05d}.flac"), x, sr)
        total += 60 * minutes
    if hour:
        with sf.SoundFile(os.path.join(d, "hour.flac"), "w", 16000, 1) as f:
            for _ in range(60):
                f.write(speechlike(60.0, 16000, rng))
        total += 3600
    return total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--num", type=int, default=20)
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--hour", action="store_true", help="add one 60-minute file")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        audio = write_files(d, a.num, a.minutes, a.hour)
        t0 = time.time()
        res = subprocess.run([sys.executable, "-m", "pyutils.sqa.diagnose", "--model", a.model, "--json", d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.time() - t0
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ok = sum("error" not in r for r in rows)
    print(json.dumps({"files": a.num + int(a.hour), "diagnosed": ok, "audio_min": round(audio / 60, 1),
                      "wall_s": round(wall, 1), "x_realtime": round(audio / max(wall, 1e-9), 1),
                      "peak_rss_mb": round(peak_mb, 1), "rc": res.returncode,
                      "progress_bar_seen": "file/s" in res.stderr or "s/file" in res.stderr}))
    return 0 if res.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
