"""SMIIP-NV (Mandarin, 37 speakers, laughter/crying/cough + 5 emotions).

Layout (as published)::

    ROOT/<speaker>/<emotion>/annotation.txt
    ROOT/<speaker>/<emotion>/<speaker>_<nnnn>.wav

(folder structure as on the HF cards xunyi/SMIIP-NV and
xunyi/SMIIP-NV_finetune_CosyVoice2.) ``annotation.txt``: one clip per line,
``<wav name or id><TAB><text>`` (a ``|`` or the first run of spaces also
separates; further TAB columns are ignored). Text carries ``<laughter>``,
``<crying>``, ``<cough>`` and emotion tokens that open and close a span,
``<|emo_HAPPY|>...</|emo_HAPPY|>``; every such token, opening or closing, is
stripped (the emotion goes to ``utt2emotion``, falling back to the folder
name), and any ``<|`` / ``|>`` left over fails the Track 1 check.

There is no official split: all speakers go to ``train`` unless
``--dev-speakers``/``--test-speakers`` (comma lists) move some out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .common import PrepError, Row, safe_name
from .nvv_text import TagMapper
from .prep import Options, Utt, bad_row, write_splits

# <|emo_HAPPY|>, its closing </|emo_HAPPY|> (also <|/emo_HAPPY|>, <|emo_HAPPY|/>)
SPECIAL_RE = re.compile(r"</?\|/?([^|<>/]*)/?\|/?>")
ANGLE_LABEL_RE = re.compile(r"<\s*([^<>|]+?)\s*>")
EMO_RE = re.compile(r"^(?:emo_)?([A-Za-z]+)$")


def _split_line(line: str):
    if "\t" in line:
        parts = line.split("\t")
        return parts[0].strip(), parts[1]
    if "|" in line.split("<", 1)[0]:
        name, text = line.split("|", 1)
        return name.strip(), text
    parts = line.strip().split(None, 1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def read_annotation(path: Path, opts: Optional[Options] = None, split: str = "train"):
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            name, text = _split_line(line.rstrip("\n"))
            if not text.strip():
                exc = PrepError("expected '<wav name><TAB><text>'", path, lineno)
                if opts is None:
                    raise exc
                bad_row(opts, exc, split)
                continue
            yield Row({"name": name, "text": text}, str(path), lineno)


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None,
            dev_speakers: Sequence[str] = (), test_speakers: Sequence[str] = ()) -> List[dict]:
    root = Path(src)
    anns = sorted(root.glob("*/*/annotation.txt"))
    if not anns:
        raise PrepError(f"{root}: no <speaker>/<emotion>/annotation.txt files")
    mapper = TagMapper("smiip_nv", opts.unmapped, opts.unknown)
    by_split: Dict[str, List[Utt]] = {}
    for ann in anns:
        spk, emotion_dir = ann.parent.parent.name, ann.parent.name
        split = "test" if spk in test_speakers else "dev" if spk in dev_speakers else "train"
        for row in read_annotation(ann, opts, split):
            name = row.data["name"]
            stem = name[:-4] if name.lower().endswith(".wav") else name
            emotion = emotion_dir
            for tok in SPECIAL_RE.findall(row.data["text"]):
                m = EMO_RE.match(tok)
                if tok.lower().startswith("emo_") and m:
                    emotion = m.group(1)
            utt = Utt(safe_name(stem), (ann.parent / f"{safe_name(stem)}.wav").resolve(), row, spk, "zh",
                      row.data["text"], {"utt2emotion": emotion.lower()})
            by_split.setdefault(split, []).append(utt)

    def convert(text: str, row) -> str:
        text = SPECIAL_RE.sub(" ", text)
        return mapper.convert(text, ANGLE_LABEL_RE, row)

    return write_splits("smiip_nv", by_split, opts, mapper, convert, splits)
