"""Does an independent listener hear each requested NVV near where it was asked for?

Stage 7 of ``local/nvv_tts.sh`` asks YAMNet (:mod:`pyutils.audio_tagger`, an AudioSet
tagger never trained on Chorus data) about every requested NVV of the tags it has
classes for (:data:`pyutils.audio_tagger.TAG_CLASSES`, the mapping the NVV detector and
``benchmarks/corpus_nvv_bank.py`` use; yawn and lipsmack have none and are skipped), in
the synthesis and, as the ceiling, in the corpus's own test recordings.

Where a tag was requested, per utterance, as ``(tag, start, end)`` in seconds:

* recordings: the corpus's event times (``events.jsonl``, exact);
* synthesis, ``durations``: the span of the tag's tokens (``[laugh]``, ``[laugh]~2``, ...)
  from the model's per-token durations (FastSpeech's duration predictor; ESPnet's
  ``durations`` file), scaled so they add up to the audio length (:func:`tag_spans`);
* synthesis, ``text``: where no durations exist (an utterance missing from the file, a
  model without durations), the tag's character span ``[c0, c1)`` in the tagged text of
  ``n`` characters mapped linearly onto the audio of ``T`` seconds,
  ``[T c0 / n, T c1 / n]`` (:func:`text_spans`), with the wider tolerance ``tol_text``.

YAMNet scores 0.96 s patches every ``hop_s`` = 0.24 s. A tag is *heard* in a set of
patches when the best of its AudioSet classes, maximised over those patches, is among
the top 3 of the 521 classes and at least 0.15 (:func:`pyutils.audio_tagger.judge_scores`,
the rule of ``YamNet.heard``). With ``W = [start - tol, end + tol]``:

* **recall** = requested events heard in the patches overlapping ``W``, / requested
  events; **clip recall** = requested events whose tag is heard in the whole clip's scores
  (maximised over all its patches: clip-level tagging, where speech and other classes compete
  for the top 3, so it can be lower than recall);
* **false alarms**: per patch and tag, the same rule on that patch alone; a run of
  consecutive patches where tag ``t`` is heard and none of which overlaps the window ``W``
  of any requested NVV of that utterance counts as one false alarm of ``t`` (an NVV class
  heard where only speech or silence was asked for; at a requested NVV YAMNet often ranks
  neighbouring classes too, a moan as "Groan", "Crying" and "Gasp", which is not counted);
  reported as a count and per minute of audio, ``60 * FA / sum(T)``, so sets of different
  lengths compare.
"""

from __future__ import annotations

import collections
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pyutils.tags import TAG_RE, normalize_tag_label

TOL_S = 0.5          # half a YAMNet patch: the slack of the event matcher of pyutils.nvv_detect
TOL_TEXT_S = 1.0     # a position guessed from the text is rougher
HOP_S = 0.24         # patch hop (corpus_nvv_bank.py's)

Span = Tuple[str, float, float]


def tag_spans(tokens: Sequence[str], durations: Sequence[float], total_s: float) -> List[Span]:
    """``(tag, start, end)`` of each tag in the output audio from per-token durations.

    A tag token opens a span; its parts ``[laugh]~2 ...`` that follow extend it (the same
    reading as the spectrogram plot). Tags come back normalised (``throat clearing``).
    """
    from pyutils.tts.frontend import tag_part_of, token_to_tag
    from pyutils.tts.metrics import token_spans

    spans: List[List] = []
    for tok, s, e in token_spans(tokens, durations, total_s):
        head, part = tag_part_of(tok)
        if part == 1:
            spans.append([normalize_tag_label(token_to_tag(head)), s, e, head])
        elif part > 1 and spans and spans[-1][3] == head:
            spans[-1][2] = e
    return [(t, s, e) for t, s, e, _ in spans]


def text_spans(tagged_text: str, total_s: float) -> List[Span]:
    """``(tag, T c0 / n, T c1 / n)`` for each ``[tag]`` at characters ``[c0, c1)`` of the ``n``-character text."""
    n = len(tagged_text)
    if n == 0 or total_s <= 0:
        return []
    return [(normalize_tag_label(m.group(1).replace("_", " ")), total_s * m.start() / n, total_s * m.end() / n)
            for m in TAG_RE.finditer(tagged_text)]


def event_spans(events: Iterable[Mapping]) -> List[Span]:
    """``(tag, start, end)`` of a corpus ``events.jsonl`` row's events."""
    return [(normalize_tag_label(str(e["tag"])), float(e["start"]), float(e["end"])) for e in events]


def _overlapping(times: np.ndarray, patch_s: float, t0: float, t1: float) -> np.ndarray:
    return (times < t1) & (times + patch_s > t0)


def judge_utterance(times: np.ndarray, scores: np.ndarray, patch_s: float, tagger,
                    spans: Sequence[Span], tol: float, known: Iterable[str]) -> dict:
    """Recall and false alarms of one utterance from its YAMNet patch scores.

    ``times`` (N,) patch starts, ``scores`` (N, C) sigmoid scores, ``patch_s`` the seconds a
    patch reads, ``tagger`` anything with ``class_ids(names)`` (a :class:`YamNet`),
    ``spans`` the requested ``(tag, start, end)``, ``known`` the tags YAMNet has classes for.
    Returns ``{"events": [(tag, start, end, heard_near, heard_in_clip)], "false_alarms": [(tag, t0, t1)]}``.
    """
    from pyutils.audio_tagger import judge_scores

    known = set(known)
    out_events = []
    if len(times) == 0:
        return {"events": [(t, s, e, False, False) for t, s, e in spans if t in known], "false_alarms": []}
    clip = scores.max(axis=0)
    for tag, s, e in spans:
        if tag not in known:
            continue
        keep = _overlapping(times, patch_s, s - tol, e + tol)
        near = bool(keep.any() and judge_scores(scores[keep].max(axis=0), tagger, tag)[0])
        out_events.append((tag, s, e, near, bool(judge_scores(clip, tagger, tag)[0])))
    requested = np.zeros(len(times), dtype=bool)     # patches near any requested NVV, known or not
    for _, s, e in spans:
        requested |= _overlapping(times, patch_s, s - tol, e + tol)
    fas = []
    for tag in sorted(known):
        allowed = requested
        run: Optional[List[float]] = None
        for i in range(len(times)):
            hit = not allowed[i] and bool(judge_scores(scores[i], tagger, tag)[0])
            if hit and run is None:
                run = [float(times[i]), float(times[i]) + patch_s]
            elif hit:
                run[1] = float(times[i]) + patch_s
            if run is not None and (not hit or i == len(times) - 1):
                fas.append((tag, run[0], run[1]))
                run = None
    return {"events": out_events, "false_alarms": fas}


def summarise(per_utt: Mapping[str, dict], seconds: float) -> dict:
    """Set totals of :func:`judge_utterance` results over ``seconds`` of audio."""
    req = collections.Counter()
    near = collections.Counter()
    clip = collections.Counter()
    fa = collections.Counter()
    for r in per_utt.values():
        for tag, _, _, h_near, h_clip in r["events"]:
            req[tag] += 1
            near[tag] += h_near
            clip[tag] += h_clip
        for tag, _, _ in r["false_alarms"]:
            fa[tag] += 1
    n, n_fa = sum(req.values()), sum(fa.values())
    minutes = seconds / 60.0
    return {
        "requested": n, "heard": sum(near.values()), "heard_clip": sum(clip.values()),
        "recall": sum(near.values()) / n if n else float("nan"),
        "recall_clip": sum(clip.values()) / n if n else float("nan"),
        "false_alarms": n_fa, "minutes": minutes,
        "false_alarms_per_min": n_fa / minutes if minutes > 0 else float("nan"),
        "per_tag": {t: {"requested": req[t], "heard": near[t], "heard_clip": clip[t], "false_alarms": fa[t]}
                    for t in sorted(set(req) | set(fa))},
    }


def judge_set(tagger, wavs: Mapping[str, np.ndarray], spans: Mapping[str, Sequence[Span]],
              tol: float = TOL_S, tol_by_utt: Optional[Mapping[str, float]] = None,
              sr: int = 16000, hop_s: float = HOP_S) -> Tuple[dict, Dict[str, dict]]:
    """(set summary, per-utterance results) of YAMNet on ``wavs`` with requested ``spans``.

    ``tol_by_utt`` overrides ``tol`` per utterance (the text-position fallback).
    """
    from pyutils.audio_tagger import TAG_CLASSES, patch_span_s

    per_utt: Dict[str, dict] = {}
    seconds = 0.0
    for u, x in wavs.items():
        times, scores = tagger.frame_scores(x, sr, hop_s)
        t = (tol_by_utt or {}).get(u, tol)
        per_utt[u] = judge_utterance(times, scores, patch_span_s(), tagger, spans.get(u, []), t, TAG_CLASSES)
        seconds += len(x) / sr
    summary = summarise(per_utt, seconds)
    summary["tol_s"] = tol
    return summary, per_utt


def synth_spans(utts: Sequence[str], tagged: Mapping[str, str], tokens: Mapping[str, str],
                durations: Mapping[str, Sequence[float]], lengths_s: Mapping[str, float]
                ) -> Tuple[Dict[str, List[Span]], Dict[str, str]]:
    """Requested spans of the synthesis and where each came from (``durations`` or ``text``).

    Durations are used when they give a span for every tag of the tagged text."""
    spans, source = {}, {}
    for u in utts:
        from_durs = None
        if u in durations and u in tokens:
            from_durs = tag_spans(tokens[u].split(), durations[u], lengths_s[u])
        # durations that do not cover every requested tag (a truncated row): the text position
        if from_durs is not None and len(from_durs) == len(TAG_RE.findall(tagged.get(u, ""))):
            spans[u], source[u] = from_durs, "durations"
        else:
            spans[u], source[u] = text_spans(tagged.get(u, ""), lengths_s[u]), "text"
    return spans, source


def evaluate(tagger, utts: Sequence[str], real_wav: Mapping[str, np.ndarray],
             synth_wav: Mapping[str, np.ndarray], tagged: Mapping[str, str],
             events: Mapping[str, Sequence[Mapping]], tokens: Mapping[str, str],
             durations: Mapping[str, Sequence[float]], sr: int = 16000) -> Tuple[dict, List[str]]:
    """(``{"synth": summary, "real": summary, "position_source": ...}`` for metrics.json,
    the lines of ``yamnet.tsv``: one per requested event and per false alarm).

    Recordings without an ``events.jsonl`` row fall back to the text position too.
    """
    lengths = {u: len(synth_wav[u]) / sr for u in utts}
    s_spans, s_src = synth_spans(utts, tagged, tokens, durations, lengths)
    s_tol = {u: TOL_TEXT_S for u, src in s_src.items() if src == "text"}
    synth, s_per = judge_set(tagger, {u: synth_wav[u] for u in utts}, s_spans, TOL_S, s_tol, sr)
    r_utts = [u for u in utts if u in real_wav]
    r_spans, r_src = {}, {}
    for u in r_utts:
        if u in events:
            r_spans[u], r_src[u] = event_spans(events[u]), "events"
        else:
            r_spans[u], r_src[u] = text_spans(tagged.get(u, ""), len(real_wav[u]) / sr), "text"
    r_tol = {u: TOL_TEXT_S for u, src in r_src.items() if src == "text"}
    real, r_per = judge_set(tagger, {u: real_wav[u] for u in r_utts}, r_spans, TOL_S, r_tol, sr)
    rows = ["audio\tutt_id\tposition_from\ttag\tstart\tend\twhat\n"]
    for name, per, src in (("synth", s_per, s_src), ("real", r_per, r_src)):
        for u, r in per.items():
            for tag, t0, t1, near, clip in r["events"]:
                what = "heard" if near else ("heard elsewhere" if clip else "missed")
                rows.append(f"{name}\t{u}\t{src[u]}\t{tag}\t{t0:.2f}\t{t1:.2f}\t{what}\n")
            for tag, t0, t1 in r["false_alarms"]:
                rows.append(f"{name}\t{u}\t-\t{tag}\t{t0:.2f}\t{t1:.2f}\tfalse alarm\n")
    return {"synth": synth, "real": real,
            "position_source": {"synth": dict(collections.Counter(s_src.values())),
                                "real": dict(collections.Counter(r_src.values()))},
            "tol_s": TOL_S, "tol_text_s": TOL_TEXT_S, "hop_s": HOP_S}, rows
