"""benchmarks/sqa_ensemble.py: averaging the stored outputs of several SQA models."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

from sqa_ensemble import mean_outputs  # noqa: E402


def _out(p, score, n=4):
    return {"frame_probs": np.full((n, 3), p, np.float32), "utt_probs": np.full(3, p),
            "score": score, "duration": n * 0.02}


def test_mean_of_posteriors_and_scores():
    m = mean_outputs({"a": {"u1": _out(0.2, 2.0)}, "b": {"u1": _out(0.6, 4.0)}})
    assert np.allclose(m["u1"]["frame_probs"], 0.4) and np.allclose(m["u1"]["utt_probs"], 0.4)
    assert m["u1"]["score"] == pytest.approx(3.0) and m["u1"]["duration"] == pytest.approx(0.08)


def test_missing_recording_names_member_and_utt():
    with pytest.raises(ValueError, match="member b has no output for u2"):
        mean_outputs({"a": {"u1": _out(0.2, 2.0), "u2": _out(0.2, 2.0)}, "b": {"u1": _out(0.6, 4.0)}})


def test_frame_count_mismatch_is_refused():
    with pytest.raises(ValueError, match="u1 has 5 frames"):
        mean_outputs({"a": {"u1": _out(0.2, 2.0)}, "b": {"u1": _out(0.6, 4.0, n=5)}})
