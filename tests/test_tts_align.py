"""Forced aligner for duration-based TTS (pyutils/tts/align.py) and the pause slots."""

import json

import numpy as np
import pytest
import soundfile as sf

from pyutils.tts import align
from pyutils.tts.frontend import Frontend, add_pause_tokens


def test_pause_tokens_at_start_and_around_tags():
    toks = ["[laugh]", "h", "i", "|", "j", "o", ".", "[cough]", "[sigh]"]
    assert add_pause_tokens(toks) == ["|", "[laugh]", "|", "h", "i", "|", "j", "o", ".",
                                      "[cough]", "|", "[sigh]"]
    # no doubled separators, punctuation counts as a pause slot
    assert add_pause_tokens(["a", "|", "[gasp]", ",", "b"]) == ["|", "a", "|", "[gasp]", ",", "b"]


def test_frontend_pauses_option_only_adds_separators():
    plain = Frontend("en", "char").tokenize_many(["Yes [laugh] no."])[0]
    paused = Frontend("en", "char", pauses=True).tokenize_many(["Yes [laugh] no."])[0]
    assert [t for t in paused if t != "|"] == [t for t in plain if t != "|"]
    assert paused[0] == "|" and paused[paused.index("[laugh]") + 1] == "|"


def _topo(tokens, n_states=2):
    return align.Topology(tokens, n_states, {(align.SIL_MODEL, 0): 0})


def test_topology_pauses_are_skippable():
    t = _topo(["|", "a", "|", "b"])          # + <eos>
    # states: |:0  a:1,2  |:3  b:4,5  eos:6
    assert list(t.owner) == [0, 1, 1, 2, 3, 3, 4]
    assert t.start[0] and t.start[1] and not t.start[2]
    assert t.lo[4] == 2                       # b may follow a directly (| skipped)
    assert t.end[6] and t.end[5] and not t.end[3]


def test_viterbi_recovers_segmentation_and_handles_impossible():
    # 3 tokens with distinct 1-d means; frames 0-3 -> a, 4-8 -> b, 9-11 -> c
    al = align.Aligner(n_states=1)
    topo = al.topology(["a", "b", "c"])
    al.mean = np.array([[0.0], [-5.0], [0.0], [5.0]])
    al.var = np.ones((4, 1))
    x = np.array([[-5.0]] * 4 + [[0.0]] * 5 + [[5.0]] * 3)
    path = align.viterbi(al.loglik(x, topo.models), topo.lo, topo.start, topo.end)
    d = align.durations_of(path, topo, len(x))
    assert list(d) == [4, 5, 3, 0]           # eos gets nothing
    assert align.viterbi(al.loglik(x[:2], topo.models), topo.lo, topo.start, topo.end) is None
    assert align._viterbi_py(al.loglik(x, topo.models), topo.lo, topo.start, topo.end).tolist() == path.tolist()


def test_pinned_span_forces_tag_frames():
    al = align.Aligner(n_states=1)
    topo = al.topology(["a", "[laugh]", "b"])
    al.mean = np.zeros((len(al.index), 1)); al.var = np.ones((len(al.index), 1))
    x = np.zeros((10, 1))
    mask = align.pinned_mask(topo, 10, {1: (3, 7)})
    ll = np.where(mask, al.loglik(x, topo.models), -np.inf)
    d = align.durations_of(align.viterbi(ll, topo.lo, topo.start, topo.end), topo, 10)
    assert d[1] == 4 and d.sum() == 10


def test_tag_parts_follow_each_tag_and_are_listed(tmp_path):
    from pyutils.tts.frontend import split_tag_parts, tag_part_of
    from pyutils.tts.tokens import build_token_list

    toks = ["|", "[laugh]", "|", "a", "|", "[throat_clearing]"]
    assert split_tag_parts(toks, 1) == toks
    out = split_tag_parts(toks, 3)
    assert out == ["|", "[laugh]", "[laugh]~2", "[laugh]~3", "|", "a", "|",
                   "[throat_clearing]", "[throat_clearing]~2", "[throat_clearing]~3"]
    assert [tag_part_of(t) for t in out[1:4]] == [("[laugh]", 1), ("[laugh]", 2), ("[laugh]", 3)]
    assert tag_part_of("a") == ("", 0) and tag_part_of("x~2") == ("", 0) and tag_part_of("[a]~1") == ("", 0)
    paused = Frontend("en", "char", pauses=True, tag_parts=2).tokenize_many(["Yes [laugh] no."])[0]
    i = paused.index("[laugh]")
    assert paused[i - 1:i + 3] == ["|", "[laugh]", "[laugh]~2", "|"]
    # the token list then holds the parts of every challenge tag, seen in training or not
    tl = build_token_list(["u " + " ".join(out)])
    assert "[cough]~3" in tl and "[laugh]~2" in tl and "[cough]~4" not in tl
    assert "[cough]~2" not in build_token_list(["u " + " ".join(toks)])


def test_pinned_span_holds_all_parts_of_a_tag_in_order():
    al = align.Aligner(n_states=1)
    toks = ["a", "[laugh]", "[laugh]~2", "[laugh]~3", "b"]
    topo = al.topology(toks)
    assert align.tag_group(toks, 1) == [1, 2, 3] and align.tag_group(toks, 0) == [0]
    al.mean = np.zeros((len(al.index), 1)); al.var = np.ones((len(al.index), 1))
    # the parts have distinct means: onset 3, middle -3, end 3; a and b 0
    for k, m in ((("[laugh]", 0), 3.0), (("[laugh]~2", 0), -3.0), (("[laugh]~3", 0), 3.0)):
        al.mean[al.index[k]] = m
    x = np.array([[0.0]] * 3 + [[3.0]] * 2 + [[-3.0]] * 4 + [[3.0]] * 3 + [[0.0]] * 4)
    mask = align.pinned_mask(topo, len(x), {1: (3, 12)})
    ll = np.where(mask, al.loglik(x, topo.models), -np.inf)
    d = align.durations_of(align.viterbi(ll, topo.lo, topo.start, topo.end), topo, len(x))
    assert list(d) == [3, 2, 4, 3, 4, 0]


def test_event_spans_match_tags_in_order_and_reject_mismatch():
    toks = ["|", "[laugh]", "|", "a", "|", "[cough]"]
    evs = [{"tag": "cough", "start": 1.0, "end": 1.2, "order": 1},
           {"tag": "laugh", "start": 0.1, "end": 0.5, "order": 0}]
    sp = align.event_spans(toks, evs, 0.016, 200)
    assert sp == {1: (6, 31), 5: (62, 75)}
    assert align.event_spans(toks, evs[:1], 0.016, 200) == {}
    assert align.event_spans(toks, [dict(evs[1], tag="sigh"), evs[0]], 0.016, 200) == {}


@pytest.mark.parametrize("r", [1, 2, 3])
def test_reduce_durations_sums_to_reduced_length(r):
    d = np.array([5, 0, 3, 7, 1, 2, 0])
    T = int(d.sum())
    out = align.reduce_durations(d, r, T)
    assert out.sum() == T // r and (out >= 0).all() and len(out) == len(d)


def _tone(f, n, sr=16000):
    return 0.3 * np.sin(2 * np.pi * f * np.arange(n) / sr).astype(np.float32)


def test_main_writes_durations_matching_frames(tmp_path):
    """End to end on synthetic 'speech': tones for tokens, silence around, a pinned tag."""
    sr, d = 16000, tmp_path / "set"
    d.mkdir()
    rng = np.random.default_rng(0)
    text, scp, u2s, ev = [], [], [], []
    for i in range(4):
        sil = np.zeros(int(0.2 * sr), np.float32)
        x = np.concatenate([sil, _tone(300, 4000), _tone(1200, 4000), sil, _tone(2500, 3000), sil])
        x += 1e-3 * rng.standard_normal(len(x)).astype(np.float32)
        p = tmp_path / f"u{i}.wav"
        sf.write(p, x, sr)
        uid = f"s{i % 2}-u{i}"
        text.append(f"{uid} | a b | [laugh]\n")
        scp.append(f"{uid} {p}\n")
        u2s.append(f"{uid} s{i % 2}\n")
        a = (len(sil) + 8000 + len(sil)) / sr
        ev.append(json.dumps({"utt_id": uid, "events": [{"tag": "laugh", "start": a, "end": a + 3000 / sr}]}) + "\n")
    (d / "text").write_text("".join(text)); (d / "wav.scp").write_text("".join(scp))
    (d / "utt2spk").write_text("".join(u2s)); (d / "events.jsonl").write_text("".join(ev))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("feats_extract: fbank\nfeats_extract_conf: {n_fft: 1024, hop_length: 256, win_length: 1024, "
                   "fs: 16000, fmin: 0, fmax: 8000, n_mels: 80}\ntts_conf: {reduction_factor: 1}\n")
    assert align.main(["--config", str(cfg), "--train", str(d), "--align", str(d),
                       "--out-dir", str(tmp_path / "exp"), "--iters", "3"]) == 0
    rows = [l.split() for l in (d / "durations").read_text().splitlines()]
    n = len(np.zeros(int(0.6 * sr) + 11000)) // 256 + 1
    for row in rows:
        dur = list(map(int, row[1:]))
        assert len(dur) == 6 and sum(dur) == n                   # 5 tokens + eos, all frames
        assert abs(dur[4] - round(3000 / 256)) <= 1               # the pinned [laugh]
        # tone a, tone b (the 64 ms analysis window blurs each edge by about 2 frames)
        assert abs(dur[1] - 4000 / 256) <= 5 and abs(dur[2] - 4000 / 256) <= 5
        assert dur[0] >= 8                                        # leading silence in the pause slot


def test_main_bad_input_names_utterance(tmp_path, capsys):
    d = tmp_path / "set"; d.mkdir()
    (d / "text").write_text("u1 a b\n"); (d / "wav.scp").write_text("")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("feats_extract: fbank\nfeats_extract_conf: {fs: 16000}\n")
    assert align.main(["--config", str(cfg), "--train", str(d), "--align", str(d), "--out-dir", str(tmp_path)]) == 2
    assert "u1" in capsys.readouterr().err
