"""Recorded Mandarin voices by syllable concatenation (Debian ``gcin-voice``).

``gcin-voice`` holds one recording per toned Mandarin syllable, as
``/usr/share/gcin-voice/ogg/<zhuyin><tone>/<speaker>.ogg`` (tone: none = 1st, ``2``/``3``/``4``,
``1`` = neutral), for two speakers: ``3`` (1,200 syllables, Edward Der-Hua Liu,
GPL-3 or LGPL-3) and ``5`` (1,158, voice actor 羅竺 / ChionMeilin, CC-BY-3.0).

Text -> zhuyin with tones by pypinyin (words resolve polyphones; third-tone sandhi
3-3 -> 2-3 inside words, ``tone_sandhi=True``), each syllable's recording trimmed of
silence, faded (5 ms in, 20 ms out: speaker 5's files stop mid-vowel), and joined with
``gap_s / speed`` of silence, 0.18 s at punctuation.  A syllable missing in the tone asked
for is taken in another tone; a character with no recording at all is skipped (counted
by :func:`coverage`).  ``warp`` resamples as in :mod:`pyutils.synth.speech` (pitch and
formants scale by ``warp``, duration by ``1/warp``), which gives derived voices.
Deterministic: the output is a function of (voice, text) alone.  The voice bank uses
speaker 3 only (the judge's CER on speaker 5 was 46-83 %: its files stop mid-vowel).
"""

from __future__ import annotations

import functools
import os
from typing import List, Optional, Tuple

import numpy as np

from pyutils.synth import SAMPLE_RATE
from pyutils.audio import resample
from pyutils.synth.audio import fade, trim_silence
from pyutils.synth.voice_bank import VoiceBankError

GCIN_DIR = os.environ.get("CHORUS_GCIN_DIR", "/usr/share/gcin-voice/ogg")
SPEAKERS = ("3", "5")
_TONE_DIGIT = {"ˊ": "2", "ˇ": "3", "ˋ": "4", "˙": "1"}
_PAUSE = set("，。！？、；：,.!?;:")


class GcinMissing(VoiceBankError):
    """The Debian package gcin-voice is not installed."""


def check() -> None:
    """Raise :class:`GcinMissing` (naming the package) when the recordings are absent."""
    if not os.path.isdir(GCIN_DIR) or len(os.listdir(GCIN_DIR)) < 1000:
        raise GcinMissing(f"Mandarin recorded voices: {GCIN_DIR} is missing or incomplete; install the "
                          f"Debian package gcin-voice (`make -C tools system`, or "
                          f"`apt-get install -y gcin-voice`)")


def zhuyin(text: str) -> List[Tuple[str, Optional[str]]]:
    """Per character: (character, ``<zhuyin><tone digit>`` or None for non-Hanzi)."""
    from pypinyin import Style, lazy_pinyin

    marks = lazy_pinyin(text, style=Style.BOPOMOFO, tone_sandhi=True,
                        errors=lambda s: ["\0" + c for c in s])
    out = []
    for m in marks:
        if m.startswith("\0"):
            out.append((m[1:], None))
            continue
        tone = ""
        for mark, digit in _TONE_DIGIT.items():
            if mark in m:
                tone, m = digit, m.replace(mark, "")
        out.append((m, m + tone))
    return out


@functools.lru_cache(maxsize=8192)
def _syllable(key: str, speaker: str, warp: float) -> Optional[np.ndarray]:
    import soundfile as sf

    base = key.rstrip("1234")
    for cand in (key, base, base + "1", base + "2", base + "3", base + "4"):
        path = os.path.join(GCIN_DIR, cand, f"{speaker}.ogg")
        if os.path.isfile(path):
            try:
                x, sr = sf.read(path, dtype="float32")
            except RuntimeError as e:
                raise RuntimeError(f"{path}: cannot be read ({e}); reinstall gcin-voice") from e
            x = x.mean(axis=1) if x.ndim == 2 else x
            y = trim_silence(resample(x.astype(np.float64), sr * warp, SAMPLE_RATE).astype(np.float32), thresh_db=-35.0)
            y = fade(y, fade_s=0.005)
            n = min(len(y) // 2, int(0.02 * SAMPLE_RATE))
            if n:
                y[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
            peak = float(np.abs(y).max()) if len(y) else 0.0
            return (y / peak).astype(np.float32) if peak > 0 else y
    return None


def coverage(text: str, speaker: str = "3") -> Tuple[int, int]:
    """(Hanzi with a recording, Hanzi in ``text``)."""
    keys = [k for _, k in zhuyin(text) if k]
    return sum(_syllable(k, speaker, 1.0) is not None for k in keys), len(keys)


def speak_gcin(text: str, voice: dict, gap_s: float = 0.03) -> np.ndarray:
    """Mandarin ``text`` in gcin speaker ``voice["name"]`` -> float32 16 kHz, peak 0.9."""
    check()
    speaker, warp, speed = str(voice["name"]), float(voice["warp"]), float(voice["speed"])
    if speaker not in SPEAKERS:
        raise ValueError(f"gcin speaker {speaker!r}: one of {', '.join(SPEAKERS)}")
    gap = np.zeros(int(round(gap_s / speed * SAMPLE_RATE)), np.float32)
    pause = np.zeros(int(round(0.18 / speed * SAMPLE_RATE)), np.float32)
    parts: List[np.ndarray] = []
    for unit, key in zhuyin(text):
        if key is None:
            if any(c in _PAUSE for c in unit) and parts:
                parts.append(pause)
            continue
        y = _syllable(key, speaker, warp)
        if y is not None:
            if parts:
                parts.append(gap)
            parts.append(y)
    while parts and parts[-1] is pause:
        parts.pop()
    if not parts:
        return np.zeros(0, np.float32)
    return (0.9 * np.concatenate(parts)).astype(np.float32)
