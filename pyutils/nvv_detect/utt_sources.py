"""The utterances the NVV detectors are fitted, tuned and run on.

Sources of ``(utt_id, audio, sr, events)`` (:func:`add_utt_source_args` / :func:`utts_from_args`:
the options of :mod:`pyutils.nvv_detect.whisper_frames`): a ``chorus-synth nvv`` corpus split
(``CORPUS/data/<split>/wav.scp`` with the exact event times of ``CORPUS/events/<split>.jsonl``),
the real-speech utterances of :func:`pyutils.nvv_detect.devset.build`, a data dir written by
:func:`pyutils.nvv_detect.devset.write` (``wav.scp`` + ``events.jsonl``), or one of tag windows
written by :mod:`pyutils.nvv_detect.weak_labels` (``wav.scp`` + ``windows.jsonl``: :func:`weak_dir_utts`).

Audio: :func:`read_scp_audio` (every entry of a wav.scp; an unreadable one raises, naming it)
and :func:`readable_audio` (16 kHz mono of any entry; an unreadable one is skipped with a log
line: what the ``detect`` CLI reads).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import numpy as np

from pyutils.nvv_detect.arrays import DetectorError


def read_scp_audio(scp: Path):
    """Yield ``(utt_id, audio, sr)`` of a wav.scp; unreadable entries raise naming the line."""
    from pyutils.datadir.io import read_kv, read_wav_scp_entry

    for utt, entry in read_kv(scp).items():
        try:
            x, sr = read_wav_scp_entry(entry)
        except Exception as e:          # noqa: BLE001 - any reader failure names the utterance
            raise DetectorError(f"{scp}: utterance {utt}: cannot read audio: {e}") from e
        x = np.asarray(x, dtype=np.float32)
        yield utt, (x.mean(axis=1) if x.ndim == 2 else x), sr


def readable_audio(entries: Dict[str, str], log=None) -> Iterator[Tuple[str, np.ndarray]]:
    """``(utt, 16 kHz mono audio)`` of every ``{utt: wav.scp value}`` entry that can be read
    (any format, rate, channels, length: :func:`pyutils.audio.load_audio`); an unreadable,
    empty or non-finite one is skipped with one ``log`` line, and the others go on."""
    from pyutils.audio import load_audio
    from pyutils.datadir.io import AudioReadError

    for utt, entry in entries.items():
        try:
            x, _ = load_audio(entry, 16000)
        except (AudioReadError, OSError, ValueError, RuntimeError) as e:
            if log:
                log(f"{utt}: cannot read audio ({e}): no events")
            continue
        if len(x) == 0 or not np.isfinite(x).all():
            if log:
                log(f"{utt}: empty or non-finite audio: no events")
            continue
        yield utt, x


def iter_corpus_utts(corpus: Path, split: str) -> Iterator[Tuple[str, np.ndarray, int, List[dict]]]:
    """``(utt_id, audio, sr, events)`` of a ``chorus-synth nvv`` corpus split, read one at a time."""
    scp, evp = corpus / "data" / split / "wav.scp", corpus / "events" / f"{split}.jsonl"
    if not scp.is_file() or not evp.is_file():
        raise DetectorError(f"{corpus}: no {scp.name} or {evp.name} for split {split} "
                            f"(make one with `chorus-synth nvv --out {corpus}`)")
    events = read_corpus_events(evp)
    return ((u, x, sr, events.get(u, [])) for u, x, sr in read_scp_audio(scp))


def read_corpus_events(evp: Path) -> Dict[str, List[dict]]:
    """``{utt_id: [event]}`` of a corpus events file (rows ``{"utt_id", "events": [...]}``, as
    ``chorus-synth nvv`` and ``chorus-prep deeply_nvv`` write them); a bad row names ``file:line``."""
    events: Dict[str, List[dict]] = {}
    for n, line in enumerate(evp.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            events[row["utt_id"]] = list(row["events"])
        except (ValueError, KeyError, TypeError) as e:
            raise DetectorError(f"{evp}:{n}: bad events row: {e}") from e
    return events


def corpus_utts(corpus: Path, split: str) -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    """``(utt_id, audio, sr, events)`` of a ``chorus-synth nvv`` corpus split."""
    return list(iter_corpus_utts(corpus, split))


def devset_dir_utts(d: Path) -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    """A data dir written by :func:`pyutils.nvv_detect.devset.write`."""
    from pyutils.nvv_detect.events import read_events

    ev = read_events(str(d / "events.jsonl"))
    return [(u, x, sr, ev.get(u, [])) for u, x, sr in read_scp_audio(d / "wav.scp")]


def real_train_utts(variants: int, split: str = "train") -> List[Tuple[str, np.ndarray, int, List[dict]]]:
    from pyutils.nvv_detect.devset import SR, build

    return [(u["utt_id"], u["audio"], SR, u["events"]) for u in build(split, variants)]


def weak_dir_utts(d: Path) -> Iterator[Tuple[str, np.ndarray, int, List[dict]]]:
    """``(utt_id, audio, sr, windows)`` of a dir written by :func:`pyutils.nvv_detect.weak_labels.derive`
    (its ``wav.scp`` and ``windows.jsonl``; the windows take the place of the events)."""
    from pyutils.io import iter_jsonl

    d = Path(d)
    if not (d / "wav.scp").is_file() or not (d / "windows.jsonl").is_file():
        raise DetectorError(f"{d}: no wav.scp or windows.jsonl (write them with "
                            f"`python -m pyutils.nvv_detect.weak_labels --out {d}`)")
    wins: Dict[str, List[dict]] = {}
    for n, row in iter_jsonl(d / "windows.jsonl"):
        try:
            w = {"tag": str(row["tag"]), "start": float(row["start"]), "end": float(row["end"])}
            wins.setdefault(str(row["utt_id"]), []).append(w)
        except (KeyError, TypeError, ValueError) as e:
            raise DetectorError(f"{d / 'windows.jsonl'}:{n}: bad window row: {e}") from e
        if not w["end"] > w["start"] >= 0:
            raise DetectorError(f"{d / 'windows.jsonl'}:{n}: window end must be after its start >= 0")
    return ((u, x, sr, wins.get(u, [])) for u, x, sr in read_scp_audio(d / "wav.scp"))


def add_utt_source_args(ap: argparse.ArgumentParser, src) -> None:
    """The utterance-source options of the frame cache (:mod:`pyutils.nvv_detect.whisper_frames`;
    ``src``: a required mutually exclusive group of ``ap``); :func:`utts_from_args` reads them."""
    src.add_argument("--corpus", type=Path, help="a chorus-synth nvv corpus dir (with --split)")
    src.add_argument("--devset-split", choices=("train", "dev", "test"),
                     help="real speech with real/generated NVVs spliced in (pyutils.nvv_detect.devset)")
    src.add_argument("--data-dir", type=Path, help="a dir written by pyutils.nvv_detect.devset (wav.scp, events.jsonl)")
    src.add_argument("--weak-dir", type=Path, help="a dir written by pyutils.nvv_detect.weak_labels (wav.scp, "
                                                   "windows.jsonl: tag windows from tagged transcripts)")
    ap.add_argument("--split", default="train", help="corpus split (train, dev, test)")
    ap.add_argument("--variants", type=int, default=12, help="--devset-split: utterances per speech segment")
    ap.add_argument("--max-utts", type=int, default=0, help="only the first N utterances (0: all)")
    ap.add_argument("--part", type=int, default=1, help="with --parts: this job's share (1-based)")
    ap.add_argument("--parts", type=int, default=1, help="split the utterances round robin into this many jobs")


def utts_from_args(a: argparse.Namespace) -> Tuple[Iterator[Tuple[str, np.ndarray, int, List[dict]]], str]:
    """``(utterances, kind)`` of the options of :func:`add_utt_source_args`: this job's share
    (round robin over ``--parts``) of the first ``--max-utts``; kind ``corpus``, ``real`` or ``weak``
    (the events are tag windows)."""
    if a.corpus:
        utts, kind = iter_corpus_utts(a.corpus, a.split), "corpus"
    elif a.devset_split:
        utts, kind = real_train_utts(a.variants, a.devset_split), "real"
    elif getattr(a, "weak_dir", None):
        utts, kind = weak_dir_utts(a.weak_dir), "weak"
    else:
        utts, kind = devset_dir_utts(a.data_dir), "real"
    return ((u for i, u in enumerate(utts) if (not a.max_utts or i < a.max_utts) and i % a.parts == a.part - 1),
            kind)
