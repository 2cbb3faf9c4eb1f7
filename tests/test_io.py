"""The shared I/O module: readers name file:line, writers are atomic."""

import argparse
import os

import pytest

from pyutils.cli_types import str2bool
from pyutils.io import (InputError, atomic_write, atomic_write_text, iter_jsonl, read_jsonl, read_scp, read_text,
                        write_jsonl)


def test_jsonl_round_trip_and_errors(tmp_path):
    p = tmp_path / "a.jsonl"
    write_jsonl(p, [{"utt_id": "u1", "text": "é [laugh]"}, {"utt_id": "u2"}])
    assert "é" in p.read_text(encoding="utf-8")  # not \u escaped
    assert read_jsonl(p) == [{"utt_id": "u1", "text": "é [laugh]"}, {"utt_id": "u2"}]
    p.write_text('{"a": 1}\n\n{"a": \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.jsonl:3: INVALID_JSON: invalid JSON"):
        read_jsonl(p)
    p.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.jsonl:2: INVALID_JSONL_RECORD"):
        read_jsonl(p)
    p.write_text("\ufeff" + '{"a": 1}\n', encoding="utf-8")
    assert read_jsonl(p) == [{"a": 1}]
    with pytest.raises(InputError, match="byte-order mark"):
        list(iter_jsonl(p, bom="error"))
    p.write_text("", encoding="utf-8")
    assert read_jsonl(p) == []
    with pytest.raises(InputError, match="EMPTY_JSONL"):
        list(iter_jsonl(p, allow_empty=False))


def test_kaldi_readers(tmp_path):
    p = tmp_path / "text"
    p.write_text("u1 hello  world \nu2\n\nu3 x\r\n", encoding="utf-8")
    assert read_text(p) == {"u1": "hello  world", "u2": "", "u3": "x"}
    with pytest.raises(InputError, match=r"text:2: MISSING_VALUE"):
        read_scp(p)
    p.write_text("u1 a\nu1 b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"text:2: DUPLICATE_KEY: 'u1' again \(first on line 1\)"):
        read_text(p)
    p.write_bytes(b"u1 a\nu2 \xff\n")
    with pytest.raises(InputError, match=r"text:2: INVALID_ENCODING"):
        read_text(p)
    with pytest.raises(InputError, match="INPUT_FILE_READ_ERROR"):
        read_text(tmp_path)


def test_atomic_write_keeps_the_old_file_on_error(tmp_path):
    p = tmp_path / "sub" / "out.txt"
    atomic_write_text(p, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(p) as f:
            f.write("half")
            raise RuntimeError("crash")
    assert p.read_text() == "old\n"
    assert os.listdir(p.parent) == ["out.txt"]  # no temp file left behind


def test_str2bool():
    assert str2bool("True") is True and str2bool("0") is False
    with pytest.raises(argparse.ArgumentTypeError, match="expected true/false"):
        str2bool("maybe")
