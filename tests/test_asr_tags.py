"""NVV tags inside the ASR recipe: atomic tokens, internal form round trip, repair."""

import json
import subprocess
import sys

import pytest

from pyutils.asr import postprocess, tags_text, text_norm, tokens
from pyutils.tags import challenge_tags


def test_internal_form_round_trip_all_tags():
    for tag in challenge_tags():
        official = f"so [{tag}] it goes"
        internal = tags_text.to_internal(official)
        assert " " not in internal.split("[", 1)[1].split("]", 1)[0]
        assert tags_text.from_internal(internal) == official


def test_internal_form_names():
    assert tags_text.to_internal("a [Throat Clearing] b") == "a [throat_clearing] b"
    assert "[throat_clearing]" in tags_text.internal_tokens()
    assert len(tags_text.internal_tokens()) == 16


def test_to_internal_rejects_unknown_tag_in_training_text():
    with pytest.raises(ValueError, match="not one of the 16"):
        tags_text.to_internal("hello [applause]")


@pytest.mark.parametrize("raw", [
    "", "<unk>", "[", "]]", "[[laugh]]", "a [laugh b", "a ] b [cough", "[foo] bar", "[]",
    "<sos/eos> x [throat_clearing]", "[LAUGH][Sigh]", "x [throat-clearing] y", "[ laugh ]",
    "你好[laugh]吗", "[", "[[[]]]", "a [b [c] d] e",
])
def test_repair_always_valid(raw):
    from pyutils.scoring.textnorm import parse_tagged

    fixed = tags_text.repair(raw)
    for lang in ("en", "zh"):
        parse_tagged(fixed, lang)  # raises ScoringError when invalid


def test_repair_maps_spellings():
    assert tags_text.repair("ok [throat_clearing] [LAUGH] [applause] fine") == "ok [throat clearing] [laugh] fine"


def test_postprocess_fills_missing_and_validates(tmp_path):
    keys = tmp_path / "wav.scp"
    keys.write_text("u1 /a.wav\nu2 /b.wav\nu3 /c.wav\n")
    raw = tmp_path / "raw"
    raw.write_text("u1 hello [throat_clearing] there\nu3 [bogus] [[ ]\n")
    out = tmp_path / "text"
    postprocess.main(["repair", "--lang", "en", "--keys", str(keys), str(raw), str(out)])
    lines = out.read_text().splitlines()
    assert lines == ["u1 hello [throat clearing] there", "u2", "u3"]
    sub = tmp_path / "sub.jsonl"
    r = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "package-track1", "--text", str(out),
                        "--ref-ids", str(keys), "--out", str(sub)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "validate-track1", "--hyp", str(sub)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(x) for x in sub.read_text().splitlines()]
    assert [r["utt_id"] for r in rows] == ["u1", "u2", "u3"]


def test_zh_spacing_restored():
    assert postprocess.clean_hypothesis("你 好 [laugh] 吗", "zh") == "你好[laugh]吗"
    assert postprocess.clean_hypothesis("hello [laugh] world", "en") == "hello [laugh] world"


def test_text_norm_keeps_tags_and_normalises_text():
    assert text_norm.normalise("Hello, World! [Laugh] It's OK.", "en") == "hello world [Laugh] it's ok"
    assert text_norm.normalise("你好，世界！ [laugh] 我们", "zh") == "你好世界[laugh]我们"
    assert text_norm.normalise("Xin chào, Việt Nam! [sigh]", "vi") == "xin chào việt nam [sigh]"
    # unknown language -> generic normaliser
    assert text_norm.get("xx") is text_norm.get("generic")


def test_bpe_keeps_tags_atomic(tmp_path):
    lines = []
    words = "the cat sat on a mat and we like green tea with big red apples".split()
    for i in range(300):
        ws = [words[(i * 7 + k * 3) % len(words)] for k in range(6)]
        tag = tags_text.internal_tokens()[i % 16]
        lines.append(" ".join(ws[:3] + [tag] + ws[3:]))
    txt = tmp_path / "train.txt"
    txt.write_text("\n".join(lines) + "\n")
    model = tokens.train_bpe(str(txt), 60, str(tmp_path / "bpe"))
    for tag in tags_text.internal_tokens():
        pieces = tokens.bpe_pieces(model, f"we like{tag}green tea {tag} ok")
        assert pieces.count(tag) == 2, pieces
        # no piece contains part of a tag
        assert not [p for p in pieces if p != tag and ("[" in p or "]" in p)]


def test_char_tokens_keep_tags_atomic():
    toks = tokens.char_tokens("你好[throat_clearing]吗 [laugh]", tags_text.internal_tokens())
    assert toks == ["你", "好", "[throat_clearing]", "吗", "<space>", "[laugh]"]


def test_token_list_check_catches_missing_tag(tmp_path):
    good = ["<blank>", "<unk>", "你", "好"] + tags_text.internal_tokens() + ["<sos/eos>"]
    tl = tmp_path / "tokens.txt"
    tl.write_text("\n".join(good) + "\n")
    assert tokens.check(str(tl), "char") == []
    tl.write_text("\n".join([t for t in good if t != "[laugh]"]) + "\n")
    assert any("[laugh]" in p for p in tokens.check(str(tl), "char"))


def test_prepare_text_errors_name_file_and_line(tmp_path):
    from pyutils.asr import prepare_text

    src = tmp_path / "text"
    src.write_text("u1 Hello, there [Laugh].\nu2 bad [applause] here\n")
    with pytest.raises(SystemExit, match=r"text:2: utterance u2"):
        prepare_text.convert_file(str(src), str(tmp_path / "out"), "en", True)
    assert not (tmp_path / "out").exists()   # nothing half-written
    src.write_text("u1 Hello, there [Throat Clearing].\n")
    prepare_text.convert_file(str(src), str(tmp_path / "out"), "en", True)
    assert (tmp_path / "out").read_text() == "u1 hello there [throat_clearing]\n"
    prepare_text.convert_file(str(src), str(tmp_path / "out"), "en", False)
    assert (tmp_path / "out").read_text() == "u1 hello there\n"


def test_wer_units_and_rate():
    from pyutils.asr import wer

    assert wer.units("Xin chào [sigh] bạn", "vi", True) == ["xin", "chào", "[sigh]", "bạn"]
    assert wer.units("你好[laugh]吗", "zh", True) == ["你", "好", "[laugh]", "吗"]
    res = wer.error_rate({"u1": "xin chào bạn", "u2": "tôi đi"}, {"u1": "xin chào"}, "vi", False)
    assert res["edits"] == 3 and res["ref_units"] == 5 and res["missing_hyp"] == 1


def test_espnet_tokenizers_keep_tags_atomic(tmp_path):
    """The tokenizers ESPnet itself builds from our files (char + nlsyms, sentencepiece)."""
    from espnet2.text.char_tokenizer import CharTokenizer
    from espnet2.text.sentencepiece_tokenizer import SentencepiecesTokenizer

    tags = tags_text.internal_tokens()
    char = CharTokenizer(non_linguistic_symbols=tags)
    for tag in tags:
        text = f"你好{tag}吗{tag}"
        toks = char.text2tokens(text)
        assert toks == ["你", "好", tag, "吗", tag]
        assert char.tokens2text(toks) == text
    txt = tmp_path / "train.txt"
    txt.write_text("\n".join(f"we like green tea {t} every day" for t in tags * 10) + "\n")
    model = tokens.train_bpe(str(txt), 40, str(tmp_path / "bpe"))
    sp = SentencepiecesTokenizer(model)
    for tag in tags:
        toks = sp.text2tokens(f"green {tag} tea")
        assert tag in toks
        assert tags_text.from_internal(sp.tokens2text(toks)) == tags_text.from_internal(f"green {tag} tea")
