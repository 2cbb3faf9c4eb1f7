"""benchmarks/sqa_merged_reference.py: scores re-made with one charge per audible event."""

import importlib.util
import json
import os

import pytest

from pyutils.synth import faults

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sqa_merged_reference.py")
_spec = importlib.util.spec_from_file_location("sqa_merged_reference", _PATH)
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)


def _clip(s, e, k):
    return {"type": "distortion", "kind": "clipping", "start": s, "end": e, "strength": k}


def test_rewrites_only_merged_scores_and_keeps_the_jitter(tmp_path):
    overlap = [_clip(0.4, 1.8, 0.6), _clip(0.5, 1.7, 0.6)]
    single = [_clip(0.4, 1.8, 0.6)]
    (tmp_path / "meta").mkdir()
    rows = [{"utt_id": "a", "dur": 4.0, "details": overlap}, {"utt_id": "b", "dur": 4.0, "details": single}]
    (tmp_path / "meta" / "meta.1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    jitter = 0.05
    old_a = round(faults.quality_score(overlap, 4.0) + jitter, 3)
    old_b = round(faults.quality_score(single, 4.0) - jitter, 3)
    ref = tmp_path / "ref.jsonl"
    ref.write_text(json.dumps({"utt_id": "a", "score": old_a, "faults": {}}) + "\n"
                   + json.dumps({"utt_id": "b", "score": old_b, "faults": {}}) + "\n")
    assert M.main(["--corpus", str(tmp_path), "--gap", "0.2", str(ref)]) == 0
    new = {r["utt_id"]: r["score"] for r in map(json.loads, ref.read_text().splitlines())}
    assert new["b"] == old_b                                  # nothing to merge: untouched
    merged = faults.quality_score(faults.merge_audible_events(overlap, 0.2), 4.0)
    assert abs(new["a"] - (merged + jitter)) < 2e-3 and new["a"] > old_a


def test_unknown_recording_is_a_clear_error_and_the_file_is_kept(tmp_path):
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "meta.1.jsonl").write_text(json.dumps({"utt_id": "a", "dur": 1.0, "details": []}) + "\n")
    ref = tmp_path / "ref.jsonl"
    text = json.dumps({"utt_id": "zz", "score": 3.0, "faults": {}}) + "\n"
    ref.write_text(text)
    with pytest.raises(SystemExit, match=r"ref.jsonl:1: 'zz' is not in"):
        M.main(["--corpus", str(tmp_path), str(ref)])
    assert ref.read_text() == text
