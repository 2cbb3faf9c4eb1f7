"""Tag time windows from tagged transcripts: weak labels of the Whisper-frame detector.

    python -m pyutils.nvv_detect.weak_labels --data-dir data/train --lang en --out exp/.../weak_train \\
        [--max-utts N] [--threads 2]
    python -m pyutils.nvv_detect.whisper_frames --weak-dir exp/.../weak_train --out feats/wf_train.npz
    python -m pyutils.nvv_detect.frame_heads --labels spans --train-feats feats/wf_train.npz ...

Every public NVV corpus gives tagged transcripts without times (``That was really surprising.
[laugh]``). This module turns each tag of a Kaldi data dir (``wav.scp`` + ``text``) into a time
window that holds the sound, and the frame head is fitted on those windows taken as the sounds'
spans (``--labels spans`` of :mod:`pyutils.nvv_detect.frame_heads`).

Alignment. The reference text with each tag written as a placeholder annotation (``(laugh)``)
is forced through frozen Whisper base (the CTranslate2 weights of ``make -C tools``,
:func:`pyutils.whisper.weights.resolve`; faster-whisper's tokenizer, CTranslate2's
``Whisper.align``): the cross-attention of the alignment heads over the 30 s window, median
filtered, is aligned to the text tokens by dynamic time warping (Radford et al. 2022, the
``word_timestamps`` of Whisper). Each text token ``k`` starts at the time ``tau_k`` of its
first DTW step (20 ms steps) and ends at ``tau_{k+1}``; a word spans its tokens. The
placeholder's tokens give the sound its own stretch of the path (without them the DTW folds
the sound into a neighbouring word: measured in ``README.md``, not adopted, removed; code:
``git show 28b938a``). The encoder pass is not the one
of :mod:`pyutils.nvv_detect.whisper_frames`: the decoder's cross-attention needs the padded 30 s
window of the full model, the frames use unpadded windows of the PyTorch encoder, so this is a
separate, cached step (one CTranslate2 int8 pass per tagged utterance; untagged ones need none).
The encoder sees Whisper's padded 30 s window, as in training: 49 % of the mini corpus's events
inside their window against 34 % unpadded (the ``audio_ctx`` of whisper.cpp: a few times less
encoder work for 3-5 s utterances, looser window ends; measured in ``README.md``, not adopted,
removed after commit 9e77449).

Windows. For a tag between word ``a`` (before) and word ``b`` (after), the window is the gap
``[end_a, start_b]`` (``0`` / the utterance's duration at the edges); when the gap is shorter
than ``MIN_GAP_S`` it is widened to the neighbouring words, ``[start_a, end_b]``. Tags that
stand together share their gap. A transcript of tags only: the whole utterance when it lasts
at most ``MAX_TAG_ONLY_S``, else the utterance is skipped.

Skipped, each with one counted line naming the utterance (never a crash): unreadable audio,
an empty transcript, a label that is no challenge tag, a stray bracket, a tag-only utterance
longer than ``MAX_TAG_ONLY_S``, a tagged one longer than one Whisper window (30 s), a failed
alignment. An utterance whose every tag has a window (or that has no tag: all its frames are
``none``) is kept; a set with no tag window at all is an error.

Output dir: ``windows.jsonl`` (``{"utt_id", "tag", "start", "end"}`` seconds, one row per
tag), ``wav.scp`` (the kept utterances: the utterance source ``--weak-dir`` of the feature
extractors, :func:`pyutils.nvv_detect.utt_sources.weak_dir_utts`), ``report.json`` (counts,
skips by reason with examples).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError

MIN_GAP_S = 0.3         # a shorter gap between the words around a tag is widened to those words
MAX_TAG_ONLY_S = 5.0    # a transcript of tags only: the whole utterance up to this long
MAX_ALIGN_S = 30.0      # one Whisper window
SR = 16000
BRACKET_RE = re.compile(r"\[([^\[\]]*)\]")


class WeakLabelError(DetectorError):
    """Bad input of this module (names the file and line or utterance)."""


class SkipUtt(Exception):
    """One utterance cannot give windows: ``kind`` is counted, the message logged, the others go on."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


class Tagged(NamedTuple):
    pieces: List[str]       # the text between the tags: len(tags) + 1 pieces
    tags: List[str]         # challenge labels in order


def parse_tagged(text: str) -> Tagged:
    """Split an official Track 1 transcript at its tags; :class:`SkipUtt` for a label that is
    no challenge tag or a stray bracket."""
    from pyutils.asr.tags_text import official_label

    pieces, tags, last = [], [], 0
    for m in BRACKET_RE.finditer(text):
        label = official_label(m.group(1))
        if label is None:
            raise SkipUtt("unknown tag", f"[{m.group(1)}] is not one of the 16 challenge tags")
        pieces.append(text[last:m.start()])
        tags.append(label)
        last = m.end()
    pieces.append(text[last:])
    if any("[" in p or "]" in p for p in pieces):
        raise SkipUtt("stray bracket in the transcript")
    return Tagged([" ".join(p.split()) for p in pieces], tags)


def tag_windows(words: Sequence[Tuple[float, float]], tag_pos: Sequence[int], dur: float,
                min_gap: float = MIN_GAP_S) -> List[Tuple[float, float, bool]]:
    """``(start, end, widened)``: the window of each tag standing before word ``tag_pos[i]`` (``len(words)``: after the
    last word) of ``words`` ``[(start, end)]`` in time order: the gap ``[end_a, start_b]`` between
    the word before and the word after (0 / ``dur`` at the edges), widened to ``[start_a, end_b]``
    when shorter than ``min_gap``; clipped to ``[0, dur]``."""
    out = []
    n = len(words)
    for p in tag_pos:
        if not 0 <= p <= n:
            raise ValueError(f"tag position {p} outside 0..{n}")
        s = words[p - 1][1] if p > 0 else 0.0
        e = words[p][0] if p < n else dur
        widened = e - s < min_gap
        if widened:
            s = words[p - 1][0] if p > 0 else 0.0
            e = words[p][1] if p < n else dur
        s, e = max(0.0, min(s, dur)), max(0.0, min(e, dur))
        if e - s < min_gap:       # words of no duration (a degenerate path): centre a min_gap window
            c = 0.5 * (s + e)
            s, e = max(0.0, c - min_gap / 2), min(dur, c + min_gap / 2)
        out.append((round(s, 3), round(e, 3), widened))
    return out


class WhisperAligner:
    """Frozen Whisper forced to a reference text: word times and the tags' word positions."""

    def __init__(self, model: str = "base", lang: str = "en", threads: int = 1):
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import Tokenizer

        from pyutils.asr.text_norm import char_units
        from pyutils.whisper.weights import WhisperWeightsError, resolve

        spec = resolve(model)
        if spec.ct2_dir is None:
            raise WhisperWeightsError(f"{spec.source}: the alignment needs a CTranslate2 Whisper dir")
        self.model = WhisperModel(str(spec.ct2_dir), device="cpu", compute_type="int8", cpu_threads=max(1, threads))
        self.lang = lang.split("_")[0]
        self.tok = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual, task="transcribe",
                             language=self.lang)
        self.space = "" if char_units(self.lang) else " "

    def _tokens(self, tg: Tagged) -> Tuple[List[int], List[int], List[int]]:
        """(tokens, word index of each token (-1: a placeholder), tag positions in words)."""
        toks: List[int] = []
        owner: List[int] = []
        pos: List[int] = []
        n_words = 0
        for i, piece in enumerate(tg.pieces):
            if piece:
                t = self.tok.encode((self.space if toks or self.space else "") + piece)
                words, word_toks = self.tok.split_to_word_tokens(t)
                for w, wt in zip(words, word_toks):
                    if toks and not w.strip(" .,!?;:。，、！？；：") and owner and owner[-1] >= 0:
                        owner += [owner[-1]] * len(wt)   # punctuation joins the word before it
                    else:
                        owner += [n_words] * len(wt)
                        n_words += 1
                    toks += wt
            if i < len(tg.tags):
                pos.append(n_words)
                t = self.tok.encode(f"{self.space}({tg.tags[i]})")
                toks += t
                owner += [-1] * len(t)
        return toks, owner, pos

    def words_and_tags(self, audio: np.ndarray, tg: Tagged) -> Tuple[List[Tuple[float, float]], List[int], float]:
        """``(word times, tag positions, mean token probability)`` of 16 kHz mono ``audio``."""
        from faster_whisper.audio import pad_or_trim

        toks, owner, pos = self._tokens(tg)
        feats = self.model.feature_extractor(np.ascontiguousarray(audio, dtype=np.float32))
        n_frames = min(feats.shape[-1] - 1, 3000)
        try:
            enc = self.model.encode(pad_or_trim(feats[:, :n_frames]))     # Whisper's padded 30 s window
            res = self.model.model.align(enc, self.tok.sot_sequence, [toks], n_frames, median_filter_width=7)[0]
        except (RuntimeError, ValueError) as e:
            raise SkipUtt("alignment failed", str(e)) from e
        if not res.alignments:
            raise SkipUtt("alignment failed", "no DTW path")
        ti = np.array([a[0] for a in res.alignments])
        tm = np.array([a[1] for a in res.alignments])
        jumps = np.pad(np.diff(ti), (1, 0), constant_values=1).astype(bool)
        tau = tm[jumps] / self.model.tokens_per_second
        if len(tau) < len(toks) + 1:
            raise SkipUtt("alignment failed", f"{len(tau)} token times for {len(toks)} tokens")
        n_words = max([o for o in owner if o >= 0], default=-1) + 1
        words = []
        for w in range(n_words):
            ks = [k for k, o in enumerate(owner) if o == w]
            words.append((float(tau[ks[0]]), float(tau[ks[-1] + 1])))
        prob = float(np.mean(res.text_token_probs)) if len(res.text_token_probs) else 0.0
        return words, pos, prob


def utterance_windows(utt: str, audio: Optional[np.ndarray], text: str, aligner: Optional[WhisperAligner],
                      min_gap: float = MIN_GAP_S) -> Tuple[List[dict], str]:
    """``(windows, how)`` of one utterance (``how``: ``untagged``, ``tag-only``, ``aligned``);
    :class:`SkipUtt` when it cannot give windows. ``audio``: 16 kHz mono."""
    tg = parse_tagged(text)
    words_text = "".join(tg.pieces).strip()
    if not words_text and not tg.tags:
        raise SkipUtt("empty transcript")
    if not tg.tags:
        return [], "untagged"
    if audio is None or audio.size == 0 or not np.isfinite(audio).all():
        raise SkipUtt("empty or non-finite audio")
    dur = len(audio) / SR
    if not words_text:
        if dur > MAX_TAG_ONLY_S:
            raise SkipUtt("tags only, too long", f"{dur:.1f} s > {MAX_TAG_ONLY_S} s: no window")
        return [{"utt_id": utt, "tag": t, "start": 0.0, "end": round(dur, 3)} for t in tg.tags], "tag-only"
    if dur > MAX_ALIGN_S:
        raise SkipUtt("too long to align", f"{dur:.1f} s: longer than one Whisper window ({MAX_ALIGN_S:.0f} s)")
    if aligner is None:
        raise SkipUtt("no aligner")
    words, pos, _ = aligner.words_and_tags(audio, tg)
    wins = tag_windows(words, pos, dur, min_gap)
    how = "aligned, widened" if any(w for _, _, w in wins) else "aligned"
    return [{"utt_id": utt, "tag": t, "start": s, "end": e} for t, (s, e, _) in zip(tg.tags, wins)], how


def derive(data_dir: Path, out: Path, lang: str = "en", max_utts: int = 0, threads: int = 1,
           min_gap: float = MIN_GAP_S, model: str = "base", log=print) -> dict:
    """Windows of every utterance of ``data_dir`` (``wav.scp`` + ``text``) -> ``out`` (see the
    module docstring); returns the report. Raises :class:`WeakLabelError` when no tag got a window."""
    from pyutils.audio import to_mono_16k
    from pyutils.datadir.io import DataDirError, read_kv, read_wav_scp_entry
    from pyutils.io import atomic_write, write_jsonl

    t0 = time.time()
    scp, txt = Path(data_dir) / "wav.scp", Path(data_dir) / "text"
    for p in (scp, txt):
        if not p.is_file():
            raise WeakLabelError(f"{p} not found: weak labels need a data dir with wav.scp and text")
    try:
        wavs, texts = read_kv(scp), read_kv(txt, allow_empty_value=True)
    except DataDirError as e:
        raise WeakLabelError(str(e)) from e
    utts = [u for u in wavs if u in texts]
    if max_utts:
        utts = utts[:max_utts]
    aligner = None
    rows: List[dict] = []
    kept: Dict[str, str] = {}
    counts = {"untagged": 0, "tag-only": 0, "aligned": 0, "aligned, widened": 0}
    skipped: Dict[str, List[str]] = {}
    for n, u in enumerate(utts, 1):
        try:
            tg = parse_tagged(texts[u])
            audio = None
            if tg.tags:
                try:
                    x, sr = read_wav_scp_entry(wavs[u])
                except Exception as e:      # noqa: BLE001 - any reader failure skips this utterance
                    raise SkipUtt("cannot read audio", str(e)) from e
                x = np.asarray(x, dtype=np.float32)
                audio = to_mono_16k(x.mean(axis=1) if x.ndim == 2 else x, sr)
                if aligner is None and "".join(tg.pieces).strip():
                    aligner = WhisperAligner(model, lang, threads)
            wins, how = utterance_windows(u, audio, texts[u], aligner, min_gap)
        except SkipUtt as e:
            skipped.setdefault(e.kind, []).append(u)
            log(f"weak_labels: {u}: skipped: {e}")
            continue
        counts[how] += 1
        rows += wins
        kept[u] = wavs[u]
        if n % 200 == 0:
            log(f"weak_labels: {n} of {len(utts)} utterances")
    report = {"data_dir": str(data_dir), "utterances": len(utts), "kept": len(kept), "untagged": counts["untagged"],
              "tag-only": counts["tag-only"], "aligned": counts["aligned"] + counts["aligned, widened"],
              "aligned_widened": counts["aligned, widened"],
              "windows": len(rows), "skipped": {k: len(v) for k, v in sorted(skipped.items())},
              "skipped_examples": {k: v[:5] for k, v in sorted(skipped.items())},
              "tags": {t: sum(1 for r in rows if r["tag"] == t) for t in sorted({r["tag"] for r in rows})},
              "min_gap_s": min_gap, "seconds": round(time.time() - t0, 1)}
    if not rows:
        raise WeakLabelError(f"{data_dir}: no tag of {len(utts)} utterances got a time window "
                             f"(skipped: {report['skipped'] or 'none'}; a transcript needs [tag]s)")
    out = Path(out)
    write_jsonl(out / "windows.jsonl", rows)
    with atomic_write(out / "wav.scp") as f:
        f.writelines(f"{u} {e}\n" for u, e in kept.items())
    with atomic_write(out / "report.json") as f:
        f.write(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="Kaldi data dir: wav.scp + text with [tags]")
    ap.add_argument("--out", type=Path, required=True, help="output dir (windows.jsonl, wav.scp, report.json)")
    ap.add_argument("--lang", default="en", help="the transcripts' language (Whisper's tokenizer)")
    ap.add_argument("--max-utts", type=int, default=0, help="only the first N utterances (0: all)")
    ap.add_argument("--min-gap", type=float, default=MIN_GAP_S, help="widen shorter gaps to the neighbouring words (s)")
    ap.add_argument("--model", default="base", help="Whisper weights (pyutils.whisper.weights; never downloaded)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        rep = derive(a.data_dir, a.out, a.lang, a.max_utts, a.threads, a.min_gap, a.model,
                     log=lambda m: print(m, file=sys.stderr))
    except (DetectorError, WhisperWeightsError, OSError) as e:
        print(f"nvv_detect.weak_labels: error: {e}", file=sys.stderr)
        return 1
    print(f"nvv_detect.weak_labels: {rep['utterances']} utterances: {rep['kept']} kept ({rep['aligned']} aligned, "
          f"{rep['tag-only']} tag-only, {rep['untagged']} untagged), {rep['windows']} windows, skipped "
          f"{sum(rep['skipped'].values())} {rep['skipped'] or ''} -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
