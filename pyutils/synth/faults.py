"""Speech-quality fault simulator: noise, distortion and unnatural pauses.

Works on ANY clean waveform (the SQA recipe also uses it to augment real
data).  Every fault records its exact interval on the OUTPUT timeline:

* ``pause``       – 0.4-2.0 s of silence or faint room tone inserted at a
  low-energy point between words; the interval is the inserted span.
* ``noise``       – white, pink, babble (reversed, shifted copies of the
  speech itself, or other utterances if given), mains hum (50/60 Hz with
  harmonics) or a steady tone, mixed at a random SNR over an interval.
* ``distortion``  – hard clipping, bit-crushing (+ sample-and-hold),
  packet-loss dropouts, band-limiting, or warble (modulated delay) over an
  interval.

:func:`apply_random_faults` draws 0-3 of them; :func:`quality_score` turns
their severities into a reference score in [1, 5] (formula in its docstring).
Pauses are inserted first (they change the timeline); distortion and noise
intervals are then drawn on the final timeline, avoiding the pauses.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import signal

from pyutils.synth import SAMPLE_RATE
from pyutils.synth.audio import active_rms, db_to_amp

FAULT_TYPES = ("noise", "distortion", "pause")
NOISE_KINDS = ("white", "pink", "babble", "hum", "tone")
DISTORTION_KINDS = ("clipping", "bitcrush", "dropout", "bandlimit", "warble")
RAMP_S = 0.005


def _ramp_mask(n: int, a: int, b: int, sr: int) -> np.ndarray:
    """1 inside [a, b), 0 outside, with 5 ms raised-cosine edges inside the interval."""
    m = np.zeros(n)
    m[a:b] = 1.0
    r = min(int(RAMP_S * sr), (b - a) // 2)
    if r > 0:
        w = 0.5 - 0.5 * np.cos(np.linspace(0, np.pi, r))
        m[a:a + r] = w
        m[b - r:b] = w[::-1]
    return m


# ---------------------------------------------------------------------- noise
def make_noise(kind: str, n: int, rng: np.random.Generator, sr: int = SAMPLE_RATE,
               speech: Optional[np.ndarray] = None,
               babble_sources: Optional[Sequence[np.ndarray]] = None) -> np.ndarray:
    """Unit-RMS noise of ``kind`` (see :data:`NOISE_KINDS`), ``n`` samples."""
    if kind == "white":
        x = rng.standard_normal(n)
    elif kind == "pink":
        # 1/f power: shape white noise in the frequency domain
        spec = np.fft.rfft(rng.standard_normal(n))
        f = np.maximum(np.fft.rfftfreq(n, 1 / sr), 20.0)
        x = np.fft.irfft(spec / np.sqrt(f), n)
    elif kind == "babble":
        if callable(babble_sources):          # lazily made (synthesis is costly)
            babble_sources = babble_sources()
        srcs = list(babble_sources or [])
        if not srcs:
            if speech is None or len(speech) == 0:
                raise ValueError("babble noise needs speech or babble_sources")
            srcs = [speech[::-1]] * 4          # reversed speech: speech-like, unintelligible
        x = np.zeros(n)
        for s in srcs:
            s = np.asarray(s, dtype=np.float64)
            if len(s) == 0:
                continue
            reps = int(np.ceil(n / len(s))) + 1
            t = np.tile(s, reps)
            off = int(rng.integers(len(s)))
            x += t[off:off + n] / (np.sqrt(np.mean(s ** 2)) + 1e-9)
    elif kind == "hum":
        t = np.arange(n) / sr
        f0 = 50.0 if rng.random() < 0.5 else 60.0
        x = sum((0.6 ** k) * np.sin(2 * np.pi * f0 * (k + 1) * t + rng.uniform(0, 6.3))
                for k in range(6))
    elif kind == "tone":
        t = np.arange(n) / sr
        x = np.sin(2 * np.pi * rng.uniform(400, 3000) * t)
    else:
        raise ValueError(f"unknown noise kind {kind!r}; known: {NOISE_KINDS}")
    x = np.asarray(x, dtype=np.float64)
    return x / (np.sqrt(np.mean(x ** 2)) + 1e-12)


def apply_noise(x: np.ndarray, start: float, end: float, rng: np.random.Generator,
                kind: str = "white", snr_db: float = 10.0, sr: int = SAMPLE_RATE,
                babble_sources=None, speech_level: Optional[float] = None) -> np.ndarray:
    """Add ``kind`` noise over [start, end) s at ``snr_db`` relative to the active speech level."""
    a, b = int(round(start * sr)), int(round(end * sr))
    level = speech_level if speech_level is not None else active_rms(x, sr)
    noise = make_noise(kind, b - a, rng, sr, speech=x, babble_sources=babble_sources)
    y = x.astype(np.float64).copy()
    y[a:b] += noise * level * db_to_amp(-snr_db) * _ramp_mask(len(x), a, b, sr)[a:b]
    return y.astype(np.float32)


# ----------------------------------------------------------------- distortion
def _distort(seg: np.ndarray, kind: str, strength: float, rng, sr: int) -> np.ndarray:
    s = float(np.clip(strength, 0.0, 1.0))
    peak = float(np.abs(seg).max()) + 1e-9
    if kind == "clipping":
        lim = peak * db_to_amp(-(3 + 22 * s))          # clip 3..25 dB below the peak
        return np.clip(seg, -lim, lim) * (peak / lim) ** 0.5
    if kind == "bitcrush":
        bits = int(round(10 - 7 * s))                   # 10 .. 3 bits
        hold = 1 + int(round(5 * s))                    # sample-and-hold: 16k .. 2.7k
        y = np.repeat(seg[::hold], hold)[: len(seg)]
        q = 2.0 ** (bits - 1)
        return np.round(y / peak * q) / q * peak
    if kind == "dropout":
        y = seg.copy()
        pkt = int(0.02 * sr)                            # 20 ms packets
        loss = 0.1 + 0.5 * s
        for i in range(0, len(y), pkt):
            if rng.random() < loss:
                y[i:i + pkt] = 0.0
        return y
    if kind == "bandlimit":
        fc = 3500 - 2900 * s                            # telephone .. muffled (600 Hz)
        sos = signal.butter(6, [min(300, fc / 2), fc], btype="band", fs=sr, output="sos")
        return signal.sosfilt(sos, seg)
    if kind == "warble":
        t = np.arange(len(seg)) / sr
        depth = (0.5 + 3.5 * s) * 1e-3 * sr             # 0.5 .. 4 ms delay swing
        d = depth * (1 + np.sin(2 * np.pi * rng.uniform(4, 8) * t))
        idx = np.clip(np.arange(len(seg)) - d, 0, len(seg) - 1)
        return np.interp(idx, np.arange(len(seg)), seg)
    raise ValueError(f"unknown distortion kind {kind!r}; known: {DISTORTION_KINDS}")


def apply_distortion(x: np.ndarray, start: float, end: float, rng: np.random.Generator,
                     kind: str = "clipping", strength: float = 0.5,
                     sr: int = SAMPLE_RATE) -> np.ndarray:
    """Replace [start, end) s by its distorted version (cross-faded over 5 ms)."""
    a, b = int(round(start * sr)), int(round(end * sr))
    y = x.astype(np.float64).copy()
    d = _distort(y[a:b], kind, strength, rng, sr)
    m = _ramp_mask(len(x), a, b, sr)[a:b]
    y[a:b] = m * d + (1 - m) * y[a:b]
    return y.astype(np.float32)


# ---------------------------------------------------------------------- pause
def pause_points(x: np.ndarray, sr: int = SAMPLE_RATE, margin_s: float = 0.3) -> List[int]:
    """Candidate insertion points: local minima of 20 ms energy inside the speech.

    Only frames between the first and last active frame (30 dB below the peak),
    at least ``margin_s`` from them, and quieter than the median, are kept: these
    are word gaps/closures, not the middle of a vowel.
    """
    n = int(0.02 * sr)
    m = len(x) // n
    if m < 5:
        return []
    e = np.sqrt(np.mean(np.square(x[: m * n].reshape(m, n), dtype=np.float64), axis=1) + 1e-12)
    act = np.nonzero(e > e.max() * db_to_amp(-30))[0]
    if len(act) == 0:
        return []
    lo, hi = act[0] + int(margin_s * sr / n), act[-1] - int(margin_s * sr / n)
    med = np.median(e[act[0]:act[-1] + 1])
    pts = [i for i in range(max(lo, 1), min(hi, m - 1))
           if e[i] <= e[i - 1] and e[i] <= e[i + 1] and e[i] < med]
    return [i * n + n // 2 for i in pts]


def insert_pause(x: np.ndarray, at: int, dur: float, rng: np.random.Generator,
                 kind: str = "silence", sr: int = SAMPLE_RATE) -> np.ndarray:
    """Insert ``dur`` s of silence (``kind='silence'``) or faint room tone at sample ``at``."""
    n = int(round(dur * sr))
    if kind == "silence":
        gap = 1e-4 * rng.standard_normal(n)
    elif kind == "room":
        lvl = active_rms(x, sr) * db_to_amp(-rng.uniform(40, 50))
        gap = make_noise("pink", n, rng, sr) * lvl
    else:
        raise ValueError(f"unknown pause kind {kind!r} (silence, room)")
    return np.concatenate([x[:at], gap.astype(np.float32), x[at:]]).astype(np.float32)


# ----------------------------------------------------------------- the score
def quality_score(details: List[dict], duration: float, rng: Optional[np.random.Generator] = None,
                  jitter: float = 0.08) -> float:
    """Reference MOS-like score in [1, 5] from the faults' severities.

    ``score = 4.6 - sum(penalty) + N(0, jitter)``, clipped to [1, 5], where for a
    fault covering the fraction ``c`` of the recording:

    * noise:      ``2.4 * clip((30 - snr_db) / 30, 0, 1) * (0.4 + 0.6 c)``
    * distortion: ``2.2 * strength * (0.4 + 0.6 c)``   (strength in [0, 1])
    * pause:      ``1.0 * (0.3 + 0.7 * clip(duration_s / 2, 0, 1))``
    """
    pen = 0.0
    for d in details:
        c = min(1.0, (d["end"] - d["start"]) / max(duration, 1e-6))
        if d["type"] == "noise":
            pen += 2.4 * float(np.clip((30 - d["snr_db"]) / 30, 0, 1)) * (0.4 + 0.6 * c)
        elif d["type"] == "distortion":
            pen += 2.2 * d["strength"] * (0.4 + 0.6 * c)
        elif d["type"] == "pause":
            pen += 1.0 * (0.3 + 0.7 * float(np.clip((d["end"] - d["start"]) / 2, 0, 1)))
    noise = rng.normal(0, jitter) if (rng is not None and jitter > 0) else 0.0
    return float(np.clip(4.6 - pen + noise, 1.0, 5.0))


# ------------------------------------------------------------- random faults
def _pick_interval(total: float, rng, min_s: float, max_frac: float,
                   avoid: List[Tuple[float, float]]) -> Tuple[float, float]:
    """Random interval of [min_s, max_frac*total] s not overlapping ``avoid``.

    After 20 rejected draws it falls back to a random interval inside the
    longest stretch free of ``avoid`` (so labels of different faults stay apart).
    """
    for _ in range(20):
        length = min(total, rng.uniform(min(min_s, total), max(min_s, max_frac * total)))
        s = rng.uniform(0, total - length)
        if all(s >= b or s + length <= a for a, b in avoid):
            return s, s + length
    edges = [0.0] + [t for a, b in sorted(avoid) for t in (a, b)] + [total]
    free = [(edges[i], edges[i + 1]) for i in range(0, len(edges), 2) if edges[i + 1] > edges[i]]
    a, b = max(free, key=lambda ab: ab[1] - ab[0])
    length = min(b - a, max(0.05, rng.uniform(min_s / 2, min_s)))
    s = rng.uniform(a, b - length)
    return s, s + length


def apply_random_faults(x: np.ndarray, rng: np.random.Generator, sr: int = SAMPLE_RATE,
                        n_faults: Optional[int] = None, p_counts=(0.2, 0.35, 0.3, 0.15),
                        types: Sequence[str] = FAULT_TYPES, pause_at: Optional[Sequence[int]] = None,
                        babble_sources=None) -> Tuple[np.ndarray, Dict[str, list], List[dict]]:
    """Apply 0-3 random faults to ``x`` (float, mono, ``sr``).

    Returns ``(audio, intervals, details)``: ``intervals`` is
    ``{"noise": [[s, e], ...], "distortion": [...], "pause": [...]}`` in seconds
    on the output timeline; ``details`` lists each fault with its kind and
    severity (``snr_db`` / ``strength``), as used by :func:`quality_score`.
    ``babble_sources``: other utterances (or a callable returning them) for
    babble noise; by default babble is reversed copies of ``x``.
    ``pause_at`` gives candidate pause positions (samples, e.g. word
    boundaries); by default they are found with :func:`pause_points`.
    """
    x = np.asarray(x, dtype=np.float32)
    if n_faults is None:
        n_faults = int(rng.choice(len(p_counts), p=p_counts))
    chosen = [types[int(rng.integers(len(types)))] for _ in range(n_faults)]
    cands = list(pause_at) if pause_at is not None else pause_points(x, sr)
    n_pause = min(chosen.count("pause"), len(cands))
    chosen = [t for t in chosen if t != "pause"]
    chosen += ["noise" if rng.random() < 0.5 else "distortion"
               for _ in range(n_faults - len(chosen) - n_pause)]
    details: List[dict] = []
    level = active_rms(x, sr)
    # pauses first, ascending, tracking how far the later ones shift
    if n_pause:
        at = sorted(int(a) for a in rng.choice(cands, size=n_pause, replace=False))
        shift, y = 0, x
        for a in at:
            dur = float(rng.uniform(0.4, 2.0))
            kind = "silence" if rng.random() < 0.5 else "room"
            y = insert_pause(y, a + shift, dur, rng, kind, sr)
            n = int(round(dur * sr))
            details.append({"type": "pause", "kind": kind, "start": (a + shift) / sr,
                            "end": (a + shift + n) / sr})
            shift += n
        x = y
    total = len(x) / sr
    pauses = [(d["start"], d["end"]) for d in details]
    for t in sorted(chosen, key=lambda t: t != "distortion"):   # distortion before noise
        if t == "distortion":
            kind = DISTORTION_KINDS[int(rng.integers(len(DISTORTION_KINDS)))]
            s, e = _pick_interval(total, rng, 0.4, 0.6, pauses)
            strength = float(rng.uniform(0.2, 1.0))
            x = apply_distortion(x, s, e, rng, kind, strength, sr)
            details.append({"type": "distortion", "kind": kind, "start": s, "end": e,
                            "strength": round(strength, 4)})
        else:
            kind = NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))]
            s, e = _pick_interval(total, rng, 0.5, 1.0, pauses)
            snr = float(rng.uniform(0, 25))
            x = apply_noise(x, s, e, rng, kind, snr, sr, babble_sources, speech_level=level)
            details.append({"type": "noise", "kind": kind, "start": s, "end": e,
                            "snr_db": round(snr, 3)})
    peak = float(np.abs(x).max())
    if peak > 0.99:                                   # keep PCM16 safe without hard clipping
        x = x * (0.99 / peak)
    intervals: Dict[str, list] = {t: [] for t in FAULT_TYPES}
    for d in sorted(details, key=lambda d: d["start"]):
        d["start"], d["end"] = round(d["start"], 4), round(d["end"], 4)
        intervals[d["type"]].append([d["start"], d["end"]])
    return x.astype(np.float32), intervals, details
