"""Hand-worked cases for ``chorus-score track1`` (protocol v1.0.0) and a
cross-check against the plain reference implementation in scoring_reference.py."""

import functools
import json
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scoring_reference as plain  # noqa: E402
from pyutils.scoring import align  # noqa: E402
from pyutils.scoring.errors import ScoringError  # noqa: E402
from pyutils.scoring.textnorm import Event, parse_tagged  # noqa: E402
from pyutils.scoring.track1 import score_track1 as _score_track1  # noqa: E402

# most cases here hold one language: scored as such (the default refuses them, as the official evaluator)
score_track1 = functools.partial(_score_track1, single_language=True)
from pyutils.tags import challenge_tags  # noqa: E402


def en(text):
    return parse_tagged(text, "en")


def zh(text):
    return parse_tagged(text, "zh")


def code_of(fn, *args):
    with pytest.raises(ScoringError) as info:
        fn(*args)
    return info.value.code


def one(ref, hyp, lang="en"):
    return score_track1([{"utt_id": "u", "language": lang, "text_with_nvvs": ref}],
                        [{"utt_id": "u", "text_with_nvvs": hyp}])[lang]


def mapped_positions(ref_text, hyp_text, lang="en"):
    r, h = parse_tagged(ref_text, lang), parse_tagged(hyp_text, lang)
    vocab = {}
    code = lambda seq: [vocab.setdefault(t, len(vocab)) for t in seq]  # noqa: E731
    bmap = align.boundary_map(code(r.lexical), code(h.lexical))
    return [bmap[e.position] for e in h.events]


# ----------------------------------------------------------------------------- parsing
def test_sixteen_challenge_tags():
    tags = challenge_tags()
    assert len(tags) == len(set(tags)) == 16 and "throat clearing" in tags


def test_parse_english_apostrophes_and_positions():
    p = en("I\u2019m [Laugh], really!")
    assert p.lexical == ("i'm", "really")
    assert p.tagged == ("i'm", "[laugh]", "really")
    assert p.events == (Event(1, 0, "laugh"),)
    assert en("don\u2018t don\u201bt don\u2032t don\uff07t").lexical == ("don't",) * 4
    assert en("rock 'n' roll").lexical == ("rock", "n", "roll")
    assert en("it's -- 'quoted'").lexical == ("it's", "quoted")


def test_parse_digits_underscore_and_nfkc():
    assert en("Meet at 3PM, foo_bar 2026").lexical == ("meet", "at", "3pm", "foo", "bar", "2026")
    assert en("ｆｕｌｌ ｗｉｄｔｈ").lexical == ("full", "width")  # NFKC
    assert zh("１２ab").lexical == ("1", "2", "a", "b")


def test_parse_mandarin_punctuation_and_apostrophe():
    p = zh("你好[cough]，世界！“好”的、")
    assert p.lexical == tuple("你好世界好的")
    assert p.events == (Event(2, 0, "cough"),)
    assert zh("你'好\u2019啊").lexical == ("你", "好", "啊")  # apostrophe is punctuation in zh


def test_tag_normalisation_nfkc_case_whitespace():
    assert en("[ＬＡＵＧＨ]").events[0].tag == "laugh"
    assert en("[ Throat \u3000 Clearing ]").events[0].tag == "throat clearing"
    assert en("[throat\nclearing]").events[0].tag == "throat clearing"
    p = en("a [laugh][cough] b")
    assert p.events == (Event(1, 0, "laugh"), Event(1, 1, "cough"))
    assert p.tagged == ("a", "[laugh]", "[cough]", "b")


def test_fullwidth_brackets_are_text_not_tags():
    p = en("a ［laugh］ b")
    assert p.events == () and p.lexical == ("a", "laugh", "b")


@pytest.mark.parametrize("text,code", [
    ("a [] b", "EMPTY_NVV_TAG"),
    ("a [ \t ] b", "EMPTY_NVV_TAG"),
    ("a [giggle] b", "UNSUPPORTED_NVV_TAG"),
    ("a [throat_clearing] b", "UNSUPPORTED_NVV_TAG"),
    ("a ] b", "MALFORMED_NVV_TAG"),
    ("a [b", "MALFORMED_NVV_TAG"),
    ("[[laugh]]", "MALFORMED_NVV_TAG"),
    ("[laugh] x [", "MALFORMED_NVV_TAG"),
    ("] [giggle]", "MALFORMED_NVV_TAG"),   # left to right: the stray bracket comes first
    ("[giggle] ]", "UNSUPPORTED_NVV_TAG"),
])
def test_tag_errors(text, code):
    assert code_of(parse_tagged, text, "en") == code


# ----------------------------------------------------------------------------- alignment
def test_alignment_missing_tag_does_not_shift():
    # protocol example: deletion of a reference unit -> smallest visited boundary
    assert mapped_positions("a b c", "a [cough] c") == [1]


def test_alignment_prefers_diagonal_then_deletion():
    # ref (a a), hyp (a): the backtrace matches the *second* a (diagonal first),
    # so hyp boundary 1 -> ref boundary 2 and boundary 0 -> 0.
    assert mapped_positions("a a", "[cough] a [laugh]") == [0, 2]
    # ref (x y), hyp (z): substitute y/z diagonally, delete x -> boundary 1 -> 2
    assert mapped_positions("x y", "[cough] z [laugh]") == [0, 2]


def test_alignment_insertion():
    # ref (a), hyp (a b): b inserted; boundaries 1 and 2 both map to 1
    assert mapped_positions("a", "a [laugh] b [cough]") == [1, 1]
    assert mapped_positions("", "a [laugh] b") == [0]
    assert mapped_positions("a b c", "[laugh]") == [0]


def test_boundary_map_matches_plain_dp_on_random_ties():
    rng = random.Random(3)
    for _ in range(3000):
        n, m = rng.randint(0, 9), rng.randint(0, 9)
        alphabet = rng.randint(1, 4)
        r = [rng.randrange(alphabet) for _ in range(n)]
        h = [rng.randrange(alphabet) for _ in range(m)]
        full = plain.boundary_map(r, h)
        assert align.boundary_map(r, h) == full, (r, h)
        lowest = rng.randint(0, m)
        assert align.boundary_map(r, h, lowest)[lowest:] == full[lowest:], (r, h, lowest)


# ----------------------------------------------------------------------------- F1 matching
def test_collar_edges_en_and_zh():
    assert one("[laugh] a b c d", "a b [laugh] c d")["event_counts"]["tp"] == 1   # |d| = 2
    assert one("[laugh] a b c d", "a b c [laugh] d")["event_counts"]["tp"] == 0   # |d| = 3
    assert one("[laugh]一二三四五六七", "一二三四五[laugh]六七", "zh")["event_counts"]["tp"] == 1  # 5
    r = one("[laugh]一二三四五六七", "一二三四五六[laugh]七", "zh")  # 6
    assert (r["event_counts"]["tp"], r["event_counts"]["fp"], r["event_counts"]["fn"]) == (0, 1, 1)


def test_matching_is_one_to_one_and_tie_prefers_match():
    r = one("a [laugh] b c [laugh] d", "a b [laugh] c d")   # refs 1, 3; pred 2
    assert (r["event_counts"]["tp"], r["event_counts"]["fp"], r["event_counts"]["fn"]) == (1, 0, 1)
    pairs = align.match_events_f1([Event(1, 0, "laugh"), Event(3, 1, "laugh")], [Event(2, 0, "laugh")], 2)
    # both at distance 1: the DP keeps the match at the later reference (match > skip-ref)
    assert [(g.position, p.position) for g, p in pairs] == [(3, 2)]
    # minimum total distance among maximum matchings
    pairs = align.match_events_f1([Event(0, 0, "x"), Event(2, 1, "x")], [Event(1, 0, "x"), Event(2, 1, "x")], 2)
    assert [(g.position, p.position) for g, p in pairs] == [(0, 1), (2, 2)]


def test_greedy_count_equals_dp_count():
    rng = random.Random(5)
    for _ in range(2000):
        refs = sorted(rng.randint(0, 12) for _ in range(rng.randint(0, 6)))
        preds = sorted(rng.randint(0, 12) for _ in range(rng.randint(0, 6)))
        collar = rng.choice([0, 1, 2, 5])
        dp = align.match_events_f1([Event(p, k, "t") for k, p in enumerate(refs)],
                                   [Event(p, k, "t") for k, p in enumerate(preds)], collar)
        assert align.count_matches_f1(refs, preds, collar) == len(dp)


def test_per_tag_and_precision_recall():
    r = one("a [laugh] b [cough] c", "a [laugh] b [sigh] c")
    assert r["per_tag"]["laugh"]["f1"] == 1.0
    assert (r["per_tag"]["cough"]["fn"], r["per_tag"]["sigh"]["fp"]) == (1, 1)
    assert (r["precision"], r["recall"], r["F1_micro"]) == (0.5, 0.5, 0.5)
    table = r["confusion"]["table"]
    assert table["laugh"]["laugh"] == 1 and table["cough"]["sigh"] == 1 and table["cough"]["<none>"] == 0


def test_zero_denominators():
    r = one("a b", "a b")
    assert (r["precision"], r["recall"], r["F1_micro"], r["mNTD"]) == (0.0, 0.0, 0.0, 0.0)
    assert r["Track1Score"] == pytest.approx(30.0)  # 0.2*(1-0) + 0.1*(1-0)


# ----------------------------------------------------------------------------- mNTD
def test_mntd_swapped_order_is_maximal():
    r = one("a [laugh] b [cough] c", "a [cough] b [laugh] c")
    assert r["F1_micro"] == 1.0          # both within the collar
    assert r["mNTD"] == 1.0              # but the monotone alignment pays both as wrong tags


def test_mntd_displacement_extra_and_missing():
    assert one("a b [laugh] c d", "a [laugh] b c d")["mNTD"] == pytest.approx(0.25)   # |2-1|/4
    assert one("a [laugh] b", "a [laugh] b [cough]")["mNTD"] == pytest.approx(0.5)    # (0+1)/2
    assert one("a [laugh] b", "a b")["mNTD"] == 1.0
    assert one("a [laugh] b", "a [cough] b")["mNTD"] == 1.0
    assert one("[laugh]", "[laugh] a b c")["mNTD"] == 0.0                             # L = max(0,1)
    # far same-tag pair costs at most 1
    assert align.utterance_mntd([Event(0, 0, "x")], [Event(9, 0, "x")], 3) == 1.0


def test_mntd_matches_plain_dp_on_random_events():
    rng = random.Random(1)
    for _ in range(3000):
        n, m, length = rng.randint(1, 5), rng.randint(0, 5), rng.randint(0, 12)
        tags = ["a", "b"] if rng.random() < 0.5 else ["a"]
        refs = [Event(p, k, rng.choice(tags)) for k, p in enumerate(sorted(rng.randint(0, length) for _ in range(n)))]
        preds = [Event(p, k, rng.choice(tags)) for k, p in enumerate(sorted(rng.randint(0, length) for _ in range(m)))]
        expected = plain.mntd([(e.tag, e.position, e.order) for e in refs],
                              [(e.tag, e.position, e.order) for e in preds], length)
        assert align.utterance_mntd(refs, preds, length) == expected


def test_mntd_only_over_utterances_with_reference_events():
    res = score_track1(
        [{"utt_id": "a", "language": "en", "text_with_nvvs": "x [laugh] y"},
         {"utt_id": "b", "language": "en", "text_with_nvvs": "x y"}],
        [{"utt_id": "a", "text_with_nvvs": "x [laugh] y"},
         {"utt_id": "b", "text_with_nvvs": "x [cough] y"}])["en"]
    assert res["mNTD"] == 0.0 and res["mNTD_num_utterances"] == 1
    assert res["event_counts"] == {"tp": 1, "fp": 1, "fn": 0, "reference": 1, "prediction": 2}


# ----------------------------------------------------------------------------- error rate and score
def test_tagged_error_is_corpus_level():
    res = score_track1(
        [{"utt_id": "a", "language": "zh", "text_with_nvvs": "你好[laugh]"},
         {"utt_id": "b", "language": "zh", "text_with_nvvs": "一二三四五六七"}],
        [{"utt_id": "a", "text_with_nvvs": "你好"},
         {"utt_id": "b", "text_with_nvvs": "一二三四五六七"}])["zh"]
    assert res["tagged_transcript_error"] == pytest.approx(1 / 10)
    assert res["tagged_transcript_error_name"] == "CER"


def test_score_formula_hand_worked():
    r = one("a [laugh] b", "a b [laugh]")
    # F1 = 1 (|2-1| <= 2); mNTD = 1/2; tagged WER = 2/3
    assert (r["F1_micro"], r["mNTD"]) == (1.0, 0.5)
    assert r["tagged_transcript_error"] == pytest.approx(2 / 3)
    assert r["Track1Score"] == pytest.approx(100 * (0.7 + 0.2 * 0.5 + 0.1 / 3), abs=1e-9)
    assert one("a b c d", "")["Track1Score"] == pytest.approx(20.0)  # err clipped at 1


def test_bilingual_and_single_language_final():
    ref = [{"utt_id": "e", "language": "en", "text_with_nvvs": "a [laugh] b"},
           {"utt_id": "z", "language": " ZH ", "text_with_nvvs": "你[laugh]好"}]
    hyp = [{"utt_id": "e", "text_with_nvvs": "a [laugh] b"}, {"utt_id": "z", "text_with_nvvs": "你好"}]
    res = score_track1(ref, hyp)
    assert res["Track1Score_EN"] == 100.0
    assert res["FinalTrack1Score"] == round((100.0 + res["Track1Score_ZH"]) / 2, 12)
    with pytest.raises(ScoringError) as info:  # as the official evaluator: both languages or nothing
        _score_track1(ref[:1], hyp[:1], ref_path="ref.jsonl")
    assert info.value.one_line().startswith("ref.jsonl: REFERENCE_LANGUAGE_COVERAGE_ERROR: ")
    assert "missing: zh" in info.value.message and "--single-language" in info.value.message
    only = score_track1(ref[:1], hyp[:1])
    assert only["zh"] is None and only["Track1Score_ZH"] is None
    assert only["FinalTrack1Score"] == only["Track1Score_EN"] == 100.0
    assert "en only" in only["final_score_definition"]
    for key in ("F1_micro", "mNTD", "tagged_transcript_error", "precision", "recall", "Track1Score",
                "event_counts", "per_tag"):
        assert key in res["en"] and key in res["zh"]


def test_matches_plain_reference_implementation():
    for seed, rate in enumerate([0.0, 0.05, 0.15, 0.4, 0.9]):
        ref, hyp = plain.generate(200, seed=seed, rate=rate)
        fast = score_track1(ref, hyp)
        slow = plain.score(ref, hyp)
        assert fast["FinalTrack1Score"] == slow["FinalTrack1Score"]
        for lang in ("en", "zh"):
            for key in ("F1_micro", "precision", "recall", "mNTD", "tagged_transcript_error", "Track1Score"):
                assert fast[lang][key] == slow[lang][key], (seed, lang, key)


# ----------------------------------------------------------------------------- validation
def _rows(*texts, lang="en"):
    return [{"utt_id": f"u{k}", "language": lang, "text_with_nvvs": t} for k, t in enumerate(texts)]


@pytest.mark.parametrize("ref,hyp,code,line", [
    ([{"utt_id": "a", "language": "fr", "text_with_nvvs": "x"}], [], "INVALID_LANGUAGE", 1),
    ([{"utt_id": "a", "text_with_nvvs": "x"}], [], "MISSING_REQUIRED_FIELD", 1),
    ([{"utt_id": 3, "language": "en", "text_with_nvvs": "x"}], [], "INVALID_FIELD_TYPE", 1),
    ([{"utt_id": " ", "language": "en", "text_with_nvvs": "x"}], [], "EMPTY_REQUIRED_FIELD", 1),
    (_rows("x", "y") + [{"utt_id": "u0", "language": "en", "text_with_nvvs": "z"}], [], "DUPLICATE_UTT_ID", 3),
    (_rows("x", "[sniffle]"), [], "UNSUPPORTED_NVV_TAG", 2),
    (_rows("x"), [{"utt_id": "u0", "text_with_nvvs": None}], "INVALID_FIELD_TYPE", 1),
    (_rows("x", "y"), [{"utt_id": "u0", "text_with_nvvs": ""}], "MISSING_SAMPLES", None),
    (_rows("x"), [{"utt_id": "u0", "text_with_nvvs": ""}, {"utt_id": "u9", "text_with_nvvs": ""}],
     "UNKNOWN_SAMPLES", None),
    (_rows("x", "y"), [{"utt_id": "u0", "text_with_nvvs": ""}, {"utt_id": "u9", "text_with_nvvs": ""}],
     "ID_SET_MISMATCH", None),
    (_rows("x", "y"), [{"utt_id": "u1", "text_with_nvvs": "[]"}, {"utt_id": "u0", "text_with_nvvs": "ok"}],
     "EMPTY_NVV_TAG", 1),
    (_rows("x", "y"), [{"utt_id": "u0", "text_with_nvvs": "a"}, {"utt_id": "u1", "text_with_nvvs": "b ["}],
     "MALFORMED_NVV_TAG", 2),
    (_rows("x"), [{"utt_id": "u0", "text_with_nvvs": "a"}, {"utt_id": "u0", "text_with_nvvs": "b"}],
     "DUPLICATE_UTT_ID", 2),
    (_rows(""), [{"utt_id": "u0", "text_with_nvvs": "a"}], "EMPTY_REFERENCE_TOKENS", None),
])
def test_validation_codes(ref, hyp, code, line):
    with pytest.raises(ScoringError) as info:
        score_track1(ref, hyp, ref_path="ref.jsonl", hyp_path="hyp.jsonl")
    assert info.value.code == code
    assert info.value.line == line
    assert "\n" not in info.value.one_line()


def test_error_lines_count_blank_lines(tmp_path):
    from pyutils.scoring import track1
    score_track1_files = functools.partial(track1.score_track1_files, single_language=True)
    ref = tmp_path / "ref.jsonl"
    hyp = tmp_path / "hyp.jsonl"
    ref.write_text(json.dumps({"utt_id": "a", "language": "en", "text_with_nvvs": "x"}) + "\n")
    hyp.write_text("\n\n" + json.dumps({"utt_id": "a", "text_with_nvvs": "x [giggle]"}) + "\n")
    with pytest.raises(ScoringError) as info:
        score_track1_files(str(ref), str(hyp))
    assert info.value.one_line() == f"{hyp}:3: UNSUPPORTED_NVV_TAG: tag [giggle] is not one of the 16 challenge tags"
    for bad, code in [("{oops\n", "INVALID_JSON"), ("[1, 2]\n", "INVALID_JSONL_RECORD"), ("\n \n", "EMPTY_JSONL")]:
        hyp.write_text(bad)
        with pytest.raises(ScoringError) as info:
            score_track1_files(str(ref), str(hyp))
        assert info.value.code == code


TRICKY = ["a", "B", "z", "3", "_", "'", "\u2019", "\u2018", "\uff07", "\u2032", " ", "\u3000", "\t", "-", ".", "…",
          "你", "好", "，", "！", "\uff08", "\u0301", "e", "\u00e9", "\uff76", "\uff9e", "\u1100", "\u1161", "\u11a8",
          "\ufb01", "\u00b2", "\u216b", "\u0130", "\u03a3", "\u03c3", "\u03f9", "\ue000", "\x01", "\uff3b", "\uff3d", "[", "]",
          "[laugh]", "[ Throat\u3000Clearing ]", "[ＣＯＵＧＨ]", "[giggle]", "[]", "[\u0301]"]


def _outcome(fn, text, lang):
    try:
        return fn(text, lang)
    except ScoringError as exc:
        return exc.code


def test_fast_parse_equals_literal_procedure_on_tricky_text():
    from pyutils.scoring.textnorm import parse_tagged_segments
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 14)))
        for lang in ("en", "zh"):
            fast = _outcome(parse_tagged, text, lang)
            literal = _outcome(parse_tagged_segments, text, lang)
            assert fast == literal, (text, lang, fast, literal)
            if not isinstance(literal, str):
                lex, tagged, events = plain.parse(text, lang)
                assert list(literal.lexical) == lex and list(literal.tagged) == tagged, (text, lang)
                assert [(e.tag, e.position, e.order) for e in literal.events] == events


def test_confusion_rows_and_columns_add_up():
    ref, hyp = plain.generate(300, seed=11, rate=0.3)
    res = score_track1(ref, hyp)
    for lang in ("en", "zh"):
        r = res[lang]
        table = r["confusion"]["table"]
        for tag, c in r["per_tag"].items():
            assert table[tag][tag] == c["tp"]
            assert sum(table[tag].values()) == c["reference"]
            assert sum(row[tag] for row in table.values()) == c["prediction"]
        assert table["<none>"]["<none>"] == 0


def test_common_block_fast_paths_equal_the_plain_rules():
    """NFKC and the deletion of ignored characters: the regex fast paths (text all in the
    common blocks) equal unicodedata.normalize and the per-character rule."""
    import unicodedata
    from pyutils.scoring import textnorm
    rng = random.Random(3)
    pools = [range(0x00, 0x100), range(0x2000, 0x2070), range(0x3000, 0x3040), range(0x4E00, 0xA000),
             range(0xFF00, 0xFFF0), [0xE000, 0x0301, 0x3099, 0x1100, 0x1161, 0xAC00, 0x03A3]]
    for _ in range(3000):
        text = "".join(chr(rng.choice(rng.choice(pools[:5] if rng.random() < 0.7 else pools)))
                       for _ in range(rng.randint(0, 12)))
        assert textnorm._nfkc_fast(text) == unicodedata.normalize("NFKC", text), ascii(text)
        for keep in (False, True):
            want = "".join(c for c in text if (keep and c == "\ue000") or not textnorm.is_ignored_char(c))
            assert textnorm._drop_ignored(text, keep_marker=keep) == want, (ascii(text), keep)
