"""Text and word times from FROZEN pretrained Whisper (faster-whisper / CTranslate2), any length.

The text half of the Track 1 cascade (``pyutils.asr.cascade``): the pretrained model of
``make -C tools`` (Whisper base, int8, CPU) transcribes the audio with word timestamps;
nothing is fine-tuned, so the text is as good as the pretrained model's.

Long inputs are never cut. Whisper sees 30 s at a time; faster-whisper's sequential
long-form loop (OpenAI's algorithm) moves its window by the last complete segment's end
timestamp, so a 1-hour file is decoded to the end. With ``vad=True`` (default) Silero
VAD (bundled with faster-whisper, no download) first drops stretches of non-speech of
>= 2 s and the speech chunks are decoded back to back (timestamps mapped back to the
original time axis).

Guards against the two failures of greedy Whisper on odd audio:

- *Repetition loops* ("All circuits All circuits ..."): each 30 s window is decoded at
  temperature 0 and re-decoded at 0.2, 0.4, ... 1.0 while its gzip compression ratio
  ``len(text) / len(zlib(text))`` exceeds 2.4 or its mean token log-probability is below
  -1.0 (Radford et al. 2022, sec. 4.5; the sampling is seeded before each decoding, so
  the same input gives the same text every run); no conditioning on the previous window's text
  (a loop cannot carry over); and afterwards :func:`collapse_repeats` keeps one copy of
  any n-gram (n <= 10 words) repeated back to back 3 or more times (4 for one word, so
  "no, no, no" stays).
- *Empty output for speech*: a window is skipped as silence only when its no-speech
  probability is > 0.6 AND its mean log-probability < -1.0 (Whisper's rule); when the
  whole result is still empty although the VAD found >= 1 s of speech, the file is
  decoded once more without the VAD and without the no-speech rule.

Whisper may write bracketed annotations ("(laughs)", "[coughs]", "[Music]"): faster-whisper
bans symbol tokens by default (``suppress_tokens=[-1]``); here the ban is lifted
(``annotations=True``), and :mod:`pyutils.asr.nvv_words` turns the annotations into tags or
removes them (measured in docs/TRACK1_CASCADE.md: same WER on clean speech, text-only
Track1Score 8 -> 33 on recorded NVVs).

Word times: faster-whisper aligns each word with the cross-attention heads by DTW
(Whisper's ``word_timestamps``); they are seconds on the input's time axis. Chinese
output is converted to simplified characters (OpenCC ``t2s``), word by word.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence

import numpy as np

from pyutils.whisper.weights import WhisperWeightsError, resolve

SR = 16000
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
MIN_SPEECH_FOR_RETRY_S = 1.0
LOOP_MAX_N = 10
SEED = 0


@dataclass(frozen=True)
class Word:
    """One recognised word (Whisper's spelling, leading space kept) and its time in seconds."""

    text: str
    start: float
    end: float
    prob: float = 1.0


@dataclass
class Transcript:
    words: List[Word]
    duration: float                     # seconds of input audio
    speech_s: Optional[float] = None    # seconds the VAD kept (None: no VAD)
    seconds: float = 0.0                # wall time of the decoding
    notes: List[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(w.text for w in self.words).strip()


def _norm_word(text: str) -> str:
    return re.sub(r"[^\w']+", "", text.lower())


def collapse_repeats(words: Sequence[Word], max_n: int = LOOP_MAX_N) -> tuple[List[Word], int]:
    """Keep one copy of an n-gram repeated back to back (a decoding loop); -> (words, n removed).

    A run of k consecutive copies of the same n words (compared lower-cased without
    punctuation) is a loop when k >= 3 for n >= 2, or k >= 4 for n = 1; the first copy stays.
    Greedy left to right, shortest n first at each position.
    """
    keys = [_norm_word(w.text) for w in words]
    out: List[Word] = []
    i, removed = 0, 0
    while i < len(words):
        jumped = False
        for n in range(1, max_n + 1):
            if i + 2 * n > len(words) or not all(keys[i:i + n]):
                continue
            k = 1
            while keys[i + k * n:i + (k + 1) * n] == keys[i:i + n]:
                k += 1
            if k >= (4 if n == 1 else 3):
                out.extend(words[i:i + n])
                removed += (k - 1) * n
                i += k * n
                jumped = True
                break
        if not jumped:
            out.append(words[i])
            i += 1
    return out, removed


class LongformTranscriber:
    """Frozen Whisper via faster-whisper on the CPU; one model per process."""

    def __init__(self, model: str = "base", lang: str = "en", beam_size: int = 1,
                 threads: int = 0, compute_type: str = "int8", vad: bool = True, guards: bool = True,
                 annotations: bool = True):
        spec = resolve(model)
        if spec.ct2_dir is None:
            raise WhisperWeightsError(f"the text path needs a CTranslate2 Whisper dir (faster-whisper); "
                                      f"{spec.source} is not one")
        from faster_whisper import WhisperModel

        # guards=False (for measuring what the guards do): temperature 0 only, no
        # compression/log-prob/no-speech rules, no VAD retry, no loop collapse.
        self.lang, self.beam_size, self.vad, self.guards = lang.split("_")[0], beam_size, vad, guards
        # annotations=True (default) lifts Whisper's ban on symbol tokens ("(", "[", "*", "♪"), so
        # that it can write "(laughs)" or "[coughs]" (pyutils.asr.nvv_words maps them); False
        # keeps faster-whisper's default suppress_tokens=[-1]
        self.suppress = [] if annotations else [-1]
        self.model = WhisperModel(str(spec.ct2_dir), device="cpu", compute_type=compute_type,
                                  cpu_threads=threads or min(os.cpu_count() or 1, 4))

    def _decode(self, audio: np.ndarray, vad: bool, no_speech_rule: bool) -> tuple[List[Word], Optional[float]]:
        import ctranslate2

        ctranslate2.set_random_seed(SEED)  # the fallback samples: same input, same text
        segments, info = self.model.transcribe(
            audio, language=self.lang, task="transcribe", beam_size=self.beam_size,
            best_of=self.beam_size, temperature=list(TEMPERATURES) if self.guards else 0.0,
            compression_ratio_threshold=2.4 if self.guards else None,
            log_prob_threshold=-1.0 if self.guards else None,
            no_speech_threshold=0.6 if no_speech_rule and self.guards else None,
            condition_on_previous_text=False, word_timestamps=True, vad_filter=vad,
            suppress_tokens=list(self.suppress),
            vad_parameters={"min_silence_duration_ms": 2000, "speech_pad_ms": 400} if vad else None)
        words = [Word(w.word, float(w.start), float(w.end), float(w.probability))
                 for s in segments for w in (s.words or [])]
        speech = None if not vad else float(getattr(info, "duration_after_vad", info.duration))
        return words, speech

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """``audio``: float32 mono 16 kHz (see :func:`pyutils.audio.to_mono_16k`)."""
        t0 = time.time()
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        dur = len(audio) / SR
        tr = Transcript([], dur)
        if audio.size < SR // 10 or not np.any(audio):
            tr.notes.append("shorter than 0.1 s" if audio.size < SR // 10 else "digital silence")
            tr.seconds = time.time() - t0
            return tr
        words, tr.speech_s = self._decode(audio, self.vad, True)
        if not words and self.guards and self.vad and (tr.speech_s or 0.0) >= MIN_SPEECH_FOR_RETRY_S:
            words, _ = self._decode(audio, False, False)
            tr.notes.append(f"empty after VAD ({tr.speech_s:.1f} s speech): retried without VAD")
        tr.words = self._finish(words, tr)
        tr.seconds = time.time() - t0
        return tr

    def _finish(self, words: List[Word], tr: Transcript) -> List[Word]:
        """Empty words out, loops collapsed (noted in ``tr``), Chinese in simplified characters."""
        words = [w for w in words if w.text.strip()]
        words, removed = collapse_repeats(words) if self.guards else (words, 0)
        if removed:
            tr.notes.append(f"{removed} repeated words removed (loop)")
        if self.lang == "zh":
            from pyutils.langscript import to_simplified

            words = [replace(w, text=to_simplified(w.text)) for w in words]
        return words

    def transcribe_packed(self, audios: Sequence[np.ndarray]) -> List[Transcript]:
        """Short clips decoded together, several in one 30 s window (see :func:`pack_groups`).

        The clips are joined with :data:`PACK_GAP_S` of silence between them and decoded
        once; each word goes to the clip holding its midpoint (the gaps split at their
        middle) and gets that clip's time axis (clipped to the clip). A clip no group can
        take (too long, too short, all zeros) goes through :meth:`transcribe`. The time of a
        group is shared among its clips in proportion to their durations.
        """
        out: List[Optional[Transcript]] = [None] * len(audios)
        for group in pack_groups([len(x) / SR if x.size >= SR // 10 and np.any(x) else -1.0 for x in audios]):
            if len(group) == 1:
                out[group[0]] = self.transcribe(audios[group[0]])
                continue
            t0 = time.time()
            gap = np.zeros(int(PACK_GAP_S * SR), np.float32)
            parts, offsets, t = [], [], 0.0
            for i in group:
                offsets.append(t)
                parts += [np.asarray(audios[i], np.float32), gap]
                t += len(audios[i]) / SR + PACK_GAP_S
            words, _ = self._decode(np.concatenate(parts[:-1]), self.vad, True)
            elapsed = time.time() - t0
            total = sum(len(audios[i]) for i in group)
            for k, i in enumerate(group):
                dur = len(audios[i]) / SR
                lo = offsets[k] - PACK_GAP_S / 2 if k else -np.inf
                hi = offsets[k] + dur + PACK_GAP_S / 2 if k < len(group) - 1 else np.inf
                mine = [Word(w.text, min(max(w.start - offsets[k], 0.0), dur), min(max(w.end - offsets[k], 0.0), dur),
                             w.prob) for w in words if lo <= 0.5 * (w.start + w.end) < hi]
                tr = Transcript([], dur, notes=[f"decoded packed with {len(group) - 1} other clips"])
                tr.words = self._finish(mine, tr)
                tr.seconds = elapsed * len(audios[i]) / total
                out[i] = tr
        return out  # type: ignore[return-value]


PACK_MAX_CLIP_S = 10.0
PACK_WINDOW_S = 24.0
PACK_GAP_S = 1.0


def pack_groups(durations: Sequence[float], window_s: float = PACK_WINDOW_S, max_clip_s: float = PACK_MAX_CLIP_S,
                gap_s: float = PACK_GAP_S) -> List[List[int]]:
    """Consecutive clips grouped so that each group, joined with ``gap_s`` between clips, lasts
    at most ``window_s`` (inside Whisper's 30 s window); a clip longer than ``max_clip_s`` or
    with a negative duration (not decodable as is) is a group of its own. Order is kept."""
    groups: List[List[int]] = []
    cur: List[int] = []
    length = 0.0
    for i, d in enumerate(durations):
        if d < 0 or d > max_clip_s:
            if cur:
                groups.append(cur)
            groups.append([i])
            cur, length = [], 0.0
            continue
        need = d if not cur else length + gap_s + d
        if cur and need > window_s:
            groups.append(cur)
            cur, need = [], d
        cur.append(i)
        length = need
    if cur:
        groups.append(cur)
    return groups
