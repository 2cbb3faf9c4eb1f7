"""Speech-quality fault simulator: noise, distortion and unnatural pauses.

Works on ANY clean waveform (the SQA recipe also uses it to augment real
data).  Every fault records its exact interval on the OUTPUT timeline:

* ``pause``       – 0.4-2.0 s inserted at a low-energy point between words:
  silence, faint room tone, a stutter (a 60-150 ms fragment of the preceding
  speech repeated 2-3 times, then silence) or a truncation (the last 50-150 ms
  of speech before the point cut to silence, then the gap); the interval is
  the silent/stuttered span.
* ``noise``       – white, pink, brown, babble (reversed, shifted copies of the
  speech itself, or other utterances if given), music (synthetic notes and
  drums), mains hum (50/60 Hz with harmonics) or a steady tone, mixed at a
  random SNR over an interval.
* ``distortion``  – hard clipping, bit-crushing (+ sample-and-hold),
  dropouts (lost 20 ms packets zeroed), packet loss with repetition
  concealment (bursty, Gilbert model), band-limiting, warble (modulated
  delay), reverberation (simulated room, :mod:`pyutils.synth.rooms`),
  low-bitrate codecs through ffmpeg (:mod:`pyutils.synth.codecs`) or gain
  jumps over an interval.

Every kind belongs to a *family* (:data:`FAMILIES`); ``exclude`` in
:func:`apply_random_faults` removes kinds, families or whole fault types
(leave-one-family-out training).

:func:`apply_random_faults` draws 0-3 of them; :func:`quality_score` turns
their severities into a reference score in [1, 5] (formula in its docstring).
Pauses are inserted first (they change the timeline); distortion and noise
intervals are then drawn on the final timeline, avoiding the pauses.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import fft, signal

from pyutils.synth import SAMPLE_RATE
from pyutils.synth.audio import active_rms, db_to_amp

FAULT_TYPES = ("noise", "distortion", "pause")
NOISE_KINDS = ("white", "pink", "brown", "babble", "music", "hum", "tone")
DISTORTION_KINDS = ("clipping", "bitcrush", "dropout", "packetloss", "bandlimit", "warble",
                    "reverb", "codec", "gainjump")
PAUSE_KINDS = ("silence", "room", "stutter", "truncation")
# family of each kind: what a leave-one-family-out split holds out together
FAMILIES = {"white": "stationary", "pink": "stationary", "brown": "stationary", "babble": "babble",
            "music": "music", "hum": "tonal", "tone": "tonal",
            "clipping": "clipping", "bitcrush": "clipping", "dropout": "packetloss",
            "packetloss": "packetloss", "bandlimit": "spectral", "warble": "spectral",
            "reverb": "reverb", "codec": "codec", "gainjump": "gainjump",
            "silence": "silence", "room": "silence", "stutter": "stutter", "truncation": "truncation"}
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
def _music(n: int, rng: np.random.Generator, sr: int) -> np.ndarray:
    """Music-like background: pentatonic notes (harmonic, plucked decay) on a beat, plus drums."""
    t_beat = 60.0 / rng.uniform(80, 140)
    root = rng.uniform(110, 220)
    scale = root * 2 ** (np.array([0, 2, 4, 7, 9, 12, 14, 16]) / 12)
    x = np.zeros(n)
    note_n = int(t_beat * sr)
    t = np.arange(note_n) / sr
    for a in range(0, n, note_n):
        for _ in range(int(rng.integers(1, 4))):            # chords of 1-3 notes
            f = scale[int(rng.integers(len(scale)))]
            tone = sum((0.5 ** k) * np.sin(2 * np.pi * f * (k + 1) * t) for k in range(4))
            seg = tone * np.exp(-t * rng.uniform(2, 6))
            m = min(note_n, n - a)
            x[a:a + m] += seg[:m]
        kick = int(0.08 * sr)
        if a + kick <= n:
            tk = np.arange(kick) / sr
            x[a:a + kick] += 1.5 * np.sin(2 * np.pi * 60 * tk) * np.exp(-tk * 40)
        h = a + note_n // 2
        if h + kick <= n:
            x[h:h + kick] += 0.3 * rng.standard_normal(kick) * np.exp(-np.arange(kick) / sr * 80)
    return x


def make_noise(kind: str, n: int, rng: np.random.Generator, sr: int = SAMPLE_RATE,
               speech: Optional[np.ndarray] = None,
               babble_sources: Optional[Sequence[np.ndarray]] = None) -> np.ndarray:
    """Unit-RMS noise of ``kind`` (see :data:`NOISE_KINDS`), ``n`` samples."""
    if kind == "white":
        x = rng.standard_normal(n)
    elif kind == "pink":
        # 1/f power: shape white noise in the frequency domain (scipy.fft: the same
        # pocketfft as numpy's, ~1.6x faster on lengths with large prime factors)
        spec = fft.rfft(rng.standard_normal(n))
        f = np.maximum(np.fft.rfftfreq(n, 1 / sr), 20.0)
        x = fft.irfft(spec / np.sqrt(f), n)
    elif kind == "brown":
        # 1/f^2 power (rumble, traffic-like): integrated white noise, high-passed at 20 Hz
        x = signal.sosfilt(signal.butter(2, 20, btype="high", fs=sr, output="sos"),
                           np.cumsum(rng.standard_normal(n)))
    elif kind == "music":
        x = _music(n, rng, sr)
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
    if kind == "packetloss":
        # Gilbert model: bursts of lost 20 ms packets, each concealed by repeating the last good one
        y = seg.copy()
        pkt = int(0.02 * sr)
        p_loss, p_stay = 0.05 + 0.25 * s, 0.3 + 0.4 * s
        lost, last = False, None
        for i in range(0, len(y), pkt):
            lost = rng.random() < (p_stay if lost else p_loss)
            if lost and last is not None:
                m = min(pkt, len(y) - i)
                y[i:i + m] = last[:m] * 0.7
                last = y[i:i + pkt].copy()
            elif lost:
                y[i:i + pkt] = 0.0
            else:
                last = seg[i:i + pkt].copy()
        return y
    if kind == "reverb":
        from pyutils.synth.rooms import reverberate

        return reverberate(seg, 0.3 + 1.5 * s, rng, sr)          # RT60 0.3 .. 1.8 s
    if kind == "codec":
        from pyutils.synth.codecs import CODEC_NAMES, codec_roundtrip

        return codec_roundtrip(seg, CODEC_NAMES[int(rng.integers(len(CODEC_NAMES)))], s, sr)
    if kind == "gainjump":
        # abrupt level changes every 0.15-0.6 s, up to +/-(4 + 16 s) dB
        y = seg.copy()
        i = 0
        while i < len(y):
            m = int(rng.uniform(0.15, 0.6) * sr)
            y[i:i + m] *= db_to_amp(rng.uniform(-1, 1) * (4 + 16 * s))
            i += m
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
                 kind: str = "silence", sr: int = SAMPLE_RATE, return_span: bool = False):
    """Insert a ``dur`` s pause of ``kind`` (:data:`PAUSE_KINDS`) at sample ``at``.

    ``silence``/``room``: the gap only.  ``stutter``: the 60-150 ms of speech
    before ``at`` repeated 2-3 times (30-60 ms apart) at the start of the gap,
    silence after.  ``truncation``: the 50-150 ms of speech before ``at`` is cut
    to silence (abruptly, no fade), then the gap.  With ``return_span`` also
    returns the labelled ``(start, end)`` samples on the output timeline.
    """
    n = int(round(dur * sr))
    start = at
    x = np.asarray(x, dtype=np.float32)
    if kind in ("silence", "stutter", "truncation"):
        gap = 1e-4 * rng.standard_normal(n)
    elif kind == "room":
        lvl = active_rms(x, sr) * db_to_amp(-rng.uniform(40, 50))
        gap = make_noise("pink", n, rng, sr) * lvl
    else:
        raise ValueError(f"unknown pause kind {kind!r}; known: {PAUSE_KINDS}")
    if kind == "stutter":
        frag = x[max(0, at - int(rng.uniform(0.06, 0.15) * sr)):at].astype(np.float64)
        pos = 0
        for _ in range(int(rng.integers(2, 4))):
            pos += int(rng.uniform(0.03, 0.06) * sr)
            m = min(len(frag), n - pos)
            if m <= 0:
                break
            gap[pos:pos + m] += frag[:m] * (0.5 - 0.5 * np.cos(np.linspace(0, 2 * np.pi, m)))
            pos += m
    if kind == "truncation":
        cut = min(at, int(rng.uniform(0.05, 0.15) * sr))
        x = x.copy()
        x[at - cut:at] = 1e-4 * rng.standard_normal(cut)
        start = at - cut
    y = np.concatenate([x[:at], gap.astype(np.float32), x[at:]]).astype(np.float32)
    return (y, (start, at + n)) if return_span else y


# ----------------------------------------------------------------- the score
def quality_score(details: List[dict], duration: float, rng: Optional[np.random.Generator] = None,
                  jitter: float = 0.08) -> float:
    """Reference MOS-like score in [1, 5] from the faults' severities.

    ``score = 4.6 - sum(penalty) + N(0, jitter)``, clipped to [1, 5], where for a
    fault covering the fraction ``c`` of the recording:

    * noise:      ``2.4 * clip((30 - snr_db) / 30, 0, 1) * (0.4 + 0.6 c)``
    * distortion: ``2.2 * strength * (0.4 + 0.6 c)``   (strength in [0, 1])
    * pause:      ``1.0 * (0.3 + 0.7 * clip(duration_s / 2, 0, 1))``

    Every kind of a type shares its formula: the kind-specific knob is mapped
    onto the one severity first (noise: SNR; distortion: ``strength``, e.g.
    reverb RT60 = 0.3 + 1.5 strength s, codec bitrate from the mildest to the
    harshest of :data:`pyutils.synth.codecs.CODECS`, clipping 3-25 dB below the
    peak; pause: its length).  The score is therefore monotone: it never rises
    when a fault gets more severe, longer, or when a fault is added (before
    the jitter and the clip to [1, 5]; tested).
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
def allowed_kinds(exclude: Sequence[str] = ()) -> Dict[str, Tuple[str, ...]]:
    """Kinds per fault type left after removing ``exclude`` (kinds, families or types)."""
    ex = set(exclude or ())
    unknown = ex - set(FAULT_TYPES) - set(FAMILIES) - set(FAMILIES.values())
    if unknown:
        raise ValueError(f"exclude: unknown fault kinds/families {sorted(unknown)}; known: "
                         f"{sorted(set(FAMILIES) | set(FAMILIES.values()) | set(FAULT_TYPES))}")
    return {t: () if t in ex else tuple(k for k in ks if k not in ex and FAMILIES[k] not in ex)
            for t, ks in (("noise", NOISE_KINDS), ("distortion", DISTORTION_KINDS), ("pause", PAUSE_KINDS))}


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
                        babble_sources=None, exclude: Sequence[str] = ()) -> Tuple[np.ndarray, Dict[str, list], List[dict]]:
    """Apply 0-3 random faults to ``x`` (float, mono, ``sr``).

    Returns ``(audio, intervals, details)``: ``intervals`` is
    ``{"noise": [[s, e], ...], "distortion": [...], "pause": [...]}`` in seconds
    on the output timeline; ``details`` lists each fault with its kind and
    severity (``snr_db`` / ``strength``), as used by :func:`quality_score`.
    ``babble_sources``: other utterances (or a callable returning them) for
    babble noise; by default babble is reversed copies of ``x``.
    ``pause_at`` gives candidate pause positions (samples, e.g. word
    boundaries); by default they are found with :func:`pause_points`.
    ``exclude``: kinds, families (:data:`FAMILIES`) or fault types never to make.
    """
    x = np.asarray(x, dtype=np.float32)
    kinds = allowed_kinds(exclude)
    types = tuple(t for t in types if kinds[t])
    if not types:
        n_faults = 0
        types = FAULT_TYPES
    if n_faults is None:
        n_faults = int(rng.choice(len(p_counts), p=p_counts))
    chosen = [types[int(rng.integers(len(types)))] for _ in range(n_faults)]
    cands = list(pause_at) if pause_at is not None else pause_points(x, sr)
    n_pause = min(chosen.count("pause"), len(cands))
    chosen = [t for t in chosen if t != "pause"]
    fill = [t for t in ("noise", "distortion") if t in types] or ["noise"]
    chosen += [fill[0] if (len(fill) == 1 or rng.random() < 0.5) else fill[1]
               for _ in range(n_faults - len(chosen) - n_pause)]
    if not kinds["noise"] and not kinds["distortion"]:
        chosen = []
    details: List[dict] = []
    level = active_rms(x, sr)
    # pauses first, ascending, tracking how far the later ones shift
    if n_pause:
        at = sorted(int(a) for a in rng.choice(cands, size=n_pause, replace=False))
        shift, y = 0, x
        for a in at:
            dur = float(rng.uniform(0.4, 2.0))
            kind = kinds["pause"][int(rng.integers(len(kinds["pause"])))]
            y, (p0, p1) = insert_pause(y, a + shift, dur, rng, kind, sr, return_span=True)
            n = int(round(dur * sr))
            details.append({"type": "pause", "kind": kind, "start": p0 / sr, "end": p1 / sr})
            shift += n
        x = y
    total = len(x) / sr
    pauses = [(d["start"], d["end"]) for d in details]
    for t in sorted(chosen, key=lambda t: t != "distortion"):   # distortion before noise
        if t == "distortion":
            kind = kinds["distortion"][int(rng.integers(len(kinds["distortion"])))]
            s, e = _pick_interval(total, rng, 0.4, 0.6, pauses)
            strength = float(rng.uniform(0.2, 1.0))
            x = apply_distortion(x, s, e, rng, kind, strength, sr)
            details.append({"type": "distortion", "kind": kind, "start": s, "end": e,
                            "strength": round(strength, 4)})
        else:
            kind = kinds["noise"][int(rng.integers(len(kinds["noise"])))]
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
