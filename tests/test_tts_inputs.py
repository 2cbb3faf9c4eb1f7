"""Track 2 input checks: every bad line reported as file:line: CODE before synthesis."""

import json

import pytest

from pyutils.tts.inputs import jsonl_to_datadir, main, read_tts_jsonl


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_good_file(tmp_path):
    p = _write(tmp_path / "in.jsonl", [json.dumps({"utt_id": "a1", "text_with_nvvs": "Hi [laugh] there."}),
                                      json.dumps({"utt_id": "a2", "language": "zh", "text_with_nvvs": "[sigh]"})])
    rows, problems = read_tts_jsonl(p)
    assert problems == [] and rows == [("a1", "Hi [laugh] there."), ("a2", "[sigh]")]


def test_every_problem_named_with_line(tmp_path):
    p = _write(tmp_path / "in.jsonl", [
        json.dumps({"utt_id": "ok", "text_with_nvvs": "fine [cough]"}),
        json.dumps({"utt_id": "a2", "text_with_nvvs": "Hi [giggle]."}),
        "{not json",
        json.dumps({"text_with_nvvs": "no id"}),
        json.dumps({"utt_id": "a5", "text_with_nvvs": "   "}),
        json.dumps({"utt_id": "ok", "text_with_nvvs": "dup"}),
        json.dumps({"utt_id": "a/7", "text_with_nvvs": "x"}),
        json.dumps({"utt_id": "a8"}),
        json.dumps(["a", "b"]),
        json.dumps({"utt_id": "a10", "text_with_nvvs": "open [laugh"}),
    ])
    rows, problems = read_tts_jsonl(p)
    got = [(pr.line, pr.code) for pr in problems]
    assert got == [(2, "UNKNOWN_TAG"), (3, "BAD_JSON"), (4, "MISSING_UTT_ID"), (5, "EMPTY_TEXT"),
                   (6, "DUPLICATE_UTT_ID"), (7, "BAD_UTT_ID"), (8, "MISSING_TEXT"), (9, "NOT_OBJECT"),
                   (10, "BAD_BRACKETS")]
    assert str(problems[0]).startswith(f"{p}:2: UNKNOWN_TAG:")
    assert rows == [("ok", "fine [cough]")]


def test_cli_exit_code_and_nothing_written(tmp_path, capsys):
    p = _write(tmp_path / "in.jsonl", [json.dumps({"utt_id": "a1", "text_with_nvvs": "Hi [giggle]"})])
    out = tmp_path / "data"
    assert main([p, "--to-datadir", str(out)]) == 2
    assert f"{p}:1: UNKNOWN_TAG" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ValueError):
        jsonl_to_datadir(p, str(out), "spk0")


def test_to_datadir(tmp_path):
    p = _write(tmp_path / "in.jsonl", [json.dumps({"utt_id": "b", "text_with_nvvs": "two  [laugh]"}),
                                      json.dumps({"utt_id": "a", "text_with_nvvs": "one"})])
    assert main([p, "--to-datadir", str(tmp_path / "d"), "--spk", "v1"]) == 0
    assert (tmp_path / "d" / "text").read_text() == "a one\nb two [laugh]\n"
    assert (tmp_path / "d" / "utt2spk").read_text() == "a v1\nb v1\n"
    assert (tmp_path / "d" / "spk2utt").read_text() == "v1 a b\n"


def test_kaldi_text_check(tmp_path):
    t = tmp_path / "text"
    t.write_text("u1 ok [sigh]\nu2\nu3 bad [zzz]\n", encoding="utf-8")
    assert main([str(t), "--kaldi-text"]) == 2


def test_lang_names_every_foreign_row_at_once(tmp_path, capsys):
    p = _write(tmp_path / "in.jsonl", [json.dumps({"utt_id": "a1", "text_with_nvvs": "Hello 你好 [laugh]"}),
                                      json.dumps({"utt_id": "a2", "text_with_nvvs": "fine [cough]"}),
                                      json.dumps({"utt_id": "a3", "text_with_nvvs": "ok \U0001F600"})])
    assert main([str(p)]) == 0                          # without --lang: not this check's business
    capsys.readouterr()
    assert main([str(p), "--lang", "en", "--to-datadir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert f"{p}:1: FOREIGN_CHARACTERS: a1: characters outside the en front-end's inventory: '你' '好'" in err
    assert f"{p}:3: FOREIGN_CHARACTERS: a3:" in err and ":2:" not in err
    assert not (tmp_path / "d").exists()
    assert main([str(p), "--lang", "zh"]) == 2          # Han is Mandarin's, the emoji is nobody's
    err = capsys.readouterr().err
    assert ":1:" not in err and f"{p}:3: FOREIGN_CHARACTERS: a3:" in err
    t = tmp_path / "text"
    t.write_text("u1 ok [sigh]\nu2 привет\n", encoding="utf-8")
    assert main([str(t), "--kaldi-text", "--lang", "en"]) == 2
    assert f"{t}:2: FOREIGN_CHARACTERS: u2:" in capsys.readouterr().err
