"""Compositional sentence pools over small vocabularies, for any language.

The recipes train in minutes on two CPU cores and are scored on sentences
that are *not* in the training split.  So sentences are built from a few
templates over a limited vocabulary (≈300 English words, ≈400 Chinese
characters, ≈300 Vietnamese syllables): an unseen test sentence is a new
combination of words the model has heard many times.

:func:`sentence_pool` draws unique sentences deterministically from a seed;
:func:`split_pool` cuts one pool into disjoint train/dev/test lists.

Other languages (any that espeak-ng speaks and Unicode CLDR describes, see
:mod:`pyutils.synth.langs`) use the same idea with CLDR material instead of a
hand-written grammar: a time phrase, a place or a list of two or three things,
joined by the language's own list pattern (``gestern, Hund und Katze.``,
``フランス、イヌ、バナナ。``). These are phrases rather than grammatical
sentences, but every word is the language's own, in its own script, and an
unseen test phrase is again a new combination of words heard in training.
"""

from __future__ import annotations

import unicodedata
from typing import Dict, List, Sequence

import numpy as np

# --------------------------------------------------------------------- English
_EN = {
    "subj": ["I", "we", "you", "they", "my sister", "my brother", "the teacher",
             "our neighbor", "the doctor", "my friend", "the old man", "the driver",
             "his mother", "her father", "the children", "the students", "the farmer",
             "the manager", "my uncle", "your cousin", "the baker", "the nurse"],
    "verb_past": ["found", "bought", "painted", "cleaned", "carried", "opened", "sold",
                  "washed", "moved", "fixed", "watched", "dropped", "borrowed", "lost",
                  "cooked", "ordered", "checked", "counted", "packed", "picked up"],
    "verb": ["find", "buy", "paint", "clean", "carry", "open", "sell", "wash", "move",
             "fix", "watch", "borrow", "cook", "order", "check", "pack", "visit", "keep"],
    "adj": ["red", "green", "blue", "small", "large", "heavy", "quiet", "old", "new",
            "warm", "cold", "bright", "dark", "strange", "simple", "broken", "clean",
            "wooden", "yellow", "empty", "little", "famous"],
    "noun": ["box", "table", "window", "bicycle", "garden", "letter", "basket", "chair",
             "lamp", "kettle", "jacket", "boat", "ticket", "camera", "blanket", "bottle",
             "picture", "radio", "carpet", "bucket", "pencil", "umbrella", "wallet",
             "guitar", "map", "kitchen", "cake", "bread", "apple", "orange"],
    "place": ["in the kitchen", "near the river", "at the station", "behind the house",
              "in the market", "on the bridge", "at the office", "in the park",
              "by the window", "at school", "in the village", "on the train"],
    "time": ["yesterday", "this morning", "last night", "on monday", "after lunch",
             "before dinner", "last week", "at noon", "today", "on sunday",
             "in the evening", "early today"],
    "future": ["tomorrow", "next week", "tonight", "on friday", "after dinner",
               "this weekend", "later today", "next month"],
    "feel": ["surprising", "funny", "strange", "sad", "lovely", "awful", "exciting",
             "boring", "wonderful", "terrible", "scary", "nice"],
    "adv": ["really", "quite", "very", "so", "rather", "truly"],
    "opinion": ["I think", "I guess", "maybe", "honestly", "well", "you know"],
    "num": ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "twelve", "twenty"],
}

_EN_TEMPLATES = [
    "{subj} {verb_past} the {adj} {noun} {place}.",
    "{subj} {verb_past} a {noun} {time}.",
    "{subj} will {verb} the {adj} {noun} {future}.",
    "That was {adv} {feel}.",
    "{opinion}, the {noun} was {adv} {feel}.",
    "Did {subj} {verb} the {noun} {time}?",
    "{subj} {verb_past} {num} {noun}s {place}.",
    "We should {verb} the {adj} {noun} {future}.",
    "{opinion}, {subj} {verb_past} the {noun} {time}.",
    "The {adj} {noun} is {place}.",
    "It was {adv} {feel} when {subj} {verb_past} the {noun}.",
    "Please {verb} the {adj} {noun} {place}.",
]

# --------------------------------------------------------------------- Chinese
_ZH = {
    "subj": ["我", "我们", "你", "他们", "妹妹", "哥哥", "老师", "邻居", "医生", "朋友",
             "爷爷", "奶奶", "司机", "妈妈", "爸爸", "学生们", "小王", "小李", "经理",
             "叔叔", "阿姨", "同学"],
    "time": ["今天", "昨天", "明天", "早上", "晚上", "下午", "上个星期", "周末",
             "刚才", "中午", "去年", "每天"],
    "place": ["在家里", "在公园", "在学校", "在车站", "在商店", "在河边", "在办公室",
              "在厨房", "在楼下", "在花园里", "在图书馆", "在饭馆"],
    "verb": ["买了", "看了", "做了", "洗了", "找到了", "带来了", "送给我", "拿走了",
             "修好了", "卖了", "画了", "喝了", "吃了", "打开了", "准备了", "借了"],
    "obj": ["一本书", "两个苹果", "一杯茶", "三张票", "一辆自行车", "一把雨伞",
            "新衣服", "一封信", "一些水果", "一台电脑", "一个蛋糕", "两瓶牛奶",
            "一张地图", "一只小狗", "很多花", "一顶帽子", "一双鞋", "一碗面条",
            "一块手表", "几张照片", "一个包子", "一条鱼"],
    "adj": ["真好", "很奇怪", "太有意思了", "非常难过", "特别高兴", "有点累",
            "很好笑", "真可怕", "太热了", "很舒服", "非常安静", "有点冷"],
    "topic": ["这件事", "那个电影", "今天的天气", "他的故事", "这次考试",
              "我们的旅行", "这首歌", "那家饭馆", "这个问题", "昨天的比赛"],
    "want": ["想去", "要去", "喜欢去", "打算去", "准备去"],
    "dest": ["北京", "上海", "海边", "山上", "学校", "医院", "商店", "朋友家",
             "图书馆", "公园", "火车站", "农村"],
    "mood": ["我觉得", "说实话", "其实", "你知道吗", "好像", "听说"],
}

_ZH_TEMPLATES = [
    "{subj}{time}{place}{verb}{obj}。",
    "{topic}{adj}。",
    "{mood}{topic}{adj}。",
    "{subj}{time}{want}{dest}。",
    "{subj}{place}{verb}{obj}吗？",
    "{mood}{subj}{time}{verb}{obj}。",
    "{time}{subj}{want}{dest}看看。",
    "{subj}说{topic}{adj}。",
]

# ------------------------------------------------------------------ Vietnamese
_VI = {
    "subj": ["tôi", "chúng tôi", "bạn", "họ", "em gái tôi", "anh trai tôi", "cô giáo",
             "hàng xóm", "bác sĩ", "bạn tôi", "ông nội", "bà ngoại", "người lái xe",
             "mẹ tôi", "bố tôi", "các em học sinh", "chị Lan", "anh Nam"],
    "verb": ["mua", "xem", "làm", "rửa", "tìm thấy", "mang", "bán", "sửa", "vẽ",
             "uống", "ăn", "mở", "chuẩn bị", "mượn", "cất", "nấu"],
    "obj": ["một quyển sách", "hai quả táo", "một tách trà", "ba vé tàu",
            "một chiếc xe đạp", "một cái ô", "áo mới", "một lá thư", "ít hoa quả",
            "một cái máy tính", "một cái bánh", "hai chai sữa", "một tấm bản đồ",
            "một con chó nhỏ", "nhiều hoa", "một cái mũ", "một đôi giày",
            "một bát phở", "một bức ảnh", "một con cá"],
    "time": ["hôm nay", "hôm qua", "ngày mai", "sáng nay", "tối qua", "buổi chiều",
             "tuần trước", "cuối tuần", "lúc trưa", "năm ngoái", "mỗi ngày"],
    "place": ["ở nhà", "ở công viên", "ở trường", "ở nhà ga", "ở chợ", "bên bờ sông",
              "ở văn phòng", "trong bếp", "dưới nhà", "trong vườn", "ở thư viện",
              "ở quán ăn"],
    "topic": ["chuyện này", "bộ phim đó", "thời tiết hôm nay", "câu chuyện của anh ấy",
              "kỳ thi này", "chuyến đi của chúng tôi", "bài hát này", "quán ăn đó",
              "vấn đề này", "trận đấu hôm qua"],
    "adj": ["rất hay", "hơi lạ", "thật thú vị", "rất buồn", "rất vui", "hơi mệt",
            "rất buồn cười", "thật đáng sợ", "nóng quá", "rất dễ chịu", "rất yên tĩnh",
            "hơi lạnh"],
    "want": ["muốn đi", "sẽ đi", "thích đi", "định đi"],
    "dest": ["Hà Nội", "Sài Gòn", "biển", "núi", "trường học", "bệnh viện", "siêu thị",
             "nhà bạn", "thư viện", "công viên", "nhà ga", "quê"],
    "mood": ["tôi nghĩ", "nói thật", "thật ra", "bạn biết không", "hình như", "nghe nói"],
}

_VI_TEMPLATES = [
    "{subj} {verb} {obj} {place} {time}.",
    "{topic} {adj}.",
    "{mood} {topic} {adj}.",
    "{subj} {want} {dest} {time}.",
    "{time} {subj} {verb} {obj} {place}.",
    "{mood} {subj} {verb} {obj} {time}.",
    "{subj} nói {topic} {adj}.",
]

_GRAMMARS = {"en": (_EN, _EN_TEMPLATES), "zh": (_ZH, _ZH_TEMPLATES),
             "vi": (_VI, _VI_TEMPLATES)}


# ----------------------------------------------------------- other languages
# Templates over CLDR slots: T time phrase, P place, N thing; LIST(x, k) = k distinct
# items joined by the list pattern; "," is the language's own separator.
_CLDR_TEMPLATES = [
    ("T", ",", ("N", 2)),
    (("N", 3),),
    ("T", ",", ("P", 2)),
    ("P", ",", ("N", 2)),
    (("N", 2), ",", "T"),
    ("P", ",", "T", ",", "N"),
]
_SLOT = {"T": "time", "P": "place", "N": "noun"}


def _cldr_grammar(lang: str) -> dict:
    from pyutils.synth.langs import cldr_vocabulary

    v = cldr_vocabulary(lang)
    sep = v["pattern"]["start"].replace("{0}", "").replace("{1}", "")
    templates = [t for t in _CLDR_TEMPLATES
                 if all(len(v[_SLOT[p if isinstance(p, str) else p[0]]]) >= (1 if isinstance(p, str) else p[1])
                        for p in t if p != ",")]
    return {"vocab": v, "sep": sep, "templates": templates}


def _cldr_fill(g: dict, rng: np.random.Generator) -> str:
    from pyutils.synth.cldr_text import format_list

    v = g["vocab"]
    t = g["templates"][rng.integers(len(g["templates"]))]
    out = ""
    for part in t:
        if part == ",":
            out += g["sep"]
        elif isinstance(part, str):
            items = v[_SLOT[part]]
            out += items[rng.integers(len(items))]
        else:
            items = v[_SLOT[part[0]]]
            pick = rng.choice(len(items), size=part[1], replace=False)
            out += format_list([items[i] for i in pick], v["pattern"])
    out = out.strip() + v["stop"]
    if out[:1].islower():
        out = out[0].upper() + out[1:]
    return unicodedata.normalize("NFC", out)


def _lang_seed(lang: str) -> int:
    if lang in _GRAMMARS:
        return 1000 + sorted(_GRAMMARS).index(lang)
    import zlib

    return 2000 + zlib.crc32(lang.encode()) % 100000


def _fill(template: str, slots: Dict[str, Sequence[str]], rng: np.random.Generator) -> str:
    import string

    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    values = {f: slots[f][rng.integers(len(slots[f]))] for f in fields}
    s = template.format(**values)
    if s[:1].isalpha():
        s = s[0].upper() + s[1:]
    return unicodedata.normalize("NFC", s)


def vocabulary(lang: str) -> set:
    """All words (en, vi: whitespace tokens, lower-case) or characters (zh) the grammar can emit."""
    if lang not in _GRAMMARS:
        from pyutils.asr.text_norm import char_units, normalise

        v = _cldr_grammar(lang)["vocab"]
        glue = [p.replace("{0}", " ").replace("{1}", " ") for p in v["pattern"].values()]
        text = normalise(" ".join(v["time"] + v["place"] + v["noun"] + glue), lang)
        return {c for c in text if not c.isspace()} if char_units(lang) else set(text.split())
    slots, templates = _GRAMMARS[lang]
    text = " ".join(" ".join(v) for v in slots.values()) + " " + " ".join(templates)
    if lang == "zh":
        return {c for c in text if "\u4e00" <= c <= "\u9fff"}
    import re

    if lang == "en":
        text += " an boxes"                       # forms _en_agree makes
    return {w for w in re.findall(r"[^\W\d_]+", text.lower()) if w}


def _en_agree(s: str) -> str:
    """English agreement the templates cannot express: "a" -> "an" before a vowel letter
    ("an umbrella"), "boxs" -> "boxes". (American spelling throughout: the voices are en-US.)"""
    import re

    s = re.sub(r"\b([Aa]) (?=[aeiouAEIOU])", r"\1n ", s)
    return re.sub(r"\bboxs\b", "boxes", s)


def sentence_pool(lang: str, n: int, seed: int) -> List[str]:
    """``n`` distinct sentences of ``lang`` drawn deterministically from ``seed``."""
    if lang in _GRAMMARS:
        slots, templates = _GRAMMARS[lang]
        fix = _en_agree if lang == "en" else (lambda s: s)
        draw = lambda: fix(_fill(templates[rng.integers(len(templates))], slots, rng))  # noqa: E731
    else:
        g = _cldr_grammar(lang)       # raises LanguageNotSupported (a ValueError) with what to provide
        draw = lambda: _cldr_fill(g, rng)  # noqa: E731
    rng = np.random.default_rng([seed, _lang_seed(lang)])
    seen: Dict[str, None] = {}
    tries = 0
    while len(seen) < n:
        tries += 1
        if tries > 50 * n + 1000:
            raise ValueError(f"{lang} grammar cannot produce {n} distinct sentences")
        s = draw()
        seen.setdefault(s, None)
    return list(seen)


def split_pool(lang: str, sizes: Dict[str, int], seed: int) -> Dict[str, List[str]]:
    """Disjoint sentence lists per split (``{"train": n, "dev": n, ...}``).

    Training needs fewer distinct sentences than utterances is fine too: each
    split's list has exactly ``sizes[split]`` distinct sentences; no sentence
    occurs in two splits.
    """
    total = sum(sizes.values())
    pool = sentence_pool(lang, total, seed)
    out, i = {}, 0
    for split, k in sizes.items():
        out[split] = pool[i:i + k]
        i += k
    return out


def _is_char_unit_lang(lang: str) -> bool:
    if lang in _GRAMMARS:
        return lang == "zh"
    from pyutils.asr.text_norm import char_units

    return char_units(lang)


def words(sentence: str, lang: str) -> List[str]:
    """Insertion units: whitespace words (en, vi, ...) or characters (zh and other languages
    written without spaces), punctuation attached to the unit before it."""
    if lang != "zh" and _is_char_unit_lang(lang):
        units: List[str] = []
        for ch in sentence:
            if ch.isspace():
                continue
            if units and unicodedata.category(ch)[0] in "PSZC":
                units[-1] += ch
            else:
                units.append(ch)
        return units
    if lang == "zh":
        units: List[str] = []
        for ch in sentence:
            if units and not ("\u4e00" <= ch <= "\u9fff"):
                units[-1] += ch          # punctuation sticks to the previous character
            else:
                units.append(ch)
        return units
    return sentence.split()


def boundaries(sentence: str, lang: str) -> List[int]:
    """Unit positions (as counted by :func:`words`) where an event may go.

    Every boundary for space-delimited languages and zh; for other languages
    written without spaces only the ends and the phrase boundaries (after
    punctuation or a space), so a chunk never starts with a combining vowel
    (Thai) or in the middle of a kana word.
    """
    units = words(sentence, lang)
    if lang == "zh" or not _is_char_unit_lang(lang):
        return list(range(len(units) + 1))
    out = [0]
    rest = sentence.strip()
    for i, u in enumerate(units):
        k = rest.index(u[0])
        pos_after = k + len(u)
        rest = rest[pos_after:]
        if i + 1 < len(units) and (unicodedata.category(u[-1])[0] in "PS" or rest[:1].isspace()):
            out.append(i + 1)
    out.append(len(units))
    return sorted(set(out))
