"""The event namer: fusion, abstention, model files, labelled clips, and the Whisper label scorer."""

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.nvv_detect.arrays import DetectorError
from pyutils.nvv_detect.naming import Namer, heads_matrix, labelled_clips, main, name_events
from pyutils.nvv_detect.whisper_label_scores import FORMS, crop

TAGS = ["laugh", "cough", "sigh"]


class FixedEvidence:
    """Evidence with given per-crop scores (no model): one row per event, in order."""

    def __init__(self, log_y, w):
        self.log_y, self.w = np.asarray(log_y, float), (None if w is None else np.asarray(w, float))

    def features(self, crops, known_min=0.0, decisive=None):
        n = len(crops)
        return {"log_y": self.log_y[:n], "w": None if self.w is None else self.w[:n], "emb": None}


def test_zero_shot_fusion_is_the_weighted_sum_of_log_scores():
    namer = Namer(TAGS, a_w=0.5, a_h=0.25)
    ev = {"log_y": np.log([[0.2, 0.6, 0.2]]), "w": np.array([[0.0, -3.0, -1.0]]), "emb": None}
    heads = np.array([[0.7, 0.1, 0.2]])
    z = namer.logits(ev, heads)
    want = np.log([0.2, 0.6, 0.2]) + 0.5 * np.array([0.0, -3.0, -1.0]) + 0.25 * np.log([0.7, 0.1, 0.2])
    assert np.allclose(z[0], want)
    assert np.allclose(namer.probs(ev, heads).sum(axis=1), 1.0)
    # without heads and Whisper: YAMNet alone decides
    assert Namer(TAGS, a_h=0.0).logits({**ev, "w": None}).argmax() == 1


def test_events_are_renamed_or_dropped_below_min_prob():
    audio = np.zeros(16000 * 4, dtype=np.float32)
    events = [{"utt_id": "u", "tag": "cough", "start": 0.5, "end": 1.0, "score": 0.9},
              {"utt_id": "u", "tag": "cough", "start": 3.0, "end": 3.5, "score": 0.8}]
    # event 1: YAMNet says laugh clearly; event 2: no source prefers any tag
    ev = FixedEvidence(np.log([[0.9, 0.05, 0.05], [0.34, 0.33, 0.33]]), None)
    out = name_events(Namer(TAGS, a_h=0.0, min_prob=0.5), ev, audio, events)
    assert [(e["tag"], e["detected_as"], e["start"]) for e in out] == [("laugh", "cough", 0.5)]
    assert 0.5 <= out[0]["name_p"] <= 1.0
    assert "probs" not in out[0]
    # no abstention: both kept
    assert len(name_events(Namer(TAGS, a_h=0.0, min_prob=0.0), ev, audio, events)) == 2
    assert name_events(Namer(TAGS), ev, audio, []) == []


def test_heads_matrix_flat_rows_for_events_without_probs():
    rows = [{"probs": {"laugh": 0.6, "cough": 0.2, "sigh": 0.2}}, {}]
    h = heads_matrix(rows, TAGS)
    assert np.allclose(h[0], [0.6, 0.2, 0.2]) and np.allclose(h[1], 1 / 3)
    assert heads_matrix([{}, {}], TAGS) is None


def test_fit_separates_classes():
    from pyutils.nvv_detect.naming import fit

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 600)
    X = np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0]])[y] + rng.normal(size=(600, 3))
    W, b, mu, sigma = fit(X, y, 3, l2=1e-3)
    assert ((((X - mu) / sigma) @ W + b).argmax(axis=1) == y).mean() > 0.85
    assert np.abs(fit(X, y, 3, l2=1.0)[0]).sum() < np.abs(W).sum()      # a stronger L2 shrinks the weights


def test_fitted_namer_round_trip_and_bad_files(tmp_path):
    n = Namer(TAGS, a_h=0.1, min_prob=0.3, W=np.eye(6, 3), b=np.zeros(3), mu=np.zeros(6), sigma=np.ones(6))
    n.save(tmp_path / "namer.npz")
    m = Namer.load(tmp_path / "namer.npz")
    assert m.tags == TAGS and m.fitted and not m.embed and m.min_prob == pytest.approx(0.3)
    ev = {"log_y": np.log([[0.1, 0.8, 0.1]]), "w": np.zeros((1, 3)), "emb": None}
    assert np.allclose(m.logits(ev), n.logits(ev))
    # a file of another kind, and a tampered file, are refused by name
    from pyutils.nvv_detect.arrays import save_arrays

    save_arrays({"kind": np.array("whisper_frames")}, tmp_path / "other.npz")
    with pytest.raises(DetectorError, match="not an NVV namer"):
        Namer.load(tmp_path / "other.npz")
    data = bytearray((tmp_path / "namer.npz").read_bytes())
    data[-10] ^= 0xFF
    (tmp_path / "namer.npz").write_bytes(bytes(data))
    with pytest.raises(DetectorError):
        Namer.load(tmp_path / "namer.npz")


def test_crop_pads_and_widens_within_the_audio():
    x = np.arange(16000 * 3, dtype=np.float32)
    c = crop(x, 1.0, 1.2)                       # 0.2 s + 2 x 0.25 s pad < 1 s: widened to 1 s
    assert len(c) == 16000 and c[0] == pytest.approx(0.6 * 16000)
    assert len(crop(x, 0.0, 0.1)) == 16000                  # shifted inside the audio at its start
    assert len(crop(x[:8000], 0.1, 0.2)) == 8000            # a clip shorter than 1 s: all of it
    assert set(FORMS) >= {"laugh", "cough", "sigh", "breath", "yawn"}


def _labelled_dir(root: Path, rows):
    """A chorus-prep-like output: root/train/{wav.scp,text}, root/events/train.jsonl."""
    d = root / "train"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    scp, text, ev = [], [], []
    for utt, label in rows:
        p = root / f"{utt}.wav"
        sf.write(p, (0.1 * rng.standard_normal(16000)).astype(np.float32), 16000)
        scp.append(f"{utt} {p}")
        text.append(f"{utt} {label}")
        ev.append(json.dumps({"utt_id": utt, "events": [{"tag": label.strip("[]"), "start": 0.2, "end": 0.6}]}))
    (d / "wav.scp").write_text("\n".join(scp) + "\n")
    (d / "text").write_text("\n".join(text) + "\n")
    (root / "events").mkdir()
    (root / "events" / "train.jsonl").write_text("\n".join(ev) + "\n")
    return d


def test_labelled_clips_take_the_event_span_and_skip_other_texts(tmp_path, capsys):
    d = _labelled_dir(tmp_path, [("a1", "[laugh]"), ("a2", "hello [cough] [sigh]"), ("a3", "[sigh]")])
    rows = list(labelled_clips([d], TAGS))
    assert [(u, t) for u, _, t in rows] == [("a1", "laugh"), ("a3", "sigh")]
    assert len(rows[0][1]) == 16000              # 0.2-0.6 s + pads, widened to 1 s (clip is 1 s)
    assert "a2: text is not one challenge tag" in capsys.readouterr().err


def test_fit_cli_refuses_a_set_without_usable_clips(tmp_path, capsys):
    d = _labelled_dir(tmp_path, [("a1", "hello there")])
    assert main(["fit", "--data", str(d), "--out", str(tmp_path / "n.npz")]) == 1
    assert "no clip whose text is one challenge tag" in capsys.readouterr().err
    assert not (tmp_path / "n.npz").exists()


def test_whisper_label_scores_are_finite_log_probabilities():
    pytest.importorskip("whisper")
    from pyutils.whisper.weights import WhisperWeightsError

    try:
        from pyutils.nvv_detect.whisper_label_scores import WhisperLabelScorer

        sc = WhisperLabelScorer(TAGS, threads=1)
    except WhisperWeightsError:
        pytest.skip("Whisper base not installed (make -C tools whisper)")
    rng = np.random.default_rng(0)
    s = sc.scores([0.05 * rng.standard_normal(16000).astype(np.float32),
                   0.05 * rng.standard_normal(24000).astype(np.float32)])
    assert s.shape == (2, 3) and np.isfinite(s).all() and (s < 0).all()
    # the tree pass gives each form's plain teacher-forced log-likelihood
    import torch

    x = 0.05 * rng.standard_normal(16000).astype(np.float32)
    feats = sc._encode([x])
    tree = sc._form_logprobs(feats)[0]
    for i in (0, len(sc.forms) - 1):
        seq = torch.tensor([sc.prefix + sc.forms[i]])
        with torch.inference_mode():
            logp = torch.log_softmax(sc.model.decoder(seq[:, :-1], feats), dim=-1)[0]
        p = len(sc.prefix)
        plain = sum(float(logp[p - 1 + j, t]) for j, t in enumerate(sc.forms[i]))
        assert tree[i] == pytest.approx(plain, abs=1e-3)
    with pytest.raises(ValueError, match="no Whisper label forms"):
        WhisperLabelScorer(["laugh", "not a tag"])


def test_close_events_are_merged_into_one_span_before_naming():
    from pyutils.nvv_detect.naming import merge_close

    ev = [{"utt_id": "u", "tag": "gasp", "start": 1.0, "end": 1.2, "score": 0.5},
          {"utt_id": "u", "tag": "cough", "start": 1.4, "end": 2.0, "score": 0.9, "probs": {"cough": 0.8}},
          {"utt_id": "u", "tag": "laugh", "start": 3.0, "end": 3.5, "score": 0.7}]
    m = merge_close(ev, 0.3)
    assert [(e["tag"], e["start"], e["end"], e["score"]) for e in m] == [("cough", 1.0, 2.0, 0.9),
                                                                          ("laugh", 3.0, 3.5, 0.7)]
    assert m[0]["probs"] == {"cough": 0.8} and "_parts" not in m[0]
    assert len(merge_close(ev, 0.1)) == 3
    # name_events: zero-shot merges within MERGE_GAP_S (1.0 s: the game-trained heads cut a real
    # sound into pieces), a fitted namer within FITTED_MERGE_GAP_S (0.3 s)
    from pyutils.nvv_detect.naming import FITTED_MERGE_GAP_S, MERGE_GAP_S

    assert FITTED_MERGE_GAP_S < 0.6 < MERGE_GAP_S
    two = [{"utt_id": "u", "tag": "cough", "start": 1.0, "end": 1.2, "score": 0.5},
           {"utt_id": "u", "tag": "cough", "start": 1.8, "end": 2.0, "score": 0.5}]
    fixed = FixedEvidence(np.log([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05]]), None)
    audio = np.zeros(16000 * 3, dtype=np.float32)
    assert len(name_events(Namer(TAGS), fixed, audio, two)) == 1
    fitted = Namer(TAGS, W=np.zeros((6, 3)), b=np.zeros(3), mu=np.zeros(6), sigma=np.ones(6))
    assert fitted.fitted and len(name_events(fitted, fixed, audio, two)) == 2


def test_window_clips_crop_each_tag_window_and_skip_shared_ones(tmp_path):
    from pyutils.nvv_detect.naming import window_clips

    sr = 8000                                    # any rate: crops come at 16 kHz
    x = np.zeros(sr * 4, dtype=np.float32)
    x[int(1.2 * sr):int(1.6 * sr)] = 0.5         # the sound of the first window
    sf.write(tmp_path / "u1.wav", x, sr)
    (tmp_path / "wav.scp").write_text(f"u1 {tmp_path / 'u1.wav'}\n")
    rows = [{"utt_id": "u1", "tag": "laugh", "start": 1.0, "end": 2.0},
            {"utt_id": "u1", "tag": "cough", "start": 2.5, "end": 3.0},     # two tags, one gap:
            {"utt_id": "u1", "tag": "sigh", "start": 2.5, "end": 3.0}]      # no single sound
    (tmp_path / "windows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    clips = list(window_clips([tmp_path], TAGS))
    assert [(u, t) for u, _, t in clips] == [("u1", "laugh")]
    c = clips[0][1]
    assert len(c) == int(1.5 * 16000) and np.abs(c).max() > 0.4   # the window padded by 0.25 s


def test_fit_cli_writes_a_namer_that_names_events(tmp_path):
    pytest.importorskip("whisper")
    from pyutils.audio_tagger import TaggerError, default_dir
    from pyutils.whisper.weights import WhisperWeightsError, resolve

    try:
        resolve("base")
        if not default_dir().is_dir():
            raise TaggerError("no YAMNet")
    except (WhisperWeightsError, TaggerError):
        pytest.skip("Whisper base / YAMNet not installed (make -C tools)")
    d = _labelled_dir(tmp_path, [("a1", "[laugh]"), ("a2", "[cough]"), ("a3", "[laugh]"), ("a4", "[cough]")])
    out = tmp_path / "namer.npz"
    assert main(["fit", "--data", str(d), "--out", str(out), "--embed"]) == 0
    namer = Namer.load(out)
    assert namer.fitted and namer.embed and len(namer.tags) == 16
    ev = tmp_path / "ev.jsonl"
    ev.write_text(json.dumps({"utt_id": "a1", "tag": "gasp", "start": 0.2, "end": 0.6, "score": 0.9}) + "\n")
    named = tmp_path / "named.jsonl"
    assert main(["name", "--wav-scp", str(d / "wav.scp"), "--events", str(ev), "--out", str(named),
                 "--model", str(out)]) == 0
    rows = [json.loads(x) for x in named.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["detected_as"] == "gasp" and rows[0]["tag"] in ("laugh", "cough")


def test_zero_shot_namer_leaves_unrecognised_sounds_to_the_heads():
    namer = Namer(TAGS, known_min=0.3)
    ev = {"log_y": np.log([[0.9, 0.05, 0.05], [0.1, 0.2, 0.25]]), "w": None, "emb": None}
    heads = np.array([[0.1, 0.1, 0.8], [0.1, 0.1, 0.8]])
    p = namer.probs(ev, heads)
    assert p[0].argmax() == 0                    # YAMNet recognises a laugh: it names the event
    assert np.allclose(p[1], [0.1, 0.1, 0.8])    # no class reaches 0.3: the heads' distribution stays
    assert Namer(TAGS, known_min=0.0).probs(ev, heads)[1].argmax() == 2   # YAMNet alone: sigh 0.25


def test_zero_shot_drops_unrecognised_events_the_heads_are_unsure_of():
    from pyutils.nvv_detect.naming import UNKNOWN_MIN_SCORE

    audio = np.zeros(16000 * 6, dtype=np.float32)
    probs = {"laugh": 0.1, "cough": 0.1, "sigh": 0.8}
    events = [{"utt_id": "u", "tag": "sigh", "start": 0.5, "end": 1.0, "score": 0.9, "probs": probs},
              {"utt_id": "u", "tag": "sigh", "start": 3.0, "end": 3.5, "score": UNKNOWN_MIN_SCORE - 0.1,
               "probs": probs},
              {"utt_id": "u", "tag": "sigh", "start": 5.0, "end": 5.5, "score": 0.2, "probs": probs}]
    # events 1 and 2: no AudioSet class reaches known_min; event 3: YAMNet hears a laugh
    ev = FixedEvidence(np.log([[0.1, 0.1, 0.1], [0.1, 0.1, 0.1], [0.9, 0.05, 0.05]]), None)
    out = name_events(Namer(TAGS, known_min=0.3), ev, audio, events)
    assert [(e["start"], e["tag"]) for e in out] == [(0.5, "sigh"), (5.0, "laugh")]
    # no YAMNet gate (known_min 0): YAMNet names every event, nothing is left to the heads
    assert len(name_events(Namer(TAGS, known_min=0.0), ev, audio, events)) == 3


def test_whisper_is_asked_only_where_yamnet_is_unsure():
    from pyutils.nvv_detect.naming import YAMNET_DECISIVE, Evidence

    class Scorer:                                # stands in for Whisper: counts the crops it is given
        asked = []

        def scores(self, crops):
            self.asked += [float(c[0]) for c in crops]
            return np.zeros((len(crops), len(TAGS)))

    ev = Evidence.__new__(Evidence)
    ev.tags, ev.whisper = TAGS, Scorer()
    y = np.array([[0.9, 0.05, 0.05],             # decisive: log 0.9 - log 0.05 = 2.9
                  [0.5, 0.4, 0.1],               # unsure: 0.22
                  [0.1, 0.05, 0.05]])            # not recognised (< known_min)
    ev.yamnet = lambda crops: (y[:len(crops)], None)
    crops = [np.full(10, i, np.float32) for i in range(3)]
    f = ev.features(crops, known_min=0.3, decisive=YAMNET_DECISIVE)
    assert ev.whisper.asked == [1.0] and np.allclose(f["log_y"], np.log(y))
    ev.whisper.asked = []
    ev.features(crops)                           # a fitted namer reads every crop's Whisper scores
    assert ev.whisper.asked == [0.0, 1.0, 2.0]
