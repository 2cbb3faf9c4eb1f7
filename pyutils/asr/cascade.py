"""Track 1 cascade: frozen Whisper text + NVV events placed by time -> a Track 1 JSONL.

    python -m pyutils.asr.cascade --audio-dir CLIPS/ --lang en --jsonl clips.track1.jsonl
    python -m pyutils.asr.cascade --wav-scp data/test/wav.scp --lang zh --jsonl out.jsonl \\
        [--events events.jsonl] [--details details.jsonl] [--text text] [--nvv-text remove|keep|off]
        [--model base] [--threads 2] [--beam-size 1] [--no-vad] [--pack]

Per file: the audio (wav/flac/ogg/mp3 through libsndfile, anything else through PyAV;
any rate, channels averaged) is resampled to 16 kHz mono; :mod:`pyutils.asr.longform`
transcribes it with word times (never cut: long inputs go through Whisper's long-form
loop); :mod:`pyutils.asr.nvv_words` turns NVVs written as text into events and removes
them from the text (``--nvv-text keep``: the interjection stays, the tag is added after it;
``off``: no mapping); events of ``--events`` for that utterance are added (a detected event
of the same tag within 0.5 s of a text event is dropped; a text event within 0.5 s of a
detected event of another tag is dropped); :mod:`pyutils.asr.placement`
puts every event at the word (en) / character (zh) boundary nearest its time. ``--pack``
decodes clips of at most 10 s together, joined with 1 s pauses into windows of <= 24 s, and
gives each clip the words whose midpoints fall in it (one encoder pass for several clips:
on the 10 real test clips RTF 0.05-0.065 instead of 0.15, WER 4.4-5.5 % instead of 6.6 %;
a clip's text then depends on its neighbours).

``--events`` JSONL rows: ``{"utt_id", "tag", "start", "end", "score"}`` (seconds; ``score``
optional, default 1; rows with ``score < --min-score`` are ignored); the tag is one of the
16 challenge tags (spelled as in conf/nvv_tags.yaml, brackets optional). A bad row stops
the run before any decoding (exit 2, ``file:line: message``).

Output: ``--jsonl`` rows ``{"utt_id", "text_with_nvvs"}`` in wav.scp order, each checked
with the official Track 1 parser, written atomically at the end. A file that cannot be
read or decoded, silence, noise, a 0.05 s clip: an empty row and one ``cascade: <utt>:
...`` line on stderr; the run goes on. ``--details`` JSONL: per utterance the words with
times, the events with their positions, the notes and the decoding time (for analysis
and for tuning a detector on one's own data).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Dict, Iterator, List, Optional, Tuple

from pyutils.asr.longform import SR, LongformTranscriber, Transcript
from pyutils.asr.nvv_words import Event, extract, merge_events
from pyutils.asr.placement import place, tagged_transcript
from pyutils.audio import load_audio

LANGS = ("en", "zh")


class CascadeError(Exception):
    """Invalid input (exit 2): the message names the file (and line)."""


def read_events(path: str, min_score: float = 0.0) -> Dict[str, List[Event]]:
    """``--events`` JSONL -> ``{utt_id: [Event]}``; errors name ``path:line``."""
    from pyutils.scoring.errors import ScoringError
    from pyutils.scoring.io import iter_jsonl
    from pyutils.tags import challenge_tags, normalize_tag_label

    tags = set(challenge_tags())
    out: Dict[str, List[Event]] = {}
    try:
        for line, row in iter_jsonl(path, allow_empty=True):
            where = f"{path}:{line}"
            if not isinstance(row, dict):
                raise CascadeError(f"{where}: expected a JSON object")
            utt = row.get("utt_id")
            if not isinstance(utt, str) or not utt.strip():
                raise CascadeError(f"{where}: 'utt_id' must be a non-empty string")
            raw = row.get("tag")
            tag = normalize_tag_label(raw.strip().strip("[]").replace("_", " ")) if isinstance(raw, str) else None
            if tag not in tags:
                raise CascadeError(f"{where}: 'tag' {raw!r} is not one of the 16 challenge tags")
            vals = []
            for key, default in (("start", None), ("end", None), ("score", 1.0)):
                v = row.get(key, default)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise CascadeError(f"{where}: {key!r} must be a finite number, got {v!r}")
                vals.append(float(v))
            start, end, score = vals
            if start < 0 or end < start:
                raise CascadeError(f"{where}: need 0 <= start <= end, got start={start} end={end}")
            if score >= min_score:
                out.setdefault(utt.strip(), []).append(Event(tag, start, end, score, "detector"))
    except ScoringError as exc:
        raise CascadeError(str(exc)) from None
    return out


def finish_one(t: Transcript, lang: str, detected: List[Event], nvv_text: str = "remove") -> Tuple[str, dict]:
    """NVV words -> events, merged with ``detected``, placed: ``(tagged transcript, details)``."""
    words, text_events = (t.words, []) if nvv_text == "off" else extract(t.words, lang, nvv_text == "keep")
    events = merge_events(text_events, detected)
    text = tagged_transcript(words, events, lang)
    details = {"duration": round(t.duration, 3), "seconds": round(t.seconds, 3), "notes": t.notes,
               "speech_s": None if t.speech_s is None else round(t.speech_s, 3),
               "words": [[w.text, round(w.start, 3), round(w.end, 3), round(w.prob, 3)] for w in words],
               "events": [{"tag": e.tag, "start": round(e.start, 3), "end": round(e.end, 3),
                           "score": round(e.score, 3), "source": e.source, "position": k}
                          for k, e in place(words, events, lang)]}
    return text, details


PACK_BATCH = 16  # clips read ahead for --pack (grouped into 30 s windows by transcribe_packed)


def cache_key(audio, settings: str) -> str:
    """``--whisper-cache`` key of one input: SHA-256 of its 16 kHz float32 samples and the
    decoder settings (model, language, beam, VAD, annotations)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
    h.update(settings.encode())
    return h.hexdigest()


def read_cache(path: str) -> Dict[str, Transcript]:
    """``--whisper-cache`` JSONL -> ``{key: Transcript}``; a missing file is empty, a damaged row
    is skipped with one message (the cache is only a shortcut: those inputs are decoded again)."""
    from pyutils.asr.longform import Word

    out: Dict[str, Transcript] = {}
    if not path or not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                out[r["key"]] = Transcript([Word(w, float(a), float(b), float(p)) for w, a, b, p in r["words"]],
                                           float(r["duration"]), r["speech_s"], 0.0, list(r["notes"]))
            except (ValueError, KeyError, TypeError) as exc:
                print(f"cascade: {path}:{n}: damaged cache row skipped ({exc})", file=sys.stderr)
    return out


def cache_row(key: str, t: Transcript) -> dict:
    return {"key": key, "duration": t.duration, "speech_s": t.speech_s, "notes": t.notes,
            "words": [[w.text, w.start, w.end, w.prob] for w in t.words]}


def decode_entries(tr: LongformTranscriber, entries: Dict[str, str], lang: str, detected: Dict[str, List[Event]],
                   nvv_text: str = "remove", pack: bool = False, cache: Optional[Dict[str, Transcript]] = None,
                   settings: str = "") -> Iterator[Tuple[str, str, dict]]:
    """``(utt, tagged transcript, details)`` per entry, in order; a file that cannot be read or
    decoded gives an empty transcript and ``details["error"]`` (never an exception).
    ``cache`` (``{key: Transcript}``, :func:`cache_key`; not with ``pack``): inputs found there
    are not decoded again, new ones are added (``details["cache_key"]``, ``details["cached"]``)."""
    from pyutils.datadir.io import AudioReadError

    errors = (AudioReadError, OSError, ValueError, RuntimeError, AssertionError)
    pending: List[Tuple[str, object]] = []   # (utt, audio or the read error)
    keys: Dict[str, Tuple[str, bool]] = {}   # utt -> (cache key, found in the cache)

    def transcribe(u, x):
        if cache is None:
            return tr.transcribe(x)
        k = cache_key(x, settings)
        keys[u] = (k, k in cache)
        if k not in cache:
            cache[k] = tr.transcribe(x)
        return cache[k]

    def flush() -> Iterator[Tuple[str, str, dict]]:
        ok = [(u, x) for u, x in pending if not isinstance(x, Exception)]
        try:
            ts = dict(zip([u for u, _ in ok], tr.transcribe_packed([x for _, x in ok]) if pack and len(ok) > 1
                          else [transcribe(u, x) for u, x in ok])) if ok else {}
        except errors:  # one clip broke the group: each on its own
            ts = {}
            for u, x in ok:
                try:
                    ts[u] = transcribe(u, x)
                except errors as exc:
                    ts[u] = exc
        for u, x in pending:
            result = x if isinstance(x, Exception) else ts[u]
            if not isinstance(result, Exception):
                try:
                    text, info = finish_one(result, lang, detected.get(u, []), nvv_text)
                    yield u, text, ({**info, "cache_key": keys[u][0], "cached": keys[u][1]} if u in keys else info)
                    continue
                except errors as exc:
                    result = exc
            yield u, "", {"error": str(result)}
        pending.clear()

    for utt, entry in entries.items():
        try:
            pending.append((utt, load_audio(entry, SR)[0]))
        except errors as exc:
            pending.append((utt, exc))
        if not pack or len(pending) >= PACK_BATCH:
            yield from flush()
    yield from flush()


def _entries(a) -> Dict[str, str]:
    from pyutils.asr.decode_dir import DecodeDirError, audio_dir_entries
    from pyutils.datadir.io import DataDirError, read_kv

    try:
        if a.audio_dir:
            return audio_dir_entries(a.audio_dir)
        if not os.path.isfile(a.wav_scp):
            raise CascadeError(f"{a.wav_scp} not found")
        entries = read_kv(a.wav_scp)
    except (DecodeDirError, DataDirError) as exc:
        raise CascadeError(str(exc)) from None
    if not entries:
        raise CascadeError(f"{a.wav_scp}: no entries")
    return entries


def run(a) -> int:
    from pyutils.scoring.io import atomic_write_chunks, check_not_input, iter_jsonl_text

    from pyutils.scoring.errors import ScoringError

    entries = _entries(a)
    try:
        check_not_input(a.jsonl, [("--wav-scp", a.wav_scp), ("--events", a.events)], "--jsonl")
        check_not_input(a.details, [("--wav-scp", a.wav_scp), ("--events", a.events), ("--jsonl", a.jsonl)],
                        "--details")
        check_not_input(a.text, [("--wav-scp", a.wav_scp), ("--events", a.events), ("--jsonl", a.jsonl),
                                 ("--details", a.details)], "--text")
    except ScoringError as exc:
        raise CascadeError(str(exc)) from None
    detected = read_events(a.events, a.min_score) if a.events else {}
    unknown = sorted(set(detected) - set(entries))
    if unknown:
        print(f"cascade: {a.events}: {len(unknown)} utt_ids not in the input, ignored "
              f"(first: {unknown[0]!r})", file=sys.stderr)
    tr = LongformTranscriber(a.model, a.lang, a.beam_size, a.threads, vad=not a.no_vad,
                             annotations=not a.no_annotations)
    rows, details, failed, empty = [], [], 0, 0
    cache = None if a.pack or not a.whisper_cache else read_cache(a.whisper_cache)
    settings = f"{a.model} {a.lang} beam={a.beam_size} vad={not a.no_vad} annotations={not a.no_annotations}"
    n_cached = len(cache or {})
    audio_s, t0 = 0.0, time.time()
    for n, (utt, text, info) in enumerate(decode_entries(tr, entries, a.lang, detected, a.nvv_text, a.pack,
                                                         cache, settings), 1):
        if "error" in info:
            failed += 1
            print(f"cascade: {utt}: {info['error']}: empty transcript", file=sys.stderr)
        else:
            audio_s += info["duration"]
            notes = [x for x in info["notes"] if not x.startswith("decoded packed")]
            if notes:
                print(f"cascade: {utt}: {'; '.join(notes)}", file=sys.stderr)
        empty += not text
        rows.append({"utt_id": utt, "text_with_nvvs": text})
        details.append({"utt_id": utt, **info})
        if a.progress and (n % 20 == 0 or n == len(entries)):
            el = time.time() - t0
            print(f"cascade: {n}/{len(entries)} files, {audio_s:.0f} s audio, {el:.0f} s, "
                  f"RTF {el / max(audio_s, 1e-9):.3f}", file=sys.stderr)
    os.makedirs(os.path.dirname(os.path.abspath(a.jsonl)), exist_ok=True)
    atomic_write_chunks(a.jsonl, iter_jsonl_text(rows))
    if a.details:
        atomic_write_chunks(a.details, iter_jsonl_text(details))
    if cache is not None:
        used = [d["cache_key"] for d in details if "cache_key" in d]
        reused = sum(1 for d in details if d.get("cached"))
        atomic_write_chunks(a.whisper_cache, (json.dumps(cache_row(k, cache[k]), ensure_ascii=False) + "\n"
                                              for k in dict.fromkeys(used)))
        print(f"cascade: {a.whisper_cache}: {reused} of {len(entries)} transcripts reused "
              f"({n_cached} cached before)", file=sys.stderr)
    if a.text:
        from pyutils.datadir.io import write_kv

        write_kv(a.text, [(r["utt_id"], r["text_with_nvvs"]) for r in rows])
    from pyutils.scoring.validate import validate_track1

    for line in validate_track1(a.jsonl):
        print(f"cascade: {line}", file=sys.stderr)
    print(f"cascade: wrote {a.jsonl}: {len(rows)} utterances ({empty} empty, {failed} unreadable), "
          f"{audio_s:.1f} s audio in {time.time() - t0:.1f} s", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from pyutils.cli_types import non_negative_float, non_negative_int, positive_int

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--audio-dir", help="folder of audio files (searched recursively; id = file stem)")
    src.add_argument("--wav-scp", help="wav.scp (paths or pipes, any format/rate)")
    p.add_argument("--lang", required=True, choices=LANGS)
    p.add_argument("--jsonl", required=True, help="Track 1 JSONL to write")
    p.add_argument("--events", help="detected NVV events JSONL (utt_id, tag, start, end, score)")
    p.add_argument("--min-score", type=non_negative_float, default=0.0, help="ignore --events rows below it")
    p.add_argument("--details", help="also write words/events/notes per utterance (JSONL)")
    p.add_argument("--text", help="also write Kaldi text lines '<utt_id> <tagged transcript>' (what stage 7 scores)")
    p.add_argument("--nvv-text", choices=("remove", "keep", "off"), default="remove",
                   help="NVVs written as text: tag + remove (default), tag + keep, leave alone")
    p.add_argument("--model", default="base", help="base or a CTranslate2 Whisper dir")
    p.add_argument("--beam-size", type=positive_int, default=1)
    p.add_argument("--threads", type=non_negative_int, default=0, help="CPU threads (0: up to 4)")
    p.add_argument("--no-vad", action="store_true", help="decode all audio (no Silero VAD)")
    p.add_argument("--no-annotations", action="store_true",
                   help="keep Whisper's ban on symbols: no '(laughs)'/'[coughs]' in its text")
    p.add_argument("--pack", action="store_true",
                   help="decode clips of <= 10 s several to a 30 s window (~3x faster on short clips)")
    p.add_argument("--whisper-cache", help="JSONL of Whisper's words per input (audio hash + settings): inputs "
                                           "found there are not decoded again (a rerun with other --events); "
                                           "rewritten with this run's inputs; not with --pack")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    from pyutils.cli_types import tolerant_output
    from pyutils.whisper.weights import WhisperWeightsError

    tolerant_output()
    a = build_parser().parse_args(argv)
    try:
        return run(a)
    except (CascadeError, WhisperWeightsError) as exc:
        print(f"cascade: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"cascade: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
