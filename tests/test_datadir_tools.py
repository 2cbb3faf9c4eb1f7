"""split/subset/combine/copy/utt2dur and the I/O helpers of pyutils.datadir."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.datadir import (AudioReadError, DataDirError, load_data_dir, read_kv,
                             read_wav_scp_entry, write_kv)
from pyutils.datadir.combine import combine_data_dirs
from pyutils.datadir.copy import copy_data_dir
from pyutils.datadir.split import balanced_contiguous, split_data_dir
from pyutils.datadir.subset import subset_data_dir
from pyutils.datadir.utt2dur import compute_utt2dur
from pyutils.datadir.validate import validate_data_dir

ROOT = Path(__file__).resolve().parents[1]


def make_dir(root: Path, spk_sizes=(3, 1, 2, 4), prefix="", pipe_every=0) -> Path:
    """Valid data dir: speaker k has spk_sizes[k] utterances of 0.1 s (+1 ms per index)."""
    (root / "wav").mkdir(parents=True, exist_ok=True)
    d = root / "data"
    d.mkdir(exist_ok=True)
    wav, text, u2s = {}, {}, {}
    n = 0
    for k, size in enumerate(spk_sizes):
        spk = f"{prefix}s{k}"
        for i in range(size):
            utt = f"{spk}-{i}"
            path = root / "wav" / f"{utt}.wav"
            sf.write(path, np.zeros(1600 + 16 * n, dtype="int16"), 16000)
            wav[utt] = f"cat {path} |" if pipe_every and n % pipe_every == 0 else str(path)
            text[utt] = f"words of {utt}"
            u2s[utt] = spk
            n += 1
    write_kv(d / "wav.scp", wav)
    write_kv(d / "text", text)
    write_kv(d / "utt2spk", u2s)
    subprocess.run([sys.executable, "-m", "pyutils.datadir.cli", "fix", "--no-backup", str(d)],
                   check=True, capture_output=True)
    return d


def datadir_cli(*args):
    return subprocess.run([sys.executable, "-m", "pyutils.datadir.cli", *map(str, args)],
                          capture_output=True, text=True)


# --- I/O -------------------------------------------------------------------

def test_read_kv_order_and_errors(tmp_path):
    f = tmp_path / "text"
    f.write_text("b x  y \na\tz\n")
    assert read_kv(f) == {"b": "x  y", "a": "z"}
    assert list(read_kv(f)) == ["b", "a"]
    f.write_text("a 1\nb\n")
    with pytest.raises(DataDirError, match=r"text:2: expected '<key> <value>'"):
        read_kv(f)
    assert read_kv(f, allow_empty_value=True) == {"a": "1", "b": ""}
    f.write_text("a 1\na 2\n")
    with pytest.raises(DataDirError, match=r"text:2: duplicate key 'a' \(first on line 1\)"):
        read_kv(f)
    f.write_bytes(b"a \xff\n")
    with pytest.raises(DataDirError, match="text:1: not valid UTF-8"):
        read_kv(f)


def test_write_kv_byte_order_and_atomic(tmp_path):
    f = tmp_path / "sub" / "utt2spk"
    write_kv(f, {"b": "1", "B": "2", "a_1": "3", "a-1": "4", "ä": "5"})
    assert [l.split()[0] for l in f.read_text().splitlines()] == ["B", "a-1", "a_1", "b", "ä"]
    before = f.read_text()
    with pytest.raises(DataDirError):
        write_kv(f, {"ok": "1", "bad key": "2"})
    assert f.read_text() == before  # the failed write left the old file intact
    assert [p.name for p in f.parent.iterdir()] == ["utt2spk"]  # no temp left


def test_read_wav_scp_entry_paths_and_pipes(tmp_path):
    x = (np.arange(800) % 100 - 50).astype("int16") * 100
    wav = tmp_path / "a.wav"
    sf.write(wav, x, 8000)
    flac = tmp_path / "a.flac"
    sf.write(flac, x, 8000)
    for entry in (str(wav), str(flac), f"sox {flac} -t wav - |", f"cat {wav} |",
                  f"ffmpeg -loglevel error -i {flac} -f wav - |"):
        data, sr = read_wav_scp_entry(entry, dtype="int16")
        assert sr == 8000 and np.array_equal(data, x), entry
    data, sr = read_wav_scp_entry(str(wav))
    assert data.dtype == np.float32 and np.allclose(data, x / 32768.0)
    with pytest.raises(AudioReadError, match="no such file"):
        read_wav_scp_entry(str(tmp_path / "missing.wav"))
    with pytest.raises(AudioReadError, match="pipe exited with code"):
        read_wav_scp_entry("false |")
    with pytest.raises(AudioReadError, match="cannot decode"):
        read_wav_scp_entry("echo not-audio |")


def test_read_wav_scp_entry_kaldi_ark(tmp_path):
    import kaldiio

    x = (np.arange(400) - 200).astype("int16")
    ark = tmp_path / "w.ark"
    kaldiio.save_ark(str(ark), {"u1": (8000, x)}, scp=str(tmp_path / "w.scp"))
    entry = (tmp_path / "w.scp").read_text().split()[1]
    data, sr = read_wav_scp_entry(entry, dtype="int16")
    assert sr == 8000 and np.array_equal(data, x)


# --- split -----------------------------------------------------------------

def test_balanced_contiguous():
    assert balanced_contiguous([1, 1, 1, 1], 2) == [[0, 1], [2, 3]]
    parts = balanced_contiguous([10, 1, 1, 1, 1], 3)
    assert parts[0] == [0] and all(parts)
    assert sum(len(p) for p in parts) == 5
    with pytest.raises(ValueError):
        balanced_contiguous([1], 2)


def test_split_by_speaker_keeps_speakers_whole(tmp_path):
    d = make_dir(tmp_path)
    dirs = split_data_dir(d, 3)
    assert [p.relative_to(d).as_posix() for p in dirs] == ["split3/1", "split3/2", "split3/3"]
    seen = []
    for p in dirs:
        assert validate_data_dir(p).ok
        spks = set(read_kv(p / "utt2spk").values())
        assert set(read_kv(p / "spk2utt")) == spks
        seen += list(read_kv(p / "utt2spk"))
        for other in dirs:
            if other != p:
                assert not spks & set(read_kv(other / "utt2spk").values())
    assert sorted(seen) == sorted(read_kv(d / "utt2spk"))
    with pytest.raises(DataDirError, match="cannot split 4 speakers into 5 parts"):
        split_data_dir(d, 5)


def test_split_per_utt_cli(tmp_path):
    d = make_dir(tmp_path)
    p = subprocess.run([str(ROOT / "utils/split_data.sh"), "--per-utt", str(d), "4"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    sizes = [len(read_kv(d / "split4utt" / str(k) / "text")) for k in range(1, 5)]
    assert sizes == [3, 2, 3, 2] or sorted(sizes) == [2, 2, 3, 3]
    assert sum(sizes) == 10
    assert datadir_cli("split", d, 11).returncode == 1


# --- subset ----------------------------------------------------------------

def test_subset_selectors(tmp_path):
    d = make_dir(tmp_path)
    utts = load_data_dir(d).utts
    assert subset_data_dir(d, tmp_path / "f", first=3) == 3
    assert list(read_kv(tmp_path / "f/utt2spk")) == utts[:3]
    subset_data_dir(d, tmp_path / "l", last=2)
    assert list(read_kv(tmp_path / "l/text")) == utts[-2:]
    subset_data_dir(d, tmp_path / "r1", random=4, seed=3)
    subset_data_dir(d, tmp_path / "r2", random=4, seed=3)
    assert read_kv(tmp_path / "r1/utt2spk") == read_kv(tmp_path / "r2/utt2spk")
    assert validate_data_dir(tmp_path / "r1").ok
    (tmp_path / "spk.list").write_text("s2\ns0\n")
    subset_data_dir(d, tmp_path / "s", spk_list=tmp_path / "spk.list")
    assert set(read_kv(tmp_path / "s/spk2utt")) == {"s0", "s2"}
    assert set(read_kv(tmp_path / "s/wav.scp")) == set(read_kv(tmp_path / "s/utt2spk"))
    (tmp_path / "utt.list").write_text("s3-1\ns1-0 extra fields ignored\nnot-there\n")
    subset_data_dir(d, tmp_path / "u", utt_list=tmp_path / "utt.list")
    assert list(read_kv(tmp_path / "u/utt2spk")) == ["s1-0", "s3-1"]


def test_subset_refuses_empty_or_oversized_selections(tmp_path):
    d = make_dir(tmp_path)  # 10 utterances
    for sel, msg in [({"first": 0}, ">= 1, got 0"), ({"random": 0}, ">= 1"), ({"last": 11}, "has only 10"),
                     ({"random": 11}, "has only 10")]:
        with pytest.raises(DataDirError, match=msg):
            subset_data_dir(d, tmp_path / "out", **sel)
    (tmp_path / "none.list").write_text("not-there\n")
    with pytest.raises(DataDirError, match="selects no utterance"):
        subset_data_dir(d, tmp_path / "out", utt_list=tmp_path / "none.list")
    assert not (tmp_path / "out").exists()  # nothing written
    assert subset_data_dir(d, tmp_path / "all", first=10) == 10


def test_writers_refuse_their_source_or_a_file(tmp_path):
    d = make_dir(tmp_path / "x")
    before = (d / "text").read_text()
    (tmp_path / "alias").symlink_to(d)
    note = tmp_path / "note.txt"
    note.write_text("keep\n")
    for write in (lambda dest: subset_data_dir(d, dest, first=2), lambda dest: copy_data_dir(d, dest),
                  lambda dest: combine_data_dirs(dest, [d])):
        with pytest.raises(DataDirError, match="is the source"):
            write(tmp_path / "alias")
        with pytest.raises(DataDirError, match="existing file"):
            write(note)
    assert (d / "text").read_text() == before and note.read_text() == "keep\n"


def test_subset_cli_kaldi_and_option_forms(tmp_path):
    d = make_dir(tmp_path)
    sh = str(ROOT / "utils/subset_data_dir.sh")
    assert subprocess.run([sh, "--first", str(d), "2", str(tmp_path / "a")]).returncode == 0
    assert subprocess.run([sh, "--last", "3", str(d), str(tmp_path / "b")]).returncode == 0
    assert subprocess.run([sh, str(d), "5", str(tmp_path / "c")]).returncode == 0
    assert len(read_kv(tmp_path / "a/text")) == 2
    assert len(read_kv(tmp_path / "b/text")) == 3
    assert len(read_kv(tmp_path / "c/text")) == 5


# --- copy / combine --------------------------------------------------------

def test_copy_with_prefixes_then_combine(tmp_path):
    d = make_dir(tmp_path / "x")
    copy_data_dir(d, tmp_path / "p", utt_prefix="p-", spk_prefix="p-")
    assert validate_data_dir(tmp_path / "p").ok
    assert read_kv(tmp_path / "p/utt2spk")["p-s0-1"] == "p-s0"
    assert read_kv(tmp_path / "p/wav.scp")["p-s0-1"] == read_kv(d / "wav.scp")["s0-1"]
    out = combine_data_dirs(tmp_path / "all", [d, tmp_path / "p"])
    assert len(out.utts) == 20
    assert validate_data_dir(tmp_path / "all").ok
    with pytest.raises(DataDirError, match="is in both"):
        combine_data_dirs(tmp_path / "dup", [d, tmp_path / "p", d])


def test_combine_skips_partial_files_and_cli(tmp_path):
    a = make_dir(tmp_path / "a", prefix="a")
    b = make_dir(tmp_path / "b", prefix="b")
    (a / "utt2lang").write_text("".join(f"{u} en\n" for u in read_kv(a / "utt2spk")))
    p = subprocess.run([str(ROOT / "utils/combine_data.sh"), str(tmp_path / "c"), str(a), str(b)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "utt2lang is missing in 1 of 2 sources" in p.stderr
    assert not (tmp_path / "c/utt2lang").exists()
    assert validate_data_dir(tmp_path / "c").ok


# --- utt2dur ---------------------------------------------------------------

def test_utt2dur_files_and_pipes(tmp_path):
    d = make_dir(tmp_path, pipe_every=3)
    assert any(v.endswith("|") for v in read_kv(d / "wav.scp").values())
    durs = compute_utt2dur(d, nj=2)
    assert durs["s0-0"] == pytest.approx(0.1)
    assert durs["s3-3"] == pytest.approx((1600 + 16 * 9) / 16000)
    assert read_kv(d / "utt2dur")["s0-0"] == "0.100"
    assert validate_data_dir(d).ok


def test_utt2dur_with_segments(tmp_path):
    d = make_dir(tmp_path, spk_sizes=(2,))
    recos = list(read_kv(d / "wav.scp"))
    write_kv(d / "segments", {"s0-0": f"{recos[0]} 0.00 0.04", "s0-1": f"{recos[1]} 0.02 0.05"})
    durs = compute_utt2dur(d)
    assert durs == pytest.approx({"s0-0": 0.04, "s0-1": 0.03})
    assert "reco2dur" in os.listdir(d)
    assert validate_data_dir(d).ok


def test_meta_files_and_text_variants_follow(tmp_path):
    d = make_dir(tmp_path, spk_sizes=(2, 2))
    (d / "feats_type").write_text("raw\n")
    write_kv(d / "text_with_nvvs", {u: "x [laugh]" for u in read_kv(d / "utt2spk")})
    (d / "ref.jsonl").write_text("{}\n")
    subset_data_dir(d, tmp_path / "s", first=3)
    assert (tmp_path / "s/feats_type").read_text() == "raw\n"
    assert len(read_kv(tmp_path / "s/text_with_nvvs")) == 3
    assert not (tmp_path / "s/ref.jsonl").exists()
    assert validate_data_dir(tmp_path / "s").ok
