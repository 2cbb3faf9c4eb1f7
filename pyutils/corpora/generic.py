"""Generic adapter: any TSV/CSV/JSONL/JSON manifest of audio + tagged text.

For corpora nobody wrote a preparer for. Columns/keys (aliases in brackets)::

    audio      (wav, path, audio_path)   required; relative to the manifest dir
    text       (transcript, txt)         required; labels written "[label]"
    utt_id     (id, key)                 optional; default: audio file stem
    language   (lang)                    optional; default --lang, else zh when the
                                         text has CJK ideographs, otherwise en
    speaker    (spk, speaker_id)         optional; default: one per utterance
    split                                optional; default --split-name (train)

Labels are mapped with ``--label-map FILE`` (YAML ``label: tag`` or TSV
``label<TAB>tag``; null/``-`` = no counterpart) or, without it, must already
be challenge tags (identity).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio
from .nvv_text import BRACKET_LABEL_RE, TagMapper, load_label_map
from .prep import Options, Utt, fresh_mapper_stats, write_split


def guess_language(text: str) -> str:
    """zh when the text holds CJK ideographs, else en (only without --lang)."""
    return "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            label_map: Optional[str] = None, lang: Optional[str] = None,
            split_name: str = "train") -> List[dict]:
    manifest = Path(src)
    if not manifest.is_file():
        raise PrepError(f"{manifest}: the generic adapter takes a manifest file as --src")
    table = load_label_map(label_map) if label_map else None
    mapper = TagMapper("challenge", opts.unmapped, opts.unknown, table, label_map)
    by_split: Dict[str, List[Utt]] = {}
    for row in read_manifest(manifest):
        audio = str(row.require("audio", "wav", "path", "audio_path"))
        text = str(row.require("text", "transcript", "txt"))
        utt = row.get("utt_id", "id", "key") or Path(audio).stem
        split = str(row.get("split") or split_name)
        by_split.setdefault(split, []).append(Utt(
            str(utt), resolve_audio(audio, manifest.parent), row,
            row.get("speaker", "spk", "speaker_id"),
            row.get("language", "lang") or lang or guess_language(text), text))
    reports = []
    for split in sorted(by_split):
        if splits and split not in splits:
            continue
        fresh_mapper_stats(mapper)
        reports.append(write_split("generic", split, by_split[split], opts, mapper,
                                   lambda t, r: mapper.convert(t, BRACKET_LABEL_RE, r)))
    return reports
