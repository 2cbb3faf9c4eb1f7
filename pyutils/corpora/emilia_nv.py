"""Emilia-NV (Mandarin, 18 paralinguistic categories, word-level inline labels).

Layout (Emilia-style JSON lines; audio paths relative to the manifest or ROOT)::

    ROOT/<split>.jsonl     e.g. train.jsonl, dev.jsonl, test.jsonl (or .json)
      {"id": "ZH_B00000_S00010_W000001", "wav": "ZH_B00000/.../x.mp3",
       "text": "你好[Laughter]我们走吧", "speaker": "ZH_B00000_S00010",
       "language": "zh", "duration": 3.2}

Labels appear as ``[Laughter]`` or ``(Laughter)`` (the project README uses
both); ``[...]`` is always a label, ``(...)`` only when it is an Emilia-NV
label (so ordinary parentheses stay text). Each manifest becomes ``OUT/<split>/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio
from .nvv_text import BRACKET_LABEL_RE, TagMapper
from .prep import Options, Utt, fresh_mapper_stats, write_split

PAREN_LABEL_RE = re.compile(r"[(（]\s*([A-Za-z][A-Za-z _\-]*?)\s*[)）]")
ID_KEYS = ("id", "key", "utt_id", "uid")
AUDIO_KEYS = ("wav", "audio", "audio_filename", "audio_path", "path", "wav_path")


def manifests(root: Path, splits: Optional[Sequence[str]]) -> List[Path]:
    files = sorted(p for p in Path(root).glob("*") if p.suffix in (".jsonl", ".json"))
    if splits:
        files = [p for p in files if p.stem in splits]
    if not files:
        raise PrepError(f"{root}: no Emilia-NV manifests (<split>.jsonl)")
    return files


def convert(mapper: TagMapper, text: str, row) -> str:
    text = mapper.convert(text, BRACKET_LABEL_RE, row)
    return mapper.convert(text, PAREN_LABEL_RE, row, only_known=True)


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None) -> List[dict]:
    mapper = TagMapper("emilia_nv", opts.unmapped, opts.unknown)
    reports = []
    for path in manifests(src, splits):
        fresh_mapper_stats(mapper)
        utts = []
        for row in read_manifest(path):
            audio = str(row.require(*AUDIO_KEYS))
            utt = row.get(*ID_KEYS) or Path(audio).stem
            utts.append(Utt(str(utt), resolve_audio(audio, path.parent, Path(src)), row,
                            row.get("speaker", "spk", "speaker_id"),
                            row.get("language", "lang") or "zh", str(row.require("text"))))
        reports.append(write_split("emilia_nv", path.stem, utts, opts, mapper,
                                   lambda t, r: convert(mapper, t, r)))
    return reports
