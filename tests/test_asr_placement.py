"""Tags placed by time (pyutils.asr.placement) and NVVs written as text (pyutils.asr.nvv_words)."""

import pytest

from pyutils.asr.longform import Word, collapse_repeats
from pyutils.asr.nvv_words import Event, annotation_tag, extract, merge_events
from pyutils.asr.placement import _boundary, _is_sorted, place, tagged_transcript, unit_spans
from pyutils.scoring.textnorm import parse_tagged

EN = [Word(" That", 0.0, 0.3), Word(" was", 0.4, 0.6), Word(" really", 0.6, 1.0), Word(" surprising.", 1.0, 1.6)]


def ev(tag, start, end=None):
    return Event(tag, start, start if end is None else end)


# ------------------------------------------------------------------ placement, English words
@pytest.mark.parametrize("event, want", [
    (ev("laugh", 1.8, 2.4), "That was really surprising. [laugh]"),       # after the last word
    (ev("breath", -0.5, -0.1), "[breath] That was really surprising."),   # before the first
    (ev("cough", 0.32, 0.38), "That [cough] was really surprising."),     # in the pause 0.3-0.4
    (ev("sigh", 0.62, 0.7), "That was [sigh] really surprising."),        # early in "really": before it
    (ev("sigh", 0.9, 0.95), "That was really [sigh] surprising."),        # late in "really": after it
    (ev("sigh", 0.8, 0.8), "That was really [sigh] surprising."),         # a tie (centre of "really"): after
    (ev("gasp", 0.0, 1.6), "That was really [gasp] surprising."),         # long event: its centre counts
])
def test_english_word_boundaries(event, want):
    text = tagged_transcript(EN, [event], "en")
    assert text == want
    assert parse_tagged(text, "en").lexical == ("that", "was", "really", "surprising")


def test_english_several_events_keep_time_order_and_positions():
    events = [ev("cough", 2.0), ev("laugh", 1.7), ev("breath", 0.35)]
    text = tagged_transcript(EN, events, "en")
    assert text == "That [breath] was really surprising. [laugh] [cough]"
    assert [(e.position, e.tag) for e in parse_tagged(text, "en").events] == [(1, "breath"), (4, "laugh"), (4, "cough")]


def test_hyphenated_word_is_split_between_its_units():
    words = [Word(" twenty-five", 0.0, 1.0), Word(" apples", 1.0, 1.5)]
    assert unit_spans(words, "en") == ([2, 1], [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5)])
    text = tagged_transcript(words, [ev("hiss", 0.45, 0.55)], "en")
    assert [(e.position, e.tag) for e in parse_tagged(text, "en").events] == [(1, "hiss")]
    assert text.startswith("twenty")


def test_no_words_puts_every_event_first():
    assert tagged_transcript([], [ev("laugh", 3.0), ev("cough", 1.0)], "en") == "[cough] [laugh]"
    assert tagged_transcript([], [], "zh") == ""


def test_words_without_space_do_not_merge():
    words = [Word(" don", 0.0, 0.2), Word("t", 0.2, 0.3), Word(" go", 0.5, 0.7), Word("-on", 0.7, 0.9)]
    text = tagged_transcript(words, [ev("sniff", 0.4)], "en")
    assert text == "don t [sniff] go-on"
    assert parse_tagged(text, "en").lexical == ("don", "t", "go", "on")


def boundary_of(t, spans):
    """The boundary place() gives an event at time ``t``: argmin_k dist(t, G_k)."""
    starts = [s for s, _ in spans]
    return _boundary(t, spans, starts, _is_sorted(starts))


def test_boundary_of_gaps_and_overlaps():
    spans = [(0.0, 1.0), (0.8, 2.0), (2.5, 3.0)]  # first two overlap: their gap is the point 0.9
    assert boundary_of(0.9, spans) == 1
    assert boundary_of(2.2, spans) == 2
    assert boundary_of(99.0, spans) == 3
    assert boundary_of(-1.0, spans) == 0
    unsorted = [(1.0, 2.0), (0.0, 0.5)]
    assert boundary_of(0.7, unsorted) == 2


# ------------------------------------------------------------------ placement, Mandarin characters
ZH = [Word("今天", 0.0, 0.4), Word("天气", 0.4, 0.8), Word("真好。", 1.2, 1.6)]


@pytest.mark.parametrize("t, want", [
    (0.05, "[laugh]今天天气真好。"),
    (0.15, "今[laugh]天天气真好。"),       # inside the token 今天: 今 is 0.0-0.2
    (1.0, "今天天气[laugh]真好。"),
    (1.45, "今天天气真[laugh]好。"),
    (5.0, "今天天气真好。[laugh]"),
])
def test_mandarin_character_boundaries(t, want):
    text = tagged_transcript(ZH, [ev("laugh", t)], "zh")
    assert text == want
    assert "".join(parse_tagged(text, "zh").lexical) == "今天天气真好"


def test_place_returns_positions_in_text_order():
    got = place(ZH, [ev("cough", 5.0), ev("laugh", 0.05)], "zh")
    assert [(k, e.tag) for k, e in got] == [(0, "laugh"), (6, "cough")]


# ------------------------------------------------------------------ NVVs written as text
def test_english_annotations_and_interjections():
    words = [Word(" Haha,", 0.0, 0.5), Word(" that's", 0.6, 0.9), Word(" funny.", 0.9, 1.3),
             Word(" [coughs]", 1.4, 1.8), Word(" *sigh*", 2.0, 2.4), Word(" [MUSIC]", 2.5, 3.0),
             Word(" (clears", 3.0, 3.2), Word(" throat)", 3.2, 3.4), Word(" Hmm.", 3.5, 3.8)]
    kept, events = extract(words, "en")
    assert [w.text for w in kept] == [" that's", " funny.", " Hmm."]
    assert [(e.tag, e.start, e.end) for e in events] == [
        ("laugh", 0.0, 0.4), ("cough", 1.4, 1.8), ("sigh", 2.0, pytest.approx(2.4)),
        ("throat clearing", pytest.approx(3.0), pytest.approx(3.4))]
    assert tagged_transcript(kept, events, "en") == "[laugh] that's funny. [cough] [sigh] [throat clearing] Hmm."


@pytest.mark.parametrize("words, text", [
    ([" Ha,", " I", " see."], "Ha, I see."),                   # a single "ha" stays
    ([" Um,", " oh", " wow."], "Um, oh wow."),                 # fillers stay
    ([" (which", " was", " not", " what", " he", " meant)"], "(which was not what he meant)"),  # a real parenthesis
    ([" the", " [unclear]", " end"], "the end"),              # unknown bracket: removed, no tag
    ([" a", " stray]", " bracket"], "a stray bracket"),
])
def test_english_left_alone_or_removed_without_tag(words, text):
    kept, events = extract([Word(w, k, k + 0.5) for k, w in enumerate(words)], "en")
    assert events == []
    assert tagged_transcript(kept, [], "en") == text


def test_mandarin_spans():
    words = [Word("哈哈", 0.0, 0.4), Word("今天", 0.5, 0.9), Word("真好", 0.9, 1.3), Word("（笑）", 1.4, 1.8),
             Word("嗯", 2.0, 2.2), Word("咳嗽", 2.3, 2.6), Word("咳咳", 2.7, 3.0), Word("，唉，", 3.1, 3.4)]
    kept, events = extract(words, "zh")
    assert [e.tag for e in events] == ["laugh", "laugh", "cough", "sigh"]
    # the word "，唉，" loses its only unit: its punctuation goes with it
    assert tagged_transcript(kept, events, "zh") == "[laugh]今天真好[laugh]嗯咳嗽[cough][sigh]"


def test_keep_text_puts_the_tag_after_the_interjection():
    words = [Word("哈哈", 0.0, 0.4), Word("今天", 0.5, 0.9), Word("真好", 0.9, 1.3)]
    kept, events = extract(words, "zh", keep_text=True)
    assert tagged_transcript(kept, events, "zh") == "哈哈[laugh]今天真好"


@pytest.mark.parametrize("inside, tag", [
    ("laughs", "laugh"), ("Laughter", "laugh"), ("clears his throat", "throat clearing"),
    ("SNEEZES", "sneeze"), ("lip smack", "lipsmack"), ("sighs heavily", "sigh"), ("breathes deeply", "breath"),
    ("upbeat music", None),
    ("笑声", "laugh"), ("打喷嚏", "sneeze"), ("叹气", "sigh"),
])
def test_annotation_lexicon(inside, tag):
    assert annotation_tag(inside) == tag


def test_merge_same_tag_keeps_the_text_event_other_tag_the_detected_one():
    text = [Event("laugh", 1.0, 1.5), Event("cough", 6.0, 6.3)]
    det = [Event("laugh", 1.8, 2.0, 0.9, "detector"), Event("laugh", 4.0, 4.5, 0.9, "detector"),
           Event("gasp", 6.5, 6.7, 0.9, "detector")]
    got = merge_events(text, det)
    assert [(e.tag, e.start, e.source) for e in got] == [("laugh", 1.0, "text"), ("laugh", 4.0, "detector"),
                                                          ("gasp", 6.5, "detector")]
    assert merge_events(text, []) == text


# ------------------------------------------------------------------ loops
def test_collapse_repeats():
    words = [Word(f" {w}", k, k + 1) for k, w in enumerate(
        "All circuits All circuits All circuits are busy no no no".split())]
    kept, removed = collapse_repeats(words)
    assert [w.text.strip() for w in kept] == "All circuits are busy no no no".split()
    assert removed == 4
    words = [Word(f" {w}", k, k + 1) for k, w in enumerate("go go go go now".split())]
    assert [w.text.strip() for w in collapse_repeats(words)[0]] == ["go", "now"]


# ------------------------------------------------------------------ longform without a model
def _fake_transcriber(decode, lang="en"):
    from pyutils.asr.longform import LongformTranscriber

    tr = object.__new__(LongformTranscriber)   # no model: _decode is replaced
    tr.lang, tr.beam_size, tr.vad, tr.guards = lang, 1, True, True
    tr._decode = decode
    return tr


def test_pack_groups():
    from pyutils.asr.longform import pack_groups

    assert pack_groups([3, 4, 5, 6, 7, 12, 2, 2, -1, 9, 9, 9]) == [[0, 1, 2, 3], [4], [5], [6, 7], [8], [9, 10], [11]]
    assert pack_groups([]) == []


def test_packed_words_go_to_their_clip_on_its_time_axis():
    import numpy as np

    calls = []

    def decode(audio, vad, no_speech_rule):
        calls.append(len(audio))
        # clips of 2 s, 3 s, 1 s joined with 1 s gaps: offsets 0, 3, 7
        return [Word(" one", 0.2, 0.6), Word(" two", 2.1, 2.4), Word(" three", 3.5, 4.0),
                Word(" four", 6.9, 7.3), Word(" five", 7.5, 9.9)], None

    tr = _fake_transcriber(decode)
    clips = [np.full(2 * 16000, 0.1, np.float32), np.full(3 * 16000, 0.1, np.float32), np.full(16000, 0.1, np.float32)]
    out = tr.transcribe_packed(clips)
    assert calls == [8 * 16000]                                       # one pass for the three clips
    assert [[(w.text, w.start, w.end) for w in t.words] for t in out] == [
        [(" one", 0.2, 0.6), (" two", 2.0, 2.0)],                     # 2.1-2.4 is in the gap: clipped to the clip's end
        [(" three", pytest.approx(0.5), pytest.approx(1.0))],
        [(" four", 0.0, pytest.approx(0.3)), (" five", pytest.approx(0.5), 1.0)]]
    assert [t.duration for t in out] == [2.0, 3.0, 1.0]


def test_empty_after_vad_is_retried_without_it():
    import numpy as np

    calls = []

    def decode(audio, vad, no_speech_rule):
        calls.append((vad, no_speech_rule))
        return ([], 2.5) if vad else ([Word(" hi", 0.1, 0.3)], None)

    t = _fake_transcriber(decode).transcribe(np.full(3 * 16000, 0.1, np.float32))
    assert calls == [(True, True), (False, False)] and [w.text for w in t.words] == [" hi"]
    assert "retried without VAD" in t.notes[0]
