"""chorus-synth vc: VLSP-like layout, unseen target voices, held-out sentences, text norm."""

import unicodedata
from pathlib import Path

import pytest
import soundfile as sf

from pyutils.synth import cli


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("vc") / "corpus"
    cli.main(["vc", "--preset", "ci", "--out", str(out), "--num-voices", "5",
              "--num-target-voices", "2", "--utts-per-voice", "4", "--num-pairs", "4"])
    return out


def _kaldi(p):
    return dict(l.split(" ", 1) for l in Path(p).read_text(encoding="utf-8").splitlines())


def test_layout(corpus):
    d = corpus / "data"
    for s in ("train_text", "train_audio", "test_src", "test_ref"):
        for f in ("wav.scp", "utt2spk", "spk2utt"):
            assert (d / s / f).is_file()
    assert (d / "train_text" / "text").is_file() and (d / "test_src" / "text").is_file()
    assert not (d / "train_audio" / "text").exists()
    for s in ("train_text", "train_audio", "test_src", "test_ref"):
        for path in _kaldi(d / s / "wav.scp").values():
            info = sf.info(path)
            assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")


def test_pairs_target_unseen_and_sources_held_out(corpus):
    d = corpus / "data"
    train_spk = set(_kaldi(d / "train_text" / "utt2spk").values()) | \
        set(_kaldi(d / "train_audio" / "utt2spk").values())
    ref_wavs = set(_kaldi(d / "test_ref" / "wav.scp").values())
    src_wavs = set(_kaldi(d / "test_src" / "wav.scp").values())
    ref_spk = {u.split("-")[0]: s for u, s in _kaldi(d / "test_ref" / "utt2spk").items()}
    rows = [l.split("\t") for l in (corpus / "pairs" / "test.tsv").read_text().splitlines()]
    assert len(rows) == 4
    for src, tgt, name in rows:
        assert src in src_wavs and tgt in ref_wavs and name.endswith(".wav")
        assert Path(tgt).stem.split("-")[0] not in train_spk
    assert not set(ref_spk.values()) & train_spk
    train_text = set(_kaldi(d / "train_text" / "text").values())
    assert not set(_kaldi(d / "test_src" / "text").values()) & train_text


def test_text_is_normalised(corpus):
    for s in ("train_text", "test_src"):
        for t in _kaldi(corpus / "data" / s / "text").values():
            assert t == unicodedata.normalize("NFC", t) == t.lower()
            assert not any(unicodedata.category(c)[0] == "P" for c in t)
            assert t.strip() == t and "  " not in t


def test_data_dirs_pass_the_datadir_validator(corpus, tmp_path):
    validate = pytest.importorskip("pyutils.datadir.validate").validate_data_dir
    for s in ("train_text", "train_audio", "test_src", "test_ref"):
        rep = validate(corpus / "data" / s)
        assert rep.ok, rep.errors
