"""Audio in, for every task: read a path or a Kaldi wav.scp value, mix down, resample.

* :func:`load_audio` -- ``(samples, rate)`` of a path or wav.scp value (a file libsndfile reads,
  a Kaldi ark offset ``foo.ark:123`` or a pipe ``sox a.mp3 -t wav - |``:
  :func:`pyutils.datadir.io.read_wav_scp_entry`; a plain file libsndfile cannot read is decoded
  by PyAV, as faster-whisper does), float32 mono (channels averaged); with ``rate``: through
  :func:`to_mono_16k` at that rate.
* :func:`to_mono_16k` -- float32 mono at 16 kHz (or ``rate``): channels averaged,
  resampled with soxr (band-limited, HQ), non-finite samples set to 0.
* :func:`resample` -- polyphase resampling by ``p / q = sr_out / sr_in`` (scipy
  ``resample_poly``: zero-stuffing by ``p``, Kaiser-windowed low-pass FIR, every ``q``-th sample
  kept), time on axis 0, any channels; the synthesisers' and TTS post-processing's resampler.
* :func:`run_ffmpeg` -- bytes through ffmpeg (an argument list, never a shell string): the
  codecs of :mod:`pyutils.synth.codecs`, raw G.722 prompts.
"""

from __future__ import annotations

import os
import subprocess
from fractions import Fraction
from typing import List, Optional, Tuple

import numpy as np

SR = 16000


def _mono(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x.mean(axis=1) if x.ndim == 2 else x


def to_mono_16k(x: np.ndarray, sr: int, rate: int = SR) -> np.ndarray:
    """float32 mono at ``rate`` (16 kHz): channels averaged, resampled with soxr, non-finite
    samples set to 0."""
    x = _mono(x)
    if sr != rate and x.size:
        import soxr

        x = soxr.resample(x, sr, rate).astype(np.float32)
    return np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)


def load_audio(entry: str, rate: Optional[int] = None) -> Tuple[np.ndarray, int]:
    """``(float32 mono samples, their rate)`` of a path or wav.scp value (see the module
    docstring); ``rate``: resampled to it by :func:`to_mono_16k`. Raises
    :class:`pyutils.datadir.io.AudioReadError` naming the entry when it cannot be read."""
    from pyutils.datadir.io import AudioReadError, is_pipe, read_wav_scp_entry

    try:
        x, sr = read_wav_scp_entry(entry)
    except AudioReadError:
        path = entry.strip()
        if is_pipe(path) or not os.path.isfile(path):
            raise
        from faster_whisper.audio import decode_audio

        out = rate or SR
        try:
            return decode_audio(path, sampling_rate=out), out
        except Exception as exc:  # noqa: BLE001 - PyAV raises its own error types
            raise AudioReadError(f"cannot decode audio file {path}: {exc}") from None
    if rate is None:
        return _mono(x), int(sr)
    return to_mono_16k(x, sr, rate), rate


def resample(x: np.ndarray, sr_in: float, sr_out: float) -> np.ndarray:
    """Polyphase resampling of ``x`` (time on axis 0) from ``sr_in`` to ``sr_out`` Hz, computed
    in ``x``'s float type; ``p / q``: the exact ratio of whole-number rates, else the nearest
    fraction with ``q <= 2000`` (a fractional rate: a voice's warp). Equal rates: ``x`` itself."""
    from scipy import signal

    if float(sr_in).is_integer() and float(sr_out).is_integer():
        ratio = Fraction(int(sr_out), int(sr_in))
    else:
        ratio = Fraction(sr_out / sr_in).limit_denominator(2000)
    if ratio == 1:
        return x
    return signal.resample_poly(x, ratio.numerator, ratio.denominator, axis=0)


def run_ffmpeg(args: List[str], data: bytes, what: str) -> bytes:
    """stdout of ``ffmpeg <args>`` (an argument list, never a shell string) fed ``data`` on stdin;
    a RuntimeError naming ``what`` when ffmpeg is missing or fails."""
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"] + args
    try:
        res = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    except FileNotFoundError as e:
        raise RuntimeError(f"ffmpeg is not installed (needed for {what}; make -C tools)") from e
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"ffmpeg failed for {what}: {e.stderr.decode(errors='replace')[-300:]}") from e
    return res.stdout
