"""TTS front-end: tags stay atomic tokens for every language, errors name file:line."""

import pytest

from pyutils.tags import challenge_tags
from pyutils.tts.frontend import (Frontend, FrontendError, split_tagged, tag_to_token, token_to_tag,
                                  tokenize_text_file)
from pyutils.tts.tokens import build_token_list


def test_split_tagged_keeps_tags_and_text():
    items = split_tagged("Well, [throat clearing] I think [LAUGH] so.")
    assert items == [("text", "Well, "), ("tag", "throat clearing"), ("text", " I think "),
                     ("tag", "laugh"), ("text", " so.")]


@pytest.mark.parametrize("bad", ["hi [giggle] there", "hi [laugh there", "hi ] there"])
def test_split_tagged_rejects(bad):
    with pytest.raises(FrontendError):
        split_tagged(bad)


def test_tag_token_roundtrip_for_all_tags():
    for tag in challenge_tags():
        tok = tag_to_token(tag)
        assert " " not in tok and tok.startswith("[") and tok.endswith("]")
        assert token_to_tag(tok) == tag


@pytest.mark.parametrize("lang,token_type,text", [
    ("en", "phn", "That was really surprising. [laugh] Oh [throat clearing] no!"),
    ("en", "char", "That was really surprising. [laugh] Oh [throat clearing] no!"),
    ("zh", "phn", "这真的太好笑了[laugh]，我们走吧[throat clearing]。"),
    ("zh", "pinyin", "这真的太好笑了[laugh]，我们走吧[throat clearing]。"),
    ("vi", "char", "Xin chào [laugh] các bạn [throat clearing]."),
])
def test_tags_are_single_tokens(lang, token_type, text):
    toks = Frontend(lang, token_type).tokenize_many([text])[0]
    assert toks.count("[laugh]") == 1
    assert toks.count("[throat_clearing]") == 1
    # the tag letters never leak into the phone/char stream
    assert "throat" not in " ".join(t for t in toks if not t.startswith("["))
    # order kept: laugh before throat clearing, and text on both sides of the first tag
    i, j = toks.index("[laugh]"), toks.index("[throat_clearing]")
    assert 0 < i < j
    assert all(t.strip() for t in toks)


def test_english_phonemes_not_letters():
    toks = Frontend("en", "phn").tokenize_many(["the cat [cough]"])[0]
    assert toks[-1] == "[cough]"
    assert "|" in toks and "c" not in toks  # espeak phonemes, not graphemes ("cat" -> k æ t)


def test_mandarin_pinyin_tones():
    toks = Frontend("zh", "phn").tokenize_many(["你好[sigh]"])[0]
    assert toks == ["n", "i3", "h", "ao3", "[sigh]"]
    assert Frontend("zh", "pinyin").tokenize_many(["你好[sigh]"])[0] == ["ni3", "hao3", "[sigh]"]


def test_unknown_language():
    with pytest.raises(FrontendError):
        Frontend("xx")


def test_tokenize_text_file_error_names_line(tmp_path):
    src = tmp_path / "text"
    src.write_text("u1 hello [laugh]\nu2 hello [giggle]\n", encoding="utf-8")
    out = tmp_path / "tokens"
    with pytest.raises(FrontendError, match=r"text:2: u2: unknown tag"):
        tokenize_text_file(str(src), str(out), "en", "char")
    assert not out.exists()


def test_token_list_has_all_tags(tmp_path):
    toks = build_token_list(["u1 h i [laugh] .", "u2 h [cough]"])
    assert toks[0] == "<blank>" and toks[1] == "<unk>" and toks[-1] == "<sos/eos>"
    for tag in challenge_tags():
        assert tag_to_token(tag) in toks
    assert len(toks) == len(set(toks))
    assert toks.index("h") < toks.index("i")  # by frequency


def test_token_inventory_check_names_utterance(tmp_path):
    from pyutils.tts.tokens import main as tokens_main

    (tmp_path / "tokens.txt").write_text("<blank>\n<unk>\na\nb\n|\n.\n<sos/eos>\n")
    (tmp_path / "ok").write_text("u1 | a b .\n")
    (tmp_path / "bad").write_text("u1 a b\nu2 a ʒ\nu3 | .\n")
    assert tokens_main([str(tmp_path / "ok"), "--check", str(tmp_path / "tokens.txt")]) == 0
    from pyutils.tts.tokens import check_inventory

    probs = check_inventory(str(tmp_path / "bad"), str(tmp_path / "tokens.txt"))
    assert len(probs) == 2 and ":2: u2:" in probs[0] and "ʒ" in probs[0] and ":3: u3: nothing to say" in probs[1]
    assert tokens_main([str(tmp_path / "bad"), "--check", str(tmp_path / "tokens.txt")]) == 2


@pytest.mark.parametrize("lang,text,bad", [
    ("en", "Hello 你好 there.", "你好"), ("en", "Привет [laugh]", "Привет"), ("en", "hi 😀", "😀"),
    ("zh", "你好こんにちは", "こんにちは"), ("en", "café naïve [laugh] 3 %", ""),
    ("zh", "你好 hello ＡＢ，世界！", ""), ("vi", "Xin chào các bạn", ""),
])
def test_foreign_characters(lang, text, bad):
    from pyutils.tts.frontend import foreign_characters

    assert foreign_characters(text, lang) == bad


def test_foreign_characters_refused_with_utterance(tmp_path):
    # espeak-ng would read these as "chinese letter chinese letter": refused, named, nothing written
    (tmp_path / "text").write_text("u1 Hello there.\nu2 Hello 你好 there.\n", encoding="utf-8")
    with pytest.raises(FrontendError, match=r"text:2: u2: characters outside the en front-end's inventory: '你'"):
        tokenize_text_file(str(tmp_path / "text"), str(tmp_path / "out"), "en", "char")
    assert not (tmp_path / "out").exists()


def test_mandarin_digit_gives_no_empty_token():
    toks = Frontend("zh", "phn").tokenize_many(["3只猫"])[0]
    assert "" not in toks and toks[:1] == ["3"]
