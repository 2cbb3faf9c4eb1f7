"""Kaldi helper scripts in utils/: split_scp.pl, filter_scp.pl, utt2spk<->spk2utt."""

import random
import subprocess
from pathlib import Path

import pytest

UTILS = Path(__file__).resolve().parents[1] / "utils"


def sh(*args, stdin=None, check=True):
    return subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True,
                          check=check)


@pytest.mark.parametrize("seed", range(4))
def test_split_scp_contiguous_nonempty_balanced(tmp_path, seed):
    rng = random.Random(seed)
    spk_sizes = [rng.randint(1, 6) for _ in range(rng.randint(3, 12))]
    lines, u2s = [], []
    for s, size in enumerate(spk_sizes):
        for i in range(size):
            lines.append(f"s{s:02d}-{i} /path/{s}/{i}.wav\n")
            u2s.append(f"s{s:02d}-{i} s{s:02d}\n")
    scp = tmp_path / "in.scp"
    scp.write_text("".join(lines))
    (tmp_path / "utt2spk").write_text("".join(u2s))
    for n in range(1, len(spk_sizes) + 1):
        outs = [tmp_path / f"o{k}" for k in range(n)]
        sh(UTILS / "split_scp.pl", f"--utt2spk={tmp_path / 'utt2spk'}", scp, *outs)
        parts = [o.read_text() for o in outs]
        assert "".join(parts) == scp.read_text()  # contiguous, nothing lost
        assert all(parts)  # no empty part
        spk_sets = [{l.split()[0].split("-")[0] for l in p.splitlines()} for p in parts]
        assert sum(len(s) for s in spk_sets) == len(spk_sizes)  # speakers not split
        # -j N k gives the same part
        assert sh(UTILS / "split_scp.pl", f"--utt2spk={tmp_path / 'utt2spk'}", "-j", n,
                  n - 1, scp).stdout == parts[-1]
    # per line: sizes differ by at most one
    outs = [tmp_path / f"p{k}" for k in range(4)]
    sh(UTILS / "split_scp.pl", scp, *outs)
    sizes = [len(o.read_text().splitlines()) for o in outs]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(lines)
    too_many = sh(UTILS / "split_scp.pl", f"--utt2spk={tmp_path / 'utt2spk'}", scp,
                  *[tmp_path / f"x{k}" for k in range(len(spk_sizes) + 1)], check=False)
    assert too_many.returncode != 0 and "cannot split" in too_many.stderr


def test_filter_scp(tmp_path):
    (tmp_path / "ids").write_text("b\nd extra\n")
    (tmp_path / "in").write_text("a 1\nb 2\nc 3\nd 4\n")
    assert sh(UTILS / "filter_scp.pl", tmp_path / "ids", tmp_path / "in").stdout == "b 2\nd 4\n"
    assert sh(UTILS / "filter_scp.pl", "--exclude", tmp_path / "ids",
              tmp_path / "in").stdout == "a 1\nc 3\n"
    (tmp_path / "seg").write_text("u1 b 0 1\nu2 c 0 1\n")
    assert sh(UTILS / "filter_scp.pl", "-f", "2", tmp_path / "ids",
              tmp_path / "seg").stdout == "u1 b 0 1\n"
    assert sh(UTILS / "filter_scp.pl", tmp_path / "ids",
              stdin="b 9\nz 0\n").stdout == "b 9\n"


def test_utt2spk_spk2utt_round_trip(tmp_path):
    utt2spk = "a1 a\na2 a\nb1 b\nc1 c\nc2 c\n"
    spk2utt = sh(UTILS / "utt2spk_to_spk2utt.pl", stdin=utt2spk).stdout
    assert spk2utt == "a a1 a2\nb b1\nc c1 c2\n"
    assert sh(UTILS / "spk2utt_to_utt2spk.pl", stdin=spk2utt).stdout == utt2spk
    bad = sh(UTILS / "utt2spk_to_spk2utt.pl", stdin="a1 a\nb1\n", check=False)
    assert bad.returncode != 0 and ":2:" in bad.stderr
