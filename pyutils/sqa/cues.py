"""The pitch contour appended to the SQA log-mel (10 ms frames, aligned with it).

:func:`pitch_track` gives two columns per frame: the voicing strength (normalised
autocorrelation peak at 80-400 Hz) and the change of the log pitch period from the
previous frame; a vibrato fault (warble, wow) is a 4-8 Hz sinusoid on the second.
Written with numpy only, on sliding-window views of 40 ms frames.
"""

from __future__ import annotations

import numpy as np

HOP = 160                   # 10 ms at 16 kHz, the log-mel hop
PITCH_WIN = 640             # 40 ms analysis frame
LAG_MIN, LAG_MAX = 40, 200  # pitch periods of 400 .. 80 Hz in samples


def _normalised_acf(frames: np.ndarray, win: np.ndarray, lags: int) -> tuple:
    """Autocorrelation of each mean-removed, windowed frame at lags 0..``lags - 1``, divided by
    its lag-0 value and by the window's own autocorrelation (Boersma's correction) -> (r, ac0).
    The FFT is the shortest power of two >= frame + lags, so no circular wrap reaches the lags
    kept (for the 40 ms frames 1024 points: 2.7x cheaper than 2048, equal to ~1e-13)."""
    nfft = 1 << int(np.ceil(np.log2(frames.shape[1] + lags)))
    s = (frames - frames.mean(1, keepdims=True)) * win
    ac = np.fft.irfft(np.abs(np.fft.rfft(s, n=nfft)) ** 2)[:, :lags]
    wac = np.fft.irfft(np.abs(np.fft.rfft(win, n=nfft)) ** 2)[:lags]
    return ac / np.maximum(ac[:, :1], 1e-12) / (wac / wac[0]), ac[:, 0]


PITCH_COLS = ("voicing", "log_period_delta")




def pitch_track(x: np.ndarray, n_frames: int | None = None) -> np.ndarray:
    """(n_frames, 2) float32 pitch contour at 10 ms: voicing strength (normalised autocorrelation
    peak at 80-400 Hz, 40 ms frames) and the change of the log pitch period from the previous
    frame (the lag refined by a parabola through the peak; 0 unless both frames are voiced, peak
    >= 0.5). A vibrato (warble, wow) is a 4-8 Hz sinusoid on this delta, whatever the harmonic it
    shows in. The pitch level itself (its deviation from the recording's median) is left out: a
    real talker's own intonation moves it as much as a fault does, and with it the model lost on
    real speech (egs/sqa/RESULTS.md).

    ``x`` is 16 kHz."""
    x = np.asarray(x, dtype=np.float64)
    n = 1 + len(x) // HOP if n_frames is None else int(n_frames)
    if n <= 0:
        return np.zeros((0, len(PITCH_COLS)), dtype=np.float32)
    win, hop, lag_min, lag_max = PITCH_WIN, HOP, LAG_MIN, LAG_MAX
    xp = np.pad(x, (win // 2, win // 2 + win))
    fr = np.lib.stride_tricks.sliding_window_view(xp, win)[::hop][:n]
    r, ac0 = _normalised_acf(fr, np.hanning(win + 1)[:-1], lag_max + 2)   # one lag more: parabola
    k = r[:, lag_min:lag_max + 1].argmax(1) + lag_min
    rows = np.arange(n)
    peak = np.where(ac0 > 1e-9, np.clip(r[rows, k], 0.0, 1.0), 0.0)
    a, b, c = r[rows, k - 1], r[rows, k], r[rows, k + 1]
    den = a - 2 * b + c
    shift = np.where(np.abs(den) > 1e-9, np.clip(0.5 * (a - c) / np.where(den == 0, 1, den), -0.5, 0.5), 0.0)
    logp = np.log(k + shift)
    voiced = peak >= 0.5
    delta = np.zeros(n)
    both = voiced[1:] & voiced[:-1]
    delta[1:] = np.where(both, logp[1:] - logp[:-1], 0.0)
    out = np.stack([peak, np.clip(delta, -0.5, 0.5)], 1)
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
