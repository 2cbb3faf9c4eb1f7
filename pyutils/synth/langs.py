"""Which languages the offline mini corpus can be made for, and with what.

A language gets a mini corpus when espeak-ng has a voice for it and there is
text to speak: a hand-written grammar (en, zh, vi: :mod:`pyutils.synth.sentences`)
or CLDR words and phrases (:mod:`pyutils.synth.cldr_text`) that the voice
pronounces itself. An item is kept only when espeak-ng reads it without
switching language (espeak-ng's Japanese voice reads kana but switches to
English for kanji, so a Japanese corpus is made of the kana items) and it
holds only letters, combining marks, spaces, apostrophes and hyphens (no digits,
no symbols, whose spoken form the transcript would not show).

    python -m pyutils.synth.langs check --lang de     # exit 0 and a summary, or exit 2 and what to provide
    python -m pyutils.synth.langs info --lang de      # key=value lines (used by utils/fork_recipe.sh)
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import unicodedata
from typing import Dict, List, Optional

from pyutils.langscript import script_of, writes_without_spaces

GRAMMAR_LANGS = ("en", "zh", "vi")
#: minimum number of speakable CLDR items (time + place + noun) for a usable corpus
MIN_ITEMS = 40
_KEEP_PUNCT = "'\u2019-\u200c\u200d"


# Languages of multilingual OpenAI Whisper (its tokenizer's language tokens; yue since large-v3).
WHISPER_LANGS = frozenset("""
en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur
hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si
km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha
ba jw su yue""".split())
_WHISPER_ALIASES = {"nb": "no", "jv": "jw", "cmn": "zh", "iw": "he"}


def whisper_knows(lang: str) -> bool:
    """True when pretrained multilingual Whisper has a language token for ``lang``."""
    base = lang.strip().lower().replace("-", "_").split("_")[0]
    return _WHISPER_ALIASES.get(base, base) in WHISPER_LANGS


class LanguageNotSupported(ValueError):
    """No mini corpus for this language; the message lists what to provide."""


def _what_to_provide(lang: str, reason: str, voice_missing: bool = True) -> str:
    voice = (f"\n  3. a voice: an espeak-ng voice for '{lang}' (`espeak-ng --voices` lists the installed ones), "
             f"then run again." if voice_missing else "")
    return (
        f"no mini corpus for language '{lang}': {reason}.\n"
        f"Provide one of:\n"
        f"  1. your own data: --mini_dir DIR, where DIR/data/{{train,dev,test}}/ are Kaldi data dirs "
        f"(wav.scp, utt2spk, and text with tagged transcripts such as 'word word [laugh] word') and DIR/.done exists;\n"
        f"  2. real corpora: their paths in db.sh (see pyutils/corpora/README.md for the expected layouts)."
        f"{voice}")


@functools.lru_cache(maxsize=None)
def espeak_voice(lang: str) -> Optional[str]:
    """espeak-ng voice (language code) for ``lang`` (``pt_br`` -> ``pt-br``), or None.

    MBROLA voices are skipped (they need the separate mbrola program and data).
    """
    if shutil.which("espeak-ng") is None:
        return None
    code = lang.strip().lower().replace("_", "-")
    for cand in dict.fromkeys([code, code.split("-")[0]]):
        try:
            out = subprocess.run(["espeak-ng", f"--voices={cand}"], capture_output=True, text=True,
                                 check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
        for line in out.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 5 and not cols[4].startswith("mb/"):
                return cols[1]
    return None


def _plain(item: str) -> bool:
    """Only letters, marks, spaces, apostrophes, hyphens and joiners."""
    return bool(item.strip()) and all(
        unicodedata.category(c)[0] in "LM" or c == " " or c in _KEEP_PUNCT for c in item)


def speakable(items: List[str], voice: str) -> List[bool]:
    """Per item: espeak-ng ``voice`` reads it in its own language (no language switch)."""
    from phonemizer.backend import EspeakBackend
    from phonemizer.logger import get_logger

    backend = EspeakBackend(voice, language_switch="keep-flags", logger=get_logger("quiet"))
    phones = backend.phonemize(list(items), strip=True, njobs=1)
    return [bool(p.strip()) and "(" not in p for p in phones]


@functools.lru_cache(maxsize=8)
def cldr_vocabulary(lang: str) -> dict:
    """CLDR material of ``lang`` that its espeak-ng voice speaks.

    ``{"time": [...], "place": [...], "noun": [...], "pattern": {...}, "stop": str, "voice": str}``;
    raises :class:`LanguageNotSupported` (with what to provide) when there is none.
    """
    from pyutils.synth import cldr_text

    voice = espeak_voice(lang)
    if voice is None:
        why = ("espeak-ng is not installed (tools/install_system_packages.sh)" if shutil.which("espeak-ng") is None
               else "espeak-ng has no voice for it")
        raise LanguageNotSupported(_what_to_provide(lang, why))
    try:
        raw = cldr_text.vocabulary(lang)
    except cldr_text.CldrMissing:
        raise LanguageNotSupported(_what_to_provide(
            lang, f"espeak-ng speaks it (voice {voice}) but Unicode CLDR has no text for it "
                  f"(package unicode-cldr-core, {cldr_text.cldr_dir()})", voice_missing=False)) from None
    # every candidate string in one espeak-ng batch
    cands = list(dict.fromkeys([s for s in raw["time"] + raw["place"] if _plain(s)]
                               + [s for alts in raw["noun"] for s in alts if _plain(s)]))
    ok = dict(zip(cands, speakable(cands, voice))) if cands else {}
    seen: set = set()

    def keep(items):
        out = []
        for s in items:
            key = s.lower()
            if ok.get(s) and key not in seen:
                seen.add(key)
                out.append(s)
        return out

    vocab = {"time": keep(raw["time"]), "place": keep(raw["place"]),
             "noun": keep([next((s for s in alts if ok.get(s) and s.lower() not in seen), "") for alts in raw["noun"]]),
             "pattern": raw["pattern"], "stop": raw["stop"], "voice": voice}
    n = len(vocab["time"]) + len(vocab["place"]) + len(vocab["noun"])
    if n < MIN_ITEMS or len(vocab["noun"]) + len(vocab["place"]) < 12:
        raise LanguageNotSupported(_what_to_provide(
            lang, f"espeak-ng voice {voice} pronounces only {n} of the CLDR words and phrases "
                  f"(at least {MIN_ITEMS} needed)", voice_missing=False))
    return vocab


def info(lang: str) -> Dict[str, str]:
    """Summary of ``lang``; raises :class:`LanguageNotSupported`."""
    script = script_of(lang) or "unknown"
    d = {"lang": lang, "script": script, "units": "chars" if writes_without_spaces(lang) or lang == "zh" else "words"}
    if lang in GRAMMAR_LANGS:
        d.update(text="hand-written grammar (pyutils/synth/sentences.py)",
                 voice={"en": "flite + espeak-ng en", "zh": "espeak-ng cmn-latn-pinyin", "vi": "espeak-ng vi"}[lang])
        return d
    v = cldr_vocabulary(lang)
    d.update(text=f"CLDR: {len(v['time'])} time phrases, {len(v['place'])} places, {len(v['noun'])} nouns",
             voice=f"espeak-ng {v['voice']}")
    return d


def require(lang: str) -> None:
    """Raise :class:`LanguageNotSupported` unless a mini corpus can be made for ``lang``."""
    if lang not in GRAMMAR_LANGS:
        cldr_vocabulary(lang)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["check", "info"])
    p.add_argument("--lang", required=True)
    a = p.parse_args(argv)
    try:
        d = info(a.lang)
    except LanguageNotSupported as e:
        if a.what == "info":
            print("supported=no")
            print("reason=" + str(e).splitlines()[0])
            return 0
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.what == "info":
        print("supported=yes")
        for k, v in d.items():
            print(f"{k}={v}")
    else:
        print(f"{a.lang}: {d['text']}; voice {d['voice']}; script {d['script']}, units: {d['units']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
