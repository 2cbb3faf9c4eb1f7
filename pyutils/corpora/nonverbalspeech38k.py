"""NonVerbalSpeech-38K (Ye et al. 2025, arXiv 2508.05385; Mandarin and English, 10 NV types).

Layout, as in the GitHub repo ``nonverbalspeech38k/nonverspeech38k`` (its
``dataset_demos/``; a full release in the same layout is read the same way)::

    ROOT/[dataset_demos/]<label>/<label>.txt               one clip a line
    ROOT/[dataset_demos/]<label>/<n>_<label>.wav           the clip of line n
    ROOT/[dataset_demos/]<label>/<n>_<label>_segment.wav   the NV sound alone (not used)

``<label>`` is one of breath, coughing, crying, gasp, laughing, sigh, sniff,
snore, throatclearing, yawn (``conf/nvv_tags.yaml``, mapping
``nonverbalspeech38k``). A line of ``<label>.txt`` is ``n|caption`` or
``n|caption|refined caption`` (the published files have both forms), e.g.::

    2| 这是怎么[gasp]<B>回事？</B> |这是怎么回事[gasp]啊，你了。

Captions carry the NV type inline (``[laughing]``) and may wrap the words
spoken while the NV sound is heard in ``<B>...</B>`` (overlap). The refined
caption is used when the line has one (``--caption original`` takes the
first); the markers are removed and the words kept (``--overlap keep_words``,
the default: the words are spoken; ``drop_utt`` leaves such clips out), and
the number of overlap spans of each clip goes to ``utt2overlap``. Any other
``<...>`` markup left in a transcript fails the Track 1 check
(:func:`pyutils.corpora.nvv_text.track1_problems`). Language: ``zh`` when the
caption holds CJK ideographs, else ``en``; one speaker a clip; every clip in
split ``train`` (``--split-name``). Utterance ids: ``nvs38k_<label>_<n>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from pyutils.io import iter_lines

from .common import PrepError, Row
from .generic import guess_language
from .nvv_text import BRACKET_LABEL_RE, DropUtterance, TagMapper
from .prep import Options, Utt, bad_row, write_splits

CORPUS = "nonverbalspeech38k"
OVERLAP_RE = re.compile(r"<B>(.*?)</B>", re.DOTALL)
OVERLAP_POLICIES = ("keep_words", "drop_utt")


def label_files(root: Path) -> List[Path]:
    """The ``<label>/<label>.txt`` files under ``root`` (or under ``root/dataset_demos``)."""
    base = root / "dataset_demos" if (root / "dataset_demos").is_dir() else root
    return sorted(p for p in base.glob("*/*.txt") if p.stem == p.parent.name)


def read_captions(path: Path, prefer: str = "refined"):
    """Rows ``{"n", "caption", "label"}`` of one ``<label>.txt`` (file:line on a malformed line)."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) not in (2, 3) or not cells[0].strip().isdigit():
            raise PrepError(f"expected 'n|caption' or 'n|caption|refined caption', got {len(cells)} "
                            f"field(s) starting {cells[0][:20]!r}", path, lineno)
        caption = cells[2] if len(cells) == 3 and prefer == "refined" and cells[2].strip() else cells[1]
        yield Row({"n": int(cells[0]), "caption": caption.strip(), "label": path.stem}, str(path), lineno)


def remove_overlap_marks(text: str) -> tuple:
    """``(text without <B>/</B>, number of <B>...</B> spans)``; the enclosed words stay."""
    n = len(OVERLAP_RE.findall(text))
    return " ".join(OVERLAP_RE.sub(r" \1 ", text).split()), n


def prepare(src: Path, opts: Options, splits: Optional[Sequence[str]] = None, caption: str = "refined",
            overlap: str = "keep_words", split_name: str = "train") -> List[dict]:
    if overlap not in OVERLAP_POLICIES:
        raise ValueError(f"--overlap must be one of {OVERLAP_POLICIES}")
    root = Path(src)
    files = label_files(root)
    if not files:
        raise PrepError(f"{root}: no <label>/<label>.txt caption files (nor under dataset_demos/)")
    mapper = TagMapper(CORPUS, opts.unmapped, opts.unknown)
    utts: List[Utt] = []
    for path in files:
        try:
            rows = list(read_captions(path, caption))
        except PrepError as exc:
            bad_row(opts, exc, split_name)
            continue
        for row in rows:
            label, n = row.data["label"], row.data["n"]
            text, spans = remove_overlap_marks(row.data["caption"])
            utts.append(Utt(f"nvs38k_{label}_{n}", path.parent / f"{n}_{label}.wav", row, None,
                            guess_language(text), text, {"utt2overlap": str(spans)}))

    def convert(text: str, row: Optional[Row]) -> str:
        if overlap == "drop_utt" and row is not None and OVERLAP_RE.search(row.data["caption"]):
            raise DropUtterance("words overlapped by the NV sound (<B>...</B>)")
        return mapper.convert(text, BRACKET_LABEL_RE, row)

    by_split: Dict[str, List[Utt]] = {split_name: utts} if utts else {}
    return write_splits(CORPUS, by_split, opts, mapper, convert, splits)
