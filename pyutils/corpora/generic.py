"""Generic adapter: any TSV/CSV/JSONL/JSON manifest of audio + tagged text.

For corpora nobody wrote a preparer for. A headerless ``audio<TAB>text`` list
(``.txt``/``.tsv``/``.list`` whose first cell is an audio file name -- the form
of the challenge's own sample list ``assets/nv_samples/asr.txt``) is read as
columns ``audio`` and ``text``. Columns/keys (aliases in brackets)::

    audio      (wav, path, audio_path)   required; relative to the manifest dir
    text       (transcript, txt)         required; labels written "[label]"
    utt_id     (id, key)                 optional; default: audio file stem
    language   (lang)                    optional; default --lang, else zh when the
                                         text has CJK ideographs, otherwise en
    speaker    (spk, speaker_id)         optional; default: one per utterance
    split                                optional; default --split-name (train)

Labels are mapped with ``--label-map FILE`` (YAML ``label: tag`` or TSV
``label<TAB>tag``; null/``-`` = no counterpart) or, without it, must already
be challenge tags (identity). In both cases the spellings listed under
``challenge_aliases`` in conf/nvv_tags.yaml are accepted: ``[throatclearing]``
-> ``[throat clearing]``, ``[sniffl]`` -> ``[sniff]`` (counted as aliased),
``[clap]`` has no counterpart (``--unmapped`` decides).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, read_manifest, resolve_audio, safe_name
from .nvv_text import BRACKET_LABEL_RE, TagMapper, load_label_map
from pyutils.langscript import language_problem
from pyutils.safe_paths import name_problem

from .prep import Options, Utt, bad_row, norm_lang, write_splits


COLUMNS = frozenset({"audio", "wav", "path", "audio_path", "text", "transcript", "txt", "utt_id", "id", "key",
                     "language", "lang", "speaker", "spk", "speaker_id", "split"})   # the names above


def guess_language(text: str) -> str:
    """zh when the text holds CJK ideographs, else en (only without --lang)."""
    return "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            label_map: Optional[str] = None, lang: Optional[str] = None,
            split_name: str = "train") -> List[dict]:
    manifest = Path(src)
    if not manifest.is_file():
        raise PrepError(f"{manifest}: the generic adapter takes a manifest file as --src")
    if lang is not None and language_problem(norm_lang(lang)):
        raise PrepError(f"--lang {lang!r} {language_problem(norm_lang(lang))}")
    table = load_label_map(label_map) if label_map else None
    mapper = TagMapper("challenge", opts.unmapped, opts.unknown, table, label_map)
    by_split: Dict[str, List[Utt]] = {}
    for row in read_manifest(manifest):
        unknown = sorted(k for k in row.data if str(k) not in COLUMNS)
        if unknown:   # a misspelt or foreign column is never ignored (its values would be lost)
            raise row.error(f"unknown column(s) {', '.join(repr(k) for k in unknown)}; a generic manifest has "
                            f"{', '.join(sorted(COLUMNS))} (pyutils/corpora/generic.py)")
        split = str(row.get("split") or split_name)
        if name_problem(split):  # the split names a folder under --out
            raise row.error(f"split {split!r} {name_problem(split)}: it must be a plain folder name")
        try:
            audio = row.text("audio", "wav", "path", "audio_path")
            text = row.text("text", "transcript", "txt")
            utt = row.text("utt_id", "id", "key", required=False) or Path(audio).stem
            spk = row.text("speaker", "spk", "speaker_id", required=False)
            rlang = row.text("language", "lang", required=False)
            for what, value in (("utt_id", utt), ("speaker", spk)):
                if value is not None and name_problem(value):  # never renamed behind the user's back
                    raise row.error(f"{what} {value!r} {name_problem(value)}: it names files downstream")
            if rlang is not None and language_problem(norm_lang(rlang)):
                raise row.error(f"language {rlang!r} {language_problem(norm_lang(rlang))}")
        except PrepError as exc:
            bad_row(opts, exc, split)
            continue
        by_split.setdefault(split, []).append(Utt(
            safe_name(utt), resolve_audio(audio, manifest.parent), row,
            safe_name(spk) if spk else None, rlang or lang or guess_language(text), text))
    if not by_split and not opts.skipped:
        raise PrepError("the manifest has no rows (it is empty, or holds a header only)", manifest)
    return write_splits("generic", by_split, opts, mapper, lambda t, r: mapper.convert(t, BRACKET_LABEL_RE, r),
                        splits)
