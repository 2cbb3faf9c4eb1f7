"""Pairs-list validation of the VC recipe: every problem reported at once, with lines."""

import os

import numpy as np
import pytest
import soundfile as sf

from pyutils.vc import pairs as P


def _wav(path, seconds=0.5, sr=16000):
    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sr, subtype="PCM_16")
    return path


@pytest.fixture
def audio(tmp_path):
    d = tmp_path / "audio"
    d.mkdir()
    good = [_wav(str(d / f"u{i}.wav")) for i in range(3)]
    broken = d / "broken.wav"
    broken.write_bytes(b"RIFF....WAVEfmt this is not audio")
    return d, good, str(broken)


def test_valid_list_parses_relative_paths(tmp_path, audio):
    d, good, _ = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("audio/u0.wav\taudio/u1.wav\tp_a.wav\n"
                   f"{good[2]}\t{good[0]}\tp_b.wav\n", encoding="utf-8")
    rows = P.read_pairs(str(tsv))
    assert [r.pair_id for r in rows] == ["p_a", "p_b"]
    assert rows[0].source == os.path.abspath(good[0]) and rows[0].target == os.path.abspath(good[1])
    assert rows[1].line == 2


def test_all_problems_reported_together_with_line_numbers(tmp_path, audio):
    d, good, broken = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("\n".join([
        f"{good[0]}\t{good[1]}\tok.wav",                   # 1 fine
        f"{d}/missing_src.wav\t{good[1]}\tx1.wav",          # 2 source missing
        f"{good[0]}\t{broken}\tx2.wav",                     # 3 target unreadable
        f"{good[0]}\t{good[1]}",                            # 4 two fields
        f"{broken}\t{d}/gone.wav\tx3.wav",                  # 5 both sides bad
        f"{good[0]}\t{good[1]}\tok.wav",                    # 6 duplicate name
        f"{good[0]}\t{good[1]}\tsub/dir.wav",               # 7 not a plain name
    ]) + "\n", encoding="utf-8")
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(tsv))
    probs = info.value.problems
    text = "\n".join(probs)
    assert f"{tsv}:2: SOURCE_MISSING" in text
    assert f"{tsv}:3: TARGET_UNREADABLE" in text
    assert f"{tsv}:4: BAD_FIELDS" in text
    assert f"{tsv}:5: SOURCE_UNREADABLE" in text and f"{tsv}:5: TARGET_MISSING" in text
    assert f"{tsv}:6: DUPLICATE_NAME" in text and "line 1" in text
    assert f"{tsv}:7: BAD_NAME" in text
    assert not any(p.startswith(f"{tsv}:1:") for p in probs)
    assert len(probs) == 7
    assert "nothing was converted" in str(info.value)


def test_cli_exit_code_and_pair_dirs(tmp_path, audio, capsys):
    d, good, broken = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"{good[0]}\t{good[1]}\tb.wav\n{good[2]}\t{good[1]}\ta.wav\n", encoding="utf-8")
    text_dir = tmp_path / "test_src"
    text_dir.mkdir()
    (text_dir / "wav.scp").write_text(f"s0 {good[0]}\ns2 {good[2]}\n", encoding="utf-8")
    (text_dir / "text").write_text("s0 xin chào\ns2 tạm biệt\n", encoding="utf-8")
    src, ref = tmp_path / "src", tmp_path / "ref"
    assert P.main(["--pairs", str(tsv), "--src-text-dir", str(text_dir),
                   "--out-src", str(src), "--out-ref", str(ref)]) == 0
    assert (src / "wav.scp").read_text().splitlines() == [f"a {os.path.abspath(good[2])}",
                                                          f"b {os.path.abspath(good[0])}"]
    assert (ref / "wav.scp").read_text().splitlines()[0] == f"a {os.path.abspath(good[1])}"
    assert (src / "text").read_text().splitlines() == ["a tạm biệt", "b xin chào"]
    table = (src / "pairs.tsv").read_text().splitlines()
    assert table[0].split("\t") == ["a", os.path.abspath(good[2]), os.path.abspath(good[1]), "a.wav"]

    bad = tmp_path / "bad.tsv"
    bad.write_text(f"{broken}\t{good[1]}\tz.wav\n", encoding="utf-8")
    assert P.main(["--pairs", str(bad)]) == 2
    assert "SOURCE_UNREADABLE" in capsys.readouterr().err


def test_empty_list(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("\n\n", encoding="utf-8")
    with pytest.raises(P.PairsError, match="EMPTY"):
        P.read_pairs(str(tsv))


def test_empty_source_and_missing_reference_named_by_line(tmp_path, audio):
    d, good, _ = audio
    empty = d / "empty.wav"
    sf.write(str(empty), np.zeros(0, np.float32), 16000, subtype="PCM_16")   # header, no samples
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"{empty}\t{good[1]}\ta.wav\n{good[0]}\tno_such_ref.wav\tb.wav\n", encoding="utf-8")
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(tsv))
    assert info.value.problems == [
        f"{tsv}:1: SOURCE_UNREADABLE: {empty}: audio has no samples",
        f"{tsv}:2: TARGET_MISSING: no_such_ref.wav: file not found",
    ]


def test_fourth_column_transcripts_go_to_the_source_text(tmp_path, audio):
    d, good, _ = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"{good[0]}\t{good[1]}\tb.wav\t  xin   chào \n{good[2]}\t{good[1]}\ta.wav\ttạm biệt\n",
                   encoding="utf-8")
    text_dir = tmp_path / "test_src"        # the corpus transcripts lose against the user's
    text_dir.mkdir()
    (text_dir / "wav.scp").write_text(f"s0 {good[0]}\n", encoding="utf-8")
    (text_dir / "text").write_text("s0 something else\n", encoding="utf-8")
    src, ref = tmp_path / "src", tmp_path / "ref"
    assert P.main(["--pairs", str(tsv), "--src-text-dir", str(text_dir),
                   "--out-src", str(src), "--out-ref", str(ref)]) == 0
    assert (src / "text").read_text(encoding="utf-8").splitlines() == ["a tạm biệt", "b xin chào"]
    # the internal table keeps four columns: pair_id, source, target, name
    assert all(len(line.split("\t")) == 4 for line in (src / "pairs.tsv").read_text().splitlines())
    from pyutils.scoring.validate import validate_vc
    out = tmp_path / "out"
    out.mkdir()
    for n in ("a.wav", "b.wav"):
        _wav(str(out / n))
    assert validate_vc(str(tsv), str(out))[-1] == "RESULT: OK"


def test_src_text_file_by_pair_or_source_id(tmp_path, audio):
    d, good, _ = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"{good[0]}\t{good[1]}\tp1.wav\n{good[2]}\t{good[1]}\tp2.wav\n", encoding="utf-8")
    text = tmp_path / "text"
    text.write_text("p1 một hai\nu2 ba bốn\nu0 not used: the pair id wins\n", encoding="utf-8")
    rows = P.read_pairs(str(tsv), src_text=str(text))
    assert [(r.pair_id, r.text) for r in rows] == [("p1", "một hai"), ("p2", "ba bốn")]
    src, ref = tmp_path / "src", tmp_path / "ref"
    P.write_pair_dirs(rows, str(src), str(ref))
    assert (src / "text").read_text(encoding="utf-8").splitlines() == ["p1 một hai", "p2 ba bốn"]


def test_transcript_problems_name_file_and_line(tmp_path, audio):
    d, good, _ = audio
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"{good[0]}\t{good[1]}\tp1.wav\tmột\n"
                   f"{good[0]}\t{good[1]}\tp2.wav\n"                 # 2 no transcript in a list with them
                   f"{good[0]}\t{good[1]}\tp3.wav\t   \n"           # 3 empty transcript
                   f"{good[0]}\t{good[1]}\tp4.wav\ta\tb\n",         # 4 five fields
                   encoding="utf-8")
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(tsv))
    text = "\n".join(info.value.problems)
    assert f"{tsv}:2: TEXT_MISSING: line 1 gives a source transcript" in text
    assert f"{tsv}:3: EMPTY_TEXT" in text
    assert f"{tsv}:4: BAD_FIELDS" in text
    assert len(info.value.problems) == 3

    plain = tmp_path / "plain.tsv"
    plain.write_text(f"{good[0]}\t{good[1]}\tp1.wav\n{good[2]}\t{good[1]}\tp2.wav\n", encoding="utf-8")
    bad_text = tmp_path / "text"
    bad_text.write_bytes("p1 một\np1 again\nu9\n".encode() + b"u8 caf\xe9\n")
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(plain), src_text=str(bad_text))
    text = "\n".join(info.value.problems)
    assert f"{bad_text}:2: DUPLICATE_ID: 'p1' already on line 1" in text
    assert f"{bad_text}:3: EMPTY_TEXT" in text
    assert f"{bad_text}:4: UNREADABLE_TEXT: not valid UTF-8" in text
    assert f"{plain}:2: NO_TRANSCRIPT: neither the pair id 'p2' nor the source id 'u2'" in text
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(plain), src_text=str(tmp_path / "absent"))
    assert [p.split(": ")[1] for p in info.value.problems] == ["UNREADABLE_TEXT"]   # not one per pair
    both = tmp_path / "both.tsv"
    both.write_text(f"{good[0]}\t{good[1]}\tp1.wav\tmột\n", encoding="utf-8")
    good_text = tmp_path / "good_text"
    good_text.write_text("p1 một\n", encoding="utf-8")
    with pytest.raises(P.PairsError) as info:
        P.read_pairs(str(both), src_text=str(good_text))
    assert [p.split(": ")[1] for p in info.value.problems] == ["TEXT_TWICE"]
    assert P.main(["--pairs", str(plain), "--src-text", str(bad_text)]) == 2
