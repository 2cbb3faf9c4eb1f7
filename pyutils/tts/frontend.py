"""Text front-end for NVV-controllable TTS: tagged text -> atomic input tokens.

A tagged text such as ``That was really surprising. [laugh]`` is cut into plain
text pieces and tags. Every tag becomes ONE token (``[laugh]``; a tag with a
space is written ``[throat_clearing]``, see docs/ARCHITECTURE.md) that no G2P
ever sees, so the model learns a single embedding per non-verbal vocalisation.
Plain text goes through one pluggable per-language G2P:

* ``en``: phonemes from espeak-ng through ``phonemizer`` (offline; ``g2p_en`` is
  avoided because it downloads NLTK data), or lower-case characters;
* ``zh``: pypinyin initials and tone-numbered finals (``n i3 h ao3``), or pinyin
  syllables with tones (``ni3 hao3``);
* ``vi``: espeak-ng Vietnamese phonemes, or NFC lower-case characters.

Word boundaries become ``|`` and punctuation one of ``, . ? !`` so that the
result is a whitespace-separated token string that ESPnet reads with
``--token_type word`` (no cleaner, no g2p inside ESPnet).

Any other language espeak-ng has a voice for (a recipe forked with
``utils/fork_recipe.sh egs/nvv_tts ... --lang xx``) gets that voice's phonemes
(``phn``) or characters (``char``) without code; write a ``G2P`` subclass and
register it in ``FRONTENDS`` for something better.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from typing import Callable, Dict, List, Sequence, Tuple

from pyutils.io import atomic_write
from pyutils.langscript import foreign_letters
from pyutils.tags import challenge_tags, normalize_tag_label

WORD_SEP = "|"
PUNCT_TOKENS = {",", ".", "?", "!"}
# Map full-width / other punctuation to the four kept ones; the rest is a word break.
_PUNCT_MAP = {
    "，": ",", "、": ",", "；": ",", ";": ",", ":": ",", "：": ",", "—": ",", "…": ".",
    "。": ".", "．": ".", "？": "?", "！": "!", "¿": "", "¡": "",
}
_TAG_SPLIT_RE = re.compile(r"(\[[^\[\]]*\])")
_PUNCT_SPLIT_RE = re.compile(r"([,.?!])")


class FrontendError(ValueError):
    """Raised for text the front-end cannot handle (unknown tag, stray bracket)."""


def tag_to_token(tag: str) -> str:
    """``throat clearing`` -> ``[throat_clearing]`` (atomic token form)."""
    return "[" + normalize_tag_label(tag).replace(" ", "_") + "]"


def token_to_tag(token: str) -> str:
    """``[throat_clearing]`` -> ``throat clearing``."""
    return token[1:-1].replace("_", " ")


def tag_tokens() -> List[str]:
    """Token form of every challenge tag (all go into every token list)."""
    return [tag_to_token(t) for t in challenge_tags()]


TAG_PART_SEP = "~"


def tag_part_token(tag_token: str, k: int) -> str:
    """Part ``k`` (2, 3, ...) of a tag token: ``[laugh]`` -> ``[laugh]~2``.

    Part 1 is the tag token itself, so everything that looks for ``[...]`` tokens
    (event matching, plots) still finds one token per tag; the other parts are
    not ``[...]`` tokens and belong to the tag token before them.
    """
    return f"{tag_token}{TAG_PART_SEP}{k}"


def tag_part_of(token: str) -> Tuple[str, int]:
    """``[laugh]~2`` -> (``[laugh]``, 2); a tag token -> (itself, 1); anything else -> ("", 0)."""
    if token.startswith("[") and token.endswith("]"):
        return token, 1
    head, sep, k = token.rpartition(TAG_PART_SEP)
    if sep and head.startswith("[") and head.endswith("]") and k.isdigit() and int(k) >= 2:
        return head, int(k)
    return "", 0


def split_tag_parts(toks: Sequence[str], parts: int) -> List[str]:
    """Every tag token followed by its parts 2..``parts`` (``parts`` <= 1: unchanged).

    A duration model expands a token to its frames with one and the same vector, so
    a one-token laugh can only become the laugh's average spectrum (a smear). With
    several tokens per tag (each aligned to its own stretch of the event by the
    forced aligner) the decoder gets the event's onset, middle and end apart.
    """
    out: List[str] = []
    for t in toks:
        out.append(t)
        if parts > 1 and t.startswith("[") and t.endswith("]"):
            out.extend(tag_part_token(t, k) for k in range(2, parts + 1))
    return out


def split_tagged(text: str) -> List[Tuple[str, str]]:
    """Cut tagged text into ``("text", piece)`` and ``("tag", label)`` items.

    Raises FrontendError on an unknown tag or an unmatched bracket.
    """
    known = set(challenge_tags())
    items: List[Tuple[str, str]] = []
    for piece in _TAG_SPLIT_RE.split(unicodedata.normalize("NFC", text)):
        if not piece:
            continue
        if piece.startswith("[") and piece.endswith("]"):
            label = normalize_tag_label(piece[1:-1].replace("_", " "))
            if label not in known:
                raise FrontendError(f"unknown tag [{piece[1:-1]}] (known: {', '.join(sorted(known))})")
            items.append(("tag", label))
        else:
            if "[" in piece or "]" in piece:
                raise FrontendError(f"unmatched bracket in {piece!r}")
            if piece.strip():
                items.append(("text", piece))
    return items


def foreign_characters(text: str, lang: str) -> str:
    """Characters of ``text`` (tags excluded) outside ``lang``'s inventory, each once
    (:func:`pyutils.langscript.foreign_letters` of each text piece)."""
    bad: List[str] = []
    for kind, value in split_tagged(text):
        if kind == "tag":
            continue
        bad += [ch for ch in foreign_letters(value, lang) if ch not in bad]
    return "".join(bad)


def _normalise_punct(text: str) -> str:
    out = []
    for ch in text:
        out.append(_PUNCT_MAP.get(ch, ch))
    return "".join(out)


def _chunks(text: str) -> List[str]:
    """Split plain text into word runs and punctuation tokens."""
    parts = []
    for p in _PUNCT_SPLIT_RE.split(_normalise_punct(text)):
        p = p.strip()
        if p:
            parts.append(p)
    return parts


class G2P:
    """One language's grapheme-to-token converter for plain text runs."""

    def __call__(self, runs: Sequence[str]) -> List[List[str]]:
        """Convert each punctuation-free run to tokens (words separated by WORD_SEP)."""
        raise NotImplementedError


class CharG2P(G2P):
    """Lower-case letters; words separated by WORD_SEP (any alphabet)."""

    def __call__(self, runs):
        out = []
        for run in runs:
            toks: List[str] = []
            for w in run.lower().split():
                w = "".join(c for c in w if c.isalnum() or c in "'")
                if not w:
                    continue
                if toks:
                    toks.append(WORD_SEP)
                toks.extend(list(w))
            out.append(toks)
        return out


class EspeakG2P(G2P):
    """espeak-ng phonemes through phonemizer (offline, one batch call)."""

    def __init__(self, language: str):
        from phonemizer.backend import EspeakBackend  # lazy: only when used

        self.backend = EspeakBackend(language, preserve_punctuation=False, with_stress=False,
                                     language_switch="remove-flags")

    def __call__(self, runs):
        from phonemizer.separator import Separator

        if not runs:
            return []
        phones = self.backend.phonemize(list(runs), separator=Separator(phone=" ", word=" | ", syllable=""),
                                        strip=True, njobs=1)
        out = []
        for p in phones:
            toks = [t for t in p.split() if t]
            while toks and toks[-1] == WORD_SEP:
                toks.pop()
            while toks and toks[0] == WORD_SEP:
                toks.pop(0)
            out.append(toks)
        return out


class PinyinG2P(G2P):
    """Mandarin via pypinyin: ``initial final+tone`` units (``split=True``) or
    tone-numbered syllables. Latin letters inside Mandarin text become characters."""

    def __init__(self, split: bool = True):
        self.split = split

    def __call__(self, runs):
        from pypinyin import Style, lazy_pinyin, pinyin

        out = []
        for run in runs:
            toks: List[str] = []
            for word in run.split():
                syl = lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True, errors=lambda s: list(s.lower()))
                ini = lazy_pinyin(word, style=Style.INITIALS, strict=False, errors=lambda s: list(s.lower()))
                if toks:
                    toks.append(WORD_SEP)
                for s, i in zip(syl, ini):
                    if not any(c.isalnum() for c in s):
                        continue
                    if self.split and s[-1:].isdigit() and i and s.startswith(i) and len(s) > len(i):
                        toks.extend([i, s[len(i):]])
                    else:
                        toks.append(s)
            out.append(toks)
        return out


# language -> token_type -> factory
FRONTENDS: Dict[str, Dict[str, Callable[[], G2P]]] = {
    "en": {"phn": lambda: EspeakG2P("en-us"), "char": CharG2P},
    "zh": {"phn": lambda: PinyinG2P(split=True), "pinyin": lambda: PinyinG2P(split=False), "char": CharG2P},
    "vi": {"phn": lambda: EspeakG2P("vi"), "char": CharG2P},
}


def frontends_of(lang: str) -> Dict[str, Callable[[], G2P]]:
    """Token types of ``lang``: its entry in FRONTENDS, else espeak-ng phonemes of the
    language's espeak-ng voice and characters; raises FrontendError when espeak-ng has
    no voice for it."""
    if lang in FRONTENDS:
        return FRONTENDS[lang]
    from pyutils.synth.langs import espeak_voice

    voice = espeak_voice(lang)
    if voice is None:
        return {"char": CharG2P}
    return {"phn": lambda: EspeakG2P(voice), "char": CharG2P}


def add_pause_tokens(toks: List[str]) -> List[str]:
    """Pause slots for duration models: a ``|`` at the start and on both sides of every tag.

    A duration model (FastSpeech) must give every audio frame to some token; the
    silence before the first word and the short gaps around a non-verbal sound then
    belong to these ``|`` tokens (which the aligner may also give no frame), not to
    the neighbouring phone or tag. Punctuation already is such a slot; the final
    silence goes to the ``<eos>`` that ESPnet appends.
    """
    pause = PUNCT_TOKENS | {WORD_SEP}
    out: List[str] = [WORD_SEP]
    for i, t in enumerate(toks):
        is_tag = t.startswith("[") and t.endswith("]")
        if is_tag and out[-1] not in pause:
            out.append(WORD_SEP)
        if t == WORD_SEP and out[-1] == WORD_SEP:
            continue
        out.append(t)
        if is_tag and i + 1 < len(toks) and toks[i + 1] not in pause:
            out.append(WORD_SEP)
    return out


class Frontend:
    """Tagged text -> token list for one language and token type.

    ``pauses=True`` adds the pause slots of :func:`add_pause_tokens` (duration models);
    ``tag_parts`` > 1 writes each tag as that many tokens (:func:`split_tag_parts`).
    """

    def __init__(self, lang: str, token_type: str = "phn", pauses: bool = False, tag_parts: int = 1):
        have = frontends_of(lang)
        if token_type not in have:
            raise FrontendError(f"token type {token_type!r} not available for {lang!r} "
                                f"(have: {', '.join(have)}"
                                + ("; phn needs an espeak-ng voice for it" if "phn" not in have else "") + ")")
        if tag_parts < 1:
            raise FrontendError(f"tag_parts must be >= 1 (got {tag_parts})")
        self.lang, self.token_type, self.pauses, self.tag_parts = lang, token_type, pauses, tag_parts
        self.g2p = have[token_type]()

    def tokenize_many(self, texts: Sequence[str]) -> List[List[str]]:
        """Tokenise many tagged texts with one G2P batch call."""
        plans = []  # per text: list of ("tag"|"punct"|"run", value or index)
        runs: List[str] = []
        for text in texts:
            plan = []
            for kind, value in split_tagged(text):
                if kind == "tag":
                    plan.append(("tag", tag_to_token(value)))
                    continue
                for chunk in _chunks(value):
                    if chunk in PUNCT_TOKENS:
                        plan.append(("punct", chunk))
                    else:
                        plan.append(("run", len(runs)))
                        runs.append(chunk)
            plans.append(plan)
        converted = self.g2p(runs)
        result = []
        for plan in plans:
            toks: List[str] = []
            for kind, value in plan:
                if kind == "run":
                    piece = converted[value]
                    if not piece:
                        continue
                    if toks and toks[-1] not in PUNCT_TOKENS and not toks[-1].startswith("["):
                        toks.append(WORD_SEP)
                    toks.extend(piece)
                else:
                    toks.append(value)
            if self.pauses and toks:
                toks = add_pause_tokens(toks)
            result.append(split_tag_parts(toks, self.tag_parts))
        return result


def tokenize_text_file(in_path: str, out_path: str, lang: str, token_type: str,
                       pauses: bool = False, tag_parts: int = 1) -> int:
    """Kaldi ``text`` (tagged) -> Kaldi ``text`` of space-separated tokens.

    Errors name ``file:line``; the output is written to a temp file and renamed.
    """
    ids, texts = [], []
    with open(in_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split(maxsplit=1)
            if len(parts) < 2:
                raise FrontendError(f"{in_path}:{lineno}: empty text for utterance {parts[0]!r}")
            try:
                bad = foreign_characters(parts[1], lang)
            except FrontendError as e:
                raise FrontendError(f"{in_path}:{lineno}: {parts[0]}: {e}") from None
            if bad:
                raise FrontendError(f"{in_path}:{lineno}: {parts[0]}: characters outside the {lang} "
                                    f"front-end's inventory: {' '.join(repr(c) for c in bad)}")
            ids.append(parts[0])
            texts.append(parts[1])
    fe = Frontend(lang, token_type, pauses=pauses, tag_parts=tag_parts)
    tokens = fe.tokenize_many(texts)
    with atomic_write(out_path) as f:
        for uid, toks, text in zip(ids, tokens, texts):
            if not toks:
                raise FrontendError(f"{in_path}: {uid}: text {text!r} gives no tokens")
            f.write(f"{uid} {' '.join(toks)}\n")
    return len(ids)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Tokenise a Kaldi text file of tagged transcripts "
                                "(tags stay atomic tokens).")
    p.add_argument("--lang", required=True, help=f"{', '.join(sorted(FRONTENDS))} or any language espeak-ng speaks")
    p.add_argument("--token-type", default="phn")
    p.add_argument("--pauses", action="store_true",
                   help="pause slots for duration models: '|' at the start and around every tag")
    p.add_argument("--tag-parts", type=int, default=1,
                   help="tokens per tag (duration models): [laugh] [laugh]~2 [laugh]~3 for 3 (default 1)")
    p.add_argument("input", help="Kaldi text: <utt_id> <tagged text>")
    p.add_argument("output", help="Kaldi text: <utt_id> <tok> <tok> ...")
    a = p.parse_args(argv)
    try:
        n = tokenize_text_file(a.input, a.output, a.lang, a.token_type, pauses=a.pauses,
                               tag_parts=a.tag_parts)
    except FrontendError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"tokenised {n} utterances ({a.lang}, {a.token_type}) -> {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
