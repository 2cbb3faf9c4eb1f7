"""Whisper tokens for ESPnet: token-list layout, tags atomic, round trips, errors."""

import pytest

pytest.importorskip("whisper")

from pyutils.asr import whisper_tokens as tokens  # noqa: E402
from pyutils.asr.whisper_tokens import WhisperTokens  # noqa: E402
from pyutils.whisper.weights import WhisperWeightsError  # noqa: E402


@pytest.fixture(scope="module")
def wt():
    return WhisperTokens(51865)


def test_token_list_keeps_whisper_ids_at_offset_one(wt):
    tl = wt.token_list()
    assert tl[0] == "<blank>" and tl[-1] == "<unk>"
    assert tl[1 + wt.tokenizer.sot] == tokens.SOS and tl[1 + wt.tokenizer.eot] == tokens.EOS
    assert tl[1 + 264] == "Ġthe"
    assert "[throat_clearing]" in tl and "[laugh]" in tl
    assert len(tl) == len(set(tl)) == 1 + 51865 + 16 + 1
    assert all(t and t == "".join(t.split()) for t in tl)  # "word" tokens: no whitespace


@pytest.mark.parametrize("lang,text,expect", [
    ("en", "Maybe, the [cough] bread was rather terrible. [throat clearing]",
     ["<|en|>", "<|transcribe|>", "<|notimestamps|>", "ĠMaybe", ",", "Ġthe", "[cough]", "Ġbread",
      "Ġwas", "Ġrather", "Ġterrible", ".", "[throat_clearing]"]),
    ("zh", "哈哈[laugh]你好", ["<|zh|>", "<|transcribe|>", "<|notimestamps|>", "åĵĪåĵĪ", "[laugh]", "ä½łå¥½"]),
])
def test_encode_decode(wt, lang, text, expect):
    enc = wt.encode(text, lang)
    assert enc == expect
    back = wt.decode(enc, lang)
    assert back.replace(" ", "") == text.replace(" ", "").replace("[throatclearing]", "[throat_clearing]")


def test_decode_drops_specials_and_simplifies_chinese(wt):
    assert wt.decode(["<|zh|>", "<unk>", "<|unused_50256|>"] + wt.encode("漢語說話", "zh")[3:], "zh") == "汉语说话"


def test_unknown_tag_and_language(wt):
    with pytest.raises(ValueError):
        wt.encode("hello [applause]", "en")
    with pytest.raises(WhisperWeightsError, match="no language token"):
        wt.encode("hello", "xx")


def test_encode_file_names_line(tmp_path, wt):
    src = tmp_path / "text"
    src.write_text("u1 fine [laugh]\nu2 bad [applause]\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"text:2: utterance u2"):
        tokens._encode_file(wt, str(src), str(tmp_path / "out"), "en", None)
    assert not (tmp_path / "out").exists()


def test_tag_loops_are_collapsed(wt):
    loop = wt.encode("ha", "en") + ["[laugh]"] * 40 + ["Ġend"]
    assert wt.decode(loop, "en") == "ha [laugh] end"
    two = wt.encode("ha [laugh] [laugh] end", "en")
    assert wt.decode(two, "en") == "ha [laugh] [laugh] end"
