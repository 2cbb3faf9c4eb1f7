#!/usr/bin/env python3
"""SQA on faults made by foreign code: audiomentations on real speech never trained on.

An offline proxy of an outside evaluation whose faults come from code other than
our simulator (``pyutils/synth/faults.py``).  Nothing here calls that simulator.

Data (``--out``, default ``egs/sqa/exp/sqa_foreign/data``): ``--num`` recordings
made from the real human clips of Debian's ``pocketsphinx-testdata`` (the clips
of ``test_real``; :mod:`pyutils.corpora.pocketsphinx_testdata`), each clip used
several times.  Per recording 0-2 faults of distinct types (about 15 % clean):

* noise (audiomentations): ``AddGaussianSNR``, ``AddColorNoise`` (pink, brown, blue);
* distortion (audiomentations): ``ClippingDistortion``, ``BitCrush``,
  ``LowPassFilter``, ``BandPassFilter``, ``Aliasing``, ``TanhDistortion``,
  ``Mp3Compression`` (8-32 kbps, lameenc backend; the codec delay, measured once per
  bitrate by cross-correlating a fixed probe, is trimmed so nothing is shifted) and
  ``ApplyImpulseResponse`` (reverberation; impulse responses made here, no downloads:
  a direct-path impulse at t = 0 plus exponentially decaying Gaussian noise with RT60
  0.3-1.2 s, written as 16 kHz WAVs under ``--out``/ir; the output is brought back to
  the input's peak, undoing the library's peak-0.5 normalisation);
* pause: 0.3-1.5 s of digital silence or room tone (Gaussian noise at the clip's
  own quiet-frame level) inserted at a quiet point between words.

Noise and distortion are applied to one random interval ``[s, e]`` (whole
milliseconds) only: the transform runs on ``[s - 10 ms, e + 10 ms]`` and is
cross-faded in linearly over those 10 ms outside the label, so every sample
inside ``[s, e]`` is the transform's output and every sample outside
``[s - 10 ms, e + 10 ms]`` is untouched.  A reverb tail that would ring past
``e + 10 ms`` is cut there (the library keeps the length; the cross-fade ends it),
so the label stays exactly ``[s, e]``.  Skipped transforms: ``RoomSimulator``
(needs pyroomacoustics, an extra; ``ApplyImpulseResponse`` with our own impulse
responses stands in), ``AddBackgroundNoise``, ``AddShortNoises`` (need sound files).

Reference score: :func:`quality_score` (its docstring has the formula), an
independent severity model.  Files: ``wav/*.wav`` (16 kHz mono 16-bit),
``wav.scp``, ``ref.jsonl`` (``chorus-score sqa`` format), ``ir/*.wav`` (the impulse
responses, 32-bit float), ``faults.jsonl`` (each fault's type, transform,
parameters, interval).

Evaluation, per ``--model-dir`` (repeatable; each needs ``model.pt``,
``postproc.json`` and ``.train.done``): features and utterance embeddings are
dumped with the configuration stored in the model (``extra.features`` /
``extra.embed`` of ``model.pt``; else the ``feats_config.json`` /
``embed_config.json`` of ``<recipe>/dump/test``), through the recipe's own
entry points (:func:`pyutils.sqa.features.dump`, :func:`pyutils.sqa.embed.dump`,
as stage 2; one dump per distinct configuration, reused while the data are the
same), then ``python -m pyutils.sqa.infer`` with the model's ``postproc.json``
and ``chorus-score sqa``.  DNSMOS P.835 OVRL (:mod:`pyutils.sqa.baselines`)
against the same reference scores is the anchor.  Printed: a table of Final,
PCC, F1/IoU per fault, macros and the DNSMOS PCC per model, then per transform
the recall of its fault type, how often the other class (noise <-> distortion)
was called instead, and its mean frame IoU; ``--work``/results.json holds it all
(written atomically).

    PYTHONPATH=. tools/venv/bin/python benchmarks/sqa_foreign_faults.py --num 120 --seed 0
        --model-dir egs/sqa/exp/sqa_default [--model-dir OTHER ...]

One script on purpose (past ~500 lines): the foreign fault makers, their exact intervals
and the scoring of the recipe's models against DNSMOS are one evaluation, run as one
command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from functools import lru_cache

import numpy as np

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from pyutils.scoring.sqa import pearson  # noqa: E402
from pyutils.sqa.common import FAULTS, SAMPLE_RATE, rasterise  # noqa: E402
from pyutils.io import atomic_write_text as write_text_atomic, read_jsonl, read_scp, write_jsonl  # noqa: E402

SR = SAMPLE_RATE
FADE_S = 0.010
CLEAN_MOS = 4.5
WEIGHTS = {"noise": 2.0, "distortion": 2.2, "pause": 1.2}
N_FAULTS_P = (0.15, 0.5, 0.35)   # P(0, 1, 2 faults)
NOISE_KINDS = ("gaussian", "pink", "brown", "blue")
DISTORTIONS = ("ClippingDistortion", "BitCrush", "LowPassFilter", "BandPassFilter", "Aliasing",
               "TanhDistortion", "Mp3Compression", "ApplyImpulseResponse")
MP3_BITRATES = (8, 16, 24, 32)   # kbps: low only, so the compression is an audible fault
RT60_RANGE = (0.3, 1.2)          # s, of the self-made impulse responses
IR_TAIL_GAIN = 0.0536            # tail std at t = 0: direct-to-reverberant ratio 0 dB at RT60 0.3 s, -6 dB at 1.2 s
SKIPPED = {"RoomSimulator": "needs pyroomacoustics (an extra, not installed); ApplyImpulseResponse with "
                            "self-made impulse responses stands in",
           "AddBackgroundNoise": "needs sound files", "AddShortNoises": "needs sound files"}
DEFAULT_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "egs", "sqa", "exp", "sqa_default")


class BenchError(Exception):
    """Bad input; the message names the file."""


# ---------------------------------------------------------------- clean speech

def clean_clips(root: str) -> list:
    """``[(clip_id, wav_path), ...]`` of pocketsphinx-testdata (the clips of ``test_real``)."""
    from pathlib import Path

    from pyutils.corpora.pocketsphinx_testdata import SUBSETS, read_subset

    if not (Path(root) / "librivox" / SUBSETS["librivox"]).is_file():
        raise BenchError(f"{root}/librivox/{SUBSETS['librivox']}: pocketsphinx-testdata is not installed "
                         "(apt-get install pocketsphinx-testdata)")
    clips = []
    for subset in SUBSETS:
        try:
            clips += [(u, str(w)) for u, (w, _) in sorted(read_subset(Path(root), subset).items())]
        except (OSError, ValueError) as e:
            raise BenchError(str(e)) from None
    return clips


def load_clean(path: str, rng: np.random.Generator) -> np.ndarray:
    """A clip at 16 kHz mono, DC removed, peak at -3 +- 2 dBFS."""
    from pyutils.sqa.audio import AudioError, load_checked

    try:
        x = load_checked(path).astype(np.float64)
    except AudioError as e:
        raise BenchError(f"{path}: {e}") from None
    x = x - x.mean()
    return (x * (10 ** ((-3 + rng.uniform(-2, 2)) / 20) / (np.abs(x).max() + 1e-9))).astype(np.float32)


# ---------------------------------------------------------------- faults

def crossfade_apply(x: np.ndarray, s: int, e: int, fn, fade: int = int(FADE_S * SR)) -> np.ndarray:
    """``fn`` applied to ``x[s:e]`` only: computed on ``[s - fade, e + fade]``, faded in/out
    linearly outside ``[s, e]``; samples outside ``[s - fade, e + fade]`` are unchanged."""
    a, b = max(0, s - fade), min(len(x), e + fade)
    seg = np.asarray(fn(x[a:b].copy()), dtype=np.float32)
    if len(seg) != b - a:
        raise RuntimeError(f"transform changed the length ({b - a} -> {len(seg)} samples)")
    w = np.ones(b - a, dtype=np.float32)
    w[: s - a] = np.arange(1, s - a + 1, dtype=np.float32) / (s - a + 1)
    w[e - a:] = np.arange(b - e, 0, -1, dtype=np.float32) / (b - e + 1)
    y = x.copy()
    y[a:b] = (1 - w) * x[a:b] + w * seg
    return y


def _probe_delay(t, sample_rate: int) -> int:
    """Samples by which ``t`` (length-changing) delays its input: the lag of the cross-correlation
    peak between its output and a fixed 0.5 s noise burst, over the lags it can have."""
    x = (0.3 * np.random.default_rng(12345).standard_normal(sample_rate // 2)).astype(np.float32)
    state = random.getstate(), np.random.get_state()
    try:
        y = np.asarray(t(samples=x.copy(), sample_rate=sample_rate), dtype=np.float64)
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])
    extra = len(y) - len(x)
    if extra < 0:
        raise RuntimeError(f"{type(t).__name__} shortened its input ({len(x)} -> {len(y)} samples)")
    c = np.array([np.dot(y[k:k + len(x)], x) for k in range(extra + 1)])
    return int(np.argmax(c))


@lru_cache(maxsize=None)
def mp3_delay(bitrate: int, sample_rate: int = SR) -> int:
    """Encoder + decoder delay of :class:`Mp3Aligned` at ``bitrate`` (measured once; 1105 samples at
    16-32 kbps, 2210 at 8 kbps where LAME encodes at 8 kHz, with lameenc 1.9.0 + libsndfile 1.2)."""
    return _probe_delay(Mp3Aligned(bitrate, align=False), sample_rate)


class Mp3Aligned:
    """audiomentations' ``Mp3Compression`` (lameenc backend) at one bitrate, output aligned to the input.

    The lameenc backend only runs with ``preserve_delay=True``: its output is the input delayed by
    the LAME encoder + decoder delay (:func:`mp3_delay`, found by cross-correlation on a fixed probe,
    not on the speech, so it cannot lock onto a wrong peak) and padded at the end.  Those delay
    samples are trimmed and the result cut to the input length, so the compressed speech sits at
    its original position and the label interval stays exact.
    """

    def __init__(self, bitrate: int, align: bool = True):
        import audiomentations as A

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)     # "lameenc backend is deprecated"
            self.t = A.Mp3Compression(bitrate, bitrate, backend="lameenc", preserve_delay=True, p=1.0)
        self.bitrate, self.align = bitrate, align

    def __call__(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:
        y = np.asarray(self.t(samples=samples, sample_rate=sample_rate), dtype=np.float32)
        if not self.align:
            return y
        d = mp3_delay(self.bitrate, sample_rate)
        y = y[d:d + len(samples)]
        return np.pad(y, (0, len(samples) - len(y))) if len(y) < len(samples) else y


class ReverbPeakKept:
    """audiomentations' ``ApplyImpulseResponse`` (one IR file, length kept: the tail past the input's
    end is cut) with its peak-0.5 normalisation undone: the output is scaled to the input's peak, so
    the fault is the reverberation and not a level jump at the interval's edges."""

    def __init__(self, ir_file: str):
        import audiomentations as A

        self.t = A.ApplyImpulseResponse(ir_file, p=1.0, leave_length_unchanged=True)

    def __call__(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:
        y = np.asarray(self.t(samples=samples, sample_rate=sample_rate), dtype=np.float32)
        peak_in, peak_out = float(np.abs(samples).max()), float(np.abs(y).max())
        return y * np.float32(peak_in / peak_out) if peak_out > 0 else y


_TMP_IR_DIR = []


def default_ir_dir() -> str:
    """A temporary directory for impulse responses (removed at exit) when no ``ir_dir`` is given."""
    if not _TMP_IR_DIR:
        import atexit
        import shutil

        _TMP_IR_DIR.append(tempfile.mkdtemp(prefix="sqa_foreign_ir_"))
        atexit.register(shutil.rmtree, _TMP_IR_DIR[0], True)
    return _TMP_IR_DIR[0]


def make_ir(rt60: float, seed: int, ir_dir: str) -> tuple:
    """``(path, drr_db)``: a synthetic room impulse response at 16 kHz, written (temp + rename) to
    ``ir_dir/rt60_<ms>ms_<seed>.wav`` unless there already: 1 at t = 0 (the direct path, so the
    convolution shifts nothing), then Gaussian noise of std ``IR_TAIL_GAIN`` decaying by 60 dB over
    ``rt60`` seconds (its length).  Same ``(rt60, seed)``, same file."""
    import soundfile as sf

    n = max(2, int(round(rt60 * SR)))
    h = IR_TAIL_GAIN * np.random.default_rng([seed, 60]).standard_normal(n) * np.exp(-6.9078 * np.arange(n) / (rt60 * SR))
    h[0] = 1.0
    drr = float(10 * np.log10(1.0 / np.sum(np.square(h[1:]))))
    os.makedirs(ir_dir, exist_ok=True)
    path = os.path.join(ir_dir, f"rt60_{int(round(rt60 * 1000))}ms_{seed}.wav")
    if not os.path.isfile(path):
        tmp = path + ".tmp.wav"
        sf.write(tmp, h.astype(np.float32), SR, subtype="FLOAT")
        os.replace(tmp, path)
    return path, drr


def draw_transform(kind: str, rng: np.random.Generator, choice: str | None = None, ir_dir: str | None = None):
    """``(name, params, transform)`` of a noise or distortion (an audiomentations transform, or a thin
    wrapper of one: :class:`Mp3Aligned`, :class:`ReverbPeakKept`; all are called as
    ``t(samples=..., sample_rate=...)``), parameters drawn here (each ``min_* = max_*``, so the
    library's own draw is that value).  ``choice`` (a member of :data:`NOISE_KINDS` or
    :data:`DISTORTIONS`) fixes the transform instead of drawing it.  Impulse responses go to
    ``ir_dir`` (default: a temporary directory)."""
    import audiomentations as A

    if kind == "noise":
        color = choice or NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))]
        snr = round(float(rng.uniform(0, 30)), 2)
        if color == "gaussian":
            return "AddGaussianSNR", {"snr_db": snr}, A.AddGaussianSNR(snr, snr, p=1.0)
        d = float(A.NOISE_COLOR_DECAYS[color])
        return (f"AddColorNoise({color})", {"snr_db": snr, "color": color, "f_decay": round(d, 3)},
                A.AddColorNoise(snr, snr, min_f_decay=d, max_f_decay=d, p=1.0))
    name = choice or DISTORTIONS[int(rng.integers(len(DISTORTIONS)))]
    if name == "ClippingDistortion":
        q = int(rng.integers(5, 41))
        return name, {"percentile_threshold": q}, A.ClippingDistortion(q, q, p=1.0)
    if name == "BitCrush":
        b = int(rng.integers(3, 9))
        return name, {"bit_depth": b}, A.BitCrush(b, b, p=1.0)
    if name == "LowPassFilter":
        c = round(float(np.exp(rng.uniform(np.log(400), np.log(3000)))), 1)
        return name, {"cutoff_hz": c}, A.LowPassFilter(c, c, 24, 24, p=1.0)
    if name == "BandPassFilter":
        c = round(float(np.exp(rng.uniform(np.log(500), np.log(2500)))), 1)
        bw = round(float(rng.uniform(0.5, 1.5)), 3)
        return name, {"center_hz": c, "bandwidth_fraction": bw}, A.BandPassFilter(c, c, bw, bw, 24, 24, p=1.0)
    if name == "Aliasing":
        r = int(rng.integers(2000, 8001))
        return name, {"sample_rate": r}, A.Aliasing(r, r, p=1.0)
    if name == "Mp3Compression":
        kbps = MP3_BITRATES[int(rng.integers(len(MP3_BITRATES)))]
        return name, {"bitrate_kbps": kbps}, Mp3Aligned(kbps)
    if name == "ApplyImpulseResponse":
        rt60 = round(float(rng.uniform(*RT60_RANGE)), 3)
        seed = int(rng.integers(2 ** 31))
        path, drr = make_ir(rt60, seed, ir_dir or default_ir_dir())
        return name, {"rt60_s": rt60, "drr_db": round(drr, 2), "ir": os.path.basename(path)}, ReverbPeakKept(path)
    d = round(float(rng.uniform(0.2, 0.9)), 3)
    return name, {"distortion_amount": d}, A.TanhDistortion(d, d, p=1.0)


def quiet_point(x: np.ndarray, rng: np.random.Generator) -> int:
    """A sample (whole ms) in the middle 15-85 % of ``x`` where the 60 ms energy is low (between words)."""
    n = int(0.02 * SR)
    e = np.convolve(np.mean(np.square(x[: len(x) // n * n].reshape(-1, n), dtype=np.float64), axis=1),
                    np.ones(3) / 3, mode="same")
    lo, hi = int(0.15 * len(e)), max(int(0.15 * len(e)) + 1, int(0.85 * len(e)))
    cand = lo + np.flatnonzero(e[lo:hi] <= np.quantile(e[lo:hi], 0.2))
    k = int(cand[int(rng.integers(len(cand)))])
    return (k * n + n // 2) // 16 * 16


def insert_pause(x: np.ndarray, rng: np.random.Generator):
    """``(y, [s, e] seconds, params)``: 0.3-1.5 s of silence or room tone inserted at a quiet point."""
    at, ms = quiet_point(x, rng), int(rng.integers(300, 1501))
    floor = float(np.sqrt(np.quantile(np.square(x), 0.1)) + 1e-6)
    tone = bool(rng.random() < 0.5)
    gap = (floor * rng.standard_normal(ms * 16)).astype(np.float32) if tone else np.zeros(ms * 16, np.float32)
    y = np.concatenate([x[:at], gap, x[at:]])
    return y, [at / SR, (at + ms * 16) / SR], {"length_s": ms / 1000, "fill": "room_tone" if tone else "silence"}


def random_interval(n: int, rng: np.random.Generator) -> tuple:
    """``(s, e)`` samples (whole ms, at least 0.3 s or the whole clip) covering 15-100 % of ``n``."""
    total_ms = n // 16
    length = min(total_ms, max(300, int(total_ms * rng.uniform(0.15, 1.0))))
    s = int(rng.integers(0, total_ms - length + 1))
    return s * 16, min(n, (s + length) * 16)


def make_recording(x: np.ndarray, rng: np.random.Generator, seed: int, ir_dir: str | None = None):
    """``(y, faults {type: [[s, e]]}, details [...])`` with 0-2 faults of distinct types; impulse
    responses go to ``ir_dir`` (see :func:`draw_transform`)."""
    n_faults = int(rng.choice(3, p=N_FAULTS_P))
    kinds = [FAULTS[int(i)] for i in rng.choice(3, size=n_faults, replace=False)]
    kinds.sort(key=lambda k: k != "pause")          # pause first: later intervals stay exact
    faults, details = {f: [] for f in FAULTS}, []
    y = x
    for j, kind in enumerate(kinds):
        if kind == "pause":
            y, iv, params = insert_pause(y, rng)
            name = "InsertPause"
        else:
            name, params, t = draw_transform(kind, rng, ir_dir=ir_dir)
            s, e = random_interval(len(y), rng)
            random.seed(seed * 10 + j)              # audiomentations draws from random / np.random
            np.random.seed((seed * 10 + j) % 2 ** 32)
            y = np.clip(crossfade_apply(y, s, e, lambda seg, t=t: t(samples=seg, sample_rate=SR)), -1, 1)
            iv = [s / SR, e / SR]
        iv = [round(iv[0], 3), round(iv[1], 3)]
        faults[kind].append(iv)
        details.append({"type": kind, "transform": name, "params": params, "interval": iv})
    return y.astype(np.float32), faults, details


# ---------------------------------------------------------------- score

def severity(detail: dict) -> float:
    """Severity in [0, 1] of one fault from its transform's parameters (see :func:`quality_score`)."""
    p, name = detail["params"], detail["transform"]
    if detail["type"] == "noise":
        v = (35.0 - p["snr_db"]) / 35.0
    elif name == "ClippingDistortion":
        v = p["percentile_threshold"] / 40.0
    elif name == "BitCrush":
        v = (11.0 - p["bit_depth"]) / 8.0
    elif name == "LowPassFilter":
        v = np.log(8000.0 / p["cutoff_hz"]) / np.log(8000.0 / 300.0)
    elif name == "BandPassFilter":
        v = 0.35 + 0.65 * (1.5 - p["bandwidth_fraction"])
    elif name == "Aliasing":
        v = np.log(16000.0 / p["sample_rate"]) / np.log(16000.0 / 1500.0)
    elif name == "TanhDistortion":
        v = p["distortion_amount"]
    elif name == "Mp3Compression":
        v = (40.0 - p["bitrate_kbps"]) / 32.0
    elif name == "ApplyImpulseResponse":
        v = 0.2 + 0.8 * (p["rt60_s"] - 0.3) / 0.9
    elif name == "InsertPause":
        v = p["length_s"] / 1.5
    else:
        raise ValueError(f"unknown transform {name!r}")
    return float(np.clip(v, 0.0, 1.0))


def quality_score(details: list, duration: float) -> float:
    """Reference MOS of a recording, written for this benchmark (not the simulator's)::

        score = clamp(4.5 - sum_f  w[type_f] * severity_f * coverage_f ** 0.5, 1, 5)

    with ``w = {noise: 2.0, distortion: 2.2, pause: 1.2}``, ``coverage_f = (e - s) / duration``
    and ``severity_f`` in [0, 1] from the transform's parameters (:func:`severity`):
    noise ``(35 - SNR_dB) / 35``; ClippingDistortion ``percentile / 40``; BitCrush
    ``(11 - bits) / 8``; LowPassFilter ``ln(8000 / cutoff) / ln(8000 / 300)``; BandPassFilter
    ``0.35 + 0.65 (1.5 - bandwidth_fraction)``; Aliasing ``ln(16000 / rate) / ln(16000 / 1500)``;
    TanhDistortion ``amount``; Mp3Compression ``(40 - kbps) / 32`` (8 kbps: 1, 32 kbps: 0.25);
    ApplyImpulseResponse ``0.2 + 0.8 (RT60_s - 0.3) / 0.9`` (0.3 s: 0.2, 1.2 s: 1);
    pause ``length_s / 1.5``; each clipped to [0, 1].
    A clean recording scores 4.5, the highest; the score never rises with severity or coverage.
    """
    pen = 0.0
    for d in details:
        s, e = d["interval"]
        cov = min(1.0, max(0.0, (e - s) / duration))
        pen += WEIGHTS[d["type"]] * severity(d) * cov ** 0.5
    return float(np.clip(CLEAN_MOS - pen, 1.0, 5.0))


# ---------------------------------------------------------------- data set

def write_wav_atomic(path: str, y: np.ndarray) -> None:
    """16 kHz mono 16-bit WAV via a temp file and rename."""
    import soundfile as sf

    tmp = path + ".tmp.wav"
    sf.write(tmp, y, SR, subtype="PCM_16")
    os.replace(tmp, path)


def build_set(out: str, num: int, seed: int, root: str) -> dict:
    """Write ``num`` recordings + wav.scp, ref.jsonl, faults.jsonl (+ the impulse responses, ir/)
    under ``out``; -> summary."""
    clips = clean_clips(root)
    rng = np.random.default_rng([seed, 4242])
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)
    cache, scp, refs, metas = {}, [], [], []
    for i in range(num):
        cid, path = clips[i % len(clips)] if i < len(clips) else clips[int(rng.integers(len(clips)))]
        if path not in cache:
            cache[path] = load_clean(path, np.random.default_rng([seed, len(cache)]))
        y, faults, details = make_recording(cache[path], rng, seed * 100000 + i, os.path.join(out, "ir"))
        dur = len(y) / SR
        utt = f"foreign-{cid}-{i:04d}"
        wav = os.path.abspath(os.path.join(out, "wav", f"{utt}.wav"))
        write_wav_atomic(wav, y)
        scp.append(f"{utt} {wav}\n")
        refs.append({"utt_id": utt, "score": round(quality_score(details, dur), 3), "faults": faults})
        metas.append({"utt_id": utt, "clip": cid, "duration": round(dur, 4), "details": details})
    write_text_atomic(os.path.join(out, "wav.scp"), "".join(scp))
    write_jsonl(os.path.join(out, "ref.jsonl"), refs)
    write_jsonl(os.path.join(out, "faults.jsonl"), metas)
    return {"num": num, "clips": len(clips), "clean": sum(not m["details"] for m in metas)}


def build_or_reuse(out: str, num: int, seed: int, root: str) -> tuple:
    """``(summary, data signature)``: the set of :func:`build_set`, made again only when
    ``out/build.json`` does not vouch for it (same options, same version of this script and of
    audiomentations, same bytes on disk)."""
    import audiomentations

    with open(os.path.abspath(__file__), "rb") as f:
        code = hashlib.md5(f.read()).hexdigest()
    want = {"num": num, "seed": seed, "clips_root": os.path.abspath(root), "code": code,
            "audiomentations": audiomentations.__version__}
    stamp = os.path.join(out, "build.json")
    try:
        with open(stamp, encoding="utf-8") as f:
            blob = json.load(f)
        if blob.get("params") == want and data_signature(out) == blob.get("sig"):
            return blob["info"], blob["sig"]
    except (OSError, ValueError, KeyError):
        pass                                      # no stamp, or a file of it is gone: build again
    info = build_set(out, num, seed, root)
    sig = data_signature(out)
    write_text_atomic(stamp, json.dumps({"params": want, "info": info, "sig": sig}))
    return info, sig


def data_signature(data_dir: str) -> str:
    """md5 over wav.scp and every listed WAV's bytes."""
    h = hashlib.md5()
    for utt, path in read_scp(os.path.join(data_dir, "wav.scp")):
        h.update(utt.encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


# ---------------------------------------------------------------- models

def model_configs(model_dir: str) -> tuple:
    """``(feats_cfg, embed_cfg or None)`` the model was trained with; BenchError names the file."""
    from pyutils.sqa.model import ModelFileError, load_model

    for name in ("model.pt", "postproc.json", ".train.done"):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise BenchError(f"{os.path.join(model_dir, name)}: missing (not a finished SQA model dir)")
    try:
        model, _, _, extra = load_model(os.path.join(model_dir, "model.pt"))
    except (ModelFileError, OSError) as e:
        raise BenchError(str(e)) from None
    feats, embed = extra.get("features"), extra.get("embed")
    dump_test = os.path.join(model_dir, "..", "..", "dump", "test")
    try:
        if feats is None:
            with open(os.path.join(dump_test, "feats_config.json"), encoding="utf-8") as f:
                feats = json.load(f)
        if embed is None and model.cfg.embed_dim > 0:
            with open(os.path.join(dump_test, "embed_config.json"), encoding="utf-8") as f:
                embed = json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"{model_dir}/model.pt stores no feature config and {e}") from None
    if model.cfg.embed_dim == 0:
        embed = None
    return feats, embed


def concat_pieces(outdir: str, names: list) -> None:
    """``<name>.1[.scp]`` -> ``<name>[.scp]`` sorted, as stage 2 does with nj=1."""
    for name in names:
        src, dst = (f"{outdir}/{name}.1.scp", f"{outdir}/{name}.scp") if name in ("feats", "wav", "embed") \
            else (f"{outdir}/{name}.1", f"{outdir}/{name}")
        with open(src, encoding="utf-8") as f:
            lines = sorted(f)
        with open(dst + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(dst + ".tmp", dst)


def dump_set(data_dir: str, work: str, feats_cfg: dict, embed_cfg: dict | None, sig: str) -> str:
    """Features (+ embeddings) of the set with these configs (stage 2's entry points); reused when
    the data and configs are unchanged.  -> dump dir."""
    from pyutils.sqa import embed as E
    from pyutils.sqa import features as F

    key = hashlib.md5(json.dumps([feats_cfg, embed_cfg], sort_keys=True).encode()).hexdigest()[:10]
    out = os.path.join(work, f"dump_{key}")
    marker = os.path.join(out, ".done")
    if os.path.isfile(marker) and open(marker, encoding="utf-8").read().strip() == sig:
        return out
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    try:
        feats_cfg = F.check_config(feats_cfg)
    except ValueError as e:
        raise BenchError(str(e)) from None
    bad = F.dump(os.path.join(data_dir, "wav.scp"), out, "1", int(feats_cfg["n_mels"]),
                 bool(feats_cfg.get("pitch", False)))
    if bad:
        raise BenchError(f"{out}/bad.1: {bad} recordings could not be dumped")
    names = ["feats", "wav", "utt2num_frames", "utt2dur"]
    if embed_cfg is not None:
        import torch

        torch.set_num_threads(1)
        E.dump(os.path.join(out, "wav.1.scp"), out, "1", embed_cfg)
        names.append("embed")
    concat_pieces(out, names)
    with open(marker + ".tmp", "w", encoding="utf-8") as f:
        f.write(sig + "\n")
    os.replace(marker + ".tmp", marker)
    print(f"dumped {out} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def run_model(model_dir: str, dump_dir: str, data_dir: str, outdir: str) -> dict:
    """``pyutils.sqa.infer`` + ``chorus-score sqa`` (as stages 6-7) -> the scorer's result dict."""
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))]
        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    os.makedirs(outdir, exist_ok=True)
    steps = [[py, "-m", "pyutils.sqa.infer", "--model-dir", model_dir, "--data-dir", dump_dir,
              "--outdir", outdir, "--postproc", os.path.join(model_dir, "postproc.json"),
              "--all-ids", os.path.join(data_dir, "wav.scp")],
             [py, "-m", "pyutils.scoring.cli", "sqa", "--ref", os.path.join(data_dir, "ref.jsonl"),
              "--hyp", os.path.join(outdir, "hyp.jsonl"), "--output-json", os.path.join(outdir, "score.json")]]
    for cmd in steps:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"{cmd[2]} failed for {model_dir} (exit {r.returncode}): {r.stderr.strip()[-800:]}")
    with open(os.path.join(outdir, "score.json"), encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- analysis

def dnsmos_ovrl(data_dir: str, sig: str) -> dict:
    """``{utt: P.835 OVRL}`` (cached in ``dnsmos_p835.json`` beside the data, keyed by its signature)."""
    from pyutils.sqa.audio import load_checked
    from pyutils.sqa.baselines import DnsmosP835

    cache = os.path.join(data_dir, "dnsmos_p835.json")
    if os.path.isfile(cache):
        with open(cache, encoding="utf-8") as f:
            blob = json.load(f)
        if blob.get("sig") == sig:
            return blob["ovrl"]
    p835 = DnsmosP835()
    ovrl = {u: p835(load_checked(w, name=u))["ovrl_mos"] for u, w in read_scp(os.path.join(data_dir, "wav.scp"))}
    write_text_atomic(cache, json.dumps({"sig": sig, "ovrl": ovrl}))
    return ovrl


def per_transform(metas: list, hyp: dict) -> dict:
    """Per transform: n, recall of its fault type, share called the other class (noise <->
    distortion, over recordings whose reference lacks that class), mean frame IoU of its type."""
    other = {"noise": "distortion", "distortion": "noise"}
    rows = {}
    for m in metas:
        h = hyp[m["utt_id"]]["faults"]
        ref_types = {d["type"] for d in m["details"]}
        for d in m["details"]:
            r = rows.setdefault(f"{d['type']}:{d['transform']}", {"n": 0, "hit": 0, "other_n": 0,
                                                                  "other": 0, "iou": []})
            r["n"] += 1
            r["hit"] += bool(h.get(d["type"]))
            o = other.get(d["type"])
            if o and o not in ref_types:
                r["other_n"] += 1
                r["other"] += bool(h.get(o))
            n = int(np.ceil(max([m["duration"]] + [e for _, e in h.get(d["type"]) or []]) / 0.02)) + 1
            g, p = rasterise([d["interval"]], n), rasterise(h.get(d["type"]) or [], n)
            r["iou"].append(float((g * p).sum() / (np.maximum(g, p).sum() + 1e-8)))
    clean = [m for m in metas if not m["details"]]
    out = {k: {"n": r["n"], "recall": r["hit"] / r["n"],
               "other_class": (r["other"] / r["other_n"]) if r["other_n"] else None,
               "iou": float(np.mean(r["iou"]))} for k, r in sorted(rows.items())}
    if clean:
        out["clean"] = {"n": len(clean), "false_alarm": {f: float(np.mean([bool(hyp[m["utt_id"]]["faults"].get(f))
                                                                         for m in clean])) for f in FAULTS},
                        "mean_score": float(np.mean([hyp[m["utt_id"]]["score"] for m in clean]))}
    return out


def summary(score: dict, dn_pcc: float) -> dict:
    """The table's numbers from a scorer result."""
    pf = score["per_fault"]
    row = {"Final": score["Final"], "PCC": score["PCC"]}
    row.update({f"F1_{f}": pf[f]["F1"] for f in FAULTS})
    row.update({f"IoU_{f}": pf[f]["IoU"] for f in FAULTS})
    row.update({"F1_macro": score["F1_macro"], "IoU_macro": score["IoU_macro"], "DNSMOS_OVRL_PCC": dn_pcc})
    return row


def print_tables(results: dict) -> None:
    """Main table (one column per model) and the per-transform breakdown of each model."""
    names = list(results["models"])
    keys = list(next(iter(results["models"].values()))["summary"])
    w = max(14, *(len(os.path.basename(n.rstrip("/"))) + 2 for n in names))
    print(f"\nforeign-fault SQA benchmark: {results['data']['num']} recordings "
          f"({results['data']['clean']} clean) from {results['data']['clips']} pocketsphinx-testdata clips")
    print(f"{'metric':<17}" + "".join(f"{os.path.basename(n.rstrip('/')):>{w}}" for n in names))
    for k in keys:
        print(f"{k:<17}" + "".join(f"{results['models'][n]['summary'][k]:>{w}.4f}" for n in names))
    for n in names:
        print(f"\nper transform, {n}:\n{'transform':<34}{'n':>4}{'recall':>8}{'other':>8}{'IoU':>7}")
        for t, r in results["models"][n]["per_transform"].items():
            if t == "clean":
                fa = " ".join(f"{f}={v:.2f}" for f, v in r["false_alarm"].items())
                print(f"{'clean':<34}{r['n']:>4}  false alarms {fa}, mean score {r['mean_score']:.2f}")
                continue
            oc = "-" if r["other_class"] is None else f"{r['other_class']:.2f}"
            print(f"{t:<34}{r['n']:>4}{r['recall']:>8.2f}{oc:>8}{r['iou']:>7.2f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", action="append",
                   help=f"trained SQA model dir (model.pt, postproc.json, .train.done); repeat to compare "
                        f"models on the same set (default: {DEFAULT_MODEL})")
    p.add_argument("--num", type=int, default=120, help="number of recordings (default 120)")
    p.add_argument("--seed", type=int, default=0, help="seed of clip choice, faults and parameters")
    p.add_argument("--out", default="egs/sqa/exp/sqa_foreign/data",
                   help="data dir: wav/, ir/, wav.scp, ref.jsonl, faults.jsonl (default %(default)s)")
    p.add_argument("--work", help="dumps, per-model inference and results.json (default: the parent of --out)")
    p.add_argument("--clips-root", default="/usr/share/pocketsphinx/test/data",
                   help="pocketsphinx-testdata root (default %(default)s)")
    p.add_argument("--no-dnsmos", action="store_true", help="skip the DNSMOS P.835 anchor")
    a = p.parse_args(argv)
    if a.num < 1:
        p.error(f"--num {a.num}: must be >= 1")
    model_dirs = [os.path.abspath(d) for d in (a.model_dir or [DEFAULT_MODEL])]
    work = os.path.abspath(a.work or os.path.dirname(os.path.abspath(a.out)))
    try:
        configs = {d: model_configs(d) for d in model_dirs}
        info, sig = build_or_reuse(a.out, a.num, a.seed, a.clips_root)
        metas = read_jsonl(os.path.join(a.out, "faults.jsonl"))
        refs = {r["utt_id"]: r["score"] for r in read_jsonl(os.path.join(a.out, "ref.jsonl"))}
        dn = None if a.no_dnsmos else dnsmos_ovrl(a.out, sig)
        dn_pcc = float("nan") if dn is None else pearson([refs[u] for u in sorted(refs)], [dn[u] for u in sorted(refs)])
        results = {"data": {**info, "seed": a.seed, "out": os.path.abspath(a.out), "sig": sig},
                   "skipped_transforms": SKIPPED, "models": {}}
        for d in model_dirs:
            feats_cfg, embed_cfg = configs[d]
            dump_dir = dump_set(a.out, work, feats_cfg, embed_cfg, sig)
            tag = os.path.basename(d.rstrip("/"))
            outdir = os.path.join(work, f"infer_{tag}_{hashlib.md5(d.encode()).hexdigest()[:6]}")
            score = run_model(d, dump_dir, a.out, outdir)
            hyp = {r["utt_id"]: r for r in read_jsonl(os.path.join(outdir, "hyp.jsonl"))}
            results["models"][d] = {"summary": summary(score, dn_pcc), "per_transform": per_transform(metas, hyp),
                                    "feats_config": feats_cfg, "embed_config": embed_cfg, "infer_dir": outdir}
    except BenchError as e:
        print(f"sqa_foreign_faults: ERROR: {e}", file=sys.stderr)
        return 2
    write_text_atomic(os.path.join(work, "results.json"), json.dumps(results, indent=1))
    print_tables(results)
    print(f"\nresults: {os.path.join(work, 'results.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
