"""Offline speech from espeak-ng and flite, with derived voices.

A *voice* is a small dict (JSON-serialisable so it can travel in a job plan)::

    {"id": "en_s03", "engine": "espeak", "name": "en-us+m3",
     "speed": 165, "pitch": 50, "warp": 1.0}

``warp`` resamples the engine output as if it had been recorded at
``warp`` times its true rate: it scales the pitch *and* the formants
together (a crude vocal-tract-length change), which makes derived voices
sound like different people rather than the same one at another pitch.
The engine's speed is divided by ``warp`` first so the speaking rate stays
plausible.

Other languages: the language's espeak-ng voice (:func:`pyutils.synth.langs.espeak_voice`)
with the same variants x warps as Vietnamese. flite is used for English only: the
Debian flite package has English voices only, and no other offline engine is installed.

Mandarin: espeak-ng's ``cmn`` voice falls back to English for many Hanzi,
so Chinese text is converted to tone-numbered pinyin with pypinyin and
spoken by the ``cmn-latn-pinyin`` voice.

Neural voices (engines ``piper`` and ``kokoro``) live in :mod:`pyutils.synth.voice_bank`, the
recorded Mandarin syllables in :mod:`pyutils.synth.syllable_voice`; :mod:`pyutils.synth.speech`
speaks any voice of the three.
"""

from __future__ import annotations

import functools
import io
import re
import shutil
import subprocess
import tempfile
from typing import Dict, List, Optional, Union

import numpy as np
import soundfile as sf

from pyutils.audio import resample
from pyutils.synth import SAMPLE_RATE
from pyutils.synth.audio import trim_silence

Voice = Dict[str, Union[str, int, float]]

_EN_VARIANTS = ["m1", "f1", "m3", "f2", "m2", "f3", "m4", "f4", "m5", "f5", "m6", "m7"]


def _voice(vid, engine, name, speed=160, pitch=50, warp=1.0) -> Voice:
    return {"id": vid, "engine": engine, "name": name, "speed": int(speed),
            "pitch": int(pitch), "warp": float(warp)}


@functools.lru_cache(maxsize=None)
def _flite_ok() -> bool:
    return shutil.which("flite") is not None


def espeak_voices(lang: str, n: int | None = None) -> List[Voice]:
    """The deterministic espeak-ng/flite voice inventory of ``lang`` (``en``, ``zh``, ``vi``, or
    any language espeak-ng has a voice for).

    The first voices are the most distinct ones (different engines/variants);
    later ones are warped/pitch-shifted derivations.  ``n`` limits (or, by
    cycling through more warps, extends) the list.
    """
    out: List[Voice] = []
    if lang == "en":
        # flite's four real speakers (16 kHz voices) first, then espeak variants
        if _flite_ok():
            for name, warp in (("slt", 1.0), ("rms", 1.0), ("awb", 1.0), ("kal16", 1.0)):
                out.append(_voice("", "flite", name, warp=warp))
        accents = ["en-us", "en-gb", "en-us", "en-gb-scotland"]
        for i, var in enumerate(_EN_VARIANTS):
            female = var.startswith("f")
            out.append(_voice("", "espeak", f"{accents[i % len(accents)]}+{var}",
                              speed=150 + 7 * (i % 4), pitch=55 if female else 45,
                              warp=1.0))
        base = list(out)
        for warp in (1.08, 0.93, 1.15, 0.88):
            for v in base:
                out.append(dict(v, warp=warp, pitch=min(99, max(0, int(v["pitch"]) + 5))))
    else:
        # voice i = variant i mod 12 x warp/pitch setting i mod 7: since 12 and 7 are
        # coprime, neighbouring voices differ in both, and all 84 pairs are distinct
        if lang in ("zh", "vi"):
            name = "cmn-latn-pinyin" if lang == "zh" else "vi"
        else:
            from pyutils.synth.langs import espeak_voice

            name = espeak_voice(lang)
            if name is None:
                raise ValueError(f"no voices for language {lang!r}: espeak-ng has no voice for it")
        base_speed = {"zh": 195, "vi": 150}.get(lang, 160)
        settings = [(1.0, 0), (1.10, 10), (0.91, -10), (1.18, 5), (0.86, -5),
                    (1.04, 20), (0.96, -20)]
        for i in range(len(_EN_VARIANTS) * len(settings)):
            var = _EN_VARIANTS[i % len(_EN_VARIANTS)]
            warp, dp = settings[i % len(settings)]
            pitch = (60 if var.startswith("f") else 40) + dp
            out.append(_voice("", "espeak", f"{name}+{var}", speed=base_speed + 6 * (i % 3),
                              pitch=min(99, max(0, pitch)), warp=warp))
    return numbered_voices(lang, out, n)


def numbered_voices(lang: str, inventory: List[Voice], n: int | None, kind: str = "voices") -> List[Voice]:
    """The first ``n`` voices of an inventory (all when None), with ids ``<lang>_sNN``."""
    if n is not None:
        if n > len(inventory):
            raise ValueError(f"{lang}: asked for {n} {kind}, only {len(inventory)} defined")
        inventory = inventory[:n]
    for i, v in enumerate(inventory):
        v["id"] = f"{lang}_s{i:02d}"
    return inventory


def to_pinyin(text: str) -> str:
    """Hanzi -> space-separated tone-numbered pinyin (neutral tone = 5)."""
    from pypinyin import Style, lazy_pinyin

    syl = lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True,
                      errors="ignore")
    return " ".join(s for s in syl if re.fullmatch(r"[a-zü]+[1-5]?", s))


def _run(cmd: List[str], what: str) -> bytes:
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    except FileNotFoundError as e:
        raise RuntimeError(f"{cmd[0]} is not installed (needed for {what})") from e
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{' '.join(cmd)} failed for {what}: {e.stderr.decode(errors='replace')}") from e
    return res.stdout


def _espeak(text: str, voice: Voice, speed: float, ssml: bool = False) -> tuple[np.ndarray, int]:
    out = _run(["espeak-ng", "-v", str(voice["name"]), "-s", str(int(round(speed))),
                "-p", str(int(voice["pitch"]))] + (["-m"] if ssml else []) + ["--stdout", text],
               f"voice {voice['name']}: {text!r}")
    x, sr = sf.read(io.BytesIO(out), dtype="float32")
    return x, sr


def _flite(text: str, voice: Voice, speed: float) -> tuple[np.ndarray, int]:
    stretch = 160.0 / max(speed, 1.0)
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        _run(["flite", "-voice", str(voice["name"]), "--setf", f"duration_stretch={stretch:.3f}",
              "-t", text, "-o", tmp.name], f"flite voice {voice['name']}: {text!r}")
        x, sr = sf.read(tmp.name, dtype="float32")
    return x, sr


def _speed(voice: Voice, seed: int) -> float:
    jitter = 1.0 + 0.06 * (2 * np.random.default_rng([seed, 7]).random() - 1)
    return float(voice["speed"]) * jitter / float(voice["warp"])


def _post(x: np.ndarray, sr: int, voice: Voice, trim: bool) -> np.ndarray:
    y = resample(x.astype(np.float64), sr * float(voice["warp"]), SAMPLE_RATE).astype(np.float32)
    if trim:
        y = trim_silence(y)
    return y.astype(np.float32)


def speak_espeak(text: str, lang: str, voice: Voice, seed: int = 0, trim: bool = True) -> np.ndarray:
    """``text`` by an espeak-ng or flite ``voice`` -> float32 mono at 16 kHz (Mandarin as
    tone-numbered pinyin; ``seed`` jitters the rate by up to +-6 %, deterministically)."""
    spoken = to_pinyin(text) if lang == "zh" else text
    if not spoken.strip():
        return np.zeros(0, dtype=np.float32)
    speed = _speed(voice, seed)
    if voice["engine"] == "flite":
        x, sr = _flite(spoken, voice, speed)
    else:
        x, sr = _espeak(spoken, voice, speed)
    return _post(x, sr, voice, trim)


_BREAK_S = 0.9


def _split_on_breaks(x: np.ndarray, sr: int, n: int) -> List[np.ndarray] | None:
    """Cut espeak output at its long digital-silence runs (our SSML breaks)."""
    quiet = np.abs(x) < 2.0 / 32768
    d = np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]]))
    starts, ends = np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]
    runs = [(a, b) for a, b in zip(starts, ends) if b - a >= 0.6 * _BREAK_S * sr]
    # ignore silence at the very start/end (no text there)
    runs = [(a, b) for a, b in runs if a > 0 and b < len(x)]
    if len(runs) != n - 1:
        return None
    cuts = [0] + [(a + b) // 2 for a, b in runs] + [len(x)]
    return [x[cuts[i]:cuts[i + 1]] for i in range(n)]


def espeak_chunks(texts: List[str], lang: str, voice: Voice, seed: int = 0,
                  trim: bool = True) -> Optional[List[np.ndarray]]:
    """Several chunks of one utterance through ONE espeak-ng process (SSML ``<break>`` between
    them, output cut at those silences); None when the cut does not give one piece per chunk."""
    import html

    spoken = [to_pinyin(t) if lang == "zh" else t for t in texts]
    brk = f' <break time="{int(_BREAK_S * 1000)}ms"/> '
    doc = "<speak>" + brk.join(html.escape(s) for s in spoken) + "</speak>"
    x, sr = _espeak(doc, voice, _speed(voice, seed), ssml=True)
    parts = _split_on_breaks(x, sr, len(texts))
    if parts is None:
        return None
    return [_post(p, sr, voice, trim) for p in parts]
