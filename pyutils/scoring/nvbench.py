"""NV-Bench text metrics: CER (and WER), PCER, OCER.

Transcripts are parsed with the Track 1 rules (:mod:`pyutils.scoring.textnorm`)
except that the accepted tag inventory is selectable: ``challenge`` (the 16
challenge tags, default) or ``nvbench`` (NV-Bench labels of the language, from
``conf/nvv_tags.yaml``; compared after the same label normalisation, so
``[Laughter]`` and ``[laughter]`` are the same). With ``map_to_challenge`` the
NV-Bench labels are first mapped to challenge tags by the yaml's
``mapping.nvbench`` table; a label without a counterpart (``null``) is
dropped from the transcript (its text is kept), on both sides alike.

Metrics (edit counts S+D+I from rapidfuzz's Levenshtein, summed over utterances):

- ``CER`` = edits / N over the characters of the text with tags removed,
  after normalisation. zh: the lexical units (characters). en: the words
  joined by single spaces (spaces count, as in the usual CER of English
  text). For en also ``WER`` over words.
- ``PCER`` = (S+D+I) / N_nvv over the sequence of tags alone, in text order.
  ``PCER_micro`` sums edits and N_nvv over utterances; ``PCER_macro`` is the
  mean of the per-utterance rate over utterances with >= 1 reference tag.
- ``OCER`` = (S+D+I) / (N_text + N_nvv) over the tagged token sequence: the
  lexical units (zh characters, en words) with every tag as one atomic token.
  For English this is word-level ("OWER"); the JSON says which unit was used.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from rapidfuzz.distance import Levenshtein

from pyutils.scoring.errors import ScoringError
from pyutils.io import iter_kaldi_text
from pyutils.scoring.io import check_id_sets, iter_jsonl, require_field
from pyutils.scoring.textnorm import LANGUAGES, TAG_RE, normalize_tag_label, parse_tagged
from pyutils.tags import challenge_tags, map_label, nvbench_tags


def _inventory(name: str, lang: str, map_to_challenge: bool) -> frozenset:
    if map_to_challenge or name == "challenge":
        return frozenset(challenge_tags())
    if name == "nvbench":
        return frozenset(normalize_tag_label(t) for t in nvbench_tags(lang))
    raise ValueError(name)


def map_nvbench_text(text: str) -> str:
    """Rewrite NV-Bench labels to challenge tags; unmapped labels are removed.

    Labels the yaml does not list at all are left as they are, so that the
    parser then reports them as UNSUPPORTED_NVV_TAG with the line.
    """
    def repl(m):
        label = m.group(1)
        try:
            tag = map_label("nvbench", label)
        except KeyError:
            norm = normalize_tag_label(label)
            return f"[{norm}]" if norm in challenge_tags() else m.group(0)
        return "" if tag is None else f"[{tag}]"

    return TAG_RE.sub(repl, text)


def _rows(path: str, fmt: str, role: str, lang: Optional[str]) -> Dict[str, Tuple[str, str, int]]:
    """-> {utt_id: (language, text, line)}"""
    out: Dict[str, Tuple[str, str, int]] = {}
    if fmt == "kaldi":
        if lang is None:
            raise ScoringError("MISSING_LANGUAGE", "--lang is required with --format kaldi", path)
        for line, utt, text in list(iter_kaldi_text(path)):
            if utt in out:
                raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt!r}", path, line)
            out[utt] = (lang, text, line)
        if not out:
            raise ScoringError("EMPTY_FILE", "no utterances", path)
        return out
    for line, obj in list(iter_jsonl(path)):
        utt = require_field(obj, "utt_id", path, line, nonempty=True).strip()
        text = require_field(obj, "text_with_nvvs", path, line)
        row_lang = lang
        if role == "ref" and lang is None:
            raw = require_field(obj, "language", path, line)
            row_lang = raw.strip().lower()
            if row_lang not in LANGUAGES:
                raise ScoringError("INVALID_LANGUAGE", f"language must be 'en' or 'zh', got {raw!r}", path, line)
        if utt in out:
            raise ScoringError("DUPLICATE_UTT_ID", f"duplicate utt_id {utt!r}", path, line)
        out[utt] = (row_lang, text, line)
    return out


def _parse(text: str, lang: str, inv: frozenset, mapped: bool, path: str, line: int):
    try:
        return parse_tagged(map_nvbench_text(text) if mapped else text, lang, inv)
    except ScoringError as exc:
        raise exc.located(path, line)


def _rate(num: int, den: int) -> Optional[float]:
    return num / den if den else None


def score_nvbench_maps(refs, hyps, *, ref_path="ref", hyp_path="hyp", inventory="challenge",
                       map_to_challenge=False) -> Dict[str, Any]:
    check_id_sets(refs.keys(), hyps.keys(), hyp_path)
    per_lang: Dict[str, Dict[str, Any]] = {}
    for lang in LANGUAGES:
        ids = sorted(u for u, r in refs.items() if r[0] == lang)
        if not ids:
            continue
        inv = _inventory(inventory, lang, map_to_challenge)
        c = {"char_edits": 0, "chars": 0, "word_edits": 0, "words": 0, "tag_edits": 0, "tags": 0,
             "tagged_edits": 0, "tagged_tokens": 0}
        macro: List[float] = []
        for u in ids:
            _, rtext, rline = refs[u]
            _, htext, hline = hyps[u]
            r = _parse(rtext, lang, inv, map_to_challenge, ref_path, rline)
            h = _parse(htext, lang, inv, map_to_challenge, hyp_path, hline)
            if lang == "en":
                rc, hc = " ".join(r.lexical), " ".join(h.lexical)
                c["word_edits"] += Levenshtein.distance(r.lexical, h.lexical)
                c["words"] += len(r.lexical)
            else:
                rc, hc = "".join(r.lexical), "".join(h.lexical)
            c["char_edits"] += Levenshtein.distance(rc, hc)
            c["chars"] += len(rc)
            rt = [e.tag for e in r.events]
            ht = [e.tag for e in h.events]
            d = Levenshtein.distance(rt, ht)
            c["tag_edits"] += d
            c["tags"] += len(rt)
            if rt:
                macro.append(d / len(rt))
            c["tagged_edits"] += Levenshtein.distance(r.tagged, h.tagged)
            c["tagged_tokens"] += len(r.tagged)
        res = {
            "num_utterances": len(ids),
            "CER": _rate(c["char_edits"], c["chars"]),
            "PCER_micro": _rate(c["tag_edits"], c["tags"]),
            "PCER_macro": sum(macro) / len(macro) if macro else None,
            "PCER_macro_num_utterances": len(macro),
            "OCER": _rate(c["tagged_edits"], c["tagged_tokens"]),
            "OCER_text_unit": "word" if lang == "en" else "character",
            "counts": c,
        }
        if lang == "en":
            res["WER"] = _rate(c["word_edits"], c["words"])
        per_lang[lang] = res
    return {"inventory": "challenge" if map_to_challenge else inventory,
            "mapped_nvbench_to_challenge": bool(map_to_challenge),
            "languages_scored": list(per_lang), **per_lang,
            "definitions": {"CER": "(S+D+I)/N over characters, tags removed",
                            "PCER": "(S+D+I)/N_nvv over the tag sequence; micro = pooled, "
                                    "macro = mean over utterances with >= 1 reference tag",
                            "OCER": "(S+D+I)/(N_text+N_nvv) over lexical units plus atomic tags"}}


def score_nvbench(ref_rows, hyp_rows, *, lang: Optional[str] = None, inventory: str = "challenge",
                  map_to_challenge: bool = False) -> Dict[str, Any]:
    """Python API: rows are dicts like Track 1 rows (language from the ref or ``lang``)."""
    refs, hyps = {}, {}
    for i, r in enumerate(ref_rows, 1):
        refs[r["utt_id"]] = (lang or r["language"], r["text_with_nvvs"], i)
    for i, r in enumerate(hyp_rows, 1):
        hyps[r["utt_id"]] = (None, r["text_with_nvvs"], i)
    return score_nvbench_maps(refs, hyps, inventory=inventory, map_to_challenge=map_to_challenge)


def score_nvbench_files(ref_path: str, hyp_path: str, *, fmt: str = "jsonl", lang: Optional[str] = None,
                        inventory: str = "challenge", map_to_challenge: bool = False) -> Dict[str, Any]:
    refs = _rows(ref_path, fmt, "ref", lang)
    hyps = _rows(hyp_path, fmt, "hyp", lang)
    return score_nvbench_maps(refs, hyps, ref_path=ref_path, hyp_path=hyp_path, inventory=inventory,
                              map_to_challenge=map_to_challenge)


def summary_lines(r: Mapping[str, Any]) -> List[str]:
    def f(x):
        return "n/a" if x is None else f"{100 * x:.2f}%"

    lines = [f"NV-Bench metrics (inventory: {r['inventory']}"
             f"{', NV-Bench labels mapped to challenge tags' if r['mapped_nvbench_to_challenge'] else ''})"]
    for lang in r["languages_scored"]:
        x = r[lang]
        wer = f" WER={f(x['WER'])}" if "WER" in x else ""
        lines.append(f"[{lang.upper()}] utts={x['num_utterances']} CER={f(x['CER'])}{wer} "
                     f"PCER_micro={f(x['PCER_micro'])} PCER_macro={f(x['PCER_macro'])} "
                     f"OCER={f(x['OCER'])} ({x['OCER_text_unit']}s + tags)")
    return lines
