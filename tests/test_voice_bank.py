"""The voice bank: inventory, pinned packages and checksums, cache, determinism, provenance."""

import json
from pathlib import Path

import numpy as np
import pytest

from pyutils.synth import cli, voice_bank
from pyutils.synth.speech import check_engines, voices


def _installed(engine):
    try:
        check_engines([{"engine": engine}])
        return True
    except voice_bank.VoiceBankError:
        return False


needs_piper = pytest.mark.skipif(not _installed("piper"), reason="make -C tools voices not run")
needs_kokoro = pytest.mark.skipif(not _installed("kokoro"), reason="make -C tools voices not run")


def _timbre(v):
    return (v["engine"], v["name"], v["speed"], v["warp"])


def test_english_bank_is_neural_and_distinct():
    for n in (8, 12, 36):
        vs = voice_bank.bank_voices("en", n)
        assert [v["id"] for v in vs] == [f"en_s{i:02d}" for i in range(n)]
        assert len({_timbre(v) for v in vs}) == n
        assert {v["engine"] for v in vs} == ({"piper"} if n <= 12 else {"piper", "kokoro"})
    first12 = voice_bank.bank_voices("en", 12)
    assert all(v["engine"] == "piper" for v in first12)         # cost: piper is ~9x faster than Kokoro
    assert len({(v["speed"], v["warp"]) for v in first12}) == 12
    assert [v["engine"] for v in voice_bank.bank_voices("en", 16)[12:]] == ["kokoro"] * 4   # large preset
    assert len({v["name"] for v in voice_bank.bank_voices("en", 18)}) >= 7   # other talkers beyond
    assert voices("en", 12, source="bank") == voice_bank.bank_voices("en", 12)
    with pytest.raises(ValueError, match="only"):
        voice_bank.bank_voices("en", 1000)


def test_other_languages_fall_back_to_espeak():
    for lang in ("vi", "de", "fr"):
        assert voice_bank.bank_voices(lang, 5) == voices(lang, 5)
        assert all(v["engine"] == "espeak" for v in voice_bank.bank_voices(lang, 5))
    with pytest.raises(ValueError, match="voice source"):
        voices("en", 2, source="neural")


def test_missing_package_names_it_and_the_make_target(monkeypatch):
    monkeypatch.setitem(voice_bank.PACKAGES, "piper", {"chorus-no-such-voice-pkg": "9.9"})
    with pytest.raises(voice_bank.VoiceBankError) as e:
        check_engines([{"engine": "piper"}])
    assert "chorus-no-such-voice-pkg==9.9" in str(e.value) and "make -C tools voices" in str(e.value)


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    f = tmp_path / "model.onnx"
    f.write_bytes(b"not the model")
    with pytest.raises(voice_bank.VoiceBankError) as e:
        voice_bank.check_file("kokoro", f)
    assert str(f) in str(e.value) and "differs from the pinned" in str(e.value)
    assert "make -C tools voices" in str(e.value)
    with pytest.raises(voice_bank.VoiceBankError, match="is missing"):
        voice_bank.check_file("kokoro", tmp_path / "vocab.json")


def test_cli_without_kokoro_files_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHORUS_KOKORO_DIR", str(tmp_path / "absent"))
    monkeypatch.setitem(voice_bank.PACKAGES, "kokoro", {})      # packages "present": files are not
    rc = cli.main(["nvv", "--lang", "en", "--preset", "ci", "--out", str(tmp_path / "c"), "--num-voices", "13",
                   "--num-train", "13", "--num-dev", "1", "--num-test", "1"])   # train voice 13: Kokoro
    err = capsys.readouterr().err
    assert rc == 2 and "make -C tools voices" in err and "Traceback" not in err
    assert not (tmp_path / "c").exists()                         # failed before writing anything


def test_cache_roundtrip_and_keys(tmp_path, monkeypatch):
    v = voice_bank.bank_voices("en", 2)[1]
    calls = []

    def fake(text, voice, trim=True):
        calls.append(text)
        return np.full(10 + len(text), 0.25, np.float32)

    monkeypatch.setattr(voice_bank, "speak_neural", fake)
    a = voice_bank.speak_cached("hello there", v, str(tmp_path))
    b = voice_bank.speak_cached("hello there", v, str(tmp_path))
    assert calls == ["hello there"] and np.array_equal(a, b) and b.dtype == np.float32
    voice_bank.speak_cached("hello there", dict(v, warp=1.1), str(tmp_path))
    voice_bank.speak_cached("hello", v, None)                    # no cache: always renders
    voice_bank.speak_cached("hello", v, None)
    assert calls == ["hello there", "hello there", "hello", "hello"]
    c = voice_bank.SpeechCache(str(tmp_path))
    assert c.key(v, "a") != c.key(v, "b") != c.key(dict(v, name=v["name"] + "+jf_nezumi:0.1"), "b")
    files = list(tmp_path.rglob("*.npy"))
    assert len(files) == 2 and not list(tmp_path.rglob(".*"))   # no temp file left
    files[0].write_bytes(b"garbage")                              # unreadable entry: rendered again
    assert voice_bank.SpeechCache(str(tmp_path)).get(v, "x") is None


def test_kokoro_phonemes_use_kokoro_symbols():
    ph = voice_bank.kokoro_phonemes("My boat, now!")
    assert "I" in ph and "O" in ph and "W" in ph           # aɪ, oʊ, aʊ as single symbols
    assert "," in ph and ph.endswith("!") and "_" not in ph


@needs_piper
@needs_kokoro
def test_neural_voices_are_deterministic_16k():
    for v in voice_bank.bank_voices("en", 13)[:2] + voice_bank.bank_voices("en", 13)[12:13]:
        a = voice_bank.speak_neural("The old man walked home.", v)
        b = voice_bank.speak_neural("The old man walked home.", v)
        assert a.dtype == np.float32 and np.array_equal(a, b)
        assert 0.6 < len(a) / 16000 < 4.0 and abs(float(np.abs(a).max()) - 0.9) < 1e-3


@needs_piper
@needs_kokoro
def test_corpus_records_where_speech_came_from(tmp_path):
    out = tmp_path / "c"
    assert cli.main(["nvv", "--lang", "en", "--preset", "ci", "--out", str(out), "--num-train", "3",
                     "--num-dev", "1", "--num-test", "1"]) == 0
    rows = [json.loads(l) for s in ("train", "dev", "test")
            for l in (out / "speech" / f"{s}.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5 and all(r["licence"] and r["package"] and r["voice"]["name"] for r in rows)
    assert {r["engine"].split()[0] for r in rows} <= {"piper-tts", "onnxruntime"}
    assert json.loads((out / "synth_args.json").read_text())["voices"] == "bank"
    assert list((tmp_path / "speech_cache").rglob("*.npy"))      # renderings cached beside --out
    old = tmp_path / "old"
    cli.main(["nvv", "--lang", "en", "--preset", "ci", "--out", str(old), "--voices", "espeak",
              "--num-train", "2", "--num-dev", "1", "--num-test", "1"])
    rows = (old / "speech" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(l)["engine"].split()[0] in ("espeak-ng", "flite") for l in rows)


needs_gcin = pytest.mark.skipif(not Path("/usr/share/gcin-voice/ogg").is_dir(),
                                reason="Debian gcin-voice not installed")


def test_zhuyin_keys_follow_gcin_names():
    from pyutils.synth.syllable_voice import zhuyin

    keys = zhuyin("你好。我们走吧")
    assert keys[0] == ("ㄋㄧ", "ㄋㄧ2")          # third-tone sandhi: 你好 = ni2 hao3
    assert keys[1] == ("ㄏㄠ", "ㄏㄠ3") and keys[2] == ("。", None)
    assert keys[-1][1] == "ㄅㄚ1"                 # neutral tone -> digit 1
    assert keys[3][1] == "ㄨㄛ3"


def test_gcin_missing_names_the_package(monkeypatch, tmp_path):
    from pyutils.synth import syllable_voice

    monkeypatch.setattr(syllable_voice, "GCIN_DIR", str(tmp_path))
    with pytest.raises(voice_bank.VoiceBankError, match="gcin-voice"):
        check_engines(voice_bank.bank_voices("zh", 2))


@needs_gcin
def test_gcin_voices_are_deterministic_and_cover_the_grammar():
    from pyutils.synth.sentences import split_pool
    from pyutils.synth.syllable_voice import coverage, speak_gcin

    vs = voice_bank.bank_voices("zh", 12)
    assert {(v["engine"], v["name"]) for v in vs} == {("gcin", "3")} and len({_timbre(v) for v in vs}) == 12
    a = speak_gcin("今天天气很好。", vs[0])
    assert np.array_equal(a, speak_gcin("今天天气很好。", vs[0])) and a.dtype == np.float32
    assert 6 * 0.2 < len(a) / 16000 < 6 * 0.8
    fast = speak_gcin("今天天气很好。", dict(vs[0], warp=1.2, speed=1.2))
    assert len(fast) < 0.9 * len(a)
    have = total = 0
    for s in split_pool("zh", {"train": 60, "dev": 0, "test": 20}, 0)["test"]:
        h, t = coverage(s)
        have, total = have + h, total + t
    assert total > 100 and have / total > 0.97


def test_speech_cache_that_is_a_file_is_refused(tmp_path, capsys):
    blocker = tmp_path / "cache"
    blocker.write_text("x")
    rc = cli.main(["nvv", "--lang", "zh", "--preset", "ci", "--out", str(tmp_path / "c"),
                   "--speech-cache", str(blocker), "--num-train", "2", "--num-dev", "1", "--num-test", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and str(blocker) in err and "not a folder" in err
