"""Physical frame cues for the fault detector (10 ms frames, aligned with the log-mel).

The log-mel alone lets the detector learn the simulator's fault families; these
columns describe *how* the sound in a recording behaves over time, which is
what separates the fault classes across families (``benchmarks/sqa_fault_physics.py``):

* reverberation / echo (distortion): the energy in the gaps between words
  *follows the speech before it*: it decays smoothly from the last syllable's
  level (``lag50``, ``lag100``: correlation of the quiet frames' energy with
  the energy 50 / 100 ms earlier; ``quiet_slope``: mean level slope of the
  quiet frames, negative for a decaying tail, ~0 for a stationary floor;
  ``smooth``: mean distance in dB of the level from its local 90 ms straight
  line: level fluctuation and curvature, lowest for reverberation among the
  corpus' kinds, but not on a white noise floor, which is steadier);
* additive noise: a floor under the speech that does not depend on it
  (``floor``: 10th minus 90th level percentile of the window; ``dyn``: level
  spread; ``flat``: spectral flatness);
* speech modulation: clean speech has most of its envelope modulation at
  2-8 Hz, a filled floor flattens it (``mod_low``, ``mod_high``, two bands);
* several voices at once (babble): after cancelling the strongest periodic
  source of a frame (comb filter at its period, de Cheveigné's cancellation),
  a single voice leaves little and aperiodic energy, a second talker leaves a
  periodic residual (``harm``: normalised autocorrelation peak at 80-400 Hz,
  ``res_harm``: the same of the residual, ``res_db``: residual / frame energy).

Everything is relative (dB differences, correlations, ratios), so the columns
do not depend on the recording's gain.  Windowed statistics use +-0.5 s around
the frame.  Written with numpy only (no library computes these together), on
sliding-window views so one recording of a few seconds takes a few ms.
"""

from __future__ import annotations

import numpy as np

HOP = 160                   # 10 ms at 16 kHz, the log-mel hop
SR = 16000
CUE_NAMES = ("e_rel", "slope", "slope_low", "slope_high", "below_peak", "lag50", "lag100",
             "quiet_slope", "smooth", "floor", "dyn", "mod_low", "mod_high", "flat", "harm", "res_harm", "res_db")
NUM_CUES = len(CUE_NAMES)
HALF = 50                   # window half-width for the windowed statistics: 0.5 s
MOD_WIN = 128               # modulation window: 1.28 s of 10 ms frames
PITCH_WIN = 640             # 40 ms analysis frame for the periodicity cues
LAG_MIN, LAG_MAX = 40, 200  # pitch periods of 400 .. 80 Hz in samples
FLOOR_DB = -100.0


def _frames(x: np.ndarray, n: int, width: int) -> np.ndarray:
    """(n, width) frames centred at ``j * HOP`` (zero padding at the edges)."""
    pad = width // 2
    xp = np.pad(x, (pad, pad + width))
    return np.lib.stride_tricks.sliding_window_view(xp, width)[::HOP][:n]


def _band_db(x: np.ndarray, n: int) -> np.ndarray:
    """(n, 3) level in dB of the whole band, < 1.5 kHz and > 1.5 kHz (25 ms Hann, 10 ms hop)."""
    fr = _frames(x, n, 400) * np.hanning(401)[:-1]
    spec = np.abs(np.fft.rfft(fr, n=512)) ** 2
    f = np.fft.rfftfreq(512, 1 / SR)
    low = f < 1500
    bands = np.stack([spec.sum(1), spec[:, low].sum(1), spec[:, ~low].sum(1)], 1) / 400.0
    db = np.maximum(10 * np.log10(bands + 1e-12), FLOOR_DB)
    sp = spec[:, (f > 100) & (f < 7000)] + 1e-12
    flat = np.exp(np.log(sp).mean(1)) / sp.mean(1)
    return db, flat


def _slope(e: np.ndarray, k: int = 2) -> np.ndarray:
    """Least-squares slope (dB per 10 ms) of ``e`` over frames t-k .. t+k (edge padded)."""
    ep = np.pad(e, (k, k), mode="edge")
    w = np.lib.stride_tricks.sliding_window_view(ep, 2 * k + 1)
    t = np.arange(-k, k + 1, dtype=np.float64)
    return (w * t).sum(1) / (t ** 2).sum()


def _line_residual(e: np.ndarray, k: int = 4) -> np.ndarray:
    """Mean absolute distance (dB) of ``e`` from its least-squares line over frames t-k .. t+k."""
    w = _windows(e, k)
    t = np.arange(-k, k + 1, dtype=np.float64)
    return np.abs(w - w.mean(1, keepdims=True) - _slope(e, k)[:, None] * t).mean(1)


def _windows(v: np.ndarray, half: int = HALF) -> np.ndarray:
    """(n, 2*half+1) centred windows of ``v`` (edge padded)."""
    return np.lib.stride_tricks.sliding_window_view(np.pad(v, (half, half), mode="edge"), 2 * half + 1)


def _quiet_lag_corr(e: np.ndarray, lag: int, quiet: np.ndarray) -> np.ndarray:
    """Per frame: correlation over the window's quiet frames of e(t) with e(t - lag)."""
    prev = np.concatenate([np.full(lag, e[0]), e[:-lag]]) if lag < len(e) else np.full_like(e, e[0])
    a, b = _windows(e), _windows(prev)
    w = quiet.astype(np.float64)
    cnt = np.maximum(w.sum(1), 1.0)
    ma, mb = (a * w).sum(1) / cnt, (b * w).sum(1) / cnt
    da, db = (a - ma[:, None]) * w, (b - mb[:, None]) * w
    cov = (da * db).sum(1)
    var = np.sqrt((da ** 2).sum(1) * (db ** 2).sum(1))
    out = np.where(var > 1e-6, cov / np.maximum(var, 1e-12), 0.0)
    return np.where(cnt >= 5, out, 0.0)


def _modulation(e: np.ndarray) -> np.ndarray:
    """Share of the envelope's 1-50 Hz modulation energy at 2-8 Hz, in a 1.28 s window."""
    env = 10 ** (e / 20.0)                       # amplitude envelope
    half = MOD_WIN // 2
    w = np.lib.stride_tricks.sliding_window_view(np.pad(env, (half, half - 1), mode="edge"), MOD_WIN)
    w = (w - w.mean(1, keepdims=True)) * np.hanning(MOD_WIN)
    p = np.abs(np.fft.rfft(w, axis=1)) ** 2
    f = np.fft.rfftfreq(MOD_WIN, 0.01)
    speech = p[:, (f >= 2) & (f <= 8)].sum(1)
    total = p[:, (f >= 1) & (f <= 50)].sum(1)
    return np.where(total > 1e-20, speech / np.maximum(total, 1e-30), 0.0)


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


def _periodicity(x: np.ndarray, n: int) -> np.ndarray:
    """(n, 3): harmonicity, residual harmonicity after cancelling the main period, residual dB."""
    width = PITCH_WIN + LAG_MAX
    xp = np.pad(x, (PITCH_WIN // 2 + LAG_MAX, PITCH_WIN // 2 + width))
    fr = np.lib.stride_tricks.sliding_window_view(xp, width)[::HOP][:n]   # LAG_MAX history + frame
    cur = fr[:, LAG_MAX:]
    win = np.hanning(PITCH_WIN + 1)[:-1]

    def acf_peak(sig):
        r, ac0 = _normalised_acf(sig, win, LAG_MAX + 1)
        seg = r[:, LAG_MIN:LAG_MAX + 1]
        k = seg.argmax(1)
        peak = np.clip(seg[np.arange(len(seg)), k], 0.0, 1.0)
        return np.where(ac0 > 1e-9, peak, 0.0), k + LAG_MIN

    harm, period = acf_peak(cur)
    idx = np.arange(PITCH_WIN)[None, :] + LAG_MAX - period[:, None]
    res = cur - np.take_along_axis(fr, idx, axis=1)                   # x[n] - x[n - T0]
    res_harm, _ = acf_peak(res)
    e_cur = (cur ** 2).sum(1)
    res_db = 10 * np.log10(((res ** 2).sum(1) + 1e-10) / (e_cur + 1e-10))
    res_db = np.where(e_cur > 1e-7, np.clip(res_db, -30.0, 10.0), 0.0)
    return np.stack([harm, res_harm, res_db], 1)


PITCH_COLS = ("voicing", "log_period_delta")


PITCH_RATES = (16000, 8000)   # analysis rates of pitch_track (Hz)


def pitch_track(x: np.ndarray, n_frames: int | None = None, rate: int = 16000) -> np.ndarray:
    """(n_frames, 2) float32 pitch contour at 10 ms: voicing strength (normalised autocorrelation
    peak at 80-400 Hz, 40 ms frames) and the change of the log pitch period from the previous
    frame (the lag refined by a parabola through the peak; 0 unless both frames are voiced, peak
    >= 0.5). A vibrato (warble, wow) is a 4-8 Hz sinusoid on this delta, whatever the harmonic it
    shows in. The pitch level itself (its deviation from the recording's median) is left out: a
    real talker's own intonation moves it as much as a fault does, and with it the model lost on
    real speech (egs/sqa/RESULTS.md).

    ``x`` is 16 kHz. ``rate`` 8000 analyses it decimated by 2 (``scipy.signal.resample_poly``;
    the same 40 ms frames and 80-400 Hz lags in half the samples, a 512- instead of a 1024-point
    FFT): about 2x cheaper; the log-period change does not depend on the rate, the values
    differ only by the decimation and the coarser lag grid."""
    x = np.asarray(x, dtype=np.float64)
    n = 1 + len(x) // HOP if n_frames is None else int(n_frames)
    if n <= 0:
        return np.zeros((0, len(PITCH_COLS)), dtype=np.float32)
    if rate not in PITCH_RATES:
        raise ValueError(f"pitch rate {rate!r}: one of {PITCH_RATES}")
    d = 16000 // int(rate)                      # decimation factor: 1 or 2
    if d > 1:
        from scipy.signal import resample_poly

        x = resample_poly(x, 1, d)
    win, hop, lag_min, lag_max = PITCH_WIN // d, HOP // d, LAG_MIN // d, LAG_MAX // d
    xp = np.pad(x, (win // 2, win // 2 + win))
    fr = np.lib.stride_tricks.sliding_window_view(xp, win)[::hop][:n]
    if len(fr) < n:                             # resample_poly may round a sample off the end
        fr = np.concatenate([fr, np.zeros((n - len(fr), win))])
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


def frame_cues(x: np.ndarray, n_frames: int | None = None) -> np.ndarray:
    """(n_frames, NUM_CUES) float32 cue columns of ``x`` (16 kHz mono) at 10 ms, frame ``j``
    centred at ``j * 10 ms`` (``n_frames`` defaults to ``1 + len(x) // 160``, the log-mel's)."""
    x = np.asarray(x, dtype=np.float64)
    n = 1 + len(x) // HOP if n_frames is None else int(n_frames)
    if n <= 0:
        return np.zeros((0, NUM_CUES), dtype=np.float32)
    db, flat = _band_db(x, n)
    e = db[:, 0]
    win = _windows(e)
    p90 = np.percentile(win, 90, axis=1)
    p10 = np.percentile(win, 10, axis=1)
    quiet = win <= np.median(win, axis=1, keepdims=True)
    slope = _slope(e)
    e_rel = e - p90                                                       # level under the local peaks
    past = np.lib.stride_tricks.sliding_window_view(np.pad(e, (30, 0), mode="edge"), 31).max(1)
    below_peak = e - past                                                 # dB under the last 300 ms's peak
    quiet_slope = (_windows(slope) * quiet).sum(1) / np.maximum(quiet.sum(1), 1)
    cols = [np.maximum(e_rel, -60.0), slope, _slope(db[:, 1]), _slope(db[:, 2]),
            np.maximum(below_peak, -60.0),
            _quiet_lag_corr(e, 5, quiet), _quiet_lag_corr(e, 10, quiet), quiet_slope,
            np.minimum(_line_residual(e), 30.0),
            np.maximum(p10 - p90, -60.0), win.std(1),
            _modulation(db[:, 1]), _modulation(db[:, 2]),
            np.log(np.maximum(flat, 1e-6))]
    out = np.concatenate([np.stack(cols, 1), _periodicity(x, n)], 1)
    # a silent recording gives constant levels; keep every column finite
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)


def context_mean(cues: np.ndarray, half: int) -> np.ndarray:
    """(n, k) float32: each column's mean over frames t-half .. t+half (cut at the edges).

    The frame cues separate the fault families well averaged over a fault's interval
    but poorly per frame; these columns give the detector that longer view (+-1.5 s
    with ``half`` 150).  Cumulative sums, so the cost does not grow with ``half``.
    """
    c = np.asarray(cues, dtype=np.float64)
    n = len(c)
    if n == 0 or half <= 0:
        return np.asarray(c, dtype=np.float32).copy()
    cs = np.concatenate([np.zeros((1, c.shape[1])), np.cumsum(c, axis=0)])
    lo = np.clip(np.arange(n) - half, 0, n)
    hi = np.clip(np.arange(n) + half + 1, 0, n)
    return ((cs[hi] - cs[lo]) / (hi - lo)[:, None]).astype(np.float32)

