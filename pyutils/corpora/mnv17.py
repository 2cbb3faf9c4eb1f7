"""MNV-17 (performative Mandarin, 17 NV categories, 49 speakers).

Layout (as released in yongaifadian1/MNV-17, ``examples/testset/test.jsonl``:
JSON lines with a ``txt`` field; audio relative to ROOT)::

    ROOT/{train,dev,test}.jsonl
      {"audio": "Mandarin_Paralinguistic_Audio_Dataset/speaker_F_02/speaker_F_02_ahem_00.wav",
       "txt": "[ahem] 实际上，根据公司的规定，这个流程是不被允许的。",
       "speaker": "speaker_F_02", "filename": "speaker_F_02_ahem_00"}

Accepted id fields: filename/key/id/utt_id (else the audio file stem); audio
fields: audio/wav/audio_path/path/source; speaker: speaker/spk, else the
``speaker_[FM]_NN`` part of the path. Labels are ``[cough]``-style; a label
dropped between two punctuation marks (``天才，[applaud]。``) leaves one of
them (``天才。``), see ``nvv_text.mend_punctuation``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio, safe_name
from .nvv_text import BRACKET_LABEL_RE, TagMapper
from .prep import Options, Utt, bad_row, fresh_mapper_stats, write_split

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
            try:
                audio = row.text("wav", "audio", "audio_path", "path", "source", "wav_path")
                text = row.text("txt", "text")
                utt = safe_name(row.text("filename", "key", "id", "utt_id", required=False)
                                or Path(audio).stem)
                spk = row.text("speaker", "spk", "speaker_id", required=False)
            except PrepError as exc:
                bad_row(opts, exc, path.stem)
                continue
            if not spk:
                m = SPEAKER_RE.search(audio) or SPEAKER_RE.search(str(utt))
                spk = m.group(0) if m else None
            utts.append(Utt(utt, resolve_audio(audio, path.parent, root), row,
                            safe_name(spk) if spk else None, row.get("language") or "zh", text))
        reports.append(write_split("mnv17", path.stem, utts, opts, mapper,
                                   lambda t, r: mapper.convert(t, BRACKET_LABEL_RE, r)))
    return reports
