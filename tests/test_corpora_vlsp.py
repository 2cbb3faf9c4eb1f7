"""Vietnamese text normaliser and the VLSP 2025 VC preparer."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import pytest

from pyutils.corpora.common import PrepError
from pyutils.corpora.prep import Options
from pyutils.corpora.vi_text import normalize_vi, read_number

FIX = Path(__file__).parent / "fixtures" / "corpora" / "vlsp_vc"


@pytest.mark.parametrize("n,words", [
    (0, "không"), (5, "năm"), (10, "mười"), (11, "mười một"), (14, "mười bốn"),
    (15, "mười lăm"), (20, "hai mươi"), (21, "hai mươi mốt"), (24, "hai mươi tư"),
    (25, "hai mươi lăm"), (55, "năm mươi lăm"), (100, "một trăm"), (101, "một trăm linh một"),
    (105, "một trăm linh năm"), (110, "một trăm mười"), (115, "một trăm mười lăm"),
    (121, "một trăm hai mươi mốt"), (1000, "một nghìn"), (1005, "một nghìn không trăm linh năm"),
    (1995, "một nghìn chín trăm chín mươi lăm"), (2024, "hai nghìn không trăm hai mươi tư"),
    (10000, "mười nghìn"), (21000, "hai mươi mốt nghìn"), (100000, "một trăm nghìn"),
    (999999, "chín trăm chín mươi chín nghìn chín trăm chín mươi chín"),
    (1000000, "một triệu"),
])
def test_read_number(n, words):
    assert read_number(n) == words


@pytest.mark.parametrize("raw,norm", [
    ("Xin chào, tôi sinh năm 1995 ở TP.HCM.",
     "xin chào tôi sinh năm một nghìn chín trăm chín mươi lăm ở thành phố hồ chí minh"),
    ("Giá 3,5 triệu đồng, tăng 10%!", "giá ba phẩy năm triệu đồng tăng mười phần trăm"),
    ("1.000.000 đồng", "một triệu đồng"),
    ("Đi 5km nữa", "đi năm ki lô mét nữa"),
    ("Gọi 0912345678", "gọi không chín một hai ba bốn năm sáu bảy tám"),
    ("Ông ấy là PGS. TS. Nguyễn Văn A", "ông ấy là phó giáo sư tiến sĩ nguyễn văn a"),
    ("UBND TP Hà Nội", "ủy ban nhân dân thành phố hà nội"),
    ("“Thật sao?” – cô hỏi…", "thật sao cô hỏi"),
])
def test_normalize_vi(raw, norm):
    assert normalize_vi(raw) == norm


def test_normalize_vi_nfc_and_tone_marks():
    decomposed = unicodedata.normalize("NFD", "Tiếng Việt")
    out = normalize_vi(decomposed)
    assert out == "tiếng việt" and unicodedata.is_normalized("NFC", out)


def _kv(p: Path) -> dict:
    return dict(line.split(" ", 1) for line in p.read_text(encoding="utf-8").splitlines())


def test_vlsp_vc_prepare(tmp_path):
    from pyutils.corpora import vlsp_vc
    from pyutils.datadir.validate import validate_data_dir

    vlsp_vc.prepare(FIX, Options(out=tmp_path, nj=1))
    for d in ("train_text", "train_audio", "test_src", "test_ref"):
        rep = validate_data_dir(tmp_path / d)
        assert rep.ok, (d, rep.errors)
    text = _kv(tmp_path / "train_text" / "text")
    assert text == {
        "spk01_0001": "xin chào tôi sinh năm một nghìn chín trăm chín mươi lăm ở thành phố hồ chí minh",
        "spk01_0002": "giá ba phẩy năm triệu đồng tăng mười phần trăm có hai mươi mốt người và "
                      "một trăm linh năm ghế",
        "spk02_0001": "ông ấy là phó giáo sư tiến sĩ nguyễn văn mười lăm",
    }
    assert _kv(tmp_path / "train_text" / "text.orig")["spk02_0001"].startswith("Ông ấy là PGS.")
    assert _kv(tmp_path / "train_text" / "utt2spk")["spk02_0001"] == "spk02"
    assert _kv(tmp_path / "train_text" / "wav.scp")["spk02_0001"].startswith("ffmpeg ")  # 22.05 kHz
    assert sorted(_kv(tmp_path / "train_audio" / "utt2spk").items()) == [("spk03-a", "spk03"),
                                                                       ("spk04-b", "spk04")]
    assert _kv(tmp_path / "test_src" / "text") == {"src_0001": "một hai ba"}
    assert sorted(_kv(tmp_path / "test_ref" / "wav.scp")) == ["ref_0001", "ref_0002"]
    pairs = [ln.split("\t") for ln in (tmp_path / "test_pairs.tsv").read_text().splitlines()]
    assert [p[2] for p in pairs] == ["conv_0001.wav", "conv_0002.wav"]
    assert all(Path(p[0]).is_absolute() and Path(p[0]).is_file() and Path(p[1]).is_file()
               for p in pairs)


def test_vlsp_vc_errors_name_file_and_line(tmp_path):
    from pyutils.corpora import vlsp_vc

    root = tmp_path / "v"
    shutil.copytree(FIX, root)
    with open(root / "test" / "pairs.tsv", "a") as f:
        f.write("src/src_0001.flac\tref/ref_0001.flac\n")
    with pytest.raises(PrepError, match=r"pairs\.tsv:4: expected 'source_audio"):
        vlsp_vc.prepare(root, Options(out=tmp_path / "o", nj=1), ["test"])
    with open(root / "transcribed" / "transcripts.tsv", "a") as f:
        f.write("spk09_0001\tkhông có âm thanh\n")
    with pytest.raises(PrepError, match=r"transcripts\.tsv:4: transcript for 'spk09_0001' has no audio"):
        vlsp_vc.prepare(root, Options(out=tmp_path / "o", nj=1), ["train_text"])
