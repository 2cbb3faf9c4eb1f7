"""Turn candidate utterances of one split into a Kaldi data dir + report.

Every NVV preparer builds a list of :class:`Utt` (audio path, raw transcript,
speaker, language, manifest row) and hands it to :func:`write_split`, which

1. maps the inline labels (through the preparer's converter and
   :class:`~pyutils.corpora.nvv_text.TagMapper`), checks the Track 1 rules;
2. skips (and counts) utterances whose audio is missing or unreadable;
3. probes the audio and writes a ``wav.scp`` entry that yields 16 kHz mono
   (direct path or an ffmpeg pipe); warns about files longer than
   ``max_duration`` -- data prep never segments long files;
4. writes ``wav.scp text utt2spk spk2utt utt2lang utt2dur`` (+ extra
   utt-keyed files), ``ref.jsonl`` rows ``{"utt_id","language","text_with_nvvs"}``
   and ``prep_report.json``, and prints the report summary.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

from pyutils.safe_paths import UnsafePathError, confined

from pyutils.io import atomic_write_text, write_jsonl

from .common import (AudioInfo, DataDir, PrepError, Row, info,
                     probe_many, warn, wav_scp_entry)
from .nvv_text import DropUtterance, TagMapper, finalize

_LANG_ALIASES = {
    "zh": "zh", "cn": "zh", "cmn": "zh", "zh-cn": "zh", "zh_cn": "zh", "chinese": "zh",
    "mandarin": "zh", "zho": "zh", "chi": "zh",
    "en": "en", "eng": "en", "english": "en", "en-us": "en", "en_us": "en", "en-gb": "en",
    "vi": "vi", "vie": "vi", "vietnamese": "vi",
}


TRACK1_LANGS = ("en", "zh")  # the languages of a Track 1 reference (ref.jsonl)


def norm_lang(value: Optional[str]) -> Optional[str]:
    if value is None or str(value).strip() == "":
        return None
    v = str(value).strip().lower()
    return _LANG_ALIASES.get(v, v)


def clean_id(value: str) -> str:
    """Utterance/speaker id usable in Kaldi files (no whitespace)."""
    return re.sub(r"\s+", "_", str(value).strip())


def has_speaker_prefix(utt: str, spk: str) -> bool:
    """Kaldi wants speaker ids as utterance-id prefixes (so that sorting by
    utterance also groups speakers): ``spk``, ``spk-...`` or ``spk_...``."""
    return utt == spk or (utt.startswith(spk) and utt[len(spk)] in "-_")


def sort_orders_agree(utt2spk: Dict[str, str]) -> bool:
    """True when sorting by utterance equals sorting by (speaker, utterance)."""
    by_utt = sorted(utt2spk)
    return by_utt == sorted(utt2spk, key=lambda u: (utt2spk[u], u))


@dataclass
class Utt:
    utt_id: str
    audio: Path
    row: Optional[Row] = None
    speaker: Optional[str] = None
    language: Optional[str] = None
    raw_text: Optional[str] = None
    extra: Dict[str, str] = field(default_factory=dict)  # file name -> value


@dataclass
class Options:
    out: Path
    unmapped: str = "drop_tag"
    unknown: str = "error"
    max_duration: float = 30.0
    nj: int = 4
    converter: str = "ffmpeg"
    prefix_speaker: bool = True
    on_bad_row: str = "error"   # error | skip
    # rows skipped while reading manifests, per split: (reason, where)
    skipped: Dict[str, List[tuple]] = field(default_factory=dict)


def bad_row(opts: Options, exc: PrepError, split: str) -> None:
    """Policy for a malformed row: raise (``--on-bad-row error``) or count it
    under its split and go on (``--on-bad-row skip``)."""
    if opts.on_bad_row != "skip":
        raise exc
    opts.skipped.setdefault(split, []).append(("bad row (skipped)", str(exc)))


# Summary lines of every split written in this process; the CLI keeps them in
# OUT/prep.log.
LOG_LINES: List[str] = []


def write_split(corpus: str, split: str, utts: List[Utt], opts: Options,
                mapper: Optional[TagMapper] = None,
                convert: Optional[Callable[[str, Optional[Row]], str]] = None,
                write_ref: bool = True) -> dict:
    """Write ``opts.out/split`` from ``utts``; returns the report dict."""
    try:
        outdir = confined(opts.out, split, what="split")
    except UnsafePathError as exc:
        raise PrepError(str(exc)) from None
    stats = mapper.stats if mapper is not None else None
    dropped: Counter = stats.utt_dropped if stats is not None else Counter()
    examples: Dict[str, List[str]] = {}

    def note(reason: str, what: str) -> None:
        dropped[reason] += 1
        examples.setdefault(reason, [])
        if len(examples[reason]) < 5:
            examples[reason].append(what)

    for reason, where in opts.skipped.pop(split, []):
        note(reason, where)
    if dropped.get("bad row (skipped)"):
        warn(f"{corpus}/{split}: {dropped['bad row (skipped)']} malformed row(s) skipped "
             f"(--on-bad-row skip), e.g. {examples['bad row (skipped)'][0]}")

    # 1. transcripts
    kept: List[tuple] = []
    for u in utts:
        text = None
        if u.raw_text is not None and convert is not None:
            try:
                text = finalize(convert(u.raw_text, u.row), u.row, stats)
            except DropUtterance as exc:
                reason = ("unmapped label (drop_utt)" if exc.reason.startswith("unmapped")
                          else exc.reason)
                note(reason, u.row.where() if u.row else u.utt_id)
                continue
            except PrepError as exc:
                if opts.on_bad_row != "skip":
                    raise
                note("bad row (skipped)", str(exc))
                continue
        # wav.scp holds absolute paths whatever --out / --src were given as
        u.audio = Path(os.path.abspath(u.audio))
        kept.append((u, text))

    # 2. audio presence
    present = []
    for u, text in kept:
        if not u.audio.is_file():
            note("missing audio", str(u.audio))
            continue
        present.append((u, text))
    if dropped.get("missing audio"):
        warn(f"{corpus}/{split}: {dropped['missing audio']} utterance(s) skipped because the "
             f"audio file is missing, e.g. {examples['missing audio'][0]}")

    # 3. probe
    infos = probe_many([str(u.audio) for u, _ in present], nj=opts.nj)
    dd = DataDir()
    langs: Counter = Counter()
    long_files = 0
    total_dur = 0.0
    ref_rows = []
    not_track1: Counter = Counter()
    for u, text in present:
        inf = infos[str(u.audio)]
        if isinstance(inf, PrepError):
            note("unreadable audio", str(inf))
            continue
        assert isinstance(inf, AudioInfo)
        if opts.max_duration and inf.duration > opts.max_duration:
            long_files += 1
            if long_files <= 3:
                warn(f"{u.audio}: {inf.duration:.1f} s is longer than --max-duration "
                     f"{opts.max_duration:g} s (data prep does not segment long files)")
        spk = clean_id(u.speaker) if u.speaker else None
        utt = clean_id(u.utt_id)
        if spk and opts.prefix_speaker and not has_speaker_prefix(utt, spk):
            utt = f"{spk}-{utt}"
        lang = norm_lang(u.language)
        extra = dict(u.extra)
        if lang:
            extra["utt2lang"] = lang
            langs[lang] += 1
        extra["utt2dur"] = f"{inf.duration:.3f}"
        try:
            dd.add(utt, wav_scp_entry(inf, opts.converter), spk, text, **extra)
        except PrepError as exc:
            err = u.row.error(str(exc)) if u.row else exc
            if opts.on_bad_row != "skip":
                raise err from None
            note("bad row (skipped)", str(err))
            continue
        total_dur += inf.duration
        if text is not None and write_ref:
            if lang in TRACK1_LANGS:
                ref_rows.append({"utt_id": utt, "language": lang, "text_with_nvvs": text})
            else:  # a Track 1 reference holds en/zh only (chorus-score track1 refuses others)
                not_track1[lang or "unknown"] += 1
    if dropped.get("unreadable audio"):
        warn(f"{corpus}/{split}: {dropped['unreadable audio']} unreadable audio file(s), e.g. "
             f"{examples['unreadable audio'][0]}")
    if long_files > 3:
        warn(f"{corpus}/{split}: {long_files} files in all exceed --max-duration")
    if len(dd) == 0:
        raise PrepError(f"{corpus}/{split}: no utterance left to write "
                        f"(dropped: {dict(dropped)})")

    if not sort_orders_agree(dd.utt2spk):
        warn(f"{corpus}/{split}: sorting by utterance id does not group speakers together "
             f"(speaker ids are not clean prefixes); Kaldi's split_data.sh may complain")
    dd.write(outdir)
    if ref_rows:
        write_jsonl(outdir / "ref.jsonl", sorted(ref_rows, key=lambda r: r["utt_id"]))
    if not_track1:
        langs_out = ", ".join(f"{k}: {v}" for k, v in sorted(not_track1.items()))
        warn(f"{corpus}/{split}: ref.jsonl (the Track 1 reference) holds en/zh rows only; "
             f"left out {sum(not_track1.values())} utterance(s) ({langs_out}) -- their "
             f"text is in {outdir / 'text'}, scored by WER/CER (pyutils.asr.wer), not chorus-score track1")
    report = {
        "corpus": corpus,
        "split": split,
        "out": str(outdir.resolve()),
        "utterances_in": len(utts),
        "utterances_written": len(dd),
        "hours": round(total_dur / 3600.0, 4),
        "languages": dict(sorted(langs.items())),
        "not_in_track1_ref": dict(sorted(not_track1.items())),
        "files_longer_than_max_duration": long_files,
        "max_duration": opts.max_duration,
        "policy": {"unmapped": opts.unmapped, "unknown_label": opts.unknown},
        "drop_examples": examples,
    }
    if stats is not None:
        report.update(stats.as_dict())
    else:
        report["utterances_dropped"] = dict(sorted(dropped.items()))
    atomic_write_text(outdir / "prep_report.json",
                      json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    print_report(report)
    return report


def print_report(report: dict) -> None:
    lines = [f"[{report['corpus']}/{report['split']}] wrote {report['utterances_written']} of "
             f"{report['utterances_in']} utterances ({report['hours']} h) -> {report['out']}"]
    if "labels_mapped" in report:
        lines.append(f"  labels: mapped {report['labels_mapped']}, aliased "
                     f"{report['labels_aliased']}, dropped {report['labels_dropped']}, kept as "
                     f"text {report['labels_kept_as_text']}, unknown dropped "
                     f"{report['labels_unknown_dropped']}")
    for key in ("label_to_tag", "aliases", "tags_dropped_no_counterpart", "tags_kept_as_text",
                "unknown_labels_dropped", "utterances_dropped"):
        value = report.get(key)
        if value:
            lines.append(f"  {key}: " + ", ".join(f"{k}: {v}" for k, v in value.items()))
    for line in lines:
        info(line)
    LOG_LINES.extend(lines)


def fresh_mapper_stats(mapper: Optional[TagMapper]) -> None:
    """Reset counters between splits so each report covers its split only."""
    if mapper is not None:
        from .nvv_text import TagStats

        mapper.stats = TagStats()


def write_splits(corpus: str, by_split: Dict[str, List[Utt]], opts: Options, mapper: Optional[TagMapper],
                 convert: Callable[[str, Optional[Row]], str], splits=None) -> List[dict]:
    """:func:`write_split` of every split in ``by_split`` or with skipped rows (of ``splits`` only,
    when given), sorted by name, each with its own tag counts; returns the reports."""
    reports = []
    for split in sorted(set(by_split) | set(opts.skipped)):
        if not splits or split in splits:
            fresh_mapper_stats(mapper)
            reports.append(write_split(corpus, split, by_split.get(split, []), opts, mapper, convert))
    return reports
