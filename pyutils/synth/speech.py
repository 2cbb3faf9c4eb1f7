"""Speech of any voice of the synthesisers: the voice inventories and one ``speak``.

A *voice* is a small dict (JSON-serialisable so it can travel in a job plan)::

    {"id": "en_s03", "engine": "espeak", "name": "en-us+m3",
     "speed": 165, "pitch": 50, "warp": 1.0}

Engines: ``espeak`` / ``flite`` (:mod:`pyutils.synth.espeak`: derived voices by ``warp``),
``piper`` / ``kokoro`` (:mod:`pyutils.synth.voice_bank`, neural), ``gcin`` (recorded Mandarin
syllables, :mod:`pyutils.synth.syllable_voice`). ``voices(lang, n, source="bank")`` returns the
voice bank's inventory, ``source="espeak"`` the espeak-ng/flite one; :func:`speak` /
:func:`speak_chunks` hand each voice to its engine; :func:`check_engines` fails early when a
voice's engine is not installed.
"""

from __future__ import annotations

from typing import List, Union

import numpy as np

from pyutils.synth import espeak
from pyutils.synth.espeak import Voice, espeak_voices

NEURAL_ENGINES = ("piper", "kokoro")
SOURCES = ("bank", "espeak")


def voices(lang: str, n: int | None = None, source: str = "espeak") -> List[Voice]:
    """The deterministic voice inventory of ``lang``: ``source="bank"`` the voice bank's (neural
    voices where it has them, :func:`pyutils.synth.voice_bank.bank_voices`); ``"espeak"`` the
    espeak-ng/flite one (:func:`pyutils.synth.espeak.espeak_voices`). ``n`` limits the list."""
    if source not in SOURCES:
        raise ValueError(f"unknown voice source {source!r} (one of {', '.join(SOURCES)})")
    if source == "bank":
        from pyutils.synth.voice_bank import bank_voices

        return bank_voices(lang, n)
    return espeak_voices(lang, n)


def _resolve(voice, lang) -> Voice:
    if isinstance(voice, dict):
        return voice
    inv = voices(lang)
    if isinstance(voice, int):
        return inv[voice % len(inv)]
    match = [v for v in inv if v["id"] == voice]
    if not match:
        raise ValueError(f"unknown voice {voice!r} for {lang}")
    return match[0]


def speak(text: str, lang: str, voice: Union[Voice, str, int] = 0, seed: int = 0,
          trim: bool = True, cache: str | None = None) -> np.ndarray:
    """Synthesise ``text`` -> float32 mono at 16 kHz (leading/trailing silence trimmed).

    ``voice`` is a voice dict, a voice id (``"en_s03"``) or an index into
    :func:`voices`.  ``seed`` jitters the speaking rate by up to ±6 %
    (deterministically), so one voice does not always speak at one tempo.
    A neural voice ignores ``seed`` (its rate jitter comes from the text, so that each
    (voice, text) renders once) and reuses renderings from the cache dir ``cache``.
    """
    voice = _resolve(voice, lang)
    if voice["engine"] in NEURAL_ENGINES:
        from pyutils.synth.voice_bank import speak_cached

        return speak_cached(text, voice, cache)
    if voice["engine"] == "gcin":
        from pyutils.synth.syllable_voice import speak_gcin

        return speak_gcin(text, voice)
    return espeak.speak_espeak(text, lang, voice, seed, trim)


def speak_chunks(texts: List[str], lang: str, voice: Union[Voice, str, int] = 0,
                 seed: int = 0, trim: bool = True, cache: str | None = None) -> List[np.ndarray]:
    """Synthesise several chunks of one utterance; same result as ``speak`` per chunk.

    With espeak-ng all chunks go through ONE process (SSML ``<break>`` between
    them, output cut at those silences): process start-up dominates the cost
    of short chunks.  Prosody may differ slightly from chunk-by-chunk calls.
    Falls back to one call per chunk if the cut does not give one piece per
    chunk.  (The in-process libespeak-ng API is not used on purpose: its
    output depends on earlier calls in the same process, which would make
    the corpus depend on how utterances are split into jobs.)  A neural voice renders
    each chunk on its own (through the cache ``cache``).
    """
    voice = _resolve(voice, lang)
    if voice["engine"] == "espeak" and len(texts) >= 2 and all(
            (espeak.to_pinyin(t) if lang == "zh" else t).strip() for t in texts):
        parts = espeak.espeak_chunks(texts, lang, voice, seed, trim)
        if parts is not None:
            return parts
        return [speak(t, lang, voice, seed, trim) for t in texts]
    return [speak(t, lang, voice, seed, trim, cache) for t in texts]


def check_engines(voices: List[dict]) -> None:
    """Fail early (one message naming the package and the make target) when a voice's engine
    is not installed or its files fail their checksums
    (:func:`pyutils.synth.syllable_voice.check`, :func:`pyutils.synth.voice_bank.check_neural`)."""
    from pyutils.synth.voice_bank import check_neural

    if any(v["engine"] == "gcin" for v in voices):
        from pyutils.synth.syllable_voice import check

        check()
    check_neural(voices)
