"""NVVs that Whisper writes as text -> challenge tags with times; the spans leave the text.

Pretrained Whisper does not stay silent on a laugh or a cough: it writes ``Haha``,
``(laughs)``, ``[coughs]``, ``*sigh*``, ``哈哈``, ``（笑）``. :func:`extract` finds such spans in
the recognised words, turns each into an event ``(tag, start, end, score)`` on the audio's
time axis and removes the span from the words, so that the placement step
(:mod:`pyutils.asr.placement`) puts the tag back where the sound was, together with any
detector events.

The rules are conservative: a span becomes a tag only where the spelling names one of the
16 challenge sounds unambiguously. Per language, in priority order:

- *Bracketed annotations* ``(...)``, ``[...]``, ``*...*``, ``（...）``, ``【...】`` of at most
  :data:`MAX_ANNOTATION_WORDS` words: the inside is looked up in :data:`DESCRIPTIONS`
  (English and Mandarin words, any inflection listed there: ``laughs``, ``laughing``,
  ``chuckles``, ``clears throat``, ``笑``, ``咳嗽``, ...). Found: that tag. Not found
  (``[MUSIC]``, ``(applause)``, ``[BLANK_AUDIO]``): removed without a tag (it is not
  speech, and a bracket left in the text would be an invalid tag). A round parenthesis of
  more words is ordinary text and stays.
- *Interjections spelled as words*: English ``haha``, ``hahaha``, ``ha ha``, ``hehe``
  -> laugh; ``ahem`` -> throat clearing; ``achoo``, ``atchoo`` -> sneeze. Mandarin
  ``哈哈``, ``呵呵``, ``嘿嘿``, ``嘻嘻`` (two or more) -> laugh; ``咳咳`` (not in ``咳嗽``)
  -> cough; ``阿嚏``/``啊嚏``/``哈啾`` -> sneeze; ``唉`` standing alone between
  punctuation -> sigh.
- *Left as text* (no challenge counterpart; conf/nvv_tags.yaml maps NV-Bench's ``Uhm``,
  ``Confirmation-en``, ``Question-*``, ``Surprise-*`` and ``Dissatisfaction-hnn`` to
  null): ``um``, ``uh``, ``hmm``, ``mm``, ``oh``, ``ah``, ``huh``, ``wow``, ``phew``, a single
  ``ha``; ``嗯``, ``呃``, ``啊``, ``哦``, ``哎呀``, ``哼``/``哼哼`` (a snort of dissatisfaction
  as often as humming), a single ``哈``.

``keep_text=True`` keeps the interjection spans (``哈哈``, ``haha``) in the text and still
adds their event, as a point at the span's end (bracketed annotations always go): the form of references that write
both, e.g. MNV-17's ``哈哈[laugh]今天真好``.

An event's time: each character of a word gets a time by linear interpolation over
the word's [start, end] (non-space characters equally spaced); the event runs from its
first character's start to its last character's end. Its score is the lowest word
probability among the words it touches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from pyutils.asr.longform import Word
from pyutils.scoring.textnorm import lexical_units

MAX_ANNOTATION_WORDS = 4


@dataclass(frozen=True)
class Event:
    """One NVV event on the audio's time axis (seconds); ``source``: "text" or a detector name."""

    tag: str
    start: float
    end: float
    score: float = 1.0
    source: str = "text"


# Inside of a bracketed annotation (lower-cased, punctuation -> spaces, whitespace collapsed;
# "his"/"her"/"their"/"a" dropped) -> tag. Keys are whole annotations, matched exactly.
_EN = {
    "laugh": "laugh|laughs|laughing|laughter|laughed|chuckle|chuckles|chuckling|giggle|giggles|giggling|"
             "audience laughing|people laughing",
    "cough": "cough|coughs|coughing",
    "sigh": "sigh|sighs|sighing|sighed",
    "sneeze": "sneeze|sneezes|sneezing|achoo",
    "sniff": "sniff|sniffs|sniffing|sniffle|sniffles|sniffling",
    "throat clearing": "clears throat|clearing throat|throat clearing|clear throat|ahem",
    "gasp": "gasp|gasps|gasping",
    "yawn": "yawn|yawns|yawning",
    "snore": "snore|snores|snoring",
    "hum": "hum|hums|humming",
    "moan": "moan|moans|moaning|groan|groans|groaning",
    "hiss": "hiss|hisses|hissing",
    "lipsmack": "lipsmack|lip smack|lip smacking|smacks lips|lips smacking",
    "burp": "burp|burps|burping|belch|belches|belching",
    "breath": "breath|breaths|breathing|breathes|inhales|exhales|breathes in|breathes out|deep breath|"
              "inhale|exhale|panting|pants",
    "cry": "cry|cries|crying|sob|sobs|sobbing|weeping",
}
_ZH = {
    "laugh": "笑 笑声 大笑 微笑 哈哈大笑 笑了 轻笑 偷笑",
    "cough": "咳 咳嗽 咳嗽声",
    "sigh": "叹气 叹息 叹气声",
    "sneeze": "喷嚏 打喷嚏",
    "sniff": "吸鼻子 抽鼻子 吸鼻",
    "throat clearing": "清嗓子 清嗓 清喉咙",
    "gasp": "倒吸一口气 倒吸气 惊呼",
    "yawn": "哈欠 打哈欠 呵欠",
    "snore": "打鼾 鼾声 打呼噜",
    "hum": "哼歌 哼唱 哼曲",
    "moan": "呻吟 呻吟声",
    "hiss": "嘶嘶声",
    "lipsmack": "咂嘴 吧唧嘴",
    "burp": "打嗝 嗝",
    "breath": "呼吸 呼吸声 喘气 喘息 吸气 呼气",
    "cry": "哭 哭声 哭泣 抽泣 啜泣",
}


def _descriptions() -> Dict[str, str]:
    out: Dict[str, str] = {}
    for table, sep in ((_EN, "|"), (_ZH, " ")):
        for tag, phrases in table.items():
            for phrase in phrases.split(sep):
                out[phrase] = tag
    return out


DESCRIPTIONS: Dict[str, str] = _descriptions()
_FILLER = {"his", "her", "their", "a", "the",
           "softly", "loudly", "quietly", "lightly", "nervously", "heavily", "deeply"}

ANNOTATION_RE = re.compile(r"\((?P<a>[^()\[\]]*)\)|\[(?P<b>[^\[\]]*)\]|\*(?P<c>[^*\n]+)\*"
                           r"|（(?P<d>[^（）]*)）|【(?P<e>[^【】]*)】")

INTERJECTIONS: Dict[str, List[Tuple[re.Pattern, str]]] = {
    "en": [
        (re.compile(r"(?<![\w'])(?:ha){2,}h?(?![\w'])|(?<![\w'])ha(?:[\s,.!-]+ha)+(?![\w'])", re.I), "laugh"),
        (re.compile(r"(?<![\w'])he(?:he)+(?![\w'])|(?<![\w'])hee(?:[\s,-]+hee)+(?![\w'])", re.I), "laugh"),
        (re.compile(r"(?<![\w'])a+h+e+m+(?![\w'])", re.I), "throat clearing"),
        (re.compile(r"(?<![\w'])(?:a+h?-?choo+|a+tchoo+)(?![\w'])", re.I), "sneeze"),
    ],
    "zh": [
        (re.compile(r"哈{2,}|呵{2,}|嘿{2,}|嘻{2,}"), "laugh"),
        (re.compile(r"咳{2,}(?!嗽)"), "cough"),
        (re.compile(r"阿嚏|啊嚏|哈啾|阿啾"), "sneeze"),
        (re.compile(r"(?:(?<=^)|(?<=[\s，。！？、,.!?…]))唉+(?=$|[\s，。！？、,.!?…])"), "sigh"),
    ],
}


def annotation_tag(inside: str) -> Optional[str]:
    """The tag a bracketed annotation names (``"clears his throat"`` -> throat clearing), or None."""
    s = re.sub(r"[^\w\u4e00-\u9fff]+", " ", inside.lower()).split()
    key = " ".join(w for w in s if w not in _FILLER)
    if key in DESCRIPTIONS:
        return DESCRIPTIONS[key]
    joined = "".join(s)
    return DESCRIPTIONS.get(joined) if joined and not joined.isascii() else None


def _char_times(words: Sequence[Word]) -> Tuple[str, List[int], List[Tuple[float, float]]]:
    """The joined text, each char's word index, and each char's (start, end) by interpolation."""
    chars, owner, times = [], [], []
    for i, w in enumerate(words):
        n = max(1, sum(not c.isspace() for c in w.text))
        step, k = (w.end - w.start) / n, 0
        for c in w.text:
            chars.append(c)
            owner.append(i)
            t0 = w.start + k * step
            times.append((t0, t0 + step if not c.isspace() else t0))
            k += not c.isspace()
    return "".join(chars), owner, times


def _find_spans(text: str, lang: str) -> List[Tuple[int, int, Optional[str], bool]]:
    """Non-overlapping ``(start, end, tag or None, is_annotation)`` char spans, in text order."""
    spans: List[Tuple[int, int, Optional[str], bool]] = []
    taken = [False] * len(text)
    for m in ANNOTATION_RE.finditer(text):
        inside = next(g for g in m.groups() if g is not None)
        tag = annotation_tag(inside)
        is_round = m.group("a") is not None or m.group("d") is not None
        if tag is None and is_round and len(inside.split()) > MAX_ANNOTATION_WORDS:
            continue  # a real parenthesis: text
        spans.append((m.start(), m.end(), tag, True))
        taken[m.start():m.end()] = [True] * (m.end() - m.start())
    for rx, tag in INTERJECTIONS.get(lang, []):
        for m in rx.finditer(text):
            if m.end() > m.start() and not any(taken[m.start():m.end()]):
                spans.append((m.start(), m.end(), tag, False))
                taken[m.start():m.end()] = [True] * (m.end() - m.start())
    return sorted(spans)


def extract(words: Sequence[Word], lang: str, keep_text: bool = False) -> Tuple[List[Word], List[Event]]:
    """``(words without the NVV spans, events)`` for ``lang`` in en, zh (others: annotations only).

    A word losing all its lexical units is dropped (its punctuation goes with it); a word
    keeping some keeps its time. Stray ``[``/``]`` left in any word are removed.
    """
    if not words:
        return [], []
    text, owner, times = _char_times(words)
    spans = _find_spans(text, lang)
    events: List[Event] = []
    drop = [False] * len(text)
    for a, b, tag, is_annotation in spans:
        core = [k for k in range(a, b) if not text[k].isspace()] or [a]
        if tag is not None:
            touched = {owner[k] for k in core}
            start, end = times[core[0]][0], times[core[-1]][1]
            if keep_text and not is_annotation:
                start = end  # the text stays: the tag goes right after it
            events.append(Event(tag, start, end, min(words[i].prob for i in touched)))
        if is_annotation or not keep_text:
            drop[a:b] = [True] * (b - a)
    out: List[Word] = []
    unit_lang = lang if lang in ("en", "zh") else "en"
    for i, w in enumerate(words):
        kept = "".join(c for c, k, d in zip(text, owner, drop) if k == i and not d)
        kept = kept.replace("[", " ").replace("]", " ")
        if not kept.strip() or not lexical_units(kept, unit_lang):
            continue
        if kept != w.text and w.text[:1].isspace() and not kept[:1].isspace():
            kept = " " + kept
        out.append(replace(w, text=kept.rstrip() if kept.strip() else kept))
    return out, events


def merge_events(text_events: Sequence[Event], detected: Sequence[Event], tolerance: float = 0.5) -> List[Event]:
    """Text events plus the detector's, where they meet (within ``tolerance`` seconds):

    - same tag: the detected event is dropped (the text event's place is exact);
    - another tag: the text event is dropped (the detector is the specialist of the class;
      Whisper writes "(coughs)" for a gasp as readily as for a cough).
    """
    def near(a: Event, b: Event) -> bool:
        return a.start - tolerance <= b.end and b.start - tolerance <= a.end

    text = [t for t in text_events if not any(near(t, d) and d.tag != t.tag for d in detected)]
    kept = [d for d in detected if not any(near(t, d) and d.tag == t.tag for t in text)]
    return sorted(text + kept, key=lambda e: (e.start, e.end, e.tag))
