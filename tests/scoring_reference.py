"""A plain, unoptimised implementation of the Track 1 protocol v1.0.0.

Written directly from the protocol text (full DP matrices, no band, no fast
paths, no rapidfuzz) so that tests and ``benchmarks/bench_track1.py`` can check
that :mod:`pyutils.scoring.track1` gives identical numbers. Inputs are assumed
valid (the optimised scorer does the validation).
"""

from __future__ import annotations

import re
import unicodedata

from pyutils.tags import challenge_tags

TAGS = tuple(challenge_tags())  # the 16 challenge tags (conf/nvv_tags.yaml)
COLLAR = {"en": 2, "zh": 5}
_TAG = re.compile(r"\[([^\[\]]*)\]")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOS = {"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'", "\uff07": "'"}


def _ignored(ch, keep_apostrophe):
    if keep_apostrophe and ch == "'":
        return False
    return ch.isspace() or unicodedata.category(ch)[0] in "PSZC"


def _units(seg, lang):
    seg = unicodedata.normalize("NFKC", seg)
    seg = "".join(_APOS.get(c, c) for c in seg).lower()
    if lang == "en":
        return _WORD.findall("".join(" " if _ignored(c, True) else c for c in seg))
    return [c for c in seg if not _ignored(c, False)]


def parse(text, lang):
    """-> (lexical units, tagged tokens, events [(tag, position, order)])."""
    lex, tagged, events = [], [], []
    pos = 0
    for m in _TAG.finditer(text):
        u = _units(text[pos:m.start()], lang)
        lex += u
        tagged += u
        tag = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", m.group(1)).lower()).strip()
        assert tag in TAGS, tag
        events.append((tag, len(lex), len(events)))
        tagged.append("[" + tag + "]")
        pos = m.end()
    u = _units(text[pos:], lang)
    return lex + u, tagged + u, events


def levenshtein(a, b):
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d


def boundary_map(ref, hyp):
    n, m = len(ref), len(hyp)
    d = levenshtein(ref, hyp)
    path = []
    i, j = n, m
    while i or j:
        if i and j and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            i, j = i - 1, j - 1
        elif i and d[i][j] == d[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
        path.append((i, j))
    path.reverse()
    path.append((n, m))
    visits = [[] for _ in range(m + 1)]
    for i, j in path:
        visits[j].append(i)
    return [min(v) for v in visits]


def f1_matches(refs, preds, collar):
    refs = sorted(refs, key=lambda e: (e[1], e[2]))
    preds = sorted(preds, key=lambda e: (e[1], e[2]))
    n, m = len(refs), len(preds)
    # (matches, cost); ties: match > skip ref > skip pred
    best = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            opts = [(best[i - 1][j], 2), (best[i][j - 1], 1)]
            dist = abs(refs[i - 1][1] - preds[j - 1][1])
            if dist <= collar:
                c = best[i - 1][j - 1]
                opts.append(((c[0] + 1, c[1] + dist), 3))
            opts.sort(key=lambda o: (-o[0][0], o[0][1], -o[1]))
            best[i][j] = opts[0][0]
    return best[n][m][0]


def mntd(refs, preds, length):
    refs = sorted(refs, key=lambda e: (e[1], e[2]))
    preds = sorted(preds, key=lambda e: (e[1], e[2]))
    n, m = len(refs), len(preds)
    L = max(length, 1)
    c = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        c[i][0] = float(i)
    for j in range(1, m + 1):
        c[0][j] = float(j)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            g, p = refs[i - 1], preds[j - 1]
            pair = min(abs(g[1] - p[1]) / L, 1.0) if g[0] == p[0] else 1.0
            cands = [(c[i - 1][j] + 1.0, 2), (c[i][j - 1] + 1.0, 1), (c[i - 1][j - 1] + pair, 3)]
            b = cands[0]
            for x in cands[1:]:
                if x[0] < b[0] - 1e-12 or (abs(x[0] - b[0]) <= 1e-12 and x[1] > b[1]):
                    b = x
            c[i][j] = b[0]
    return max(0.0, min(1.0, c[n][m] / max(n, m)))


def score_language(pairs, lang):
    """pairs: [(ref_text, hyp_text)] sorted by utt_id -> dict of metrics."""
    tp = fp = fn = edits = ntok = 0
    mntds = []
    for ref_text, hyp_text in pairs:
        rl, rt, re_ = parse(ref_text, lang)
        hl, ht, he = parse(hyp_text, lang)
        bmap = boundary_map(rl, hl)
        mapped = [(t, bmap[p], o) for t, p, o in he]
        edits += levenshtein(rt, ht)[len(rt)][len(ht)]
        ntok += len(rt)
        k = 0
        for tag in TAGS:
            k += f1_matches([e for e in re_ if e[0] == tag], [e for e in mapped if e[0] == tag], COLLAR[lang])
        tp += k
        fp += len(mapped) - k
        fn += len(re_) - k
        if re_:
            mntds.append(mntd(re_, mapped, len(rl)))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    m = sum(mntds) / len(mntds) if mntds else 0.0
    err = edits / ntok
    score = round(max(0.0, min(100.0, 100.0 * (0.70 * f1 + 0.20 * (1.0 - m) + 0.10 * (1.0 - min(err, 1.0))))), 12)
    return {"F1_micro": f1, "precision": p, "recall": r, "mNTD": m, "tagged_transcript_error": err,
            "Track1Score": score, "tp": tp, "fp": fp, "fn": fn}


def score(ref_rows, hyp_rows):
    hyp = {r["utt_id"].strip(): r["text_with_nvvs"] for r in hyp_rows}
    out = {}
    for lang in ("en", "zh"):
        rows = sorted((r for r in ref_rows if r["language"].strip().lower() == lang), key=lambda r: r["utt_id"].strip())
        if rows:
            out[lang] = score_language([(r["text_with_nvvs"], hyp[r["utt_id"].strip()]) for r in rows], lang)
    if len(out) == 2:
        out["FinalTrack1Score"] = round((out["en"]["Track1Score"] + out["zh"]["Track1Score"]) / 2.0, 12)
    else:
        out["FinalTrack1Score"] = next(iter(out.values()))["Track1Score"]
    return out


# --------------------------------------------------------------------------- random data
EN_WORDS = ("that", "was", "really", "surprising", "i'm", "don\u2019t", "3pm", "ok", "we", "go", "home",
            "the", "a", "cat", "sat", "on", "mat", "2026", "hello", "world", "it's", "you", "know")
ZH_CHARS = "你好世界我们今天去学校吃饭了吗是的不对很高兴认识"
EN_PUNCT = (",", ".", "!", "?", " -", ";", "\u2026")
ZH_PUNCT = ("，", "。", "！", "？", "、", "“", "”")
TAG_SPELLINGS = {"throat clearing": ("throat clearing", "Throat  Clearing", "throat\u3000clearing")}


def _tag_text(rng, tag):
    spellings = TAG_SPELLINGS.get(tag, (tag, tag.upper(), " " + tag + " ", tag.capitalize()))
    return "[" + rng.choice(spellings) + "]"


def random_utterance(rng, lang, tag_rate=0.15):
    """-> list of items: ('w', unit) or ('t', tag)."""
    n = rng.randint(0, 25 if lang == "en" else 40)
    items = []
    for _ in range(n):
        if rng.random() < tag_rate:
            items.append(("t", rng.choice(TAGS)))
        items.append(("w", rng.choice(EN_WORDS) if lang == "en" else rng.choice(ZH_CHARS)))
    if rng.random() < 0.2:
        items.append(("t", rng.choice(TAGS)))
    return items


def perturb(rng, items, lang, rate):
    out = []
    for kind, val in items:
        r = rng.random()
        if r < rate:  # drop
            continue
        if r < 2 * rate:  # substitute
            val = rng.choice(TAGS) if kind == "t" else (rng.choice(EN_WORDS) if lang == "en" else rng.choice(ZH_CHARS))
        out.append((kind, val))
        if rng.random() < rate:  # insert
            out.append(("t", rng.choice(TAGS)) if rng.random() < 0.3 else
                       ("w", rng.choice(EN_WORDS) if lang == "en" else rng.choice(ZH_CHARS)))
    # move a tag by a few positions
    if out and rng.random() < 3 * rate:
        k = rng.randrange(len(out))
        if out[k][0] == "t":
            item = out.pop(k)
            out.insert(max(0, min(len(out), k + rng.randint(-3, 3))), item)
    return out


def render(rng, items, lang):
    parts = []
    for kind, val in items:
        if kind == "t":
            parts.append(_tag_text(rng, val))
        else:
            parts.append(val)
            if rng.random() < 0.15:
                parts.append(rng.choice(EN_PUNCT if lang == "en" else ZH_PUNCT))
    return (" " if lang == "en" else "").join(parts)


def generate(n_utts, seed=0, rate=0.08):
    """Random bilingual (ref_rows, hyp_rows) with realistic recognition errors."""
    import random
    rng = random.Random(seed)
    refs, hyps = [], []
    for k in range(n_utts):
        lang = "en" if k % 2 == 0 else "zh"
        items = random_utterance(rng, lang)
        utt = f"utt{k:06d}"
        refs.append({"utt_id": utt, "language": lang, "text_with_nvvs": render(rng, items, lang)})
        hyps.append({"utt_id": utt, "text_with_nvvs": render(rng, perturb(rng, items, lang, rate), lang)})
    return refs, hyps
