"""Forking recipes for any language: language facts, CLDR sentences, the generic
normaliser, fork_recipe.sh for ASR and TTS, and the message for a language without
a voice. The full `--preset ci` run of a fork is in .ci/run (about 2 min: too slow here);
this file runs a German fork through stages 0-3 (corpus, data, dump, tokens)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pyutils.asr import text_norm, wer
from pyutils.langscript import script_of, writes_without_spaces
from pyutils.synth import cldr_text, langs, sentences
from pyutils.synth.cli import main as synth_main

ROOT = Path(__file__).resolve().parent.parent
FORK = str(ROOT / "utils" / "fork_recipe.sh")
needs_cldr = pytest.mark.skipif(not Path(cldr_text.cldr_dir(), "main", "de.xml").is_file()
                                or shutil.which("espeak-ng") is None,
                                reason="unicode-cldr-core / espeak-ng not installed (tools/install_system_packages.sh)")


def run(cmd, cwd, timeout=120):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------ script and units
def test_script_decides_units():
    assert script_of("ja") == "Jpan" and writes_without_spaces("ja")
    assert writes_without_spaces("th") and writes_without_spaces("yue")
    assert script_of("sr_Latn") == "Latn"
    for lang in ("de", "ru", "hi", "ar", "el", "ko", "vi"):
        assert not writes_without_spaces(lang), lang
        assert not text_norm.char_units(lang)
    assert text_norm.char_units("zh") and text_norm.char_units("th")


def test_generic_normaliser_by_category_and_script():
    n = text_norm.normalise
    # punctuation/symbols go, tags stay, German letters and case folding
    assert n("Grüß Gott, Herr Müller! [Laugh] «Toll» €5.", "de") == "grüß gott herr müller [Laugh] toll 5"
    # combining vowel signs (category M) are part of Devanagari words
    assert n("कल, सेब और कुत्ता।", "hi") == "कल सेब और कुत्ता"
    # the zero-width non-joiner is Persian spelling; other format characters go
    assert n("می\u200cخواهم\u200b، کتاب!", "fa") == "می\u200cخواهم کتاب"
    # apostrophes only inside words
    assert n("L’homme d'affaires 'oui'", "fr") == "l'homme d'affaires oui"
    # no spaces next to characters of a no-space script; spaces between other words kept
    assert n("แอปเปิล กับ หมา [cough] ok go", "th") == "แอปเปิลกับหมา[cough]ok go"
    assert n("リンゴ、 イヌ [sigh] ネコ。", "ja") == "リンゴイヌ[sigh]ネコ"
    # the FORK HOOK: a registered function wins over the generic one
    assert text_norm.get("en") is not text_norm.get("de") and text_norm.get("de") is text_norm.get("generic")


def test_units_follow_the_script():
    assert wer.units("Gestern, Hund [laugh] und Katze.", "de", True) == ["gestern", "hund", "[laugh]", "und", "katze"]
    assert wer.units("イヌ[laugh]、ネコ。", "ja", True) == ["イ", "ヌ", "[laugh]", "ネ", "コ"]
    res = wer.error_rate({"u": "イヌ、ネコ。"}, {"u": "イヌネ"}, "ja", False)
    assert res["name"] == "CER" and res["edits"] == 1 and res["ref_units"] == 4


# ------------------------------------------------------------ CLDR text and sentences
def test_format_list_uses_the_language_pattern():
    p = {"2": "{0} und {1}", "start": "{0}, {1}", "middle": "{0}, {1}", "end": "{0} und {1}"}
    assert cldr_text.format_list(["A", "B"], p) == "A und B"
    assert cldr_text.format_list(["A", "B", "C", "D"], p) == "A, B, C und D"


@needs_cldr
@pytest.mark.parametrize("lang", ["de", "ja", "hi"])
def test_cldr_sentences(lang):
    pools = sentences.split_pool(lang, {"train": 60, "dev": 10, "test": 10}, seed=3)
    assert sum(len(v) for v in pools.values()) == len(set(sum(pools.values(), []))) == 80   # distinct, disjoint
    assert pools == sentences.split_pool(lang, {"train": 60, "dev": 10, "test": 10}, seed=3)  # deterministic
    vocab = sentences.vocabulary(lang)
    test_units = {u for s in pools["test"] for u in wer.units(s, lang, False)}
    assert test_units and test_units <= vocab          # test phrases: new combinations of known units
    v = langs.cldr_vocabulary(lang)
    assert len(v["noun"]) >= 20 and v["voice"]
    if lang == "ja":   # espeak-ng's Japanese voice reads kana, not kanji: no 昨日/明日
        assert "明日" not in v["time"] and "イヌ" in v["noun"]
    for s in pools["test"]:
        b = sentences.boundaries(s, lang)
        assert b[0] == 0 and b[-1] == len(sentences.words(s, lang))


def test_language_without_voice_says_what_to_provide():
    with pytest.raises(langs.LanguageNotSupported) as e:
        langs.require("xq")
    msg = str(e.value)
    assert "no mini corpus for language 'xq'" in msg and "--mini_dir" in msg and "db.sh" in msg
    r = run(["python", "-m", "pyutils.synth.langs", "check", "--lang", "xq"], ROOT)
    assert r.returncode == 2 and "Provide one of" in r.stderr and "Traceback" not in r.stderr


@needs_cldr
def test_nvv_corpus_for_a_language_without_spaces(tmp_path):
    out = tmp_path / "ja"
    assert synth_main(["nvv", "--lang", "ja", "--preset", "ci", "--out", str(out),
                       "--num-train", "4", "--num-dev", "1", "--num-test", "3", "--nj", "1"]) == 0
    from pyutils.scoring.textnorm import parse_tagged

    for split in ("train", "test"):
        texts = dict(l.split(" ", 1) for l in (out / "data" / split / "text").read_text(encoding="utf-8").splitlines())
        events = {json.loads(l)["utt_id"]: json.loads(l)["events"]
                  for l in (out / "events" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()}
        for utt, text in texts.items():
            assert " " not in text
            # positions counted in characters, exactly like the Track 1 zh protocol
            parsed = parse_tagged(text, "zh")
            assert [e.position for e in parsed.events] == [e["position"] for e in events[utt]]


# ------------------------------------------------------------ fork_recipe.sh
def test_fork_refuses_sqa_and_vivc_with_reasons(tmp_path):
    r = run([FORK, str(ROOT / "egs" / "sqa"), str(tmp_path / "sqa_de"), "--lang", "de"], ROOT)
    assert r.returncode == 2 and "language-independent" in r.stderr and not (tmp_path / "sqa_de").exists()
    r = run([FORK, str(ROOT / "egs" / "vivc"), str(tmp_path / "vivc_de"), "--lang", "de"], ROOT)
    assert r.returncode == 2 and "Vietnamese-specific" in r.stderr and "egs/nvv_tts" in r.stderr


@needs_cldr
def test_fork_asr_de_runs_stages_0_to_3(tmp_path):
    dst = tmp_path / "egs" / "nvv_asr_de"
    r = run([FORK, str(ROOT / "egs" / "nvv_asr_en"), str(dst), "--lang", "de"], ROOT)
    assert r.returncode == 0, r.stderr
    assert "mini corpus for de: yes" in r.stdout
    readme = (dst / "README.md").read_text()
    order = [readme.index(k) for k in ("db.sh", "FORK HOOK", "spoken forms", "Whisper")]
    assert order == sorted(order)
    r = run(["./run.sh", "--preset", "ci", "--stop_stage", "3", "--nj", "2"], dst, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stdout + r.stderr
    text = (dst / "dump" / "raw" / "train" / "text").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 120 and "[" in text
    assert any(w in text.split() for w in ("und", "gestern", "morgen", "heute"))
    tokens = (dst / "data" / "token_list" / "de_bpe150" / "tokens.txt").read_text(encoding="utf-8").split()
    assert "[laugh]" in tokens and "[throat_clearing]" in tokens


@needs_cldr
def test_fork_unsupported_language_stops_with_one_message(tmp_path):
    dst = tmp_path / "egs" / "nvv_asr_xq"
    r = run([FORK, str(ROOT / "egs" / "nvv_asr_en"), str(dst), "--lang", "xq"], ROOT)
    assert r.returncode == 0 and "no mini corpus for language 'xq'" in r.stderr
    r = run(["./run.sh", "--preset", "ci", "--stop_stage", "0"], dst)
    assert r.returncode == 2
    assert "Traceback" not in r.stdout + r.stderr
    assert r.stderr.count("no mini corpus") == 1 and "--mini_dir" in r.stderr
    assert not (dst / "corpus" / "nvv_xq_ci" / ".done").exists()


@needs_cldr
def test_fork_tts_front_end(tmp_path):
    dst = tmp_path / "egs" / "nvv_tts_ru"
    r = run([FORK, str(ROOT / "egs" / "nvv_tts"), str(dst), "--lang", "ru"], ROOT)
    assert r.returncode == 0, r.stderr
    runsh = (dst / "run.sh").read_text()
    assert "lang=ru" in runsh and "token_type=phn" in runsh and os.access(dst / "run.sh", os.X_OK)
    assert "nvv_asr_ru" in (dst / "README.md").read_text()
    # the language's front-end: espeak-ng Russian phonemes with the tag atomic
    from pyutils.tts.frontend import Frontend

    toks = Frontend("ru", "phn").tokenize_many(["Вчера, собака [laugh] и кошка."])[0]
    assert "[laugh]" in toks and "," in toks and len(toks) > 10
    assert not any("\u0400" <= c <= "\u04ff" for t in toks for c in t)      # phonemes, not letters
