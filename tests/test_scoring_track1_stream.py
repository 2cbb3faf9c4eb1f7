"""``chorus-score track1`` streams its inputs: same numbers whatever the row order,
the same errors in the same order as the all-in-memory reading, no partial outputs."""

import functools
import json
import os
import random
import subprocess
import sys
from collections import Counter

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scoring_reference as plain  # noqa: E402
from pyutils.scoring.errors import ScoringError  # noqa: E402
from pyutils.scoring.track1 import PerUttReport, public_result  # noqa: E402
from pyutils.scoring.track1 import score_track1 as _score_track1  # noqa: E402
from pyutils.scoring.track1 import score_track1_files as _score_track1_files  # noqa: E402

# most cases here hold one language: scored as such (the default refuses them, as the official evaluator)
score_track1 = functools.partial(_score_track1, single_language=True)
score_track1_files = functools.partial(_score_track1_files, single_language=True)


def write_jsonl(path, rows, blank_every=0):
    with open(path, "w", encoding="utf-8") as f:
        for k, row in enumerate(rows, start=1):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            if blank_every and k % blank_every == 0:
                f.write("\n")


def score_files_with_report(tmp_path, name, ref, hyp, blank_every=0):
    d = tmp_path / name
    d.mkdir()
    write_jsonl(d / "ref.jsonl", ref, blank_every)
    write_jsonl(d / "hyp.jsonl", hyp, blank_every)
    with PerUttReport(str(d / "report.txt")) as report:
        result = score_track1_files(str(d / "ref.jsonl"), str(d / "hyp.jsonl"), report=report)
        report.commit()
    return public_result(result), (d / "report.txt").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- same numbers
@pytest.mark.parametrize("seed,rate", [(21, 0.1), (22, 0.5)])
def test_row_order_changes_nothing(tmp_path, seed, rate):
    """Shuffled reference and submission rows (and blank lines) give the identical JSON and report."""
    ref, hyp = plain.generate(400, seed=seed, rate=rate)
    sorted_result, sorted_report = score_files_with_report(tmp_path, "sorted", ref, hyp)
    rng = random.Random(seed)
    rng.shuffle(ref)
    rng.shuffle(hyp)
    shuffled_result, shuffled_report = score_files_with_report(tmp_path, "shuffled", ref, hyp, blank_every=7)
    assert json.dumps(shuffled_result, sort_keys=True) == json.dumps(sorted_result, sort_keys=True)
    assert shuffled_report == sorted_report
    # the report is in scoring order: English first, utt_id ascending
    heads = [line.split()[1:3] for line in sorted_report.splitlines() if line.startswith("== ")]
    assert heads == sorted([[r["utt_id"], f"({r['language']})"] for r in ref],
                           key=lambda h: (h[1] != "(en)", h[0]))
    # the rows API (lists in memory) gives the same result as the files
    assert json.dumps(score_track1(ref, hyp), sort_keys=True) == json.dumps(sorted_result, sort_keys=True)


def test_corpus_sums_equal_per_utterance_scores():
    """Every count is the sum of the utterances' counts (each scored on its own, so no state is
    shared) and mNTD their mean in scoring order: exact equality, floats included."""
    ref, hyp = plain.generate(300, seed=23, rate=0.3)
    hyp_by_id = {h["utt_id"]: h for h in hyp}
    whole = score_track1(list(reversed(ref)), hyp)
    for lang in ("en", "zh"):
        rows = sorted((r for r in ref if r["language"] == lang), key=lambda r: r["utt_id"])
        counts, per_tag, confusion = Counter(), Counter(), Counter()
        mntd = []
        # each utterance with an identical one-word anchor (no events, no edit, 1 reference token),
        # so that a reference without any token can be scored on its own too
        anchor = ({"utt_id": "~anchor", "language": lang, "text_with_nvvs": "x"},
                  {"utt_id": "~anchor", "text_with_nvvs": "x"})
        for r in rows:
            one = score_track1([r, anchor[0]], [hyp_by_id[r["utt_id"]], anchor[1]])[lang]
            counts.update(one["event_counts"])
            counts.update(tagged_edit_distance=one["tagged_edit_distance"],
                          tagged_reference_tokens=one["tagged_reference_tokens"] - 1)
            for tag, c in one["per_tag"].items():
                per_tag.update({(tag, k): c[k] for k in ("tp", "fp", "fn", "reference", "prediction")})
            for row, cells in one["confusion"]["table"].items():
                confusion.update({(row, col): v for col, v in cells.items()})
            if one["mNTD_num_utterances"]:
                mntd.append(one["mNTD"])
        res = whole[lang]
        assert res["num_utterances"] == len(rows) and not any(r["utt_id"] == "~anchor" for r in rows)
        assert {k: res["event_counts"][k] for k in res["event_counts"]} == {k: counts[k] for k in res["event_counts"]}
        assert res["tagged_edit_distance"] == counts["tagged_edit_distance"]
        assert res["tagged_reference_tokens"] == counts["tagged_reference_tokens"]
        assert {(t, k): c[k] for t, c in res["per_tag"].items() for k in ("tp", "fp", "fn", "reference",
                                                                          "prediction")} == dict(per_tag)
        assert {(r, c): v for r, cells in res["confusion"]["table"].items() for c, v in cells.items()} == \
            dict(confusion)
        assert res["mNTD_num_utterances"] == len(mntd)
        assert res["mNTD"] == sum(mntd) / len(mntd)


def test_per_tag_counts_match_plain_dp():
    """Per-tag TP/FP/FN against the plain implementation's full DP, tag by tag."""
    ref, hyp = plain.generate(300, seed=24, rate=0.25)
    random.Random(24).shuffle(hyp)
    res = score_track1(ref, hyp)
    hyp_text = {h["utt_id"]: h["text_with_nvvs"] for h in hyp}
    for lang in ("en", "zh"):
        tp, n_ref, n_hyp = Counter(), Counter(), Counter()
        for r in (r for r in ref if r["language"] == lang):
            rl, _, rev = plain.parse(r["text_with_nvvs"], lang)
            hl, _, hev = plain.parse(hyp_text[r["utt_id"]], lang)
            bmap = plain.boundary_map(rl, hl)
            mapped = [(t, bmap[p], o) for t, p, o in hev]
            for tag in plain.TAGS:
                tp[tag] += plain.f1_matches([e for e in rev if e[0] == tag], [e for e in mapped if e[0] == tag],
                                            plain.COLLAR[lang])
            n_ref.update(e[0] for e in rev)
            n_hyp.update(e[0] for e in mapped)
        for tag, c in res[lang]["per_tag"].items():
            assert (c["tp"], c["reference"], c["prediction"]) == (tp[tag], n_ref[tag], n_hyp[tag]), (lang, tag)


# ----------------------------------------------------------------------------- errors while streaming
def R(utt, text, lang="en"):
    return json.dumps({"utt_id": utt, "language": lang, "text_with_nvvs": text}, ensure_ascii=False)


def H(utt, text):
    return json.dumps({"utt_id": utt, "text_with_nvvs": text}, ensure_ascii=False)


REF = [R("e1", "a [laugh] b"), R("e2", "c d"), R("z1", "你[cough]好", "zh"), R("z2", "好的", "zh")]
HYP = [H("e1", "a [laugh] b"), H("e2", "c d"), H("z1", "你好"), H("z2", "好的")]
BAD_UTF8 = b'{"utt_id": "e2", "text_with_nvvs": "caf\xe9"}'


def _hyp(*changes, base=HYP):
    lines = list(base)
    for k, text in changes:
        if k >= len(lines):
            lines.append(text)
        else:
            lines[k] = text
    return lines


# Each case: (reference lines, submission lines, expected code, expected file ("ref"/"hyp"), expected line).
# The expected errors are those of the all-in-memory reading (checked against the previous implementation):
# every JSON/encoding error of a file before any row error of it, reference before submission,
# submission rows (fields, duplicates) before the id sets, the id sets before tags, tags in scoring order.
CASES = {
    "late duplicate beats early tag error": (
        REF, _hyp((0, H("e1", "a [giggle]")), (4, H("e2", "x"))), "DUPLICATE_UTT_ID", "hyp", 5),
    "late bad JSON beats early field error": (
        REF, _hyp((1, json.dumps({"utt_id": "e2"})), (4, "{oops")), "INVALID_JSON", "hyp", 5),
    "late non-UTF-8 byte beats early field error": (
        REF, _hyp((0, json.dumps({"utt_id": "e1", "text_with_nvvs": 3})), (4, BAD_UTF8)), "INVALID_ENCODING", "hyp", 5),
    "late non-object beats early duplicate": (
        REF, _hyp((1, H("e1", "x")), (4, "[1, 2]")), "INVALID_JSONL_RECORD", "hyp", 5),
    "English tag error before an earlier-line Mandarin one": (
        REF, [H("z1", "你[]好"), H("z2", "好的"), H("e1", "a b"), H("e2", "c [giggle]")], "UNSUPPORTED_NVV_TAG", "hyp", 4),
    "tag errors in utt_id order, not line order": (
        REF, [H("e2", "c ] d"), H("e1", "a [giggle] b"), H("z1", ""), H("z2", "")], "UNSUPPORTED_NVV_TAG", "hyp", 2),
    "missing ids beat tag errors": (
        REF, [H("e1", "[giggle]"), H("e2", ""), H("z1", "")], "MISSING_SAMPLES", "hyp", None),
    "unknown ids beat tag errors": (
        REF, _hyp((0, H("e1", "[giggle]")), (4, H("q9", ""))), "UNKNOWN_SAMPLES", "hyp", None),
    "both": (REF, [H("e1", ""), H("e2", ""), H("z1", ""), H("q1", "")], "ID_SET_MISMATCH", "hyp", None),
    "duplicate unknown id": (
        REF, _hyp((4, H("q9", "")), (5, H("q9", ""))), "DUPLICATE_UTT_ID", "hyp", 6),
    "reference: late bad JSON beats early language error": (
        [R("e1", "a", "fr"), R("e2", "b"), "{oops"], HYP, "INVALID_JSON", "ref", 3),
    "reference: a row error beats any submission error": (
        [R("e1", "a"), R("e1", "b")], ["{oops"], "DUPLICATE_UTT_ID", "ref", 2),
    "reference: tag error on an earlier line than a duplicate": (
        [R("e1", "a [giggle]"), R("e1", "b")], HYP, "UNSUPPORTED_NVV_TAG", "ref", 1),
    "English without tokens before a Mandarin tag error": (
        [R("e1", ""), R("z1", "好", "zh")], [H("z1", "[giggle]"), H("e1", "")], "EMPTY_REFERENCE_TOKENS", None, None),
    "English tag error before Mandarin without tokens": (
        [R("e1", "a"), R("z1", "", "zh")], [H("z1", ""), H("e1", "[giggle]")], "UNSUPPORTED_NVV_TAG", "hyp", 2),
    "submission with a byte-order mark": (
        REF, [b"\xef\xbb\xbf" + HYP[0].encode()] + HYP[1:], "INVALID_ENCODING", "hyp", 1),
    "empty submission": (REF, ["", "  "], "EMPTY_JSONL", "hyp", None),
}


def _write_lines(path, lines):
    with open(path, "wb") as f:
        for line in lines:
            f.write((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n")


@pytest.mark.parametrize("name", sorted(CASES))
def test_streaming_reports_the_first_error_in_official_order(tmp_path, name):
    ref_lines, hyp_lines, code, where, line = CASES[name]
    ref, hyp = tmp_path / "ref.jsonl", tmp_path / "hyp.jsonl"
    _write_lines(ref, ref_lines)
    _write_lines(hyp, hyp_lines)
    with pytest.raises(ScoringError) as info:
        score_track1_files(str(ref), str(hyp))
    err = info.value
    assert (err.code, err.line) == (code, line), err.one_line()
    assert err.path == {"ref": str(ref), "hyp": str(hyp), None: None}[where]


def test_id_set_message_names_counts_and_first_ids(tmp_path):
    ref, hyp = tmp_path / "ref.jsonl", tmp_path / "hyp.jsonl"
    _write_lines(ref, [R("e3", "a"), R("e1", "b"), R("e2", "c")])
    _write_lines(hyp, [H("q2", ""), H("e3", ""), H("q1", "")])
    with pytest.raises(ScoringError) as info:
        score_track1_files(str(ref), str(hyp))
    assert info.value.one_line() == (f"{hyp}: ID_SET_MISMATCH: 2 reference utt_id(s) missing (first: 'e1'); "
                                     "2 unknown utt_id(s) (first: 'q1')")


def test_cli_late_error_leaves_outputs_untouched(tmp_path):
    """An error on the last submission line: exit 2, one line, old outputs kept, no temp files, no new folder."""
    ref, hyp = tmp_path / "ref.jsonl", tmp_path / "hyp.jsonl"
    ref_rows, hyp_rows = plain.generate(300, seed=25, rate=0.1)
    write_jsonl(ref, ref_rows)
    with open(hyp, "wb") as f:
        for row in hyp_rows[:-1]:
            f.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
        last = b'{"utt_id": "' + hyp_rows[-1]["utt_id"].encode() + b'", "text_with_nvvs": "\xff"}'
        f.write(last + b"\n")
    column = last.index(b"\xff") + 1
    out = tmp_path / "out"
    out.mkdir()
    (out / "res.json").write_text("old result\n")
    (out / "per_utt.txt").write_text("old report\n")
    for report in (out / "per_utt.txt", tmp_path / "new" / "sub" / "per_utt.txt"):
        p = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "track1", "--single-language", "--ref", str(ref), "--hyp",
                            str(hyp), "--output-json", str(out / "res.json"), "--per-utt-report", str(report)],
                           capture_output=True, text=True)
        assert p.returncode == 2
        assert p.stderr == (f"{hyp}:300: INVALID_ENCODING: not UTF-8: byte 0xff at column {column}"
                            " (invalid start byte); convert the file to UTF-8\n")
        assert sorted(os.listdir(out)) == ["per_utt.txt", "res.json"]
        assert (out / "res.json").read_text() == "old result\n"
        assert (out / "per_utt.txt").read_text() == "old report\n"
        assert not (tmp_path / "new").exists()
    # fixed: outputs replaced, no temp file left
    write_jsonl(hyp, hyp_rows)
    p = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "track1", "--single-language", "--ref", str(ref), "--hyp", str(hyp),
                        "--output-json", str(out / "res.json"), "--per-utt-report", str(out / "per_utt.txt")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["per_utt.txt", "res.json"]
    assert json.loads((out / "res.json").read_text())["FinalTrack1Score"] == plain.score(ref_rows, hyp_rows)[
        "FinalTrack1Score"]
    assert (out / "per_utt.txt").read_text(encoding="utf-8").count("\n== ") == 300


def _lines_one_by_one(path, bom):
    """The literal reading: every line split and decoded on its own (what iter_lines must equal)."""
    out = []
    with open(path, "rb") as handle:
        for raw in handle:
            for piece in raw.splitlines():
                try:
                    text = piece.decode("utf-8")
                except UnicodeDecodeError:
                    return out + [("INVALID_ENCODING", len(out) + 1)]
                if not out and text.startswith("\ufeff"):
                    if bom != "strip":
                        return [("INVALID_ENCODING", 1)]
                    text = text[1:]
                out.append((len(out) + 1, text))
    return out


def test_block_reader_equals_line_by_line_reading(tmp_path):
    from pyutils.io import iter_lines
    rng = random.Random(5)
    pieces = [b"a", b"\n", b"\r", b"\r\n", "\u00e9".encode(), "\u4f60".encode(), b" ", b"\xff", b"\xef\xbb\xbf"]
    path = tmp_path / "f.txt"
    for _ in range(400):
        data = b"".join(rng.choice(pieces[:7] if rng.random() < 0.7 else pieces) for _ in range(rng.randint(0, 30)))
        path.write_bytes(data)
        for bom in ("error", "strip"):
            want = _lines_one_by_one(path, bom)
            for block_size in (1, 3, 8, 1 << 18):
                got = []
                try:
                    got.extend(iter_lines(str(path), bom=bom, block_size=block_size))
                except ScoringError as exc:
                    got.append((exc.code, exc.line))
                assert got == want, (data, bom, block_size)
