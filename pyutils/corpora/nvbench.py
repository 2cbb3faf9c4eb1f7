"""NV-Bench (1,651 utterances, 14 NVV categories, zh/en; paired human audio).

Read in every form it is published in:

* the benchmark's JSON files (``nvbench/NV-Bench`` README "Data Format"), one
  per subset, either a list of objects or -- as ``data/loader.py``
  ``load_benchmark`` also accepts -- a dict keyed by ``wav_path``::

    ROOT/{zh_single,zh_multi,en_single,en_multi}.json   (.jsonl also read)
      [{"wav_path": "zh/xxx.mp3", "text": "今天很开心[Laughter]", "ref_wav_path": "...",
        "ref_text": "...", "target_wav_path": "...", "category": "Laughter"}]
      {"zh/xxx.mp3": {"text": "...", "ref_wav_path": "...", ...}}

* the Hugging Face release (CharlesNi/NV-Bench): parquet shards (or a
  ``save_to_disk`` folder) with fields ``text``, ``prompt_text``, ``category``,
  ``type`` and audio columns; the subset comes from a folder or file name
  (``zh_single/...parquet``, ``zh_single-00000-of-00001.parquet``) or from
  ``language`` + ``type``. Embedded audio is written once to
  ``OUT/nvbench_audio/<subset>/``.

Audio paths of the JSON form are relative to the JSON file (or ROOT). Each
subset becomes ``OUT/<subset>/`` with the NV-Bench text mapped to the
challenge tags (``text``, ``ref.jsonl``) and, for the TTS recipe, utt-keyed
``text_nvbench`` (the original tagged text, NV-Bench labels kept),
``utt2ref_wav`` (absolute prompt audio), ``utt2ref_text``, ``utt2target_wav``
(output name the benchmark expects), ``utt2category``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, info, read_manifest, resolve_audio, safe_name
from .nvv_text import BRACKET_LABEL_RE, TagMapper, tidy
from .prep import Options, Utt, bad_row, fresh_mapper_stats, norm_lang, write_split
from .tables import audio_column, find_table_files, iter_table_rows, materialize_audio

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
    return files


def _subset_of_table(path: Path, root: Path, rec: dict) -> Optional[str]:
    parts = list(path.relative_to(root).parts) if path.is_relative_to(root) else [path.name]
    for part in reversed(parts):
        for name in SUBSETS:
            if part == name or part.startswith(name + "-") or part.startswith(name + "."):
                return name
    lang = norm_lang(rec.get("language") or rec.get("lang"))
    kind = str(rec.get("type") or "").lower()
    if lang in ("zh", "en") and kind in ("single", "multi"):
        return f"{lang}_{kind}"
    return None


def _language(row, subset: str, text: str) -> str:
    lang = norm_lang(row.get("language", "lang"))
    if lang is None:
        prefix = subset.split("_")[0]
        lang = norm_lang(prefix) if norm_lang(prefix) in ("zh", "en") else (
            "zh" if _CJK.search(text) else "en")
    return lang


def _extra(row, text: str, ref_wav: Optional[str], target: Optional[str]) -> dict:
    extra = {"text_nvbench": tidy(text)}
    if ref_wav:
        extra["utt2ref_wav"] = ref_wav
    ref_text = row.text("ref_text", "prompt_text", required=False)
    if ref_text:
        extra["utt2ref_text"] = tidy(ref_text)
    if target:
        extra["utt2target_wav"] = target
    cat = row.text("category", required=False)
    if cat:
        extra["utt2category"] = tidy(cat).replace(" ", "_")
    return extra


def collect(path: Path, root: Path, opts: Optional[Options] = None) -> List[Utt]:
    """Utterances of one subset JSON/JSONL file (list or dict keyed by wav_path)."""
    utts = []
    for row in read_manifest(path):
        try:
            wav = row.get("wav_path", "gt_wav_path", "audio") or row.key
            if wav is None:
                raise row.error("missing field 'wav_path' (or a dict key holding it)")
            if not isinstance(wav, str):
                raise row.error("field 'wav_path' should be text")
            text = row.text("text")
            utt = row.text("utt_id", "id", "key", "uid", required=False) or Path(wav).stem
            ref_wav = row.text("ref_wav_path", "prompt_wav_path", "prompt_wav", required=False)
            extra = _extra(row, text, str(resolve_audio(ref_wav, path.parent, root))
                           if ref_wav else None,
                           row.text("target_wav_path", required=False))
        except PrepError as exc:
            bad_row(opts or Options(out=Path(".")), exc, path.stem)
            continue
        utts.append(Utt(utt, resolve_audio(wav, path.parent, root), row,
                        None, _language(row, path.stem, text), text, extra))
    return utts


def collect_tables(root: Path, opts: Options,
                   splits: Optional[Sequence[str]] = None) -> Dict[str, List[Utt]]:
    """Utterances of the parquet / save-to-disk release, per subset."""
    by_subset: Dict[str, List[Utt]] = {}
    audio_root = Path(opts.out) / "nvbench_audio"
    for _split, path in find_table_files(root):
        info(f"nvbench: reading {path}")
        for row in iter_table_rows(path):
            rec = row.data
            subset = _subset_of_table(path, root, rec)
            try:
                if subset is None:
                    raise row.error("cannot tell the subset (zh_single, zh_multi, en_single, "
                                    "en_multi): no such folder/file name and no "
                                    "language + type fields")
                if splits and subset not in splits:
                    continue
                text = row.text("text")
                utt = (row.text("utt_id", "id", "key", "uid", required=False)
                       or f"{subset}_{row.line:04d}")
                utt = safe_name(utt)
                acol = audio_column(rec, ("audio", "wav", "gt_audio", "wav_path"))
                if acol is None:
                    raise row.error("no audio column (audio / wav / gt_audio)")
                audio = materialize_audio(rec[acol], audio_root / subset, utt, path.parent, row)
                pcol = next((c for c in ("prompt_audio", "ref_audio", "prompt_wav",
                                         "ref_wav_path", "prompt_wav_path") if rec.get(c)), None)
                ref_wav = (str(materialize_audio(rec[pcol], audio_root / subset,
                                                 f"{utt}_prompt", path.parent, row))
                           if pcol else None)
                extra = _extra(row, text, ref_wav, row.text("target_wav_path", required=False))
            except PrepError as exc:
                bad_row(opts, exc, subset or "unknown")
                continue
            by_subset.setdefault(subset, []).append(
                Utt(utt, audio, row, None, _language(row, subset, text), text, extra))
    return by_subset


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None) -> List[dict]:
    mapper = TagMapper("nvbench", opts.unmapped, opts.unknown)
    root = Path(src)
    by_subset: Dict[str, List[Utt]] = {}
    for path in subset_files(root, splits):
        by_subset.setdefault(path.stem, []).extend(collect(path, root, opts))
    if not by_subset:
        by_subset = collect_tables(root, opts, splits)
    if splits:
        missing = sorted(set(splits) - set(by_subset))
        if missing:
            raise PrepError(f"{root}: no subset file for {missing}")
    if not by_subset:
        raise PrepError(f"{root}: no NV-Bench subset files (*.json / *.jsonl / *.parquet / "
                        f"save_to_disk folder)")
    reports = []
    for subset in sorted(by_subset):
        fresh_mapper_stats(mapper)
        reports.append(write_split(
            "nvbench", subset, by_subset[subset], opts, mapper,
            lambda text, row: mapper.convert(text, BRACKET_LABEL_RE, row)))
    return reports
