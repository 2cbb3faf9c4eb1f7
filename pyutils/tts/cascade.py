"""Track 2 by a cascade of pretrained parts (``local/nvv_tts.sh --tts_method cascade``).

Nothing is trained. For each tagged text ``[laugh] That was fun. [cough]``:

1. **Plan** (:func:`plan_item`): the text is cut at its tags (:func:`pyutils.tts.frontend.split_tagged`);
   its words (en; characters for zh, :func:`pyutils.synth.sentences.words`) are the corpus's
   insertion units and each tag's *position* is the number of units before it, exactly the
   utterance description the offline corpus renders.
2. **Render** with the corpus's own renderer (:func:`pyutils.synth.nvv_corpus.render`, not a copy):
   the words between tags spoken by one pretrained voice of the voice bank
   (:mod:`pyutils.synth.voice_bank`: piper joe / Kokoro for en, the recorded gcin syllables for
   zh), each tag a RECORDED NVV of the bank's *train* split (:func:`pyutils.synth.nvv_bank_index.event_sound`:
   never a clip of the dev/test splits, so the talkers of the corpus's test recordings are never
   spliced in) where the bank has the tag, else the generated sound of
   :mod:`pyutils.synth.nvv_sounds`; short pauses between the parts (50-200 ms), one gain for all
   speech (peak -3 dBFS +- 2 dB) and each NVV's peak at the tag's level relative to it (the corpus's
   loudness rule), so every event's ``[start, end)`` is known to the sample.
3. **Speaker** (optional, ``--tts_convert true``): the speech is converted to the target speaker by
   kNN-VC (:mod:`pyutils.vc.knn`, Whisper-encoder content matching, WORLD): the stage-5 "speaker
   model" (:func:`speaker_model`) is the speaker's own training recordings, NVV spans cut out, as
   the matching set (content frames ``c_r`` and WORLD frames of up to ``max_s`` seconds). The whole
   utterance is converted (Whisper sees its context), then every NVV span is put back from the
   unconverted audio with 10 ms linear cross-fades, and the converted speech is scaled to the
   active RMS of the rendered speech, ``g = rms_act(x_speech) / rms_act(y_speech)``, so the
   NVV-to-speech level stays the corpus's.
4. **Durations** (:func:`token_durations`): the samples of each part spread over the front-end
   tokens of the dump text (``dump/raw/<set>/text``), so the tag tokens ``[laugh] [laugh]~2 ...``
   cover exactly the NVV's samples and stage 7 (:mod:`pyutils.tts.nvv_heard`) reads the position
   from ``durations`` like a FastSpeech's: the non-tag run between tags ``k-1`` and ``k`` gets
   ``[end_{k-1}, start_k)`` (speech and pauses) split evenly over its tokens; where no token lies
   between two parts (the front-end puts no pause slot there) the gap is split between the
   neighbouring tags' edge tokens (a span then grows by at most that gap, 50-300 ms).

CLI (stages 5 and 6 of ``local/nvv_tts.sh``)::

    python -m pyutils.tts.cascade speaker-models --wav-scp W --utt2spk U [--events E.jsonl]
        --spks "en_s00 en_s01" [--max-s 30] --out-dir DIR
    python -m pyutils.tts.cascade synth --text TAGGED --tokens TOKENS --utt2spk U --lang en
        [--voice en_s00] [--speaker-models DIR] [--keys K] [--cache DIR] --out-dir DIR --job N
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.synth import SAMPLE_RATE as SR

#: the bank split whose recorded NVVs the cascade splices in (never dev/test: those are the
#: corpus's evaluation talkers)
NVV_SPLIT = "train"
XFADE_S = 0.01


class CascadeError(ValueError):
    """Bad input of the cascade; the message names the utterance."""


# ---------------------------------------------------------------- plan
def parse_tagged(text: str, lang: str) -> Tuple[List[str], List[dict]]:
    """Tagged text -> (units, events ``{"tag", "position"}``) as the corpus plan has them.

    ``position`` = number of insertion units before the tag; raises FrontendError on an
    unknown tag or bracket, CascadeError on a text without words.
    """
    from pyutils.synth.sentences import words
    from pyutils.tts.frontend import split_tagged

    units: List[str] = []
    events: List[dict] = []
    for kind, val in split_tagged(text):
        if kind == "tag":
            events.append({"tag": val, "position": len(units)})
        else:
            units += words(val.strip(), lang)
    if not units:
        raise CascadeError(f"no words to speak in {text!r}")
    return units, events


def utt_seed(utt_id: str) -> int:
    """A deterministic seed from the utterance id (gaps, levels, clip choice)."""
    return int.from_bytes(hashlib.sha256(utt_id.encode("utf-8")).digest()[:4], "little")


def plan_item(utt_id: str, text: str, lang: str, voice: dict, cache: Optional[str] = None) -> dict:
    """The render description (:func:`pyutils.synth.nvv_corpus.render`) of one tagged text."""
    from pyutils.synth.speech import NEURAL_ENGINES

    units, events = parse_tagged(text, lang)
    item = {"kind": "nvv", "utt_id": utt_id, "split": NVV_SPLIT, "lang": lang, "spk": voice["id"],
            "voice": voice, "sentence": " ".join(units), "units": units, "events": events,
            "seed": [utt_seed(utt_id), 11, 1, 0], "nvv_sounds": "bank"}
    if cache and voice["engine"] in NEURAL_ENGINES:
        item["speech_cache"] = cache
    return item


def resolve_voice(lang: str, voice_id: str) -> dict:
    """A voice of the bank by id (``en_s00``); ValueError listing the known ids."""
    from pyutils.synth.voice_bank import bank_voices

    inv = bank_voices(lang, None)
    for v in inv:
        if v["id"] == voice_id:
            return dict(v)
    raise ValueError(f"--tts_voice {voice_id!r} is not a voice of the {lang} bank "
                     f"({inv[0]['id']} .. {inv[-1]['id']})")


# ---------------------------------------------------------------- durations
def token_durations(tokens: Sequence[str], spans: Sequence[Tuple[int, int]], total: int,
                    utt_id: str = "") -> List[int]:
    """Samples per token such that tag ``k``'s tokens cover ``spans[k]`` (module docstring, step 4).

    ``tokens``: the front-end tokens of the utterance (tag parts ``[t]~2`` follow their tag);
    ``spans``: ``(start, end)`` samples of each tag's sound, in order; ``total``: audio length.
    The result sums to ``total``.
    """
    from pyutils.tts.frontend import tag_part_of

    # runs: ("text", [token idx]) / ("tag", [token idx]) in order
    runs: List[Tuple[str, List[int]]] = []
    for i, tok in enumerate(tokens):
        _, part = tag_part_of(tok)
        kind = "tag" if part else "text"
        if part == 1 or not runs or runs[-1][0] != kind:
            runs.append((kind, [i]))
        else:
            runs[-1][1].append(i)
    n_tags = sum(k == "tag" for k, _ in runs)
    if n_tags != len(spans):
        raise CascadeError(f"utterance {utt_id}: {n_tags} tags in the tokens, {len(spans)} NVVs rendered")
    d = np.zeros(len(tokens), dtype=np.int64)

    def spread(idx: List[int], n: int) -> None:
        base, extra = divmod(int(n), len(idx))
        for j, t in enumerate(idx):
            d[t] += base + (1 if j < extra else 0)

    bounds = [0] + [x for s in spans for x in s] + [total]   # gaps: (bounds[2k], bounds[2k+1])
    k = 0
    pending = 0                     # a gap with no text tokens, given to the next tag's first token
    prev_tag: Optional[List[int]] = None
    for ri, (kind, idx) in enumerate(runs):
        if kind == "tag":
            gap = bounds[2 * k + 1] - bounds[2 * k]
            if ri == 0 or runs[ri - 1][0] == "tag":
                # no text run before this tag: the gap goes to the tags around it
                if prev_tag is None:
                    pending += gap
                else:
                    d[prev_tag[-1]] += gap // 2
                    pending += gap - gap // 2
            a, b = spans[k]
            spread(idx, b - a)
            d[idx[0]] += pending
            pending = 0
            prev_tag = idx
            k += 1
        else:
            spread(idx, bounds[2 * k + 1] - bounds[2 * k])
    if runs and runs[-1][0] == "tag":
        d[runs[-1][1][-1]] += bounds[-1] - bounds[-2]
    if not runs:
        raise CascadeError(f"utterance {utt_id}: no tokens")
    return [int(v) for v in d]


# ---------------------------------------------------------------- speaker models
def speaker_audio(paths: Sequence[str], cuts: Sequence[Sequence[Tuple[float, float]]],
                  max_s: float) -> np.ndarray:
    """The speaker's recordings concatenated (sorted order) with the ``cuts`` spans
    (NVVs, +- 50 ms) removed and each piece trimmed of silence, up to ``max_s`` seconds."""
    from pyutils.synth.audio import trim_silence
    from pyutils.audio import load_audio

    out: List[np.ndarray] = []
    n = 0
    for path, spans in zip(paths, cuts):
        x = load_audio(path, SR)[0]
        keep = np.ones(x.size, dtype=bool)
        for s, e in spans:
            keep[max(0, int((s - 0.05) * SR)):int((e + 0.05) * SR)] = False
        y = trim_silence(x[keep])
        if y.size < SR // 4:
            continue
        out.append(y)
        n += y.size
        if n >= max_s * SR:
            break
    if not out:
        raise CascadeError("no usable speech in the speaker's recordings")
    return np.concatenate(out)[: int(max_s * SR)]


def speaker_models(wav_scp: str, utt2spk: str, spks: Sequence[str], out_dir: str, max_s: float = 30.0,
                   events: Optional[str] = None, threads: int = 1, log=print) -> None:
    """``out_dir/<spk>.npz``: Whisper content frames and WORLD frames of each speaker's matching set."""
    from pyutils.io import read_jsonl, read_scp
    from pyutils.vc.knn import KnnConverter, check_reference

    wav = dict(read_scp(wav_scp))
    u2s = dict(read_scp(utt2spk))
    ev: Dict[str, list] = {}
    if events and os.path.isfile(events):
        ev = {r["utt_id"]: [(float(e["start"]), float(e["end"])) for e in r.get("events", [])]
              for r in read_jsonl(events)}
    conv = KnnConverter(threads=threads)
    os.makedirs(out_dir, exist_ok=True)
    for spk in spks:
        utts = sorted(u for u, s in u2s.items() if s == spk and u in wav)
        if not utts:
            raise CascadeError(f"speaker {spk}: no recordings in {wav_scp} (utt2spk {utt2spk})")
        try:
            x = speaker_audio([wav[u] for u in utts], [ev.get(u, []) for u in utts], max_s)
        except CascadeError as exc:
            raise CascadeError(f"speaker {spk}: {exc}") from None
        w = conv.world(x)
        why = check_reference(x, w, conv.cfg)
        if why:
            raise CascadeError(f"speaker {spk}: {why}")
        c = conv.content.features(x)
        tmp = os.path.join(out_dir, f".{spk}.tmp{os.getpid()}.npz")
        np.savez(tmp, content=c.astype(np.float32), f0=w.f0.astype(np.float64),
                 sp=w.sp.astype(np.float32), ap=w.ap.astype(np.float32))
        os.replace(tmp, os.path.join(out_dir, f"{spk}.npz"))
        log(f"speaker model {spk}: {x.size / SR:.1f} s of speech from {len(utts)} recordings available")


def speaker_warps(wav_scp: str, utt2spk: str, text: str, spks: Sequence[str], lang: str, voice: dict,
                  out_dir: str, max_s: float = 30.0, events: Optional[str] = None, log=print,
                  n_utts: int = 8, cache: Optional[str] = None) -> None:
    """``out_dir/<spk>.json``: the warp that moves ``voice`` to the speaker's pitch (``--tts_warp``).

    ``w = median(f0_spk) / median(f0_voice)`` over voiced WORLD frames of the SAME texts (the
    median of a voice moves with the text by up to 15 %): the speaker's first recordings, NVVs
    cut out, up to ``max_s`` s (at most ``n_utts``), and the voice's rendering of their texts
    (tags removed). The voice bank's warp resamples the output, scaling pitch and formants
    together by ``w`` (:mod:`pyutils.synth.voice_bank`); ``w`` is clipped to [0.7, 1.4], and the
    speaker's F0 is searched in ``[0.6, 1.6] median(f0_voice)`` (DIO halves the F0 of some voices
    with the default 60-600 Hz range: zh warps of 1.1-1.3 were read as 0.5).
    """
    from pyutils.io import read_jsonl, read_scp, read_text
    from pyutils.synth.speech import speak
    from pyutils.tts.frontend import split_tagged
    from pyutils.vc.features import world_analyze

    wav = dict(read_scp(wav_scp))
    u2s = dict(read_scp(utt2spk))
    texts = read_text(text)
    ev: Dict[str, list] = {}
    if events and os.path.isfile(events):
        ev = {r["utt_id"]: [(float(e["start"]), float(e["end"])) for e in r.get("events", [])]
              for r in read_jsonl(events)}

    def median_f0(x: np.ndarray, floor: float = 60.0, ceil: float = 600.0) -> float:
        f0 = world_analyze(x, floor, ceil).f0
        if np.count_nonzero(f0 > 0) < 20:
            raise CascadeError("fewer than 20 voiced frames")
        return float(np.median(f0[f0 > 0]))

    os.makedirs(out_dir, exist_ok=True)
    for spk in spks:
        utts = sorted(u for u, s in u2s.items() if s == spk and u in wav and u in texts)[:n_utts]
        if not utts:
            raise CascadeError(f"speaker {spk}: no recordings with a text in {wav_scp} (utt2spk {utt2spk})")
        try:
            spoken = [" ".join(v for k, v in split_tagged(texts[u]) if k == "text") for u in utts]
            f_voice = median_f0(np.concatenate([speak(t, lang, dict(voice), cache=cache)
                                                for t in spoken if t.strip()]))
            # the speaker's F0 searched within the warps allowed (DIO's octave errors outside it)
            f_spk = median_f0(speaker_audio([wav[u] for u in utts], [ev.get(u, []) for u in utts], max_s),
                              max(40.0, 0.6 * f_voice), 1.6 * f_voice)
        except (CascadeError, ValueError) as exc:
            raise CascadeError(f"speaker {spk}: {exc}") from None
        row = {"spk": spk, "voice": voice["id"], "f0_speaker": round(f_spk, 2), "f0_voice": round(f_voice, 2),
               "warp": round(float(np.clip(f_spk / f_voice, 0.7, 1.4)), 4)}
        from pyutils.io import atomic_write_text

        atomic_write_text(os.path.join(out_dir, f"{spk}.json"), json.dumps(row) + "\n")
        log(f"speaker warp {spk}: median F0 {f_spk:.1f} Hz vs the voice's {f_voice:.1f} Hz -> warp {row['warp']}")


def warped_voice(voice: dict, warps: Optional[str], spk: Optional[str], utt_id: str) -> dict:
    """``voice`` with its warp times the speaker's fitted one (:func:`speaker_warps`); unchanged without ``warps``."""
    if not warps:
        return voice
    path = os.path.join(warps, f"{spk}.json")
    if not os.path.isfile(path):
        raise CascadeError(f"utterance {utt_id}: no speaker warp for {spk!r} ({path}; stage 5)")
    with open(path, encoding="utf-8") as f:
        w = float(json.load(f)["warp"])
    return dict(voice, warp=round(float(voice["warp"]) * w, 4))


def load_speaker_model(path: str):
    """(content, World) of a :func:`speaker_models` file (plain arrays, no pickle)."""
    from pyutils.vc.features import World

    with np.load(path, allow_pickle=False) as z:
        return z["content"], World(f0=z["f0"], sp=z["sp"].astype(np.float64), ap=z["ap"].astype(np.float64))


# ---------------------------------------------------------------- conversion + splicing
def restore_spans(converted: np.ndarray, original: np.ndarray, spans: Sequence[Tuple[int, int]],
                  xfade: int = int(XFADE_S * SR)) -> np.ndarray:
    """``converted`` with ``original`` put back inside every span, linear cross-fades of
    ``xfade`` samples just outside each span edge."""
    y = converted.astype(np.float32).copy()
    w = np.zeros(y.size, dtype=np.float32)       # weight of the original
    for a, b in spans:
        w[a:b] = 1.0
        ramp = np.linspace(0.0, 1.0, xfade + 2, dtype=np.float32)[1:-1]
        lo = max(0, a - xfade)
        w[lo:a] = np.maximum(w[lo:a], ramp[xfade - (a - lo):])
        hi = min(y.size, b + xfade)
        w[b:hi] = np.maximum(w[b:hi], ramp[::-1][: hi - b])
    return (1.0 - w) * y + w * original.astype(np.float32)


def convert_utterance(x: np.ndarray, spans: Sequence[Tuple[int, int]], conv, ref) -> np.ndarray:
    """Speech of ``x`` converted to the speaker model ``ref`` = (content, World); NVV spans kept."""
    from pyutils.tts.audio import active_rms
    from pyutils.vc.features import world_synthesize
    from pyutils.vc.knn import convert_features

    c_ref, w_ref = ref
    y = world_synthesize(convert_features(conv.content.features(x), conv.world(x), c_ref, w_ref, conv.cfg))
    y = np.pad(y[: x.size], (0, max(0, x.size - y.size))).astype(np.float32)
    speech = np.ones(x.size, dtype=bool)
    for a, b in spans:
        speech[a:b] = False
    if speech.any():
        ry = active_rms(y[speech].astype(np.float64), SR)
        if ry > 0:
            y *= active_rms(x[speech].astype(np.float64), SR) / ry
    return np.clip(restore_spans(y, x, spans), -0.99, 0.99)


def synth(texts: Dict[str, str], tokens: Dict[str, str], utt2spk: Dict[str, str], lang: str,
          voice: dict, out_dir: str, job: int = 1, models: Optional[str] = None,
          cache: Optional[str] = None, threads: int = 1, log=print, warps: Optional[str] = None) -> int:
    """Render (and convert) every utterance of ``texts``: ``out_dir/wav/<utt>.wav``,
    ``out_dir/durations.<job>`` (samples per token) and ``out_dir/nvv_sources.<job>.jsonl``."""
    from pyutils.io import atomic_write_lines
    from pyutils.synth.audio import read_wav, write_wav
    from pyutils.synth.nvv_bank_index import load_index
    from pyutils.synth.nvv_corpus import render

    allowed = {r["clip_id"] for (_, split), rows in load_index().items() if split == NVV_SPLIT for r in rows}
    conv = None
    refs: Dict[str, tuple] = {}
    if models:
        from pyutils.vc.knn import KnnConverter

        conv = KnnConverter(threads=threads)
    os.makedirs(os.path.join(out_dir, "wav"), exist_ok=True)
    dur_lines, src_rows = [], []
    for n, (utt, text) in enumerate(sorted(texts.items()), 1):
        if utt not in tokens:
            raise CascadeError(f"utterance {utt}: no front-end tokens")
        try:
            item = plan_item(utt, text, lang, warped_voice(voice, warps, utt2spk.get(utt), utt), cache)
        except ValueError as exc:       # FrontendError and CascadeError are ValueErrors
            raise CascadeError(f"utterance {utt}: {exc}") from None
        meta = render(item, out_dir)
        for e in meta["events"]:
            if e.get("source") == "recorded" and e.get("clip") not in allowed:
                raise CascadeError(f"utterance {utt}: clip {e.get('clip')} is not of the bank's {NVV_SPLIT} split")
        spans = [(int(round(e["start"] * SR)), int(round(e["end"] * SR))) for e in meta["events"]]
        x, _ = read_wav(meta["wav"])
        if conv is not None:
            spk = utt2spk.get(utt)
            path = os.path.join(models, f"{spk}.npz")
            if not os.path.isfile(path):
                raise CascadeError(f"utterance {utt}: no speaker model for {spk!r} ({path}; stage 5)")
            if spk not in refs:
                refs[spk] = load_speaker_model(path)
            x = convert_utterance(x, spans, conv, refs[spk])
            write_wav(meta["wav"], x)
        d = token_durations(tokens[utt].split(), spans, x.size, utt)
        dur_lines.append(f"{utt} {' '.join(map(str, d))}\n")
        src_rows.append(json.dumps({"utt_id": utt, "voice": voice["id"], "spk": utt2spk.get(utt),
                                    "converted": conv is not None, "warp": item["voice"]["warp"],
                                    "events": [{k: e.get(k) for k in ("tag", "source", "clip", "start", "end")}
                                               for e in meta["events"]]}, ensure_ascii=False) + "\n")
        if n % 10 == 0 or n == len(texts):
            log(f"cascade: {n}/{len(texts)} utterances")
    atomic_write_lines(os.path.join(out_dir, f"durations.{job}"), dur_lines)
    atomic_write_lines(os.path.join(out_dir, f"nvv_sources.{job}.jsonl"), src_rows)
    return len(dur_lines)


# ---------------------------------------------------------------- cli
def main(argv=None) -> int:
    from pyutils.io import read_scp, read_text

    p = argparse.ArgumentParser(description="Track 2 cascade: bank voice + recorded NVVs (+ kNN-VC)")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("speaker-models", help="kNN matching sets of speakers from their recordings")
    m.add_argument("--wav-scp", required=True)
    m.add_argument("--utt2spk", required=True)
    m.add_argument("--events", help="events.jsonl: NVV spans cut out of the matching set")
    m.add_argument("--spks", required=True, help="space-separated speaker ids")
    m.add_argument("--max-s", type=float, default=30.0)
    m.add_argument("--out-dir", required=True)
    w = sub.add_parser("speaker-warps", help="the bank voice's warp to each speaker's pitch")
    w.add_argument("--wav-scp", required=True)
    w.add_argument("--utt2spk", required=True)
    w.add_argument("--text", required=True, help="Kaldi text with tags of those recordings")
    w.add_argument("--events", help="events.jsonl: NVV spans cut out")
    w.add_argument("--spks", required=True)
    w.add_argument("--lang", required=True)
    w.add_argument("--voice", default="")
    w.add_argument("--max-s", type=float, default=30.0)
    w.add_argument("--cache", default="", help="speech cache dir of the neural voices")
    w.add_argument("--out-dir", required=True)
    s = sub.add_parser("synth", help="render tagged texts")
    s.add_argument("--text", required=True, help="Kaldi text with tags")
    s.add_argument("--tokens", required=True, help="Kaldi text of front-end tokens (the dump's text)")
    s.add_argument("--utt2spk", required=True)
    s.add_argument("--keys", help="only these utterances (first column)")
    s.add_argument("--lang", required=True)
    s.add_argument("--voice", default="", help="bank voice id (default: <lang>_s00)")
    s.add_argument("--speaker-models", default="", help="dir of <spk>.npz: convert to the speaker (empty: no)")
    s.add_argument("--warps", default="", help="dir of <spk>.json: the voice warped to the speaker (empty: no)")
    s.add_argument("--cache", default="", help="speech cache dir of the neural voices")
    s.add_argument("--out-dir", required=True)
    s.add_argument("--job", type=int, default=1)
    for q in (m, s, w):
        q.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    try:
        if a.cmd == "speaker-models":
            speaker_models(a.wav_scp, a.utt2spk, a.spks.split(), a.out_dir, a.max_s, a.events, a.threads)
            return 0
        if a.cmd == "speaker-warps":
            speaker_warps(a.wav_scp, a.utt2spk, a.text, a.spks.split(), a.lang,
                          resolve_voice(a.lang, a.voice or f"{a.lang}_s00"), a.out_dir, a.max_s, a.events,
                          cache=a.cache or None)
            return 0
        texts = read_text(a.text)
        if a.keys:
            keys = [u for u, _ in read_scp(a.keys)]
            texts = {u: texts[u] for u in keys if u in texts}
        voice = resolve_voice(a.lang, a.voice or f"{a.lang}_s00")
        n = synth(texts, read_text(a.tokens), dict(read_scp(a.utt2spk)), a.lang, voice, a.out_dir,
                  a.job, a.speaker_models or None, a.cache or None, a.threads, warps=a.warps or None)
        print(f"cascade: {n} utterances -> {a.out_dir}/wav (voice {voice['id']}, "
              f"{'converted' if a.speaker_models else 'not converted'})")
    except (CascadeError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
