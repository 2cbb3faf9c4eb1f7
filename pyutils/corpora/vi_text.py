"""Vietnamese text normaliser for transcripts (written for Chorus; vinorm is
non-commercial, so it is not used).

``normalize_vi(text)``:

1. Unicode NFC (composed tone marks; tone marks are kept);
2. common abbreviations expanded from a small table (case-sensitive,
   whole tokens: ``TP.HCM`` -> ``thành phố hồ chí minh``, ``UBND`` -> ...);
3. numbers read out: integers 0..999 999 999 (years are ordinary numbers:
   ``2024`` -> ``hai nghìn không trăm hai mươi tư``), ``1.000.000`` thousand
   separators, decimal comma ``3,5`` -> ``ba phẩy năm``, ``%`` -> ``phần trăm``,
   units glued to numbers (``5km``); longer digit strings and numbers with a
   leading zero (phone numbers, codes) are read digit by digit;
4. lower-case; punctuation and symbols removed; whitespace collapsed.

Number reading rules (standard Northern reading):
``10`` mười; ``1x`` mười + unit with ``15`` -> mười lăm; tens ``x0`` -> x mươi;
after ``mươi`` the unit 1 is ``mốt``, 4 is ``tư``, 5 is ``lăm``; a hundred
with zero tens reads ``linh`` (``105`` một trăm linh năm); inside a larger
number a group below 100 is read with ``không trăm`` (``1005`` một nghìn
không trăm linh năm).
"""

from __future__ import annotations

import re
import unicodedata
from typing import List

DIGITS = ["không", "một", "hai", "ba", "bốn", "năm", "sáu", "bảy", "tám", "chín"]

# Abbreviation -> reading. Keys are matched case-sensitively as whole tokens.
ABBREVIATIONS = {
    "TP.HCM": "thành phố hồ chí minh",
    "TPHCM": "thành phố hồ chí minh",
    "TP HCM": "thành phố hồ chí minh",
    "HCM": "hồ chí minh",
    "TP.": "thành phố",
    "TP": "thành phố",
    "HN": "hà nội",
    "VN": "việt nam",
    "UBND": "ủy ban nhân dân",
    "HĐND": "hội đồng nhân dân",
    "THPT": "trung học phổ thông",
    "THCS": "trung học cơ sở",
    "ĐH": "đại học",
    "CLB": "câu lạc bộ",
    "HLV": "huấn luyện viên",
    "CSGT": "cảnh sát giao thông",
    "GS.": "giáo sư",
    "PGS.": "phó giáo sư",
    "TS.": "tiến sĩ",
    "ThS.": "thạc sĩ",
    "BS.": "bác sĩ",
    "GS": "giáo sư",
    "PGS": "phó giáo sư",
    "TS": "tiến sĩ",
    "ThS": "thạc sĩ",
    "BS": "bác sĩ",
    "Q.": "quận",
    "P.": "phường",
    "v.v.": "vân vân",
    "v.v": "vân vân",
    "km": "ki lô mét",
    "kg": "ki lô gam",
    "cm": "xen ti mét",
    "mm": "mi li mét",
    "m2": "mét vuông",
    "m²": "mét vuông",
    "%": "phần trăm",
    "đ": "đồng",
    "USD": "đô la mỹ",
    "VNĐ": "việt nam đồng",
    "VND": "việt nam đồng",
}


def _below_100(n: int) -> List[str]:
    tens, unit = divmod(n, 10)
    if tens == 0:
        return [DIGITS[unit]]
    if tens == 1:
        words = ["mười"]
        if unit == 5:
            words.append("lăm")
        elif unit:
            words.append(DIGITS[unit])
        return words
    words = [DIGITS[tens], "mươi"]
    if unit == 1:
        words.append("mốt")
    elif unit == 4:
        words.append("tư")
    elif unit == 5:
        words.append("lăm")
    elif unit:
        words.append(DIGITS[unit])
    return words


def _below_1000(n: int, full: bool) -> List[str]:
    """``full``: a group inside a larger number (reads 'không trăm', 'linh')."""
    hundreds, rest = divmod(n, 100)
    if hundreds == 0 and not full:
        return _below_100(rest)
    words = [DIGITS[hundreds], "trăm"]
    if rest == 0:
        return words
    if rest < 10:
        return words + ["linh", DIGITS[rest]]
    return words + _below_100(rest)


def read_number(n: int) -> str:
    """Vietnamese reading of 0 <= n <= 999 999 999."""
    if n < 0:
        return "âm " + read_number(-n)
    if n >= 10 ** 9:
        return read_digits(str(n))
    if n < 1000:
        return " ".join(_below_1000(n, False))
    groups = []
    for unit_word in ("", "nghìn", "triệu"):
        n, g = divmod(n, 1000)
        groups.append((g, unit_word))
        if n == 0:
            break
    words: List[str] = []
    top = True
    for g, unit_word in reversed(groups):
        if g == 0:
            continue  # an all-zero group is silent ("một triệu không trăm..." is not said)
        words += _below_1000(g, full=not top)
        if unit_word:
            words.append(unit_word)
        top = False
    return " ".join(words)


def read_digits(s: str) -> str:
    return " ".join(DIGITS[int(c)] for c in s if c.isdigit())


_ABBR_RE = re.compile(
    r"(?<![\wÀ-ỹ])(" + "|".join(re.escape(k) for k in sorted(ABBREVIATIONS, key=len, reverse=True))
    + r")(?![\wÀ-ỹ])")
_NUM_RE = re.compile(r"(?<![\d.,])(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d+))?(?![\d])")


def _expand_number(m: re.Match) -> str:
    int_part, frac = m.group(1), m.group(2)
    digits = int_part.replace(".", "")
    if len(digits) > 1 and digits.startswith("0") and "." not in int_part:
        words = read_digits(digits)
    elif len(digits) > 9:
        words = read_digits(digits)
    else:
        words = read_number(int(digits))
    if frac:
        frac_words = read_digits(frac) if frac.startswith("0") or len(frac) > 2 else \
            read_number(int(frac))
        words += " phẩy " + frac_words
    return f" {words} "


def normalize_vi(text: str) -> str:
    t = unicodedata.normalize("NFC", text)
    t = _ABBR_RE.sub(lambda m: f" {ABBREVIATIONS[m.group(1)]} ", t)
    # units glued to a number: "5km" -> "5 km" (then expanded)
    t = re.sub(r"(\d)(km|kg|cm|mm|m2|m²|%|đ)(?![\wÀ-ỹ])",
               lambda m: f"{m.group(1)} {ABBREVIATIONS[m.group(2)]}", t)
    t = _NUM_RE.sub(_expand_number, t)
    t = t.lower()
    t = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in t)
    return " ".join(unicodedata.normalize("NFC", t).split())
