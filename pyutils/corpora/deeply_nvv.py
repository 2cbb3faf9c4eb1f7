"""Deeply Nonverbal Vocalization Dataset (OpenSLR 99; deeplyinc/Nonverbal-Vocalization-Dataset).

Layout (as published; ``ROOT`` may also be the ``dataset`` folder itself)::

    ROOT/dataset/Nonverbal_Vocalization_metadata.json   {speaker: {"sex", "age", "class": [...]}}
    ROOT/dataset/<class>/<speaker>_<class>_<trial>_<sex>_<age>_<location>_<quality>_<noise>.wav

16 class folders (``coughing``, ``throat-clearing``, ...); the file name's second field is
the class index of the authors' README (0 teeth-chattering ... 15 screaming), which must
agree with the folder. One clip is one vocalisation of one class by one speaker, 16 kHz mono.

Tags: the folder name through ``mapping: deeply_nvv`` of ``conf/nvv_tags.yaml``; ten
classes have a challenge tag, six (lip-popping, nose-blowing, screaming, teeth-chattering,
teeth-grinding, tongue-clicking) have none and are dropped with a count
(``tags_dropped_no_counterpart`` of ``prep_report.json``), or with ``--untagged keep``
written as negatives to ``OUT/<split>_none/`` (no ``text``; ``utt2class``).

Splits by speaker (the file name's first field), deterministic: ``u = int(sha256(speaker)
[:8], 16) / 2^32``; ``train`` when ``u < r_train``, ``dev`` when ``u < r_train + r_dev``,
else ``test`` (``--speaker-split 70,10,20``, percentages of speakers). A speaker's clips
are all in one split.

Output per split ``OUT/<split>/``: ``wav.scp utt2spk spk2utt utt2dur text`` (the tag
alone, ``[cough]``), ``utt2class`` (the source class), ``utt2gender`` (``m``/``f`` from the
file name), ``prep_report.json``; and ``OUT/events/<split>.jsonl``, one row per utterance
``{"utt_id", "events": [{"tag", "start", "end"}]}`` (the form of ``chorus-synth nvv``'s
``events/<split>.jsonl``) with the clip's non-silent span:

    e_i = 10 log10(mean(x^2 over frame i) + 1e-10)      (25 ms frames, 10 ms hop)
    active_i = e_i >= max(e) - 30 dB  and  e_i >= P10(e) + 6 dB
    span = [first active frame start - 0.05 s, last active frame end + 0.05 s], clipped

(``P10``: the clip's 10th percentile frame energy, its noise floor). A clip with no
active frame (a flat clip, max - P10 < 6 dB) spans the whole clip.

Licence of the corpus: CC BY-NC-ND 4.0 (Deeply Inc.): read it where it lies, derive
nothing that ships.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.io import atomic_write_text, write_jsonl

from .common import PrepError, Row, info, safe_name
from .nvv_text import BRACKET_LABEL_RE, TagMapper
from .prep import Options, Utt, bad_row, fresh_mapper_stats, write_split

METADATA = "Nonverbal_Vocalization_metadata.json"
# the authors' README, "Filename convention"
CLASSES = ("teeth-chattering", "teeth-grinding", "tongue-clicking", "nose-blowing", "coughing",
           "yawning", "throat-clearing", "sighing", "lip-popping", "lip-smacking", "panting",
           "crying", "laughing", "sneezing", "moaning", "screaming")
NAME_RE = re.compile(r"^([A-Za-z0-9]+)_(\d+)_(\d+)_([01])_(\d+)_([01])_([01])_([01])$")
SPLITS = ("train", "dev", "test")

FRAME_S, HOP_S, PAD_S = 0.025, 0.010, 0.05
PEAK_RANGE_DB, FLOOR_MARGIN_DB = 30.0, 6.0


class FileRow(Row):
    """A clip as a manifest row: its file is the place to name (no line)."""

    def where(self) -> str:
        return self.path


def parse_speaker_split(value: str) -> Tuple[float, float, float]:
    """``"70,10,20"`` -> fractions (train, dev, test) summing to 1."""
    try:
        parts = [float(p) for p in value.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or any(p < 0 for p in parts) or sum(parts) <= 0:
        raise PrepError(f"--speaker-split must be three non-negative numbers train,dev,test, got {value!r}")
    total = sum(parts)
    return parts[0] / total, parts[1] / total, parts[2] / total


def speaker_split(speaker: str, fractions: Sequence[float] = (0.7, 0.1, 0.2)) -> str:
    """Split of a speaker: ``u = int(sha256(speaker)[:8], 16) / 2^32`` against the cumulative fractions."""
    u = int(hashlib.sha256(speaker.encode("utf-8")).hexdigest()[:8], 16) / 2 ** 32
    if u < fractions[0]:
        return "train"
    if u < fractions[0] + fractions[1]:
        return "dev"
    return "test"


def active_span(x: np.ndarray, sr: int) -> Tuple[float, float]:
    """(start, end) in seconds of the non-silent part of ``x`` (rule in the module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    dur = len(x) / sr
    flen, hop = max(1, int(round(FRAME_S * sr))), max(1, int(round(HOP_S * sr)))
    if len(x) < flen:
        return 0.0, round(dur, 4)
    n = 1 + (len(x) - flen) // hop
    idx = np.arange(flen)[None, :] + hop * np.arange(n)[:, None]
    e = 10 * np.log10((x[idx] ** 2).mean(axis=1) + 1e-10)
    thr = max(e.max() - PEAK_RANGE_DB, np.percentile(e, 10) + FLOOR_MARGIN_DB)
    act = np.flatnonzero(e >= thr)
    if len(act) == 0:
        return 0.0, round(dur, 4)
    start = max(0.0, act[0] * hop / sr - PAD_S)
    end = min(dur, (act[-1] * hop + flen) / sr + PAD_S)
    return round(start, 4), round(end, 4)


def find_dataset(root: Path) -> Path:
    """The folder holding the class folders: ROOT/dataset, ROOT, or ROOT/*/dataset."""
    for cand in [root / "dataset", root] + sorted(root.glob("*/dataset")):
        if cand.is_dir() and any((cand / c).is_dir() for c in CLASSES):
            return cand
    raise PrepError(f"{root}: no Deeply NVV class folders (expected ROOT/dataset/<class>/*.wav, "
                    f"classes {', '.join(CLASSES[:3])}, ...)")


def read_metadata(ds: Path) -> Optional[dict]:
    path = ds / METADATA
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise PrepError(f"not valid JSON: {e}", path, getattr(e, "lineno", None)) from None
    if not isinstance(data, dict):
        raise PrepError("expected an object {speaker: {sex, age, class}}", path, 1)
    return data


def _read_mono(path: Path) -> Tuple[np.ndarray, int]:
    import soundfile as sf

    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return x.mean(axis=1), int(sr)


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            speaker_split_spec: str = "70,10,20", untagged: str = "drop") -> List[dict]:
    root = Path(src)
    ds = find_dataset(root)
    fractions = parse_speaker_split(speaker_split_spec)
    meta = read_metadata(ds)
    mapper = TagMapper("deeply_nvv", opts.unmapped, opts.unknown)
    by_split: Dict[str, List[Utt]] = {}
    negatives: Dict[str, List[Utt]] = {}
    not_in_meta = 0
    folders = sorted(p for p in ds.iterdir() if p.is_dir())
    for folder in folders:
        if folder.name not in CLASSES:
            raise PrepError(f"{folder}: not one of the 16 Deeply NVV class folders ({', '.join(CLASSES)})")
        try:
            tag = mapper.lookup(folder.name)
        except KeyError:
            raise PrepError(f"class {folder.name!r}: not in {mapper.source}") from None
        for lineno, wav in enumerate(sorted(folder.glob("*.wav")), 1):
            row = FileRow({"file": wav.name, "class": folder.name}, str(wav), None)
            m = NAME_RE.match(wav.stem)
            spk = m.group(1) if m else wav.stem.split("_")[0]
            split = speaker_split(spk, fractions)
            if not m or not 0 <= int(m.group(2)) < len(CLASSES):
                bad_row(opts, PrepError("file name is not <speaker>_<class>_<trial>_<sex>_<age>_"
                                        "<location>_<quality>_<noise>.wav", wav), split)
                continue
            if CLASSES[int(m.group(2))] != folder.name:
                bad_row(opts, PrepError(f"class field {m.group(2)} ({CLASSES[int(m.group(2))]}) "
                                        f"disagrees with the folder {folder.name}", wav), split)
                continue
            if meta is not None and spk not in meta:
                not_in_meta += 1
            extra = {"utt2class": folder.name, "utt2gender": "m" if m.group(4) == "1" else "f"}
            utt = Utt(safe_name(wav.stem), wav.resolve(), row, spk, None, f"[{folder.name}]", extra)
            if tag is None and untagged == "keep":
                utt.raw_text = None
                negatives.setdefault(split, []).append(utt)
            else:
                by_split.setdefault(split, []).append(utt)
    if not by_split:
        raise PrepError(f"{ds}: no <speaker>_<class>_....wav file in the class folders")
    if not_in_meta:
        info(f"deeply_nvv: {not_in_meta} clip(s) of speakers missing from {ds / METADATA}")

    def convert(text: str, row) -> str:
        return mapper.convert(text, BRACKET_LABEL_RE, row)

    reports = []
    for split in SPLITS:
        if splits and split not in splits:
            continue
        if split not in by_split and split not in opts.skipped:
            continue
        fresh_mapper_stats(mapper)
        rep = write_split("deeply_nvv", split, by_split.get(split, []), opts, mapper, convert,
                          write_ref=False)
        outdir = Path(rep["out"])
        sources = {u.utt_id: u.audio for u in by_split.get(split, [])}
        rep["events"] = write_events(outdir, sources, Path(opts.out) / "events" / f"{split}.jsonl")
        rep["speakers"] = len(set((outdir / "spk2utt").read_text(encoding="utf-8").splitlines()))
        rep["speaker_split"] = speaker_split_spec
        atomic_write_text(outdir / "prep_report.json", json.dumps(rep, ensure_ascii=False, indent=2) + "\n")
        reports.append(rep)
        if untagged == "keep" and negatives.get(split):
            rep_n = write_split("deeply_nvv", f"{split}_none", negatives[split], opts, None, None,
                                write_ref=False)
            reports.append(rep_n)
    return reports


def write_events(datadir: Path, sources: Dict[str, Path], out: Path) -> Dict[str, int]:
    """``events/<split>.jsonl`` of a written split (``sources``: utterance id -> the clip file,
    read at its own rate: the span is in seconds): each clip's tag over its non-silent span.
    Returns the clip count per tag."""
    text = dict(line.split(" ", 1) for line in (datadir / "text").read_text(encoding="utf-8").splitlines())
    rows, counts = [], {}
    for utt in sorted(text):
        if utt not in sources:
            raise PrepError(f"{datadir / 'text'}: utterance {utt} has no source clip")
        x, sr = _read_mono(sources[utt])
        start, end = active_span(x, sr)
        tag = text[utt].strip()[1:-1]
        rows.append({"utt_id": utt, "events": [{"tag": tag, "start": start, "end": end}]})
        counts[tag] = counts.get(tag, 0) + 1
    write_jsonl(out, rows)
    info(f"[deeply_nvv] events -> {out}: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return dict(sorted(counts.items()))
