"""Write the converted files of a pairs list from the TTS outputs.

The TTS of the cascade writes ``<tts_dir>/<pair_id>.wav`` at its own rate
(often 22.05 kHz, float). The challenge wants, for each pair, the file named
in the pairs list as 16 kHz mono PCM16. This step resamples (soxr, high
quality), mixes down, peak-limits to avoid clipping, and writes atomically.
Missing TTS outputs, and outputs that are empty or silent (shorter than
``--min-dur`` seconds or peak below -80 dBFS: a duration model that gave every
token zero frames), are all reported together by pair id and nothing is written:
a silent file must never reach a submission.

Optional ``--f0-match``: shift the pitch of each output so its median F0
equals the reference clip's (torchaudio's pitch detector; the shift by
sox's ``pitch`` effect). It is a plain signal-processing step of the
cascade, documented as such in the recipe README; off unless asked for.

CLI::

    python -m pyutils.vc.convert --pairs data/test_pairs_src/pairs.tsv \
        --tts-dir exp/.../wav --out DIR
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from typing import List, Optional

import numpy as np

from pyutils.audio import load_audio
from pyutils.io import atomic_write
from pyutils.vc.evaluate import SR, read_pair_table


def write_pcm16(path: str, wav: np.ndarray, sr: int = SR) -> None:
    """Mono PCM16 WAV, peak-limited to 0.99 full scale, written atomically."""
    import soundfile

    wav = np.asarray(wav, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(wav)):
        wav = np.nan_to_num(wav, nan=0.0, posinf=0.0, neginf=0.0)
    peak = float(np.max(np.abs(wav))) if wav.size else 0.0
    if peak > 0.99:
        wav = wav * (0.99 / peak)
    with atomic_write(path, "wb") as f:
        soundfile.write(f, wav, sr, subtype="PCM_16", format="WAV")


def median_f0(wav: np.ndarray, sr: int = SR) -> Optional[float]:
    """Median F0 (Hz) over the louder half of the frames, or None for silence.

    F0 per frame from torchaudio's normalised cross-correlation pitch detector
    (``detect_pitch_frequency``, pure PyTorch; librosa's pYIN is avoided: its
    numba kernels crash in this environment). Quiet frames carry no pitch, so
    only frames at or above the median frame energy count.
    """
    import torch
    import torchaudio.functional as AF

    wav = np.asarray(wav, dtype=np.float32).reshape(-1)
    if wav.size < sr // 10 or float(np.max(np.abs(wav))) < 1e-4:
        return None
    f0 = AF.detect_pitch_frequency(torch.from_numpy(wav), sr, freq_low=60, freq_high=500).numpy()
    frames = np.array_split(wav, len(f0))
    energy = np.array([float(np.mean(c ** 2)) if c.size else 0.0 for c in frames])
    keep = (energy >= np.median(energy)) & np.isfinite(f0)
    return float(np.median(f0[keep])) if keep.sum() >= 3 else None


def pitch_shift(wav: np.ndarray, semitones: float, sr: int = SR) -> np.ndarray:
    """Shift pitch by ``semitones`` keeping duration (sox ``pitch``)."""
    if abs(semitones) < 0.1:
        return wav
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.wav"), os.path.join(tmp, "b.wav")
        import soundfile

        soundfile.write(a, wav, sr, subtype="FLOAT")
        subprocess.run(["sox", a, b, "pitch", f"{100.0 * semitones:.1f}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        out, _ = soundfile.read(b, dtype="float32")
    return out


SILENCE_PEAK = 1e-4   # -80 dBFS


def unusable_output(wav: np.ndarray, min_dur: float, sr: int = SR) -> Optional[str]:
    """Why a TTS output cannot be a converted file (empty, too short, silent), or None."""
    if wav.size == 0:
        return "empty (0 samples)"
    if wav.size < int(min_dur * sr):
        return f"{wav.size / sr:.3f} s long (< {min_dur} s)"
    if not np.all(np.isfinite(wav)) or float(np.max(np.abs(wav))) < SILENCE_PEAK:
        return "silent or not finite"
    return None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="TTS outputs -> submission files (16 kHz PCM16).")
    ap.add_argument("--pairs", required=True, help="pairs.tsv written by pyutils.vc.pairs")
    ap.add_argument("--tts-dir", required=True, help="folder with <pair_id>.wav from the TTS")
    ap.add_argument("--out", required=True, help="folder for the converted files")
    ap.add_argument("--f0-match", default="false", choices=["true", "false"],
                    help="shift each output's median F0 to the reference clip's")
    ap.add_argument("--max-shift", type=float, default=12.0, help="largest shift (semitones)")
    ap.add_argument("--min-dur", type=float, default=0.1, help="shortest usable TTS output (s)")
    args = ap.parse_args(argv)

    rows = read_pair_table(args.pairs)
    missing = [r["pair_id"] for r in rows
               if not os.path.isfile(os.path.join(args.tts_dir, r["pair_id"] + ".wav"))]
    if missing:
        print(f"{args.tts_dir}: {len(missing)} TTS output(s) missing: {' '.join(missing)}",
              file=sys.stderr)
        return 1
    wavs, bad = {}, []
    for row in rows:
        wav = load_audio(os.path.join(args.tts_dir, row["pair_id"] + ".wav"), SR)[0]
        why = unusable_output(wav, args.min_dur)
        if why:
            bad.append(f"{row['pair_id']}: {why}")
        wavs[row["pair_id"]] = wav
    if bad:
        print(f"{args.tts_dir}: {len(bad)} TTS output(s) unusable, nothing written:\n  "
              + "\n  ".join(bad), file=sys.stderr)
        return 1
    shifts = []
    for row in rows:
        wav = wavs.pop(row["pair_id"])
        if args.f0_match == "true":
            f_out, f_ref = median_f0(wav), median_f0(load_audio(row["target"], SR)[0])
            if f_out and f_ref:
                st = float(np.clip(12.0 * np.log2(f_ref / f_out), -args.max_shift, args.max_shift))
                wav = pitch_shift(wav, st)
                shifts.append(st)
        write_pcm16(os.path.join(args.out, row["name"]), wav)
    msg = f"wrote {len(rows)} files to {args.out} (16 kHz mono PCM16)"
    if shifts:
        msg += f"; F0 match: mean |shift| {np.mean(np.abs(shifts)):.2f} semitones"
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
