"""NVV events: matching, event files, the detector file check, and the real-NVV sets."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyutils.nvv_detect import devset
from pyutils.nvv_detect.events import match_counts, micro, prf, read_events
from pyutils.nvv_detect.arrays import save_arrays

REPO = Path(__file__).resolve().parents[1]


def test_match_counts_one_to_one_by_tag_and_time():
    ref = {"u": [{"tag": "laugh", "start": 1.0, "end": 1.5}, {"tag": "cough", "start": 3.0, "end": 3.2}]}
    hyp = {"u": [{"tag": "laugh", "start": 1.2, "end": 1.4, "score": 0.9},
                 {"tag": "laugh", "start": 1.1, "end": 1.3, "score": 0.5},     # duplicate: FP
                 {"tag": "cough", "start": 5.0, "end": 5.2, "score": 0.9}]}    # too far: FP + FN
    c = match_counts(ref, hyp, ["u"])
    assert c["laugh"] == [1, 1, 0] and c["cough"] == [0, 1, 1]
    assert prf(1, 1, 0) == (0.5, 1.0, 2 / 3)
    assert micro(c) == prf(1, 2, 1)


def test_read_events_names_bad_line(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"utt_id": "a", "tag": "laugh", "start": 0, "end": 1}\n{"utt_id": "a", "tag": "laugh"}\n')
    with pytest.raises(ValueError, match=r"e\.jsonl:2"):
        read_events(str(p))


def test_splice_exact_positions_and_text():
    sr = devset.SR
    x = np.full(3 * sr, 0.1, dtype=np.float32)
    words = [["one", 0.1, 0.9], ["two", 1.1, 1.9], ["three", 2.1, 2.9]]
    clip = np.ones(sr // 2)
    y, events, text = devset.splice(x, words, [(1, "laugh", clip), (3, "cough", clip)],
                                    np.random.default_rng(0))
    assert text == "one [laugh] two three [cough]"
    for e in events:
        a, b = int(round(e["start"] * sr)), int(round(e["end"] * sr))
        assert b - a == sr // 2
        assert np.allclose(np.abs(y[a:b]), np.abs(y[a:b]).max())        # the scaled clip, nothing else
    assert abs(events[0]["start"] - 1.0) < 0.3              # after "one" (cut at 1.0 s), past the pause
    assert len(y) > len(x) + sr


def _installed():
    from pyutils.synth.nvv_bank_index import is_installed

    return is_installed() and (devset.speech_dir() / "silero_test.wav").is_file()


@pytest.mark.skipif(not _installed(), reason="real speech / NVV bank not installed (make -C tools)")
def test_devset_cli_writes_scorable_track1_reference(tmp_path):
    out = tmp_path / "dev"
    r = subprocess.run([sys.executable, "-m", "pyutils.nvv_detect.devset", "--split", "dev",
                        "--out", str(out), "--variants", "2"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    ref = [json.loads(line) for line in (out / "ref.jsonl").read_text().splitlines()]
    ev = read_events(str(out / "events.jsonl"))
    assert len(ref) == 6 and sum(len(v) for v in ev.values()) >= 3
    dev_clips = {c["clip_id"] for c in devset.bank_clips("dev")}
    assert all(e["clip"] in dev_clips for v in ev.values() for e in v)
    for row in ref:
        assert row["text_with_nvvs"].count("[") == len(ev.get(row["utt_id"], []))
    from pyutils.scoring.track1 import score_track1_files

    res = score_track1_files(str(out / "ref.jsonl"), str(out / "ref.jsonl"), single_language=True)
    assert res["FinalTrack1Score"] == 100.0
    # deterministic: a second build is byte-identical
    again = tmp_path / "dev2"
    subprocess.run([sys.executable, "-m", "pyutils.nvv_detect.devset", "--split", "dev",
                    "--out", str(again), "--variants", "2"], check=True, cwd=REPO, capture_output=True)
    assert (again / "text").read_text() == (out / "text").read_text()
    assert (again / "wav" / f"{ref[1]['utt_id']}.wav").read_bytes() == \
        (out / "wav" / f"{ref[1]['utt_id']}.wav").read_bytes()


def test_splice_pause_alone_adds_no_event():
    sr = devset.SR
    x = np.full(2 * sr, 0.1, dtype=np.float32)
    words = [["one", 0.1, 0.9], ["two", 1.1, 1.9]]
    y, events, text = devset.splice(x, words, [(1, None, None)], np.random.default_rng(0))
    assert events == [] and text == "one two"
    assert 2 * sr + int(0.3 * sr) <= len(y) <= 2 * sr + int(0.8 * sr)


def test_a_yamnet_detector_file_is_refused_by_name(tmp_path):
    """The YAMNet-patch detector (--detector yamnet) was removed: its model files say so."""
    from pyutils.nvv_detect import detect

    rng = np.random.default_rng(0)
    save_arrays({"W": rng.normal(size=(6, 3)), "b": np.zeros(3), "mu": np.zeros(6), "sigma": np.ones(6),
                 "classes": np.array(["none", "laugh", "cough"]), "thresholds": np.array([0.5, 0.5]),
                 "hop_s": np.float64(0.24), "context": np.int64(0), "feature_ids": np.arange(6)}, tmp_path / "old.npz")
    (tmp_path / "wav.scp").write_text("u x.wav\n")
    r = subprocess.run([sys.executable, "-m", "pyutils.nvv_detect.detect", "--wav-scp", str(tmp_path / "wav.scp"),
                        "--model", str(tmp_path / "old.npz"), "--out", str(tmp_path / "ev.jsonl")],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "a YAMNet-patch detector (--detector yamnet" in r.stderr and "c9e6e28" in r.stderr
    assert not (tmp_path / "ev.jsonl").exists()
    with pytest.raises(SystemExit):                          # a model is required: there is no default one
        detect.main(["--wav-scp", str(tmp_path / "wav.scp"), "--out", str(tmp_path / "ev.jsonl")])


def test_devset_check_says_whether_the_material_is_installed():
    r = subprocess.run([sys.executable, "-m", "pyutils.nvv_detect.devset", "--check"], capture_output=True, text=True,
                       cwd=REPO)
    if _installed():
        assert r.returncode == 0 and "installed" in r.stdout, r.stderr
    else:
        assert r.returncode == 3 and "nvv_detect.devset: error: " in r.stderr
    r = subprocess.run([sys.executable, "-m", "pyutils.nvv_detect.devset", "--split", "dev"], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 2 and "--split and --out are required" in r.stderr
