"""The YAMNet NVV detector: events from frames, matching, model file, fitting, real-NVV sets."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyutils.nvv_detect import devset
from pyutils.nvv_detect.events import frames_to_events, match_counts, micro, prf, read_events
from pyutils.nvv_detect.arrays import DetectorError, save_arrays
from pyutils.nvv_detect.yamnet_detector import Detector, fit, patch_labels

REPO = Path(__file__).resolve().parents[1]
TAGS = ["laugh", "cough"]


def test_frames_to_events_runs_thresholds_and_weighted_centre():
    starts = np.arange(8) * 0.24
    p = np.zeros((8, 2))
    p[2:4, 0] = [0.6, 0.9]          # laugh run over patches 2-3
    p[6, 1] = 0.35                  # cough below 0.5 but above its own threshold 0.3
    p[7, 0] = 0.4                   # below laugh's 0.5
    ev = frames_to_events("u", starts, p, TAGS, [0.5, 0.3])
    assert [e["tag"] for e in ev] == ["laugh", "cough"]
    centre = (0.6 * (0.48 + 0.48) + 0.9 * (0.72 + 0.48)) / 1.5
    assert abs(0.5 * (ev[0]["start"] + ev[0]["end"]) - centre) < 2e-3
    assert ev[0]["score"] == 0.9
    assert frames_to_events("u", starts, p, TAGS, [0.95, 0.95]) == []


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


def _arrays(d=6, k=3):
    rng = np.random.default_rng(0)
    return {"W": rng.normal(size=(d, k)), "b": np.zeros(k), "mu": np.zeros(d), "sigma": np.ones(d),
            "classes": np.array(["none", "laugh", "cough"]), "thresholds": np.array([0.5, 0.5]),
            "hop_s": np.float64(0.24), "context": np.int64(0), "feature_ids": np.arange(d)}


def test_model_file_round_trip_and_checksum(tmp_path):
    path = tmp_path / "m.npz"
    save_arrays(_arrays(), path)
    det = Detector.load(path)
    assert det.tags == TAGS
    x = np.random.default_rng(1).normal(size=(4, 6))
    assert np.allclose(det.probs(x).sum(axis=1), 1.0)
    raw = bytearray(path.read_bytes())
    raw[-40] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(DetectorError, match="SHA-256"):
        Detector.load(path)


def test_model_file_with_object_array_is_refused(tmp_path):
    path = tmp_path / "m.npz"
    arrays = _arrays()
    arrays["classes"] = np.array(["none", "laugh", {"x": 1}], dtype=object)   # needs pickle
    save_arrays(arrays, path)
    with pytest.raises(DetectorError, match="plain-array"):
        Detector.load(path)


def test_model_shapes_checked():
    arrays = _arrays()
    arrays["thresholds"] = np.array([0.5])
    with pytest.raises(DetectorError, match="inconsistent"):
        Detector(arrays)


def test_patch_labels_overlap_rule():
    starts = np.array([0.0, 0.5, 2.0, 3.0])
    events = [{"tag": "laugh", "start": 1.0, "end": 1.6}]
    # patch 0 [0, .96]: no overlap -> none; patch 1 [.5, 1.46]: 0.46 s >= 0.3 -> laugh;
    # patch 2: none; a 0.1 s overlap would be left out:
    assert patch_labels(starts, events, ["none", "laugh"]).tolist() == [0, 1, 0, 0]
    assert patch_labels(np.array([0.0]), [{"tag": "laugh", "start": 0.9, "end": 1.6}],
                        ["none", "laugh"]).tolist() == [-1]


def test_fit_separates_classes():
    rng = np.random.default_rng(0)
    means = np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0]])
    y = rng.integers(0, 3, 600)
    X = means[y] + rng.normal(size=(600, 3))
    W, b, mu, sigma, _ = fit(X, y, 3, l2=1e-3)
    det = Detector({**_arrays(3, 3), "W": W, "b": b, "mu": mu, "sigma": sigma})
    assert (det.probs(X).argmax(axis=1) == y).mean() > 0.85


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


def test_shipped_model_loads_with_checksum():
    det = Detector.load()
    assert det.classes[0] == "none" and len(det.tags) == 16
    assert ((det.thresholds > 0) & (det.thresholds < 1)).all()


def test_short_active_region_is_one_event_of_its_dominant_tag():
    starts = np.arange(10) * 0.24
    p = np.zeros((10, 2))
    p[1:4, 0] = [0.7, 0.2, 0.8]      # laugh, cough, laugh in one 3-patch region
    p[2, 1] = 0.6
    ev = frames_to_events("u", starts, p, TAGS, [0.5, 0.5])
    assert [e["tag"] for e in ev] == ["laugh"]
    p2 = np.zeros((10, 2))
    p2[0:3, 0], p2[3:8, 1] = 0.9, 0.9  # 8 active patches: longer than MERGE_PATCHES -> two runs
    assert [e["tag"] for e in frames_to_events("u", starts, p2, TAGS, [0.5, 0.5])] == ["laugh", "cough"]


def test_splice_pause_alone_adds_no_event():
    sr = devset.SR
    x = np.full(2 * sr, 0.1, dtype=np.float32)
    words = [["one", 0.1, 0.9], ["two", 1.1, 1.9]]
    y, events, text = devset.splice(x, words, [(1, None, None)], np.random.default_rng(0))
    assert events == [] and text == "one two"
    assert 2 * sr + int(0.3 * sr) <= len(y) <= 2 * sr + int(0.8 * sr)


def test_model_feature_ids_must_match_weights():
    arrays = _arrays()
    arrays["feature_ids"] = np.arange(5)
    with pytest.raises(DetectorError, match="inconsistent"):
        Detector(arrays)


def test_naive_tags_come_from_the_mapping_not_the_classifier():
    arrays = _arrays()
    arrays["W"] = np.zeros((6, 3))
    arrays["b"] = np.array([0.0, 5.0, 0.0])          # the classifier says laugh everywhere
    arrays["naive_tags"] = np.array([1, 0], dtype=np.int8)   # but laugh is taken from the mapping
    det = Detector(arrays)
    starts = np.arange(3) * 0.24
    feats = np.zeros((3, 6))
    with pytest.raises(DetectorError, match="naive_p"):
        det.events("u", starts, feats)
    assert det.events("u", starts, feats, np.zeros((3, 2))) == []
    naive_p = np.array([[0.9, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert [e["tag"] for e in det.events("u", starts, feats, naive_p)] == ["laugh"]


def test_overlapping_events_keep_the_naive_tag_then_the_best_ratio():
    from pyutils.nvv_detect.yamnet_detector import suppress_overlaps

    cough = {"tag": "cough", "start": 1.0, "end": 1.6, "score": 0.9}
    laugh = {"tag": "laugh", "start": 1.2, "end": 2.0, "score": 0.6}
    hum = {"tag": "hum", "start": 1.5, "end": 1.9, "score": 0.3}
    far = {"tag": "hum", "start": 5.0, "end": 5.4, "score": 0.2}
    kept = suppress_overlaps([((0, 3.6), cough), ((1, 1.2), laugh), ((0, 2.0), hum), ((0, 1.3), far)])
    assert kept == [laugh, far]
    assert suppress_overlaps([((0, 2.0), hum), ((0, 3.6), cough)]) == [cough]     # overlap 1.5-1.6 s
    assert suppress_overlaps([((0, 1.3), far), ((0, 3.6), cough)]) == [cough, far]


def test_cached_features_round_trip_and_checksum(tmp_path):
    from pyutils.nvv_detect.yamnet_features import Utt, load, save

    rng = np.random.default_rng(1)
    rows = [Utt(f"u{i}", np.arange(n) * 0.24, rng.normal(size=(n, 521)).astype(np.float32),
                rng.random((n, 16)).astype(np.float32), [{"tag": "laugh", "start": 0.5, "end": 0.9}] * i,
                rng.random((n, 1024)).astype(np.float16)) for i, n in enumerate((3, 5))]
    path = tmp_path / "f.npz"
    save(rows, "real", path)
    kind, back = load(path)
    assert kind == "real" and [r.utt for r in back] == ["u0", "u1"]
    assert np.array_equal(back[1].logits, rows[1].logits) and back[1].events == rows[1].events
    assert back[0].emb.shape == (3, 1024) and np.array_equal(back[1].emb, rows[1].emb)
    with pytest.raises(ValueError):
        save(rows, "synthetic", tmp_path / "g.npz")
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    with pytest.raises(DetectorError, match="SHA-256"):
        load(path)


def test_model_input_with_embeddings_and_shape_check():
    from pyutils.nvv_detect.yamnet_features import EMBED_DIM, model_input

    lg, emb = np.ones((4, 521)), np.full((4, EMBED_DIM), 2.0)
    f = model_input(lg, emb, np.arange(6), 1, True)
    assert f.shape == (4, 6 * 3 + EMBED_DIM) and f[0, -1] == 2.0
    with pytest.raises(DetectorError, match="embeddings"):
        model_input(lg, None, np.arange(6), 1, True)
    a = _arrays(d=6 + EMBED_DIM)
    a["feature_ids"], a["embed"] = np.arange(6), np.int64(1)
    assert Detector(a).embed
    a["embed"] = np.int64(0)
    with pytest.raises(DetectorError, match="inconsistent"):
        Detector(a)
