"""benchmarks/vc_devset.py: solo stretches of one speaker from RTTM turns (the DEV set's clips)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.vc_devset import read_rttm, solo_stretches  # noqa: E402


def test_solo_stretches_merge_close_turns_and_drop_overlapped_ones():
    turns = [(0.0, 1.0, "A"), (1.3, 3.0, "A"),      # merged across a 0.3 s gap: 0-3 s
             (5.0, 6.0, "A"), (5.5, 5.8, "B"),      # B talks inside: not solo for either
             (8.0, 9.0, "B")]
    got = sorted(solo_stretches(turns, gap=0.6))
    assert got == [(0.0, 3.0, "A"), (8.0, 9.0, "B")]
    assert (0.0, 1.0, "A") in solo_stretches(turns, gap=0.2)   # a smaller gap keeps them apart


def test_read_rttm_names_a_short_line(tmp_path):
    good = tmp_path / "a.rttm"
    good.write_text("SPEAKER f1 1 0.5 1.25 <NA> <NA> spk1 <NA> <NA>\n", encoding="utf-8")
    assert read_rttm([str(good)]) == {"f1": [(0.5, 1.75, "spk1")]}
    bad = tmp_path / "b.rttm"
    bad.write_text("SPEAKER f1 1 0.5\n", encoding="utf-8")
    try:
        read_rttm([str(bad)])
    except ValueError as exc:
        assert f"{bad}:1" in str(exc)
    else:
        raise AssertionError("a short RTTM line was accepted")
