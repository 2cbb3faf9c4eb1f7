"""NV-Bench (1,651 utterances, 14 NVV categories, zh/en; paired human audio).

Layout (subset files as published, audio paths relative to the JSON file or ROOT)::

    ROOT/{zh_single,zh_multi,en_single,en_multi}.json   (a JSON list, or .jsonl)
      {"wav_path": "zh/xxx.mp3", "text": "今天很开心[Laughter]",
       "ref_wav_path": "...", "ref_text": "...", "target_wav_path": "...",
       "category": "Laughter", ...}

Each subset becomes ``OUT/<subset>/`` with the NV-Bench text mapped to the
challenge tags (``text``, ``ref.jsonl``) and, for the TTS recipe, utt-keyed
``text_nvbench`` (the original tagged text, NV-Bench labels kept),
``utt2ref_wav`` (absolute prompt audio), ``utt2ref_text``, ``utt2target_wav``
(output name the benchmark expects), ``utt2category``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio
from .nvv_text import BRACKET_LABEL_RE, TagMapper, tidy
from .prep import Options, Utt, fresh_mapper_stats, norm_lang, write_split

SUBSETS = ("zh_single", "zh_multi", "en_single", "en_multi")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def subset_files(root: Path, splits: Optional[Sequence[str]] = None) -> List[Path]:
    files = sorted(p for p in Path(root).glob("*") if p.suffix in (".json", ".jsonl")
                   and p.is_file())
    known = [p for p in files if p.stem in SUBSETS]
    if known and not splits:
        files = known  # ignore unrelated JSON files next to the subsets
    if splits:
        files = [p for p in files if p.stem in splits]
        missing = set(splits) - {p.stem for p in files}
        if missing:
            raise PrepError(f"{root}: no subset file for {sorted(missing)}")
    if not files:
        raise PrepError(f"{root}: no NV-Bench subset files (*.json / *.jsonl)")
    return files


def collect(path: Path, root: Path) -> List[Utt]:
    utts = []
    for row in read_manifest(path):
        wav = row.require("wav_path", "gt_wav_path", "audio")
        text = row.require("text")
        utt = row.get("utt_id", "id", "key", "uid") or Path(str(wav)).stem
        lang = norm_lang(row.get("language", "lang"))
        if lang is None:
            prefix = path.stem.split("_")[0]
            lang = norm_lang(prefix) if norm_lang(prefix) in ("zh", "en") else (
                "zh" if _CJK.search(str(text)) else "en")
        extra = {"text_nvbench": tidy(str(text))}
        ref_wav = row.get("ref_wav_path", "prompt_wav_path", "prompt_wav")
        if ref_wav:
            extra["utt2ref_wav"] = str(resolve_audio(str(ref_wav), path.parent, root))
        ref_text = row.get("ref_text", "prompt_text")
        if ref_text:
            extra["utt2ref_text"] = tidy(str(ref_text))
        target = row.get("target_wav_path")
        if target:
            extra["utt2target_wav"] = str(target)
        cat = row.get("category")
        if cat:
            extra["utt2category"] = tidy(str(cat)).replace(" ", "_")
        utts.append(Utt(str(utt), resolve_audio(str(wav), path.parent, root), row,
                        None, lang, str(text), extra))
    return utts


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None) -> List[dict]:
    mapper = TagMapper("nvbench", opts.unmapped, opts.unknown)
    reports = []
    for path in subset_files(src, splits):
        fresh_mapper_stats(mapper)
        utts = collect(path, Path(src))
        reports.append(write_split(
            "nvbench", path.stem, utts, opts, mapper,
            lambda text, row: mapper.convert(text, BRACKET_LABEL_RE, row)))
    return reports
