"""Emilia-NV / NVSpeech (Mandarin, 18 paralinguistic categories, word-level inline labels).

Read in the form it is released in on the Hugging Face hub (amphion/Emilia-NV):
WebDataset shards ``webdataset-0000xx.tar`` whose samples are ``<key>.json``
(metadata with the tagged transcript) + ``<key>.mp3``. The shards are read as
a stream with :mod:`tarfile`, one member at a time; each sample's audio is
written to ``OUT/emilia_nv_audio/<shard>/<key>.mp3`` (once: a re-run reuses
it), and ``wav.scp`` decodes it with an ffmpeg pipe, as for every MP3. A shard
in a folder named like a split (``test/webdataset-000000.tar``) goes to that
split, all others to ``train``.

Also read: Emilia-style JSON lines with relative audio paths::

    ROOT/<split>.jsonl     e.g. train.jsonl (or .json)
      {"id": "ZH_B00000_S00010_W000001", "wav": "ZH_B00000/.../x.mp3",
       "text": "你好[Laughter]我们走吧", "speaker": "ZH_B00000_S00010", "language": "zh"}

Metadata fields (both forms): text in ``text`` (also ``txt``, ``transcript``,
``text_nv``), id ``id``/``key`` (else the tar key / audio stem), speaker
``speaker``/``spk``, language ``language`` (default zh). Labels appear as
``[Laughter]`` or ``(Laughter)``; ``[...]`` is always a label, ``(...)`` only
when it is an Emilia-NV label (so ordinary parentheses stay text).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, Row, info, read_manifest, resolve_audio, safe_name
from .nvv_text import BRACKET_LABEL_RE, TagMapper
from .prep import Options, Utt, bad_row, write_splits
from .tables import SPLIT_NAMES, iter_webdataset, shard_files

PAREN_LABEL_RE = re.compile(r"[(（]\s*([A-Za-z][A-Za-z _\-]*?)\s*[)）]")
ID_KEYS = ("id", "key", "utt_id", "uid")
AUDIO_KEYS = ("wav", "audio", "audio_filename", "audio_path", "path", "wav_path")
TEXT_KEYS = ("text", "txt", "transcript", "text_nv")


def manifests(root: Path, splits: Optional[Sequence[str]]) -> List[Path]:
    files = sorted(p for p in Path(root).glob("*") if p.suffix in (".jsonl", ".json"))
    if splits:
        files = [p for p in files if p.stem in splits]
    return files


def convert(mapper: TagMapper, text: str, row) -> str:
    text = mapper.convert(text, BRACKET_LABEL_RE, row)
    return mapper.convert(text, PAREN_LABEL_RE, row, only_known=True)


def _utt(row: Row, audio: Path, split: str, fallback_id: str) -> Utt:
    utt = row.text(*ID_KEYS, required=False) or fallback_id
    return Utt(safe_name(utt), audio, row, row.text("speaker", "spk", "speaker_id", required=False),
               row.text("language", "lang", required=False) or "zh", row.text(*TEXT_KEYS))


def collect_shards(root: Path, opts: Options,
                   splits: Optional[Sequence[str]]) -> Dict[str, List[Utt]]:
    by_split: Dict[str, List[Utt]] = {}
    for shard in shard_files(root):
        parent = shard.parent.name
        split = parent if parent.lower() in SPLIT_NAMES else "train"
        if splits and split not in splits:
            continue
        info(f"emilia_nv: streaming {shard}")
        audio_dir = Path(opts.out) / "emilia_nv_audio" / safe_name(shard.stem)
        for key, meta, audio, n in iter_webdataset(shard, audio_dir):
            row = Row(meta or {}, str(shard), n)
            try:
                if meta is None:
                    raise row.error(f"sample {key!r} has no .json member")
                if audio is None:
                    raise row.error(f"sample {key!r} has no audio member")
                by_split.setdefault(split, []).append(_utt(row, audio, split, key))
            except PrepError as exc:
                bad_row(opts, exc, split)
    return by_split


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None) -> List[dict]:
    mapper = TagMapper("emilia_nv", opts.unmapped, opts.unknown)
    root = Path(src)
    by_split: Dict[str, List[Utt]] = {}
    for path in manifests(root, splits):
        for row in read_manifest(path):
            try:
                audio = row.text(*AUDIO_KEYS)
                utt = _utt(row, resolve_audio(audio, path.parent, root), path.stem,
                           Path(audio).stem)
            except PrepError as exc:
                bad_row(opts, exc, path.stem)
                continue
            by_split.setdefault(path.stem, []).append(utt)
    if not by_split:
        by_split = collect_shards(root, opts, splits)
    if not by_split and not opts.skipped:
        raise PrepError(f"{root}: no Emilia-NV data (WebDataset *.tar shards or "
                        f"<split>.jsonl manifests)")
    return write_splits("emilia_nv", by_split, opts, mapper, lambda t, r: convert(mapper, t, r))
