"""NVVSpeech Challenge Track 1 test set (1,946 clips: 985 zh / 961 en), no references.

Layout (the organisers ship audio plus ids; this is the documented form)::

    ROOT/audio/<utt_id>.{wav,flac,mp3}          or ROOT/audio/{zh,en}/<utt_id>.*
    ROOT/test.jsonl   (optional) {"utt_id": ..., "language": "zh"|"en"[, "audio": rel/path]}
    ROOT/list         (optional) "<utt_id> <language>" per line (also test.list, utt2lang)

Without a manifest the language comes from the folder (``audio/zh/``,
``audio/en/``) or from ``--lang``. Output per language ``OUT/test_<lang>/``:
``wav.scp utt2spk spk2utt utt2lang utt2dur`` (no ``text``); speakers are
unknown, so ``utt2spk`` maps each clip to itself.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

from .common import AUDIO_EXTS, PrepError, Row, info, read_manifest
from .prep import Options, Utt, norm_lang, write_split

MANIFESTS = ("test.jsonl", "test.json", "test.tsv", "list", "test.list", "utt2lang")
EXPECTED = {"zh": 985, "en": 961}


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


def collect(root: Path, lang: Optional[str] = None) -> Dict[str, List[Utt]]:
    root = Path(root)
    manifest = next((root / m for m in MANIFESTS if (root / m).is_file()), None)
    by_lang: Dict[str, List[Utt]] = defaultdict(list)
    want = norm_lang(lang)
    if manifest is not None:
        rows = (_read_list(manifest) if manifest.suffix not in (".jsonl", ".json", ".tsv")
                else list(read_manifest(manifest)))
        for row in rows:
            utt = str(row.require("utt_id", "id", "key"))
            rlang = norm_lang(row.get("language", "lang")) or want
            if rlang is None:
                raise row.error(f"no language for {utt!r}: add a language column or pass --lang")
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
            rlang = folder if folder in ("zh", "en") else want
            if rlang is None:
                raise PrepError(f"{p}: language unknown (no manifest, not under audio/zh or "
                                f"audio/en): pass --lang")
            if want and rlang != want:
                continue
            by_lang[rlang].append(Utt(p.stem, p.resolve(), None, None, rlang))
    if not by_lang:
        raise PrepError(f"{root}: no clips" + (f" for language {want}" if want else ""))
    return by_lang


def prepare(src: Path, opts: Options, lang: Optional[str] = None,
            split: str = "test") -> List[dict]:
    reports = []
    for rlang, utts in sorted(collect(src, lang).items()):
        exp = EXPECTED.get(rlang)
        if exp is not None and len(utts) != exp:
            info(f"note: {len(utts)} {rlang} clips listed; the official test set has {exp}")
        reports.append(write_split("track1_test", f"{split}_{rlang}", utts, opts))
    return reports
