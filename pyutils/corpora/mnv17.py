"""MNV-17 (performative Mandarin, 17 NV categories, 49 speakers).

Layout (as released: JSON lines with a ``txt`` field; audio relative to ROOT)::

    ROOT/{train,dev,test}.jsonl
      {"key": "speaker_F_02_0001", "wav": "wavs/speaker_F_02/0001.wav",
       "txt": "这个理论的悖论之处在于[cough]请大家原谅"}

Accepted id fields: key/id/utt_id (else the audio file stem); audio fields:
wav/audio/audio_path/path/source; speaker: speaker/spk, else the
``speaker_[FM]_NN`` part of the path. Labels are ``[cough]``-style.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio
from .nvv_text import BRACKET_LABEL_RE, TagMapper
from .prep import Options, Utt, fresh_mapper_stats, write_split

SPEAKER_RE = re.compile(r"speaker_[FMfm]_\d+")


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None) -> List[dict]:
    root = Path(src)
    files = sorted(p for p in root.glob("*") if p.suffix in (".jsonl", ".json"))
    if splits:
        files = [p for p in files if p.stem in splits]
    if not files:
        raise PrepError(f"{root}: no MNV-17 manifests (<split>.jsonl with a 'txt' field)")
    mapper = TagMapper("mnv17", opts.unmapped, opts.unknown)
    reports = []
    for path in files:
        fresh_mapper_stats(mapper)
        utts = []
        for row in read_manifest(path):
            audio = str(row.require("wav", "audio", "audio_path", "path", "source", "wav_path"))
            text = row.require("txt", "text")
            utt = row.get("key", "id", "utt_id") or Path(audio).stem
            spk = row.get("speaker", "spk", "speaker_id")
            if not spk:
                m = SPEAKER_RE.search(audio) or SPEAKER_RE.search(str(utt))
                spk = m.group(0) if m else None
            utts.append(Utt(str(utt), resolve_audio(audio, path.parent, root), row, spk,
                            row.get("language") or "zh", str(text)))
        reports.append(write_split("mnv17", path.stem, utts, opts, mapper,
                                   lambda t, r: mapper.convert(t, BRACKET_LABEL_RE, r)))
    return reports
