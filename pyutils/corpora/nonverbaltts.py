"""NonverbalTTS (deepvk/NonverbalTTS; English, 10 NV types, VoxCeleb + Expresso).

Layout, either as published on the Hugging Face hub (parquet shards with the
audio bytes embedded; the audio is extracted once to ``--extract-dir``)::

    ROOT/**/<split>-NNNNN-of-NNNNN.parquet   or  ROOT/**/<split>/*.parquet

or exported to files::

    ROOT/<split>.{csv,tsv,jsonl}   columns: audio (file_name, audio_path, path),
                                   Result (text), speaker_id, Emotion, [index|id]

Nonverbal events appear inside the ``Result`` transcript as emoji tokens. The
card does not spell out the emoji set, so the table below is our reading of it
(two community scripts disagree on 😤 and 😖); check the per-label counts in
``prep_report.json`` and override with ``--emoji-map FILE`` (``emoji<TAB>label``,
labels as in conf/nvv_tags.yaml ``mapping.nonverbaltts``). An emoji outside the
table is an unknown label (error naming the row, or ``--unknown-label drop``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, Row, read_manifest, resolve_audio, info
from .nvv_text import TagMapper
from .prep import Options, Utt, clean_id, fresh_mapper_stats, write_split

EMOJI_LABELS: Dict[str, str] = {
    "\U0001F32C": "breathing",        # wind face
    "\U0001F923": "laughing",         # rolling on the floor laughing
    "\U0001F602": "laughing",         # face with tears of joy
    "\U0001F443": "sniffing",         # nose
    "\U0001F637": "coughing",         # face with medical mask
    "\U0001F5E3": "throat clearing",  # speaking head
    "\U0001F62E\u200D\U0001F4A8": "sighing",  # face exhaling
    "\U0001F616": "groaning",         # confounded face
    "\U0001F927": "sneezing",         # sneezing face
    "\U0001F416": "snoring",          # pig (snorts)
    "\U0001F634": "snoring",          # sleeping face
    "\U0001F624": "grunting",         # face with steam from nose
}

# one emoji (pictographs, dingbats, symbols) with its modifiers / ZWJ sequence
EMOJI_RE = re.compile(
    "((?:[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]"
    "[\uFE0E\uFE0F\U0001F3FB-\U0001F3FF]*)"
    "(?:\u200D[\U0001F300-\U0001FAFF\u2600-\u27BF][\uFE0E\uFE0F]*)*)")
_VARIATION = re.compile("[\uFE0E\uFE0F\U0001F3FB-\U0001F3FF]")
SPLIT_NAMES = ("train", "dev", "validation", "valid", "val", "test", "other")


def load_emoji_map(path: str) -> Dict[str, str]:
    table = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2:
                raise PrepError("expected '<emoji><TAB><label>'", path, lineno)
            table[_VARIATION.sub("", parts[0].strip())] = parts[1].strip()
    return table


def _split_of(path: Path) -> str:
    for part in [path.parent.name] + [path.name.split("-")[0], path.stem]:
        if part in SPLIT_NAMES:
            return part
    return path.stem.split("-")[0]


def _sniff_ext(data: bytes, name: str) -> str:
    if name and Path(name).suffix:
        return Path(name).suffix.lower()
    if data[:4] == b"RIFF":
        return ".wav"
    if data[:4] == b"fLaC":
        return ".flac"
    if data[:4] == b"OggS":
        return ".ogg"
    return ".mp3"


def _parquet_rows(path: Path, extract_dir: Path, split: str) -> List[tuple]:
    """(Row, audio path) per parquet row; audio bytes written once (resumable)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover
        raise PrepError("reading parquet needs pyarrow (pip install pyarrow)", path) from None
    table = pq.read_table(path)
    out = []
    outdir = extract_dir / split
    outdir.mkdir(parents=True, exist_ok=True)
    for i, rec in enumerate(table.to_pylist()):
        audio = rec.pop("audio", None)
        row = Row(rec, str(path), i + 1)  # "line" = row number in the shard
        if not isinstance(audio, dict) or not (audio.get("bytes") or audio.get("path")):
            raise row.error("no audio in row")
        name = audio.get("path") or ""
        uid = str(rec.get("index") if rec.get("index") is not None else
                  rec.get("id") or Path(name).stem or f"{path.stem}_{i:06d}")
        rec.setdefault("utt_id", uid)
        data = audio.get("bytes")
        if data:
            dest = outdir / f"{clean_id(uid)}{_sniff_ext(data, name)}"
            if not dest.is_file() or dest.stat().st_size != len(data):
                tmp = dest.with_suffix(dest.suffix + ".tmp")
                tmp.write_bytes(data)
                tmp.replace(dest)
        else:
            dest = resolve_audio(name, path.parent)
        out.append((row, dest))
    return out


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            emoji_map: Optional[str] = None, extract_dir: Optional[Path] = None) -> List[dict]:
    root = Path(src)
    table = dict(EMOJI_LABELS)
    if emoji_map:
        table.update(load_emoji_map(emoji_map))
    mapper = TagMapper("nonverbaltts", opts.unmapped, opts.unknown)
    extract_dir = Path(extract_dir) if extract_dir else Path(opts.out) / "nonverbaltts_audio"

    by_split: Dict[str, List[tuple]] = {}
    parquets = sorted(root.rglob("*.parquet"))
    if parquets:
        for p in parquets:
            split = _split_of(p)
            if splits and split not in splits:
                continue
            info(f"nonverbaltts: reading {p}")
            by_split.setdefault(split, []).extend(_parquet_rows(p, extract_dir, split))
    else:
        files = sorted(p for p in root.glob("*") if p.suffix in (".csv", ".tsv", ".jsonl", ".json"))
        if not files:
            raise PrepError(f"{root}: no *.parquet shards and no <split>.csv/.tsv/.jsonl")
        for p in files:
            if splits and p.stem not in splits:
                continue
            for row in read_manifest(p):
                audio = str(row.require("audio", "file_name", "audio_path", "path", "wav"))
                by_split.setdefault(p.stem, []).append((row, resolve_audio(audio, p.parent, root)))

    def label_of(m: re.Match) -> str:
        key = _VARIATION.sub("", m.group(1))
        return table.get(key, key)

    def convert(text: str, row) -> str:
        return mapper.convert(text, EMOJI_RE, row, label_of=label_of)

    reports = []
    for split in sorted(by_split):
        fresh_mapper_stats(mapper)
        utts = []
        for row, audio in by_split[split]:
            text = row.get("Result", "result", "text")
            if text is None:
                raise row.error("missing field 'Result'")
            uid = row.get("utt_id", "index", "id") or audio.stem
            emo = row.get("Emotion", "emotion")
            utts.append(Utt(str(uid), audio, row, row.get("speaker_id", "speaker"), "en",
                            str(text), {"utt2emotion": str(emo).lower()} if emo else {}))
        reports.append(write_split("nonverbaltts", split, utts, opts, mapper, convert))
    return reports
