"""QualiSpeech (tsinghua-ee/QualiSpeech, ACL 2025) for the SQA recipe.

Layout (as published, after unzipping the audio)::

    ROOT/train.csv ROOT/val.csv ROOT/test.csv
        id, Speed, Naturalness, Background noise, Distortion, Listening effort,
        Continuity, Overall quality            (integers 1-5)
        Feeling of voice, Noise Description, Distortion description,
        Unnatural pause, Natural language description   (free text)
    ROOT/wav/{train,val,test}/<id>        e.g. wav/train/sys02tts-0000040.wav

or, instead of the CSV files, the same tables as parquet: the hub's
conversion (branch ``refs/convert/parquet``: ``default/{train,validation,
test}/0000.parquet``) or ``ROOT/<split>.parquet``; a split with both a CSV
and parquet is read from the CSV. Ids of the BVCC part are BVCC's own
(``sys64e2f-utt491a78a.wav``); its audio is fetched by the user with the
dataset's scripts (``download_bvcc.sh``, ``merge_data.sh``), and a row whose
audio is missing is counted and skipped (message names the first few).
``val``/``validation`` is written as ``dev`` (recipes use train/dev/test).

Per split ``OUT/<split>/``: ``wav.scp utt2spk spk2utt utt2dur`` (speaker =
system id, the part of the id before the first ``-``), ``ref.jsonl`` in the
``chorus-score sqa`` format ``{"utt_id","score","faults":{"noise":[[s,e]],
"distortion":[],"pause":[]}}`` (score = ``--score-column``, default
``Overall quality``), ``scores.jsonl`` (all numeric scores + the free texts,
for multi-task training) and ``prep_report.json`` with how many fault
descriptions were parsed / negative / fell back / failed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from pyutils.io import atomic_write_text, write_jsonl

from .common import (DataDir, PrepError, Row, info, probe_many, read_table, warn,
                     wav_scp_entry)
from .prep import Options, clean_id, print_report
from .qualispeech_text import parse_fault, resolve
from .tables import find_table_files, iter_table_rows

SCORE_COLUMNS = ("Speed", "Naturalness", "Background noise", "Distortion", "Listening effort",
                 "Continuity", "Overall quality")
TEXT_COLUMNS = ("Feeling of voice", "Noise Description", "Distortion description",
                "Unnatural pause", "Natural language description")
FAULT_COLUMNS = {"noise": "Noise Description", "distortion": "Distortion description",
                 "pause": "Unnatural pause"}
SPLITS = {"train": "train", "val": "dev", "dev": "dev", "test": "test"}  # table split -> data/<split>


def _key(name: str) -> str:
    return " ".join(name.lower().replace("_", " ").split())


def _col(row_data: dict, name: str):
    want = _key(name)
    for k, v in row_data.items():
        if _key(k) == want:
            return v
    return None


def _audio_path(root: Path, split_file: str, uid: str) -> Path:
    name = uid if uid.lower().endswith((".wav", ".flac", ".mp3")) else uid + ".wav"
    for cand in (root / "wav" / split_file / name, root / "wav" / name, root / split_file / name,
                 root / name):
        if cand.is_file():
            return cand.resolve()
    return (root / "wav" / split_file / name).resolve()


def tables(root: Path) -> Dict[str, List[Path]]:
    """Split (``train``/``val``/``dev``/``test``, as the audio folders are named) -> its table files."""
    found: Dict[str, List[Path]] = {}
    for split in ("train", "val", "dev", "test"):
        if (root / f"{split}.csv").is_file():
            found[split] = [root / f"{split}.csv"]
    for split, path in find_table_files(root):
        split = "val" if split == "validation" else split
        if split in SPLITS and path.suffix == ".parquet" and not any(p.suffix == ".csv" for p in found.get(split, [])):
            found.setdefault(split, []).append(path)
    return found


def _rows(files: List[Path]) -> List[Row]:
    if files[0].suffix == ".csv":
        return list(read_table(files[0], ","))
    return [row for path in files for row in iter_table_rows(path)]


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            score_column: str = "Overall quality", untimed: str = "whole",
            point_halfwidth: float = 0.25) -> List[dict]:
    root = Path(src)
    reports = []
    found = tables(root)
    if not found:
        raise PrepError(f"{root}: no train.csv / val.csv / test.csv, nor parquet tables of those splits")
    for split_file, files in found.items():
        out_split = SPLITS[split_file]
        if splits and out_split not in splits and split_file not in splits:
            continue
        reports.append(_prepare_split(root, split_file, out_split, _rows(files), opts, score_column,
                                      untimed, point_halfwidth))
    return reports


def _prepare_split(root: Path, split_file: str, out_split: str, rows: List[Row], opts: Options,
                   score_column: str, untimed: str, point_halfwidth: float) -> dict:
    if rows and _col(rows[0].data, score_column) is None:
        raise PrepError(f"no column {score_column!r} (columns: {', '.join(rows[0].data)})",
                        rows[0].path, rows[0].line)
    items = []
    missing: List[str] = []
    for row in rows:
        uid_raw = str(_col(row.data, "id") or "").strip()
        if not uid_raw:
            raise row.error("empty 'id'")
        audio = _audio_path(root, split_file, uid_raw)
        if not audio.is_file():
            missing.append(str(audio))
            continue
        items.append((row, uid_raw, audio))
    if missing:
        warn(f"qualispeech/{out_split}: {len(missing)} of {len(rows)} rows skipped: audio "
             f"missing (e.g. {missing[0]}). The BVCC part is fetched separately with the "
             f"dataset's download_bvcc.sh / merge_data.sh.")
    infos = probe_many([str(a) for _, _, a in items], nj=opts.nj)

    dd = DataDir()
    refs, scores = [], []
    outcome: Dict[str, Counter] = {k: Counter() for k in FAULT_COLUMNS}
    examples: Dict[str, List[str]] = {"failed": [], "untimed": []}
    unreadable = 0
    for row, uid_raw, audio in items:
        inf = infos[str(audio)]
        if isinstance(inf, PrepError):
            unreadable += 1
            warn(str(inf)) if unreadable <= 3 else None
            continue
        utt = clean_id(re.sub(r"\.(wav|flac|mp3)$", "", uid_raw, flags=re.I))
        spk = utt.split("-", 1)[0] if "-" in utt else utt
        try:
            score = float(_col(row.data, score_column))
        except (TypeError, ValueError):
            raise row.error(f"{score_column!r} is not a number: "
                            f"{_col(row.data, score_column)!r}") from None
        faults = {}
        for kind, column in FAULT_COLUMNS.items():
            desc = _col(row.data, column)
            parse = parse_fault(desc)
            outcome[kind][parse.status] += 1
            if parse.status in ("failed", "untimed") and len(examples[parse.status]) < 10:
                examples[parse.status].append(f"{row.where()} [{column}] {desc!r}"
                                              + (f" ({parse.note})" if parse.note else ""))
            faults[kind] = resolve(parse, inf.duration, untimed, point_halfwidth)
        if opts.max_duration and inf.duration > opts.max_duration:
            warn(f"{audio}: {inf.duration:.1f} s is longer than --max-duration")
        dd.add(utt, wav_scp_entry(inf, opts.converter), spk, None,
               utt2dur=f"{inf.duration:.3f}")
        refs.append({"utt_id": utt, "score": score, "faults": faults})
        rec = {"utt_id": utt}
        for col in SCORE_COLUMNS:
            v = _col(row.data, col)
            try:
                rec[col] = float(v) if v not in (None, "") else None
            except ValueError:
                raise row.error(f"{col!r} is not a number: {v!r}") from None
        for col in TEXT_COLUMNS:
            rec[col] = _col(row.data, col)
        scores.append(rec)
    if len(dd) == 0:
        raise PrepError(f"qualispeech/{out_split}: no utterance with audio "
                        f"({len(missing)} missing, {unreadable} unreadable)")
    outdir = Path(opts.out) / out_split
    dd.write(outdir)
    write_jsonl(outdir / "ref.jsonl", sorted(refs, key=lambda r: r["utt_id"]))
    write_jsonl(outdir / "scores.jsonl", sorted(scores, key=lambda r: r["utt_id"]))
    summary = {}
    for kind, c in outcome.items():
        summary[kind] = {"parsed": c["timed"] + c["whole"], "negative": c["none"],
                         "fallback_untimed": c["untimed"], "failed": c["failed"],
                         **{f"status_{k}": v for k, v in sorted(c.items())}}
    report = {
        "corpus": "qualispeech", "split": out_split, "out": str(outdir.resolve()),
        "utterances_in": len(rows), "utterances_written": len(dd),
        "hours": round(sum(float(v) for v in dd.extra["utt2dur"].values()) / 3600.0, 4),
        "utterances_dropped": {"missing audio": len(missing), "unreadable audio": unreadable},
        "score_column": score_column,
        "policy": {"untimed_fault": untimed, "point_halfwidth_s": point_halfwidth},
        "fault_descriptions": summary, "examples": examples,
    }
    atomic_write_text(outdir / "prep_report.json",
                      json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    print_report(report)
    for kind, s in summary.items():
        info(f"  {kind}: parsed {s['parsed']}, negative {s['negative']}, "
             f"fallback {s['fallback_untimed']} ({untimed}), failed {s['failed']}")
    return report
