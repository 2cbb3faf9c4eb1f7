"""pyutils.tts.nvv_heard: requested NVV positions, recall and false alarms of the YAMNet check."""

import json

import numpy as np
import pytest

from pyutils.tts import nvv_heard as nh
from pyutils.tts.report import render

from pyutils.audio_tagger import TAG_CLASSES

CLASSES = ["Speech", "Music", "Silence"] + [c for cs in TAG_CLASSES.values() for c in cs]
KNOWN = ("laugh", "cough")


class FakeTagger:
    """The tags' AudioSet classes and three others; frame_scores returns the scores given per utterance (patch every 0.24 s)."""

    def __init__(self, by_len=None):
        self.index = {c: i for i, c in enumerate(CLASSES)}
        self.by_len = by_len or {}

    def class_ids(self, names):
        return [self.index[n] for n in names]

    def frame_scores(self, x, sr, hop_s):
        s = self.by_len[len(x)]
        return np.arange(len(s)) * hop_s, s


def _scores(n, hits):
    """(n, classes) scores: speech 0.9 everywhere, class ``c`` 0.8 in patches ``idx`` for (c, idx) in hits."""
    s = np.full((n, len(CLASSES)), 0.01)
    s[:, 0] = 0.9
    for c, idx in hits:
        s[idx, CLASSES.index(c)] = 0.8
    return s


def test_tag_spans_join_the_parts_of_a_tag():
    toks = ["h", "@", "[laugh]", "[laugh]~2", "[laugh]~3", "|", "[throat_clearing]", "b"]
    spans = nh.tag_spans(toks, [1, 1, 2, 2, 2, 1, 2, 1, 8], total_s=2.0)   # last = eos, in the total
    assert spans == [("laugh", pytest.approx(0.2), pytest.approx(0.8)),
                     ("throat clearing", pytest.approx(0.9), pytest.approx(1.1))]


def test_text_spans_map_characters_onto_the_audio():
    text = "ha [laugh] hello [cough]"          # 24 characters
    assert nh.text_spans(text, 2.4) == [("laugh", pytest.approx(0.3), pytest.approx(1.0)),
                                        ("cough", pytest.approx(1.7), pytest.approx(2.4))]
    assert nh.text_spans("", 1.0) == [] and nh.text_spans("[laugh]", 0.0) == []


def test_heard_near_elsewhere_and_false_alarms():
    t = FakeTagger()
    times = np.arange(12) * 0.24                   # patches of 0.96 s, audio ~3.6 s
    # laugh heard at patches 1-2 (0.24-1.44 s), cough heard at patches 9-10 (far from its request)
    sc = _scores(12, [("Laughter", [1, 2]), ("Cough", [9, 10])])
    spans = [("laugh", 0.5, 0.9), ("cough", 0.2, 0.3), ("yawn", 1.0, 1.2)]   # yawn: no AudioSet class
    r = nh.judge_utterance(times, sc, 0.96, t, spans, tol=0.2, known=KNOWN)
    assert r["events"] == [("laugh", 0.5, 0.9, True, True), ("cough", 0.2, 0.3, False, True)]
    # the cough run (patches 9-10, one false alarm); the laugh is where it was asked for
    assert r["false_alarms"] == [("cough", pytest.approx(9 * 0.24), pytest.approx(10 * 0.24 + 0.96))]


def test_a_quiet_class_is_not_heard_and_a_runner_up_is():
    t = FakeTagger()
    times = np.arange(4) * 0.24
    sc = _scores(4, [])
    sc[:, CLASSES.index("Laughter")] = 0.1          # top 3, but below the 0.15 floor
    r = nh.judge_utterance(times, sc, 0.96, t, [("laugh", 0.0, 0.5)], tol=0.5, known=KNOWN)
    assert r["events"] == [("laugh", 0.0, 0.5, False, False)]
    sc[:, CLASSES.index("Laughter")] = 0.3
    sc[:, CLASSES.index("Music")] = 0.5
    sc[:, CLASSES.index("Silence")] = 0.4           # laugh now 4th: not heard
    r = nh.judge_utterance(times, sc, 0.96, t, [("laugh", 0.0, 0.5)], tol=0.5, known=KNOWN)
    assert r["events"][0][3:] == (False, False)


def test_evaluate_uses_durations_else_text_and_the_corpus_events(tmp_path):
    n = 16000 * 3
    # synth a: laugh at patch 0 (from durations: 0-0.75 s); synth b (no durations): laugh late
    # recordings: a laughs where the events say, b laughs nowhere
    t = FakeTagger({n: _scores(10, [("Laughter", [0])]), n + 1: _scores(10, [("Laughter", [8])]),
                    n + 2: _scores(10, [("Laughter", [0])]), n + 3: _scores(10, [])})
    synth = {"a": np.zeros(n), "b": np.zeros(n + 1)}
    real = {"a": np.zeros(n + 2), "b": np.zeros(n + 3)}
    tagged = {"a": "[laugh] ok", "b": "[laugh] and then a long sentence here, okay"}   # b: 43 chars
    res, rows = nh.evaluate(t, ["a", "b"], real, synth, tagged,
                            events={"a": [{"tag": "laugh", "start": 0.1, "end": 0.6}],
                                    "b": [{"tag": "laugh", "start": 0.1, "end": 0.6}]},
                            tokens={"a": "[laugh] [laugh]~2 o k"}, durations={"a": [3, 2, 1, 1, 1]})
    assert res["position_source"] == {"synth": {"durations": 1, "text": 1}, "real": {"events": 2}}
    s, r = res["synth"], res["real"]
    assert (s["requested"], s["heard"], s["heard_clip"], s["false_alarms"]) == (2, 1, 2, 1)
    assert (r["requested"], r["heard"], r["false_alarms"]) == (2, 1, 0)
    assert s["false_alarms_per_min"] == pytest.approx(1 / ((2 * n + 1) / 16000 / 60))
    assert s["per_tag"]["laugh"] == {"requested": 2, "heard": 1, "heard_clip": 2, "false_alarms": 1}
    assert "synth\tb\ttext\tlaugh\t0.00\t0.49\theard elsewhere\n" in rows
    assert any(x.startswith("synth\tb\t-\tlaugh\t") and x.endswith("false alarm\n") for x in rows)

    # the report carries the rows and the verdict
    m = {"num_utterances": 2, "not_synthesised": 0, "lang": "en", "asr_synth": None, "yamnet": res,
         "speaker": {"SIM": 0.6, "SIM_real_leave_one_out": 0.8, "SIM_synth_vs_other_speakers": 0.4},
         "frechet": {"FD": 0.9, "embedding": "e"}, "dnsmos_synth": {"SIG": 2, "BAK": 3, "OVRL": 2},
         "dnsmos_real": {"SIG": 3, "BAK": 3, "OVRL": 3}, "duration_s": {"synth_mean": 3, "real_mean": 3}}
    (tmp_path / "metrics.json").write_text(json.dumps(m))
    text = render(str(tmp_path), "c.yaml", "en", "default", [("t", str(tmp_path))])
    assert "| YAMNet NVV recall | 1/2 = 50.0 % | 1/2 = 50.0 % |" in text
    assert "1 of the 2 requested NVVs of the tags it knows heard within 0.5 s" in text
    assert "positions in the synthesis from: durations 1, text 1" in text
    assert "laugh 1/2 (1/2) FA 1 (0)" in text


def test_the_real_tagger_hears_a_recorded_laugh_where_it_is():
    """With YAMNet installed: the bank's recorded laugh padded by silence is heard at its place, not 3 s off."""
    from pyutils.audio_tagger import TaggerError, YamNet
    try:
        tagger = YamNet.load()
    except TaggerError as e:
        pytest.skip(f"YAMNet not installed ({e})")
    from pyutils.synth import nvv_bank_index as bank
    clips = [bank._clip_audio(c["wav"])[: 16000 * 2]
             for (tag, _), cs in sorted(bank.load_index().items()) if tag == "laugh" for c in cs]
    heard_alone = [x for x in clips if tagger.heard(x, 16000, "laugh")]   # some bank laughs sound like speech
    if not heard_alone:
        pytest.skip("no recorded laugh YAMNet hears in the NVV bank")
    x = heard_alone[0]
    sil = np.zeros(16000 * 4, dtype=np.float32)
    audio = np.concatenate([x, sil]).astype(np.float32)
    span = len(x) / 16000
    summ, per = nh.judge_set(tagger, {"u": audio}, {"u": [("laugh", 0.0, span)]})
    far, _ = nh.judge_set(tagger, {"u": audio}, {"u": [("laugh", span + 3.0, span + 3.5)]})
    assert summ["heard"] == 1 and summ["false_alarms"] == 0
    assert far["heard"] == 0 and far["heard_clip"] == 1 and far["false_alarms"] >= 1


def test_a_neighbouring_class_at_a_requested_nvv_is_no_false_alarm():
    t = FakeTagger()
    times = np.arange(10) * 0.24
    sc = _scores(10, [("Laughter", [0, 1]), ("Cough", [0, 1, 8])])   # a laugh that also sounds like a cough
    r = nh.judge_utterance(times, sc, 0.96, t, [("laugh", 0.1, 0.6)], tol=0.2, known=KNOWN)
    assert r["events"] == [("laugh", 0.1, 0.6, True, True)]
    assert r["false_alarms"] == [("cough", pytest.approx(8 * 0.24), pytest.approx(8 * 0.24 + 0.96))]
    # a requested NVV YAMNet has no class for (yawn) still marks its place as requested
    r = nh.judge_utterance(times, sc, 0.96, t, [("yawn", 1.7, 2.0)], tol=0.2, known=KNOWN)
    assert r["events"] == [] and [f[0] for f in r["false_alarms"]] == ["cough", "laugh"]
    assert r["false_alarms"][0][1] == pytest.approx(0.0)      # the early run; the cough at 1.92 s is by the yawn
    assert len(r["false_alarms"]) == 2
