"""Low-bitrate speech codecs through ffmpeg (encode, decode, re-align).

Each codec is one ffmpeg argv list (never a shell string): the segment goes in
as raw float32 on stdin, the encoded stream comes back on stdout and is decoded
the same way to 16 kHz.  Encoders add delay (MP3 ~1100 samples), so the decoded
signal is re-aligned to the input by cross-correlation before it is used.

``strength`` in [0, 1] picks the bitrate: 0 = the codec's best setting in the
table, 1 = its worst.  AMR-NB is not here: Debian's ffmpeg has no AMR encoder
(``ffmpeg -encoders`` lists none); G.726 ADPCM stands in as the narrow-band
telephone codec beside GSM 06.10.
"""

from __future__ import annotations

import numpy as np

from pyutils.audio import run_ffmpeg
from pyutils.synth import SAMPLE_RATE

# codec -> (bitrates from mild to harsh, encoder argv taking {br}, container)
CODECS = {
    "mp3": (["32k", "24k", "16k", "8k"], ["-ar", "16000", "-c:a", "libmp3lame", "-b:a", "{br}"], "mp3"),
    "opus": (["16k", "12k", "8k", "6k"], ["-ar", "16000", "-c:a", "libopus", "-b:a", "{br}"], "ogg"),
    "gsm": (["13k"], ["-ar", "8000", "-c:a", "libgsm"], "gsm"),
    "g726": (["32k", "24k", "16k"], ["-ar", "8000", "-c:a", "g726", "-b:a", "{br}"], "wav"),
}
CODEC_NAMES = tuple(CODECS)


def _align(y: np.ndarray, x: np.ndarray, max_lag: int = 4000) -> np.ndarray:
    """``y`` shifted so it best matches ``x`` (lag searched in [0, max_lag]), cut to ``len(x)``."""
    n = len(x)
    if len(y) < n:
        y = np.pad(y, (0, n - len(y)))
    lags = min(max_lag, len(y) - n)
    if lags > 0 and np.any(x):
        from scipy import signal

        c = signal.correlate(y[: n + lags], x, mode="valid")
        lag = int(np.argmax(c))
    else:
        lag = 0
    return y[lag:lag + n]


def codec_roundtrip(x: np.ndarray, codec: str, strength: float = 0.5, sr: int = SAMPLE_RATE) -> np.ndarray:
    """``x`` (mono float, ``sr``) encoded with ``codec`` at the bitrate ``strength`` picks, decoded."""
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; known: {CODEC_NAMES}")
    rates, enc, fmt = CODECS[codec]
    br = rates[min(len(rates) - 1, int(np.clip(strength, 0, 1) * len(rates)))]
    x = np.asarray(x, dtype=np.float32)
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    scale = 0.95 / peak if peak > 0.95 else 1.0
    raw = ["-f", "f32le", "-ar", str(sr), "-ac", "1"]
    coded = run_ffmpeg(raw + ["-i", "pipe:0"] + [a.format(br=br) for a in enc] + ["-f", fmt, "pipe:1"],
                    (x * scale).astype("<f4").tobytes(), f"{codec} at {br}")
    out = run_ffmpeg(["-f", fmt, "-i", "pipe:0"] + raw + ["pipe:1"], coded, f"decoding {codec}")
    y = np.frombuffer(out, dtype="<f4").astype(np.float64) / scale
    return _align(y, x.astype(np.float64)).astype(np.float32)
