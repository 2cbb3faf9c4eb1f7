"""NonverbalTTS (deepvk/NonverbalTTS; English, 10 NV types, VoxCeleb + Expresso).

Layout, either as published on the Hugging Face hub (parquet shards with the
audio bytes embedded; the audio is extracted once to ``--extract-dir``)::

    ROOT/**/<split>-NNNNN-of-NNNNN.parquet   or  ROOT/**/<split>/*.parquet

or exported to files::

    ROOT/<split>.{csv,tsv,jsonl}   columns: audio (file_name, audio_path, path),
                                   Result (text), speaker_id, Emotion, [index|id]

Nonverbal events appear inside the ``Result`` transcript as emoji tokens.
Neither the card nor the paper (arXiv 2507.13155) prints the emoji set, so
the table below was put together from the two public conversion scripts that
enumerate it, and every emoji on which they disagree is its own label with no
challenge counterpart (dropped and counted by default; ``--emoji-map FILE``,
``emoji<TAB>label``, settles it). The per-emoji counts are in
``prep_report.json`` (``label_to_tag``, ``tags_dropped_no_counterpart``).
An emoji outside the table is an unknown label (error naming the row, or
``--unknown-label drop``).

Utterance ids come from ``index`` (else ``id``, else the audio name); a ``/``
or space in them becomes ``_`` (Kaldi ids and extracted file names).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, info, read_manifest, resolve_audio, safe_name
from .nvv_text import TagMapper
from .prep import Options, Utt, bad_row, fresh_mapper_stats, write_split
from .tables import find_table_files, iter_table_rows, materialize_audio

# Sources (quoted):
#  A. a corpus-scan script ("Discovered from the corpus (see --report-symbols)
#     and matched against the ten types the dataset card lists"):
#     U+1F32C [breath], U+1F923 [laughing], U+1F637 [cough], U+1F624 [sigh],
#     U+1F927 [sneeze], U+1F62B [groan], U+1F634 [snore], U+1F44A [grunt],
#     U+1F444 [throat-clear], U+1F443 [sniff]
#  B. a Dia fine-tuning script (EMOJI_TO_TAG): 🌬️ (breaths), 😤 (grunts),
#     😷 (coughs), 👃 (sniffs), 🤣 (laughs), 🤧 (sneezes), 🗣️ (vocal_noise),
#     😖 (groans), 🐖 (snorts), 👂 (listens)
# Agreed by both (or only one names it and nothing contradicts it) -> the NV
# type; disputed -> an "emoji <name>" label that is null in conf/nvv_tags.yaml.
EMOJI_LABELS: Dict[str, str] = {
    "\U0001F32C": "breathing",        # wind face: A breath, B breaths
    "\U0001F923": "laughing",         # rolling on the floor laughing: A, B
    "\U0001F602": "laughing",         # face with tears of joy: same family as 🤣 (ours)
    "\U0001F637": "coughing",         # face with medical mask: A, B
    "\U0001F927": "sneezing",         # sneezing face: A, B
    "\U0001F443": "sniffing",         # nose: A, B
    "\U0001F634": "snoring",          # sleeping face: A
    "\U0001F62B": "groaning",         # tired face: A
    "\U0001F44A": "grunting",         # oncoming fist: A
    "\U0001F444": "throat clearing",  # mouth: A
    # disputed / unexplained: no counterpart unless --emoji-map says otherwise
    "\U0001F624": "emoji face with steam from nose",  # A sigh, B grunt
    "\U0001F616": "emoji confounded face",            # B groan only; A has 😫 for groan
    "\U0001F416": "emoji pig face",                   # B snort (not one of the 10 types)
    "\U0001F5E3": "emoji speaking head",              # B vocal noise; A has 👄 for throat
    "\U0001F442": "emoji ear",                        # B "listens": not a vocal sound
    "\U0001F629": "emoji weary face",                 # in the data, in neither script
    "\U0001F62E\u200D\U0001F4A8": "emoji face exhaling",  # in neither script
}

# one emoji (pictographs, dingbats, symbols) with its modifiers / ZWJ sequence
EMOJI_RE = re.compile(
    "((?:[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]"
    "[\uFE0E\uFE0F\U0001F3FB-\U0001F3FF]*)"
    "(?:\u200D[\U0001F300-\U0001FAFF\u2600-\u27BF][\uFE0E\uFE0F]*)*)")
_VARIATION = re.compile("[\uFE0E\uFE0F\U0001F3FB-\U0001F3FF]")


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


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            emoji_map: Optional[str] = None, extract_dir: Optional[Path] = None) -> List[dict]:
    root = Path(src)
    table = dict(EMOJI_LABELS)
    if emoji_map:
        table.update(load_emoji_map(emoji_map))
    mapper = TagMapper("nonverbaltts", opts.unmapped, opts.unknown)
    extract_dir = Path(os.path.abspath(extract_dir if extract_dir
                                      else Path(opts.out) / "nonverbaltts_audio"))

    by_split: Dict[str, List[tuple]] = {}
    tables = find_table_files(root)
    if tables:
        for split, p in tables:
            if splits and split not in splits:
                continue
            info(f"nonverbaltts: reading {p}")
            for row in iter_table_rows(p):
                try:
                    audio = row.data.pop("audio", None)
                    uid = safe_name(row.text("index", "id", required=False)
                                    or (Path(audio["path"]).stem if isinstance(audio, dict)
                                        and audio.get("path") else f"{p.stem}_{row.line:06d}"))
                    row.data["utt_id"] = uid
                    dest = materialize_audio(audio, extract_dir / split, uid, p.parent, row)
                except PrepError as exc:
                    bad_row(opts, exc, split)
                    continue
                by_split.setdefault(split, []).append((row, dest))
    else:
        files = sorted(p for p in root.glob("*") if p.suffix in (".csv", ".tsv", ".jsonl", ".json"))
        if not files:
            raise PrepError(f"{root}: no *.parquet shards, no save_to_disk folder and no "
                            f"<split>.csv/.tsv/.jsonl")
        for p in files:
            if splits and p.stem not in splits:
                continue
            for row in read_manifest(p):
                try:
                    audio = row.text("audio", "file_name", "audio_path", "path", "wav")
                except PrepError as exc:
                    bad_row(opts, exc, p.stem)
                    continue
                by_split.setdefault(p.stem, []).append((row, resolve_audio(audio, p.parent, root)))

    def label_of(m: re.Match) -> str:
        key = _VARIATION.sub("", m.group(1))
        return table.get(key, key)

    def convert(text: str, row) -> str:
        return mapper.convert(text, EMOJI_RE, row, label_of=label_of)

    reports = []
    for split in sorted(set(by_split) | set(opts.skipped)):
        fresh_mapper_stats(mapper)
        utts = []
        for row, audio in by_split.get(split, []):
            try:
                text = row.text("Result", "result", "text")
                uid = safe_name(row.text("utt_id", "index", "id", required=False) or audio.stem)
                emo = row.text("Emotion", "emotion", required=False)
                spk = row.text("speaker_id", "speaker", required=False)
            except PrepError as exc:
                bad_row(opts, exc, split)
                continue
            utts.append(Utt(uid, audio, row, safe_name(spk) if spk else None, "en", text,
                            {"utt2emotion": emo.lower()} if emo else {}))
        reports.append(write_split("nonverbaltts", split, utts, opts, mapper, convert))
    return reports
