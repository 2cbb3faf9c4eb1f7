"""Long recordings split at pauses for decode_dir (pyutils.asr.long_segments)."""

import numpy as np
import pytest
import soundfile as sf

from pyutils.asr.decode_dir import plan_long_inputs
from pyutils.asr.long_segments import join_hypotheses, plan_cuts, segments_for

SR = 16000


def _speechy(seconds, pauses, seed=0):
    """Noise bursts (speech stand-in) with 0.3 s silent pauses starting at ``pauses`` (s)."""
    x = 0.3 * np.random.default_rng(seed).standard_normal(int(seconds * SR)).astype(np.float32)
    for p in pauses:
        x[int(p * SR):int((p + 0.3) * SR)] = 0.0
    return x


def test_cuts_fall_in_pauses_and_respect_the_limit():
    x = _speechy(70.0, pauses=[12.0, 24.0, 45.0, 51.0, 66.0])
    parts = plan_cuts(x, SR, max_s=28.0, search_s=8.0)
    assert parts[0][0] == 0.0 and parts[-1][1] == pytest.approx(70.0)
    assert all(b - a <= 28.0 + 1e-9 for a, b in parts)
    assert all(parts[k][1] == parts[k + 1][0] for k in range(len(parts) - 1))   # no gap, no overlap
    cuts = [b for _, b in parts[:-1]]
    # first window [20, 28] holds the pause at 24.0-24.3; the next [44, 52] both 45 and 51: the lowest wins
    assert 24.0 <= cuts[0] <= 24.3
    assert 45.0 <= cuts[1] <= 45.3 or 51.0 <= cuts[1] <= 51.3


def test_no_pause_cuts_at_the_limit_and_short_is_whole():
    x = _speechy(60.0, pauses=[])
    parts = plan_cuts(x, SR, max_s=28.0)
    assert all(b - a <= 28.0 + 1e-9 for a, b in parts) and parts[-1][1] == pytest.approx(60.0)
    assert plan_cuts(x[:SR * 10], SR) == [(0.0, 10.0)]


def test_segments_and_join():
    x = _speechy(40.0, pauses=[22.0])
    segs = segments_for({"a": 40.0, "b": 5.0}, lambda rec: (x, SR))
    assert segs["b"] == ("b", 0.0, -1.0)
    assert [k for k in segs if k.startswith("a")] == ["a__part000", "a__part001"]
    hyps = {"a__part001": "world [laugh]", "a__part000": "hello", "b": "short one"}
    assert join_hypotheses(hyps, segs) == {"a": "hello world [laugh]", "b": "short one"}
    with pytest.raises(ValueError, match="already a recording id"):
        segments_for({"a": 40.0, "a__part000": 1.0}, lambda rec: (x, SR))


def test_plan_long_inputs_writes_kaldi_segments(tmp_path):
    sf.write(tmp_path / "long.wav", _speechy(35.0, pauses=[25.0]), SR)
    sf.write(tmp_path / "short.wav", _speechy(3.0, pauses=[]), SR)
    scp = tmp_path / "wav.scp"
    scp.write_text(f"long {tmp_path / 'long.wav'}\nshort {tmp_path / 'short.wav'}\nbad {tmp_path / 'nope.wav'}\n")
    seg = tmp_path / "segments"
    segs = plan_long_inputs(str(scp), str(seg), 28.0)
    lines = seg.read_text().splitlines()
    assert lines[0].startswith("long__part000 long 0.000 25.") and lines[1].startswith("long__part001 long 25.")
    assert lines[1].endswith(" 35.000") and "short short 0 -1" in lines and "bad bad 0 -1" in lines
    assert set(segs) == {"long__part000", "long__part001", "short", "bad"}
    seg.unlink()
    assert plan_long_inputs(str(scp), str(seg), 40.0) is None and not seg.exists()
