"""NVVSpeech Challenge Track 1 test set (1,946 clips: 985 zh / 961 en), no references.

The organisers ship 1,946 audio files with ids such as ``zh_0001`` /
``en_0001`` (NVVSpeech-Challenge-Track1-Evaluation README; submission rows
``{"utt_id": "zh_0001", ...}``) on the Hugging Face hub
(NVVSpeech-Challenge/NVVSpeech-Challenge-Track1-Test-Set). Read as:

    ROOT/zh_0001.wav, ROOT/en_0001.wav ...      flat (any depth, any audio extension)
    ROOT/audio/<utt_id>.*  or  ROOT/audio/{zh,en}/<utt_id>.*
    ROOT/**/*.parquet or a save_to_disk folder  rows with an Audio cell and an id
                                                (utt_id / id / key, else the audio name)
    ROOT/test.jsonl   (optional) {"utt_id": ..., "language": "zh"|"en"[, "audio": rel/path]}
    ROOT/list         (optional) "<utt_id> <language>" per line (also test.list, utt2lang)

The language comes from a manifest column, else the folder (``audio/zh/``),
else the id prefix (``zh_0001`` -> zh, ``en_0001`` -> en), else ``--lang``.
Audio embedded in parquet is written once to ``OUT/track1_test_audio/``. Output per language ``OUT/test_<lang>/``:
``wav.scp utt2spk spk2utt utt2lang utt2dur`` (no ``text``); speakers are
unknown, so ``utt2spk`` maps each clip to itself.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

import re

from .common import AUDIO_EXTS, PrepError, Row, info, read_manifest, safe_name
from .prep import TRACK1_LANGS, Options, Utt, bad_row, norm_lang, write_split
from .tables import audio_column, find_table_files, iter_table_rows, materialize_audio

MANIFESTS = ("test.jsonl", "test.json", "test.tsv", "list", "test.list", "utt2lang")
EXPECTED = {"zh": 985, "en": 961}
_ID_LANG = re.compile(r"^(zh|en|cn|cmn|eng)[_\-]", re.IGNORECASE)


def _find_audio(root: Path, utt: str, lang: Optional[str]) -> Path:
    bases = [root / "audio"]
    if lang:
        bases.insert(0, root / "audio" / lang)
    bases.append(root)
    for base in bases:
        for ext in AUDIO_EXTS:
            cand = base / f"{utt}{ext}"
            if cand.is_file():
                return cand.resolve()
    return (root / "audio" / f"{utt}.wav").resolve()  # reported as missing later


def _read_list(path: Path) -> List[Row]:
    rows = []
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) > 2:
                raise PrepError("expected '<utt_id> [language]'", path, lineno)
            rows.append(Row({"utt_id": parts[0], "language": parts[1] if len(parts) > 1 else None},
                            str(path), lineno))
    return rows


def lang_of_id(utt: str) -> Optional[str]:
    """``zh_0001`` -> zh, ``en-12`` -> en; None when the id has no such prefix."""
    m = _ID_LANG.match(utt)
    return norm_lang(m.group(1)) if m else None


def _check_lang(lang: Optional[str], row=None) -> None:
    """The Track 1 test set is Chinese and English: another language is a mistake."""
    if lang is not None and lang not in TRACK1_LANGS:
        msg = f"language {lang!r}: the Track 1 test set holds zh and en clips only"
        raise row.error(msg) if row is not None else PrepError(f"--lang {lang}: {msg}")


def collect(root: Path, lang: Optional[str] = None,
            opts: Optional[Options] = None) -> Dict[str, List[Utt]]:
    root = Path(root)
    manifest = next((root / m for m in MANIFESTS if (root / m).is_file()), None)
    by_lang: Dict[str, List[Utt]] = defaultdict(list)
    want = norm_lang(lang)
    _check_lang(want)
    tables = find_table_files(root) if manifest is None else []
    if tables:
        audio_dir = Path(opts.out if opts else ".") / "track1_test_audio"
        for _split, path in tables:
            for row in iter_table_rows(path):
                try:
                    acol = audio_column(row.data, ("audio", "wav"))
                    if acol is None:
                        raise row.error("no audio column")
                    cell = row.data[acol]
                    name = cell.get("path") if isinstance(cell, dict) else None
                    utt = row.text("utt_id", "id", "key", required=False) or (
                        Path(name).stem if name else None)
                    if not utt:
                        raise row.error("no utterance id (utt_id / id / key) and no audio name")
                    utt = safe_name(utt)
                    rlang = (norm_lang(row.text("language", "lang", required=False))
                             or lang_of_id(utt) or want)
                    if rlang is None:
                        raise row.error(f"no language for {utt!r}: add a language column, "
                                        f"use zh_/en_ ids or pass --lang")
                    _check_lang(rlang, row)
                    if want and rlang != want:
                        continue
                    audio = materialize_audio(cell, audio_dir / rlang, utt, path.parent, row)
                except PrepError as exc:
                    if opts is None:
                        raise
                    bad_row(opts, exc, "test_" + (want or "unknown"))
                    continue
                by_lang[rlang].append(Utt(utt, audio, row, None, rlang))
    elif manifest is not None:
        rows = (_read_list(manifest) if manifest.suffix not in (".jsonl", ".json", ".tsv")
                else list(read_manifest(manifest)))
        for row in rows:
            utt = str(row.require("utt_id", "id", "key"))
            rlang = norm_lang(row.get("language", "lang")) or lang_of_id(utt) or want
            if rlang is None:
                raise row.error(f"no language for {utt!r}: add a language column, use zh_/en_ "
                                f"ids or pass --lang")
            _check_lang(rlang, row)
            if want and rlang != want:
                continue
            audio = row.get("audio", "wav", "path", "audio_path")
            path = (root / audio).resolve() if audio else _find_audio(root, utt, rlang)
            by_lang[rlang].append(Utt(utt, path, row, None, rlang))
    else:
        adir = root / "audio" if (root / "audio").is_dir() else root
        files = sorted(p for p in adir.rglob("*") if p.suffix.lower() in AUDIO_EXTS)
        if not files:
            raise PrepError(f"no audio files under {adir} and no manifest ({', '.join(MANIFESTS)})")
        for p in files:
            folder = norm_lang(p.parent.name) if p.parent != adir else None
            rlang = folder if folder in ("zh", "en") else (lang_of_id(p.stem) or want)
            if rlang is None:
                raise PrepError(f"{p}: language unknown (no manifest, not under audio/zh or "
                                f"audio/en, id without a zh_/en_ prefix): pass --lang")
            if want and rlang != want:
                continue
            by_lang[rlang].append(Utt(safe_name(p.stem), p.resolve(), None, None, rlang))
    if not by_lang:
        raise PrepError(f"{root}: no clips" + (f" for language {want}" if want else ""))
    return by_lang


def prepare(src: Path, opts: Options, lang: Optional[str] = None,
            split: str = "test") -> List[dict]:
    reports = []
    for rlang, utts in sorted(collect(src, lang, opts).items()):
        exp = EXPECTED.get(rlang)
        if exp is not None and len(utts) != exp:
            info(f"note: {len(utts)} {rlang} clips listed; the official test set has {exp}")
        reports.append(write_split("track1_test", f"{split}_{rlang}", utts, opts))
    return reports
