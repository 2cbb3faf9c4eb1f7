"""The independent ASR judge: pretrained Whisper (faster-whisper) transcribes audio.

Generation recipes (egs/nvv_tts, egs/vivc) measure intelligibility the way NV-Bench
and VLSP do, with a pretrained recognizer that never saw their training data: the
CTranslate2 Whisper of ``make -C tools`` (or any ``--model`` CTranslate2 dir) decodes
each file with a fixed language, greedy, no VAD, no previous-text conditioning, at most
~12 tokens per second of audio; Chinese
output is converted to simplified characters (OpenCC ``t2s``).

    python -m pyutils.whisper.judge --lang en --wav-scp synth/wav.scp --out judge/text
        [--model base] [--beam-size 1] [--threads 2]

``--out`` is a Kaldi ``text`` (``<utt> <transcript>``, empty when nothing was heard),
written atomically; a file that cannot be read is reported by name and gets an empty
line, so the output always covers the whole wav.scp.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from pyutils.audio import load_audio
from pyutils.datadir.io import AudioReadError, read_kv
from pyutils.io import atomic_write
from pyutils.whisper.weights import WhisperWeightsError, resolve

SR = 16000


class Judge:
    """faster-whisper on the CPU (int8), one model per process."""

    def __init__(self, model: str = "base", lang: str = "en", beam_size: int = 1,
                 threads: int = 0, compute_type: str = "int8"):
        spec = resolve(model)
        if spec.ct2_dir is None:
            raise WhisperWeightsError(f"the judge needs a CTranslate2 Whisper dir (faster-whisper); "
                                      f"{spec.source} is not one")
        from faster_whisper import WhisperModel

        self.lang, self.beam_size = lang, beam_size
        self.model = WhisperModel(str(spec.ct2_dir), device="cpu", compute_type=compute_type,
                                  cpu_threads=threads or min(os.cpu_count() or 1, 4))

    def transcribe(self, audio: np.ndarray) -> str:
        if audio.size == 0 or not np.isfinite(audio).all():
            return ""
        # A cap of ~12 tokens per second of audio stops the repetition loops that greedy
        # Whisper falls into on odd audio (an ordinary speaker produces 3-5 per second).
        max_tokens = min(440, int(12 * len(audio) / SR) + 10)
        segments, _ = self.model.transcribe(
            audio.astype(np.float32), language=self.lang.split("_")[0], task="transcribe",
            beam_size=self.beam_size, temperature=0.0, vad_filter=False,
            condition_on_previous_text=False, without_timestamps=True, max_new_tokens=max_tokens)
        text = " ".join(s.text.strip() for s in segments).strip()
        if self.lang.startswith("zh"):
            from pyutils.langscript import to_simplified

            text = to_simplified(text)
        return " ".join(text.split())


def transcribe_scp(judge: Judge, wav_scp: str, progress: bool = True) -> dict[str, str]:
    entries = read_kv(wav_scp)
    out, t0, audio_s = {}, time.time(), 0.0
    for n, (utt, entry) in enumerate(entries.items(), 1):
        try:
            x, _ = load_audio(entry, SR)
            audio_s += len(x) / SR
            out[utt] = judge.transcribe(x)
        except (AudioReadError, OSError, ValueError) as e:
            print(f"judge: {wav_scp}: {utt}: unreadable audio ({e}): empty transcript", file=sys.stderr)
            out[utt] = ""
        if progress and (n % 20 == 0 or n == len(entries)):
            el = time.time() - t0
            print(f"judge: {n}/{len(entries)} files, {el:.0f} s, RTF {el / max(audio_s, 1e-9):.2f}",
                  file=sys.stderr)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wav-scp", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lang", required=True, help="language code Whisper knows (en, zh, vi, ...)")
    ap.add_argument("--model", default="base", help="base or a CTranslate2 Whisper dir")
    ap.add_argument("--beam-size", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: up to 4)")
    a = ap.parse_args(argv)
    try:
        judge = Judge(a.model, a.lang, a.beam_size, a.threads)
        hyps = transcribe_scp(judge, a.wav_scp)
    except (WhisperWeightsError, OSError, ValueError) as e:
        print(f"judge: {e}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with atomic_write(a.out) as f:
        for utt in sorted(hyps, key=lambda u: u.encode()):
            f.write(f"{utt} {hyps[utt]}".rstrip() + "\n")
    print(f"judge: wrote {a.out} ({len(hyps)} transcripts)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
