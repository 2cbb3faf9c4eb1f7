"""The Whisper-frame NVV detector: frame labels, events from frame runs, the conv head, its file."""

from pathlib import Path

import numpy as np
import pytest

from pyutils.nvv_detect.events import frame_runs_to_events
from pyutils.nvv_detect.arrays import DetectorError
from pyutils.nvv_detect.frame_heads import FrameDetector, fit_head, forward
from pyutils.nvv_detect.whisper_frames import FRAME_S, FrameUtt, frame_labels, load, save

TAGS = ["laugh", "cough"]


def test_frame_labels_by_frame_centre():
    ev = [{"tag": "laugh", "start": 0.10, "end": 0.30}, {"tag": "cough", "start": 0.50, "end": 0.58}]
    y = frame_labels(20, ev, ["none"] + TAGS)
    # centres 0.02, 0.06, ...: 0.10..0.26 in [0.10, 0.30), 0.50 and 0.54 in [0.50, 0.58)
    assert np.flatnonzero(y == 1).tolist() == [2, 3, 4, 5, 6]
    assert np.flatnonzero(y == 2).tolist() == [12, 13]
    with pytest.raises(DetectorError, match="sniffle"):
        frame_labels(5, [{"tag": "sniffle", "start": 0, "end": 1}], ["none"] + TAGS)


def test_frame_runs_onsets_offsets_gaps_and_min_duration():
    t = np.arange(60) * FRAME_S
    p = np.zeros((60, 2))
    p[10:20, 0] = 0.8                 # laugh 0.40-0.80 s
    p[21:24, 0] = 0.7                 # after a 1-frame gap: the same event
    p[40:42, 1] = 0.9                 # cough 1.60-1.68 s: shorter than MIN_EVENT_S, dropped
    p[50:55, 1] = 0.4                 # cough above its own threshold 0.3
    ev = frame_runs_to_events("u", t, p, TAGS, [0.5, 0.3])
    assert [(e["tag"], e["start"], e["end"]) for e in ev] == [("laugh", 0.4, 0.96), ("cough", 2.0, 2.2)]
    assert ev[0]["score"] == 0.8
    assert frame_runs_to_events("u", t, p, TAGS, [0.95, 0.95]) == []
    assert frame_runs_to_events("u", t[:0], p[:0], TAGS, [0.5, 0.5]) == []


def test_long_region_is_cut_where_its_tag_changes():
    t = np.arange(120) * FRAME_S
    p = np.zeros((120, 2))
    p[0:40, 0] = 0.9                  # 1.6 s laugh then 1.6 s cough, no gap: 3.2 s > SPLIT_S
    p[40:80, 1] = 0.9
    ev = frame_runs_to_events("u", t, p, TAGS, [0.5, 0.5])
    assert [(e["tag"], e["start"], e["end"]) for e in ev] == [("laugh", 0.0, 1.6), ("cough", 1.6, 3.2)]


def _synthetic(n_utts, rng, d=6):
    """Frames whose first dimension is high inside a 'laugh' and whose second is high in a 'cough'."""
    rows = []
    for _ in range(n_utts):
        x = rng.normal(0, 0.3, size=(50, d)).astype(np.float32)
        y = np.zeros(50, dtype=np.int64)
        x[10:20, 0] += 3
        y[10:20] = 1
        x[30:36, 1] += 3
        y[30:36] = 2
        rows.append((x, y, 1.0))
    return rows


def test_head_shapes_and_a_tiny_fit_separates_two_classes():
    import torch

    rng = np.random.default_rng(0)
    ws, bs, mu, sigma = fit_head(_synthetic(24, rng), 3, epochs=30, hidden=8, batch=4, lr=1e-2)
    assert [w.shape for w in ws] == [(8, 6, 3), (8, 8, 5), (8, 8, 5), (3, 8, 1)]
    assert mu.shape == (6,) and sigma.shape == (6,)
    z = torch.zeros(2, 6, 37)
    assert tuple(forward([torch.from_numpy(w) for w in ws], [torch.from_numpy(b) for b in bs], z).shape) == (2, 3, 37)
    x, y, _ = _synthetic(1, np.random.default_rng(1))[0]
    tw = [torch.from_numpy(w) for w in ws], [torch.from_numpy(b) for b in bs]
    with torch.inference_mode():
        pred = forward(*tw, torch.from_numpy(((x - mu) / sigma).T[None].copy()))[0].argmax(dim=0).numpy()
    assert (pred == y).mean() > 0.9
    assert (pred[12:18] == 1).all() and (pred[31:35] == 2).all()


def _detector(d=6, k=3, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(hidden, d, 3), (hidden, hidden, 5), (hidden, hidden, 5), (k, hidden, 1)]
    arr = {f"w{i}": rng.normal(size=s).astype(np.float32) for i, s in enumerate(shapes)}
    arr.update({f"b{i}": np.zeros(s[0], np.float32) for i, s in enumerate(shapes)})
    arr.update({"kind": np.array("whisper_frames"), "classes": np.array(["none"] + TAGS),
                "thresholds": np.array([0.5, 0.5], np.float32), "mu": np.zeros(d, np.float32),
                "sigma": np.ones(d, np.float32), "layers": np.array([6]), "frame_s": np.float64(FRAME_S),
                "dilations": np.array([1, 2, 4])})
    return arr


def test_detector_file_round_trip_checksum_and_shape_checks(tmp_path):
    arr = _detector(d=512)
    det = FrameDetector(arr)
    p = det.probs(np.random.default_rng(0).normal(size=(40, 512)))
    assert p.shape == (40, 3) and np.allclose(p.sum(axis=1), 1)
    det.save(tmp_path / "det.npz")
    again = FrameDetector.load(tmp_path / "det.npz")
    assert np.allclose(again.probs(np.ones((7, 512))), det.probs(np.ones((7, 512))), atol=1e-6)
    (tmp_path / "det.npz").write_bytes((tmp_path / "det.npz").read_bytes() + b"x")
    with pytest.raises(DetectorError, match="SHA-256"):
        FrameDetector.load(tmp_path / "det.npz")
    with pytest.raises(DetectorError, match="inconsistent"):
        FrameDetector(_detector(d=6))                       # one layer of Whisper is 512-d
    bad = dict(arr)
    del bad["w3"]
    with pytest.raises(DetectorError, match="w0..w3"):
        FrameDetector(bad)


def test_file_of_the_removed_yamnet_inputs_is_refused():
    """Files written before the YAMNet inputs were removed carry ``yamnet`` and ``feature_ids``:
    without YAMNet (0) they load as before, with it (1) they are refused, not misread."""
    arr = _detector(d=512)
    old = {**arr, "yamnet": np.int64(0), "feature_ids": np.zeros(0, np.int64)}
    x = np.random.default_rng(5).normal(size=(9, 512))
    assert np.allclose(FrameDetector(old).probs(x), FrameDetector(arr).probs(x))
    with pytest.raises(DetectorError, match="whisper_yamnet"):
        FrameDetector({**old, "yamnet": np.int64(1), "feature_ids": np.arange(4)})


def test_cached_frames_round_trip(tmp_path):
    rows = [FrameUtt("a", np.ones((3, 1024), np.float16), [{"tag": "laugh", "start": 0.0, "end": 0.1}]),
            FrameUtt("b", np.zeros((5, 1024), np.float16), [])]
    save(rows, "real", (4, 6), tmp_path / "f.npz")
    kind, layers, back = load(tmp_path / "f.npz")
    assert kind == "real" and layers == (4, 6)
    assert [r.utt for r in back] == ["a", "b"] and back[1].frames.shape == (5, 1024)
    assert back[0].events[0]["tag"] == "laugh"
    with pytest.raises(ValueError, match="kind"):
        save(rows, "synthetic", (4, 6), tmp_path / "g.npz")


WHISPER_PT = Path(__file__).resolve().parents[1] / "tools" / "models" / "whisper-base" / "openai.pt"


@pytest.mark.skipif(not WHISPER_PT.is_file(), reason="make -C tools whisper")
def test_detect_cli_reads_a_frame_model_and_survives_a_broken_file(tmp_path, capsys):
    import json

    import soundfile as sf

    from pyutils.nvv_detect import detect

    arr = _detector(d=512)
    arr["layers"] = np.array([5])
    arr["thresholds"] = np.array([1e-6, 1e-6], np.float32)     # every frame active: one event per region
    FrameDetector(arr).save(tmp_path / "det.npz")
    x = (np.random.default_rng(0).normal(size=24000) * 0.1).astype(np.float32)
    sf.write(tmp_path / "a.wav", x, 48000)                     # 0.5 s at 48 kHz
    (tmp_path / "b.wav").write_bytes(b"not audio")
    (tmp_path / "wav.scp").write_text(f"a {tmp_path / 'a.wav'}\nb {tmp_path / 'b.wav'}\n")
    rc = detect.main(["--wav-scp", str(tmp_path / "wav.scp"), "--model", str(tmp_path / "det.npz"),
                     "--out", str(tmp_path / "ev.jsonl")])
    assert rc == 0
    rows = [json.loads(line) for line in (tmp_path / "ev.jsonl").read_text().splitlines()]
    assert rows and {r["utt_id"] for r in rows} == {"a"} and {r["tag"] for r in rows} <= set(TAGS)
    assert all(0 <= r["start"] < r["end"] <= 0.5 + 1e-6 for r in rows)
    assert "b: cannot read audio" in capsys.readouterr().err


def _ensemble(n_heads=2, d=512):
    """An ensemble file's arrays: head 0 as w0..b3, heads j >= 1 as h<j>_w0..h<j>_b3."""
    arr = _detector(d=d, seed=0)
    for j in range(1, n_heads):
        other = _detector(d=d, seed=j)
        arr.update({f"h{j}_{k}": other[k] for k in other if k[0] in "wb" and k[1:].isdigit()})
    arr["heads"] = np.int64(n_heads)
    return arr


def test_ensemble_averages_the_heads_posteriors_and_round_trips(tmp_path):
    x = np.random.default_rng(3).normal(size=(30, 512))
    ens = FrameDetector(_ensemble(3))
    assert len(ens.heads) == 3
    singles = [FrameDetector(_detector(d=512, seed=j)).probs(x) for j in range(3)]
    assert not np.allclose(singles[0], singles[1], atol=1e-3)       # the heads differ
    assert np.allclose(ens.probs(x), np.mean(singles, axis=0), atol=1e-6)
    ens.save(tmp_path / "ens.npz")
    back = FrameDetector.load(tmp_path / "ens.npz")
    assert len(back.heads) == 3 and np.allclose(back.probs(x), ens.probs(x), atol=1e-6)
    bad = _ensemble(3)
    del bad["h2_b1"]
    with pytest.raises(DetectorError, match="head 3 of 3: weights h2_w0"):
        FrameDetector(bad)
    bad = _ensemble(2)
    bad["h1_w0"] = bad["h1_w0"][:, :100]                            # a head of another input width
    with pytest.raises(DetectorError, match="inconsistent"):
        FrameDetector(bad)
    bad = _ensemble(2)
    bad["heads"] = np.int64(0)
    with pytest.raises(DetectorError, match="heads = 0"):
        FrameDetector(bad)


def test_single_head_file_keeps_its_format(tmp_path):
    """A file written before ensembles (no ``heads`` array) loads as one head, and one head is saved
    without ``heads``: old and new single-head files are the same."""
    arr = _detector(d=512)
    det = FrameDetector(arr)
    assert len(det.heads) == 1 and "heads" not in det.arrays()
    assert sorted(det.arrays()) == sorted(arr)
    x = np.random.default_rng(4).normal(size=(12, 512))
    as_ens = FrameDetector({**arr, "heads": np.int64(1)})
    assert np.allclose(as_ens.probs(x), det.probs(x))


def test_train_head_fits_an_ensemble_and_rejects_zero_heads():
    from pyutils.nvv_detect.frame_heads import epochs_per_head, train_head

    rng = np.random.default_rng(0)

    def rows(n):
        out = []
        for i in range(n):
            x = rng.normal(0, 0.3, size=(40, 512)).astype(np.float16)
            x[10:20, :8] += 3
            out.append(FrameUtt(f"u{i}", x, [{"tag": "laugh", "start": 10 * FRAME_S, "end": 20 * FRAME_S}]))
        return out

    tr, dv = ("corpus", (5,), rows(6)), ("corpus", (5,), rows(3))
    det, rep = train_head([tr], [dv], epochs=1, heads=2, log=lambda m: None, seed=7)
    assert len(det.heads) == 2 and rep["heads"] == 2 and rep["epochs"] == 1
    assert not np.allclose(det.heads[0][0][0], det.heads[1][0][0])   # seeds 7 and 1007
    assert det.probs(np.zeros((5, 512))).shape == (5, 17)
    with pytest.raises(DetectorError, match="heads and epochs must be >= 1"):
        train_head([tr], [dv], epochs=1, heads=0, log=lambda m: None)
    with pytest.raises(DetectorError, match="labels must be times or spans"):
        train_head([tr], [dv], epochs=1, log=lambda m: None, labels="windows")
    assert [epochs_per_head(n) for n in (1, 2, 3, 5)] == [12, 6, 4, 3]
    assert epochs_per_head(3, 1524) == 4 and epochs_per_head(3, 144) == 12   # >= 100 steps on a small corpus
    det, rep = train_head([tr], [dv], heads=2, log=lambda m: None)          # 6 utterances: 1 batch, 100 epochs
    assert rep["epochs"] == 100 and len(det.heads) == 2
