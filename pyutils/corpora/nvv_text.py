"""Map a corpus's inline NVV labels to the 16 challenge tags.

The mapping itself lives in ``conf/nvv_tags.yaml`` (read through
:func:`pyutils.tags.map_label`); this module applies it to transcripts with an
explicit policy for labels that have no challenge counterpart:

``drop_tag``  (default) remove the label from the text;
``keep_text`` keep the spoken word of the label, without brackets: the part
              after the last ``-`` (``Surprise-oh`` -> ``oh``) or the label
              itself lower-cased (``Uhm`` -> ``uhm``);
``drop_utt``  drop the whole utterance.

A label that the mapping file does not list at all is an error naming the
manifest file and line, unless ``unknown="drop"`` (then it is dropped and
counted). Every decision is counted in :class:`TagStats` for the prep report.

Spacing: a challenge tag is separated from neighbouring words by one space
(``surprising. [laugh]``), but not from CJK characters or closing punctuation
(``今天很开心[laugh]``, ``[laugh], he said``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Pattern

from pyutils import tags as tagmod

from .common import PrepError, Row

UNMAPPED_POLICIES = ("drop_tag", "keep_text", "drop_utt")
UNKNOWN_POLICIES = ("error", "drop")

_CLOSE = set(",.!?;:)]}'\"、，。！？；：）》」』”’…%")
# punctuation left next to each other when a label between them is dropped
_PAUSE = "，,、；;：:"
_FINAL = "。！？.!?…"
_OPEN = set("([{\"'（《「『“‘")


class DropUtterance(Exception):
    """Raised inside text conversion when the utterance must be dropped."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def mapping_key(label: str) -> str:
    """Same key normalisation as conf/nvv_tags.yaml: NFKC, lower-case, '_'/'-'
    and whitespace collapsed to one space."""
    return " ".join(re.sub(r"[_\-]", " ", tagmod.normalize_tag_label(label)).split())


def load_label_map(path: str) -> Dict[str, Optional[str]]:
    """A user label map: YAML ``label: tag`` (null = no counterpart) or a TSV
    ``label<TAB>tag`` file (``-``, empty or ``null`` = no counterpart)."""
    challenge = set(tagmod.challenge_tags())
    table: Dict[str, Optional[str]] = {}
    if path.endswith((".yaml", ".yml")):
        import yaml

        with open(path, encoding="utf-8") as f:
            try:
                data = yaml.safe_load(f) or {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                raise PrepError(f"not valid YAML ({getattr(exc, 'problem', None) or exc})", path,
                                mark.line + 1 if mark is not None else None) from None
        if not isinstance(data, dict):
            raise PrepError("expected a mapping 'label: tag'", path)
        items = [(str(k), None if v is None else str(v), None) for k, v in data.items()]
    else:
        items = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                parts = line.split("\t")
                if len(parts) == 1:
                    parts = line.split(None, 1)
                label = parts[0]
                target = parts[1].strip() if len(parts) > 1 else ""
                items.append((label, None if target in ("", "-", "null", "None") else target,
                              lineno))
    for label, target, lineno in items:
        if target is not None:
            target = tagmod.normalize_tag_label(target)
            if target not in challenge:
                raise PrepError(f"label {label!r} maps to {target!r}, which is not one of the "
                                f"16 challenge tags", path, lineno)
        table[mapping_key(label)] = target
    return table


def spoken_form(label: str) -> str:
    """Word kept by ``keep_text``: ``Surprise-oh`` -> ``oh``, ``Uhm`` -> ``uhm``."""
    norm = tagmod.normalize_tag_label(label)
    if "-" in norm:
        norm = norm.rsplit("-", 1)[1]
    return norm.replace("_", " ").strip()


@dataclass
class TagStats:
    mapped: Counter = field(default_factory=Counter)        # (label, tag) -> n
    dropped: Counter = field(default_factory=Counter)       # label -> n (no counterpart)
    kept_as_text: Counter = field(default_factory=Counter)  # label -> n
    unknown_dropped: Counter = field(default_factory=Counter)
    utt_dropped: Counter = field(default_factory=Counter)   # reason -> n
    aliased: Counter = field(default_factory=Counter)       # (spelling, tag or None) -> n

    def as_dict(self) -> dict:
        return {
            "labels_mapped": sum(self.mapped.values()),
            "labels_aliased": sum(self.aliased.values()),
            "labels_dropped": sum(self.dropped.values()),
            "labels_kept_as_text": sum(self.kept_as_text.values()),
            "labels_unknown_dropped": sum(self.unknown_dropped.values()),
            "label_to_tag": {f"{label} -> {tag}": n for (label, tag), n in sorted(self.mapped.items())},
            "aliases": {f"{label} -> {tag if tag is not None else 'dropped'}": n
                        for (label, tag), n in sorted(self.aliased.items(),
                                                      key=lambda kv: (kv[0][0], str(kv[0][1])))},
            "tags_dropped_no_counterpart": dict(sorted(self.dropped.items())),
            "tags_kept_as_text": dict(sorted(self.kept_as_text.items())),
            "unknown_labels_dropped": dict(sorted(self.unknown_dropped.items())),
            "utterances_dropped": dict(sorted(self.utt_dropped.items())),
        }


class TagMapper:
    """Resolve source labels of one corpus to challenge tags with a policy."""

    def __init__(self, corpus: str, unmapped: str = "drop_tag", unknown: str = "error",
                 label_map: Optional[Dict[str, Optional[str]]] = None,
                 label_map_path: Optional[str] = None):
        if unmapped not in UNMAPPED_POLICIES:
            raise ValueError(f"--unmapped must be one of {UNMAPPED_POLICIES}")
        if unknown not in UNKNOWN_POLICIES:
            raise ValueError(f"--unknown-label must be one of {UNKNOWN_POLICIES}")
        self.corpus = corpus
        self.unmapped = unmapped
        self.unknown = unknown
        self.label_map = label_map
        self.source = label_map_path or f"{tagmod.TAGS_YAML} (mapping: {corpus})"
        self.stats = TagStats()
        self._aliased: Optional[tuple] = None
        if label_map is None:
            tagmod.load_inventory()["mapping"][corpus]  # KeyError early for a typo

    def lookup(self, label: str) -> Optional[str]:
        """Challenge tag for ``label``; None = no counterpart; KeyError = unknown."""
        if self.label_map is not None:
            key = mapping_key(label)
            if key in self.label_map:
                return self.label_map[key]
            # challenge tags themselves are always accepted by a user map
            norm = tagmod.normalize_tag_label(label)
            if norm in tagmod.challenge_tags():
                return norm
            return self._alias(label)
        try:
            return tagmod.map_label(self.corpus, label)
        except KeyError:
            if self.corpus != "challenge":
                raise
            return self._alias(label)

    def _alias(self, label: str) -> Optional[str]:
        """Spellings of challenge tags seen in the organisers' own files
        (conf/nvv_tags.yaml ``challenge_aliases``); KeyError when not one."""
        aliases = challenge_aliases()
        key = mapping_key(label)
        if key not in aliases:
            raise KeyError(label)
        self._aliased = (label, aliases[key])
        return aliases[key]

    def is_known(self, label: str) -> bool:
        try:
            self.lookup(label)
            return True
        except KeyError:
            return False

    def resolve(self, label: str, row: Optional[Row]) -> Optional[str]:
        """Replacement text for one source label (a ``[tag]`` token, a kept word,
        or None to drop it). Raises DropUtterance / PrepError per policy."""
        label = label.strip()
        self._aliased = None
        try:
            tag = self.lookup(label)
        except KeyError:
            if self.unknown == "drop":
                self.stats.unknown_dropped[label] += 1
                return None
            msg = (f"unknown label {label!r}: not in {self.source}; add it there "
                   f"(tag or null) or pass --unknown-label drop")
            raise (row.error(msg) if row is not None else PrepError(msg)) from None
        if self._aliased is not None:
            self.stats.aliased[self._aliased] += 1
        if tag is not None:
            self.stats.mapped[(label, tag)] += 1
            return tagmod.tag_token(tag)
        if self.unmapped == "drop_utt":
            self.stats.dropped[label] += 1
            raise DropUtterance(f"unmapped label {label}")
        if self.unmapped == "keep_text":
            self.stats.kept_as_text[label] += 1
            return spoken_form(label)
        self.stats.dropped[label] += 1
        return None

    def convert(self, text: str, pattern: Pattern, row: Optional[Row] = None,
                label_of: Callable[[re.Match], str] = lambda m: m.group(1),
                only_known: bool = False) -> str:
        """Replace every ``pattern`` match (group 1 = label) in ``text``.

        ``only_known``: leave matches whose label is not in the mapping untouched
        (for ambiguous forms such as ``(...)`` that may be ordinary text).
        """
        pieces: List[Optional[str]] = []  # text, then alternately replacement/text
        last = 0
        for m in pattern.finditer(text):
            label = label_of(m)
            if only_known and not self.is_known(label):
                continue
            pieces.append(text[last:m.start()])
            pieces.append(("R", self.resolve(label, row)))  # type: ignore[arg-type]
            last = m.end()
        pieces.append(text[last:])
        out = pieces[0] or ""
        after_drop = False
        for piece in pieces[1:]:
            if isinstance(piece, tuple):
                if piece[1] is not None:
                    out = glue(out, piece[1])
                else:
                    after_drop = True
            else:
                if after_drop:
                    out, piece = mend_punctuation(out, piece)
                    after_drop = False
                out = glue(out, piece)
        return out


def challenge_aliases() -> Dict[str, Optional[str]]:
    """conf/nvv_tags.yaml ``challenge_aliases`` (key-normalised)."""
    table = tagmod.load_inventory().get("challenge_aliases") or {}
    return {mapping_key(str(k)): (None if v is None else str(v)) for k, v in table.items()}


def mend_punctuation(left: str, right: str):
    """Where a dropped label leaves two punctuation marks side by side
    (``天才，[applaud]。`` -> ``天才，。``), keep the stronger one: a pause mark
    (，,、；:) gives way to what follows, a repeated mark is kept once. A label
    dropped at the start takes the punctuation after it along (``[clap]，好`` ->
    ``好``); one dropped at the end takes a pause mark before it."""
    a, b = left.rstrip(), right.lstrip()
    if a and b and a[-1] in _PAUSE + _FINAL and b[0] in _PAUSE + _FINAL:
        if a[-1] in _PAUSE:
            return a[:-1], right
        return left, b[1:]
    if not a and b and b[0] in _PAUSE + _FINAL:
        return left, b.lstrip(_PAUSE + _FINAL + " ")
    if a and not b and a[-1] in _PAUSE:
        return a[:-1], right
    return left, right


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF
            or 0xFF00 <= o <= 0xFFEF or 0x20000 <= o <= 0x2FA1F or 0x3000 <= o <= 0x303F)


def glue(left: str, right: str) -> str:
    """Concatenate with one space unless a CJK character or punctuation makes
    the boundary obvious."""
    a, b = left.rstrip(), right.lstrip()
    if not a:
        return b
    if not b:
        return a if right == "" or left == left.rstrip() else a + " "
    if is_cjk(a[-1]) or is_cjk(b[0]) or b[0] in _CLOSE or a[-1] in _OPEN:
        sep = ""
    else:
        sep = " "
    return a + sep + b


def tidy(text: str) -> str:
    """NFC, collapse whitespace, strip."""
    return " ".join(unicodedata.normalize("NFC", text).split())


_TAG_RE = re.compile(r"\[([^\[\]]*)\]")


# an HTML-like tag: <B>, </B>, <i>, <br/>, <laughter> (not "a < b")
_MARKUP_RE = re.compile(r"</?[A-Za-z][^<>\s]*\s*/?>")


def track1_problems(text: str) -> List[str]:
    """Reasons why ``text`` breaks the official Track 1 transcript rules:
    every ``[...]`` is exactly one of the 16 tags, no stray bracket, no
    newline/tab, no markup (``<B>``, ``<|...|>``), not empty."""
    problems = []
    if not text.strip():
        problems.append("empty transcript")
    if "\n" in text or "\t" in text or "\r" in text:
        problems.append("newline or tab inside transcript")
    allowed = set(tagmod.challenge_tags())
    for m in _TAG_RE.finditer(text):
        if m.group(1) not in allowed:
            problems.append(f"bracketed {m.group(0)!r} is not a challenge tag")
    rest = _TAG_RE.sub(" ", text)
    if "[" in rest or "]" in rest:
        problems.append("stray bracket")
    if "<|" in text or "|>" in text:
        problems.append("special token <|...|> left in the text")
    for m in _MARKUP_RE.finditer(text):
        problems.append(f"markup {m.group(0)!r} left in the text")
    return problems


def finalize(text: str, row: Optional[Row], stats: TagStats) -> str:
    """Tidy and check a converted transcript. Empty text drops the utterance;
    a rule violation is an error naming the manifest row."""
    text = tidy(text)
    if not text:
        raise DropUtterance("empty text after tag mapping")
    problems = track1_problems(text)
    if problems:
        msg = f"transcript breaks Track 1 rules ({'; '.join(problems)}): {text!r}"
        raise row.error(msg) if row is not None else PrepError(msg)
    return text


BRACKET_LABEL_RE = re.compile(r"\[([^\[\]]+)\]")
