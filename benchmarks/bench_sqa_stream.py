#!/usr/bin/env python3
"""chorus-sqa on many long files: files per second and resident memory as the run goes.

Writes ``--distinct`` different files of ``--minutes`` each (speech-like bursts
in noise; every third at 8 kHz, every third at 48 kHz, every fifth stereo) and
gives them ``--num`` names in all (hard links, so 1,000 one-minute files cost
the disk of ``--distinct``; chorus-sqa opens and reads every name anew), plus,
with ``--hour``, one 60-minute file processed last.  Then it runs
``chorus-sqa --json`` on the folder as a child process and, each time a result
line arrives, reads the child's current and peak resident memory
(``VmRSS``/``VmHWM`` in ``/proc/PID/status``).  Flat memory means the peak
stops growing after the first files: compare the peak after 10 files with the
peak after the last one (and after the hour-long file).

    python benchmarks/bench_sqa_stream.py --model egs/sqa/exp/sqa_default --num 20 --minutes 1
    python benchmarks/bench_sqa_stream.py --model egs/sqa/exp/sqa_default --num 1000 --minutes 1   # 1,000 one-minute files

Prints one JSON object: files, audio minutes, wall seconds, files/s, times
real time, the peak RSS after 1, 10, 100, ... files and at the end, whether
tqdm's progress bar was seen on stderr, and the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
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


def write_files(d: str, num: int, distinct: int, minutes: float, hour: bool) -> float:
    """``num`` file names (``distinct`` contents, the rest hard links) -> seconds of audio."""
    rng = np.random.default_rng(0)
    srcs = []
    for i in range(min(distinct, num)):
        sr = (16000, 8000, 48000)[i % 3]
        x = speechlike(60 * minutes, sr, rng)
        if i % 5 == 4:
            x = np.stack([x, 0.8 * x], axis=1)
        path = os.path.join(d, f"f{i:05d}.flac")
        sf.write(path, x, sr)
        srcs.append(path)
    for i in range(len(srcs), num):
        os.link(srcs[i % len(srcs)], os.path.join(d, f"f{i:05d}.flac"))
    total = 60.0 * minutes * num
    if hour:   # "zz" sorts after the f* files: the hour-long file comes last
        with sf.SoundFile(os.path.join(d, "zz_hour.flac"), "w", 16000, 1) as f:
            for _ in range(60):
                f.write(speechlike(60.0, 16000, rng))
        total += 3600
    return total


def rss_mb(pid: int) -> tuple:
    """(current, peak) resident memory of ``pid`` in MB, from /proc (Linux)."""
    cur = peak = float("nan")
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    return cur, peak


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--num", type=int, default=20, help="file names in the folder")
    p.add_argument("--distinct", type=int, default=30, help="different files among them (rest: hard links)")
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--hour", action="store_true", help="add one 60-minute file (processed last)")
    p.add_argument("--workdir", help="where to write the files (default: a temporary folder)")
    p.add_argument("--every", type=int, default=0,
                   help="also print a progress line (files, seconds, RSS, peak) to stderr every N files, "
                        "so that a run cut short still leaves figures")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=a.workdir) as d:
        audio_dir = os.path.join(d, "audio")
        os.mkdir(audio_dir)
        t0 = time.time()
        audio = write_files(audio_dir, a.num, a.distinct, a.minutes, a.hour)
        write_s = time.time() - t0
        err_path = os.path.join(d, "stderr.txt")
        marks, n_rows, n_err, t_first = {}, 0, 0, 0.0
        with open(err_path, "w", encoding="utf-8") as err:
            t0 = time.time()
            proc = subprocess.Popen([sys.executable, "-m", "pyutils.sqa.diagnose", "--model", a.model,
                                     "--json", audio_dir], stdout=subprocess.PIPE, stderr=err, text=True)
            for line in proc.stdout:
                if not line.strip():
                    continue
                row = json.loads(line)
                n_rows += 1
                n_err += "error" in row
                if n_rows == 1:
                    t_first = time.time() - t0     # includes loading the model, Whisper and DNSMOS
                cur, peak = rss_mb(proc.pid)
                if a.every and n_rows % a.every == 0:
                    print(json.dumps({"files": n_rows, "after_s": round(time.time() - t0, 1),
                                      "rss_mb": round(cur, 1), "peak_rss_mb": round(peak, 1)}),
                          file=sys.stderr, flush=True)
                if n_rows in (1, 10, 100, 1000, 10000) or row["path"].endswith("zz_hour.flac"):
                    key = "hour_file" if row["path"].endswith("zz_hour.flac") else str(n_rows)
                    marks[key] = {"after_s": round(time.time() - t0, 1), "rss_mb": round(cur, 1),
                                  "peak_rss_mb": round(peak, 1)}
            proc.stdout.close()
            _, status, usage = os.wait4(proc.pid, 0)   # the child's own peak RSS, also after it exits
            proc.returncode = rc = os.waitstatus_to_exitcode(status)
            wall = time.time() - t0
        with open(err_path, encoding="utf-8") as f:
            stderr = f.read()
    print(json.dumps({"files": n_rows, "errors": n_err, "distinct": min(a.distinct, a.num),
                      "audio_min": round(audio / 60, 1), "write_s": round(write_s, 1),
                      "wall_s": round(wall, 1), "files_per_s": round(n_rows / max(wall, 1e-9), 3),
                      "x_realtime": round(audio / max(wall, 1e-9), 1), "first_file_s": round(t_first, 1),
                      "files_per_s_after_first": round((n_rows - 1) / max(wall - t_first, 1e-9), 3),
                      "peak_rss_mb_by_files": marks, "peak_rss_mb_end": round(usage.ru_maxrss / 1024, 1), "rc": rc,
                      "progress_bar_seen": "file/s" in stderr or "s/file" in stderr,
                      "stderr_tail": stderr.strip().splitlines()[-1:] if stderr.strip() else []}))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
