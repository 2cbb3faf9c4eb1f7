"""Hostile but fair inputs to every entry point: each malformed case must end
with a clear one-line error naming the file (and line where there is one), the
documented exit status, no Python traceback, and nothing written where it
should not be. Regression tests of the hardening findings are marked
``finding N`` in their docstrings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
CLIS = {"chorus-score": "pyutils.scoring.cli", "chorus-prep": "pyutils.corpora.cli",
        "chorus-synth": "pyutils.synth.cli", "chorus-sqa": "pyutils.sqa.diagnose",
        "chorus-datadir": "pyutils.datadir.cli"}


def cli(name, *args, cwd=None, timeout=120, stdin=None):
    return subprocess.run([sys.executable, "-m", CLIS[name], *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=ENV,
                          stdin=stdin if stdin is not None else subprocess.DEVNULL)


def assert_error(r, path=None, line=None, code=2, text=None):
    """Exit ``code``, no traceback, the message names ``path`` (and ``:line``)."""
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    assert r.returncode == code, f"exit {r.returncode}, want {code}:\n{out}"
    if path is not None:
        where = f"{path}:{line}" if line is not None else str(path)
        assert where in r.stderr, f"{where!r} not in stderr:\n{r.stderr}"
    if text is not None:
        assert text in r.stderr, f"{text!r} not in stderr:\n{r.stderr}"


def wav(path, seconds=1.0, sr=16000, amp=0.1):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, (amp * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sr, subtype="PCM_16")
    return path


def jsonl(path, rows):
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                          encoding="utf-8")
    return path


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())


# --------------------------------------------------------------- finding 4: paths from data
@pytest.mark.parametrize("field,value", [("split", "../../evil"), ("utt_id", "../../../evil"),
                                         ("split", "/tmp/abs"), ("utt_id", "a/b")])
def test_prep_generic_names_from_the_manifest_stay_inside_out(tmp_path, field, value):
    """finding 4: a manifest split/utt_id cannot write outside --out."""
    wav(tmp_path / "src" / "a.wav")
    rows = [{"audio": "a.wav", "text": "hello there"},
            {"audio": "a.wav", "text": "hi", "utt_id": "b", field: value}]
    man = jsonl(tmp_path / "src" / "m.jsonl", rows)
    work = tmp_path / "w1" / "w2" / "w3"
    work.mkdir(parents=True)
    before = files_under(tmp_path)
    r = cli("chorus-prep", "generic", "--src", man, "--out", "out", "--lang", "en", cwd=work)
    # a split or utterance id with a path separator is refused (never renamed behind the user's back)
    assert_error(r, man, 2, text=repr(value))
    assert set(files_under(tmp_path)) - set(before) <= {"w1/w2/w3/out/prep.log"}


def test_validate_track2_fix_to_never_writes_outside(tmp_path):
    """finding 4: --fix-to <dir> with a reference utt_id '../escape' writes nothing outside."""
    sub = tmp_path / "sub"
    wav(sub / "good.wav", sr=22050)
    ref = jsonl(tmp_path / "ref.jsonl", [{"utt_id": "good"}, {"utt_id": "../escape"}])
    (tmp_path / "escape.wav").unlink(missing_ok=True)
    wav(tmp_path / "fixed" / ".." / "escape_src.wav")  # decoy, not used
    r = cli("chorus-score", "validate-track2", "--dir", sub, "--ref", ref,
            "--fix-to", tmp_path / "fixed")
    assert_error(r, ref, 2, text="INVALID_UTT_ID")
    assert not (tmp_path / "escape.wav").exists()
    assert not (tmp_path / "fixed" / "good.wav").exists()  # refused before writing anything


def test_validate_vc_converted_name_is_a_plain_file_name(tmp_path):
    """finding 4: a pairs row's converted name cannot point outside --dir."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("s.wav\tt.wav\tok.wav\ns.wav\tt.wav\t../../etc/passwd\n")
    r = cli("chorus-score", "validate-vc", "--pairs", pairs, "--dir", tmp_path)
    assert_error(r, pairs, 2, text="INVALID_PAIRS_ROW")


# --------------------------------------------------------------- finding 5: shell quoting
def test_synth_out_with_space_and_semicolon_runs_no_command(tmp_path):
    """finding 5: --out is never pasted into a shell string (run through utils/run.pl)."""
    out = tmp_path / "my corpus;touch pwned"
    r = cli("chorus-synth", "sqa", "--preset", "ci", "--num-train", "2", "--num-dev", "1",
            "--num-test", "1", "--num-voices", "2", "--real-train-copies", "0", "--nj", "2",
            "--cmd", "utils/run.pl", "--out", out, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "pwned").exists()
    assert (out / ".done").exists()
    assert len((out / "data" / "train" / "wav.scp").read_text().splitlines()) == 2
    assert (out / "log" / "synth.2.log").exists()


@pytest.mark.parametrize("args,opt", [(["--num-train", "-5"], "--num-train"),
                                      (["--num-voices", "0"], "--num-voices"),
                                      (["--nj", "0"], "--nj"),
                                      (["--num-voices", "1"], "--num-voices 1")])
def test_synth_counts_must_make_a_corpus(tmp_path, args, opt):
    r = cli("chorus-synth", "sqa", "--preset", "ci", "--out", tmp_path / "c", *args)
    assert_error(r, text=opt)
    assert not (tmp_path / "c").exists()


# --------------------------------------------------------------- finding 7: silent wrong output
T1_REF = [{"utt_id": "u1", "language": "en", "text_with_nvvs": "hello there [laugh]"},
          {"utt_id": "u2", "language": "en", "text_with_nvvs": "good morning"}]
T1_HYP = [{"utt_id": "u1", "text_with_nvvs": "hello there [laugh]"},
          {"utt_id": "u2", "text_with_nvvs": "good morning"}]


def test_package_strips_a_bom_from_the_decode_text_and_ref_ids(tmp_path):
    """finding 7: a UTF-8 BOM never becomes part of an utt_id."""
    text = tmp_path / "text"
    text.write_bytes("\ufeffu1 hello there [laugh]\nu2 good morning\n".encode("utf-8"))
    ids = tmp_path / "ids.txt"
    ids.write_bytes("\ufeffu1\nu2\n".encode("utf-8"))
    out = tmp_path / "sub.jsonl"
    r = cli("chorus-score", "package-track1", "--text", text, "--out", out, "--ref-ids", ids)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert [x["utt_id"] for x in rows] == ["u1", "u2"]
    assert rows[0]["text_with_nvvs"] == "hello there [laugh]"
    assert "missing filled empty" not in r.stdout
    refj = tmp_path / "ref.jsonl"
    refj.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(x) + "\n" for x in T1_REF).encode())
    r = cli("chorus-score", "package-track1", "--text", text, "--out", out, "--ref-ids", refj)
    assert r.returncode == 0, r.stderr
    assert [json.loads(l)["utt_id"] for l in out.read_text().splitlines()] == ["u1", "u2"]


def test_bom_in_a_jsonl_submission_is_a_clear_error(tmp_path):
    ref = jsonl(tmp_path / "ref.jsonl", T1_REF)
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(x) + "\n" for x in T1_HYP).encode())
    r = cli("chorus-score", "track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", tmp_path / "o.json")
    assert_error(r, hyp, 1, text="byte-order mark")


@pytest.mark.parametrize("cmd,out_opt,in_opt", [
    ("track1", "--output-json", "--hyp"), ("track1", "--output-json", "--ref"),
    ("track1", "--per-utt-report", "--hyp"), ("sqa", "--output-json", "--hyp"),
    ("package-track1", "--out", "--text"), ("package-track1", "--zip", "--text"),
    ("package-track1", "--out", "--ref-ids")])
def test_an_output_never_overwrites_an_input(tmp_path, cmd, out_opt, in_opt):
    """finding 7: --output-json == --hyp (or --out == --text) is refused, input intact."""
    ref = jsonl(tmp_path / "ref.jsonl", T1_REF)
    hyp = jsonl(tmp_path / "hyp.jsonl", T1_HYP)
    text = tmp_path / "text"
    text.write_text("u1 hello there [laugh]\nu2 good morning\n")
    if cmd == "package-track1":
        files = {"--text": text, "--ref-ids": ref}
        args = ["--text", text, "--ref-ids", ref, "--out", tmp_path / "sub.jsonl"]
    else:
        files = {"--ref": ref, "--hyp": hyp}
        args = ["--ref", ref, "--hyp", hyp, "--output-json", tmp_path / "o.json"]
    target = files[in_opt]
    if out_opt in args:
        args[args.index(out_opt) + 1] = target
    else:
        args += [out_opt, target]
    before = target.read_bytes()
    r = cli("chorus-score", cmd, *args)
    assert_error(r, target, text="OUTPUT_IS_INPUT")
    assert target.read_bytes() == before


# --------------------------------------------------------------- non-UTF-8, FIFOs, exact lines
def _latin1_at(path, rows, bad_line):
    lines = [json.dumps(x) for x in rows]
    data = "\n".join(lines).encode() + b"\n"
    parts = data.split(b"\n")
    parts[bad_line - 1] = parts[bad_line - 1].replace(b"hello", b"h\xe9llo").replace(b"good", b"g\xf6od")
    Path(path).write_bytes(b"\n".join(parts))
    return path


def test_non_utf8_byte_is_reported_on_its_own_line(tmp_path):
    """runner-up: a latin-1 byte on line 2999 is reported at line 2999, not earlier."""
    rows = [{"utt_id": f"u{i:05d}", "language": "en", "text_with_nvvs": "hello there"}
            for i in range(3000)]
    ref = _latin1_at(tmp_path / "ref.jsonl", rows, 2999)
    hyp = jsonl(tmp_path / "hyp.jsonl", [{"utt_id": r["utt_id"], "text_with_nvvs": "hello"}
                                         for r in rows])
    r = cli("chorus-score", "track1", "--single-language", "--ref", ref, "--hyp", hyp, "--output-json", tmp_path / "o.json")
    assert_error(r, ref, 2999, text="INVALID_ENCODING")


@pytest.mark.parametrize("cmd", ["track1", "sqa", "nvbench", "validate-track1", "package-track1",
                                 "validate-vc", "vc", "validate-track2"])
def test_non_utf8_input_every_scoring_command(tmp_path, cmd):
    bad = tmp_path / "bad.txt"
    first = b"a.wav\tb.wav\tc.wav" if cmd == "validate-vc" else b'{"utt_id": "u1"}'
    bad.write_bytes(first + b'\n{"utt_id": "caf\xe9"}\n')
    good = jsonl(tmp_path / "ref.jsonl", T1_REF)
    out = tmp_path / "o.json"
    args = {"track1": ["--single-language", "--ref", good, "--hyp", bad, "--output-json", out],
            "sqa": ["--ref", bad, "--hyp", good, "--output-json", out],
            "nvbench": ["--ref", good, "--hyp", bad, "--output-json", out],
            "validate-track1": ["--hyp", bad],
            "package-track1": ["--text", good, "--ref-ids", bad, "--out", out],
            "validate-vc": ["--pairs", bad, "--dir", tmp_path],
            "vc": ["--hyp", bad, "--output-json", out],
            "validate-track2": ["--dir", tmp_path, "--ref", bad]}[cmd]
    r = cli("chorus-score", cmd, *args)
    assert_error(r, bad, 2, text="INVALID_ENCODING")
    assert not out.exists()


def test_fifo_as_input_is_an_error_not_a_hang(tmp_path):
    """finding 6: a FIFO as --hyp is refused at once."""
    fifo = tmp_path / "hyp.fifo"
    os.mkfifo(fifo)
    ref = jsonl(tmp_path / "ref.jsonl", T1_REF)
    for cmd, args in (("track1", ["--single-language", "--ref", ref, "--hyp", fifo]), ("sqa", ["--ref", fifo, "--hyp", ref]),
                      ("validate-track1", ["--hyp", fifo])):
        r = cli("chorus-score", cmd, *args, *(["--output-json", tmp_path / "o.json"]
                                             if cmd != "validate-track1" else []), timeout=30)
        assert_error(r, fifo, text="FIFO")


# --------------------------------------------------------------- finding 8: truncated WAVs
def _truncated_wav(path):
    wav(path, seconds=1.0)  # 32,000 data bytes
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:44 + 15978])
    return path


def test_truncated_wav_fails_validate_track2(tmp_path):
    """finding 8: header claims 32,000 data bytes, 15,978 present -> invalid."""
    bad = _truncated_wav(tmp_path / "sub" / "u1.wav")
    wav(tmp_path / "sub" / "u2.wav")
    ref = jsonl(tmp_path / "ref.jsonl", [{"utt_id": "u1"}, {"utt_id": "u2"}])
    r = cli("chorus-score", "validate-track2", "--dir", tmp_path / "sub", "--ref", ref)
    assert_error(r, bad, text="truncated WAV")
    assert "32000 data bytes, only 15978" in r.stderr


def test_truncated_wav_fails_validate_vc(tmp_path):
    bad = _truncated_wav(tmp_path / "out" / "c1.wav")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("s.wav\tt.wav\tc1.wav\n")
    r = cli("chorus-score", "validate-vc", "--pairs", pairs, "--dir", tmp_path / "out")
    assert_error(r, bad, text="truncated WAV")


def test_truncated_wav_fails_validate_data_dir(tmp_path):
    bad = _truncated_wav(tmp_path / "a.wav")
    good = wav(tmp_path / "b.wav")
    d = tmp_path / "data"
    d.mkdir()
    (d / "wav.scp").write_text(f"u1 {bad}\nu2 {good}\n")
    (d / "utt2spk").write_text("u1 u1\nu2 u2\n")
    (d / "spk2utt").write_text("u1 u1\nu2 u2\n")
    r = subprocess.run([str(ROOT / "utils" / "validate_data_dir.sh"), "--no-text", str(d)],
                       capture_output=True, text=True, env=ENV, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out
    assert f"{d / 'wav.scp'}:1" in out and "truncated WAV" in out


# --------------------------------------------------------------- finding 6: resource bounds
SQA_REF = [{"utt_id": "a", "score": 3.0, "faults": {"noise": [[0.1, 0.5]]}},
           {"utt_id": "b", "score": 4.0, "faults": {}}]


@pytest.mark.parametrize("end", [1e8, 1e300, 86400.5])
def test_sqa_interval_beyond_the_maximum_is_rejected_quickly(tmp_path, end):
    """finding 6: [[0, 1e8]] was a MemoryError, 1e300 an OverflowError."""
    ref = jsonl(tmp_path / "ref.jsonl", SQA_REF)
    hyp = jsonl(tmp_path / "hyp.jsonl", [{"utt_id": "a", "score": 3.0, "faults": {"noise": [[0, end]]}},
                                         {"utt_id": "b", "score": 4.0}])
    r = cli("chorus-score", "sqa", "--ref", ref, "--hyp", hyp, "--output-json", tmp_path / "o.json",
            timeout=30)
    assert_error(r, hyp, 1, text="INVALID_INTERVAL")


def test_sqa_long_intervals_cost_no_memory(tmp_path):
    """finding 6: a 23-hour interval on many rows scores in well under a second per row."""
    import time
    ref = jsonl(tmp_path / "ref.jsonl", [{"utt_id": f"u{i}", "score": 3.0,
                                          "faults": {"noise": [[0.0, 80000.0]]}} for i in range(50)])
    hyp = jsonl(tmp_path / "hyp.jsonl", [{"utt_id": f"u{i}", "score": 3.0 + (i % 2),
                                          "faults": {"noise": [[40000.0, 82000.0]]}} for i in range(50)])
    t0 = time.time()
    r = cli("chorus-score", "sqa", "--ref", ref, "--hyp", hyp, "--output-json", tmp_path / "o.json",
            timeout=60)
    assert r.returncode == 0, r.stderr
    assert time.time() - t0 < 20
    iou = json.loads((tmp_path / "o.json").read_text())["IoU_noise"]
    assert abs(iou - 2000000 / 4100000) < 1e-6   # 40000 s of 82000 s, 50 frames per second


# --------------------------------------------------------------- chorus-prep: encoding, empty input
@pytest.mark.parametrize("name,content,line", [
    ("m.jsonl", b'{"audio": "a.wav", "text": "hello"}\n{"audio": "a.wav", "text": "caf\xe9"}\n', 2),
    ("m.tsv", b"audio\ttext\na.wav\thello\na.wav\tcaf\xe9\n", 3)])
def test_prep_non_utf8_manifest_names_file_and_line(tmp_path, name, content, line):
    wav(tmp_path / "a.wav")
    man = tmp_path / name
    man.write_bytes(content)
    r = cli("chorus-prep", "generic", "--src", man, "--out", tmp_path / "out", "--lang", "en")
    assert_error(r, man, line, text="not UTF-8")


@pytest.mark.parametrize("name,content", [("e.jsonl", b""), ("h.tsv", b"audio\ttext\n"),
                                          ("h.csv", b"audio,text\n")])
def test_prep_empty_or_header_only_manifest_is_an_error(tmp_path, name, content):
    man = tmp_path / name
    man.write_bytes(content)
    r = cli("chorus-prep", "generic", "--src", man, "--out", tmp_path / "out", "--lang", "en")
    assert_error(r, man, text="no rows")


# --------------------------------------------------------------- runner-up: file modes
def test_outputs_follow_the_umask(tmp_path):
    """runner-up: files written through a temp file were 0600 under umask 022."""
    import stat
    wav(tmp_path / "a.wav")
    man = jsonl(tmp_path / "m.jsonl", [{"audio": "a.wav", "text": "hello [laugh]"}])
    text = tmp_path / "text"
    text.write_text("u1 hello there [laugh]\n")
    old = os.umask(0o022)
    try:
        assert cli("chorus-prep", "generic", "--src", man, "--out", tmp_path / "out",
                   "--lang", "en").returncode == 0
        assert cli("chorus-score", "package-track1", "--text", text, "--out", tmp_path / "s.jsonl",
                   "--zip", tmp_path / "s.zip").returncode == 0
        assert cli("chorus-datadir", "copy", tmp_path / "out" / "train", tmp_path / "copy").returncode == 0
    finally:
        os.umask(old)
    written = [*(tmp_path / "out" / "train").iterdir(), *(tmp_path / "copy").iterdir(),
               tmp_path / "s.jsonl", tmp_path / "s.zip"]
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in written if p.is_file()}
    assert modes and set(modes.values()) == {"0o644"}, modes


def test_prep_language_outside_track1_stays_out_of_ref_jsonl(tmp_path):
    """runner-up: `language: fr` was written into a Track 1 reference."""
    wav(tmp_path / "a.wav")
    man = jsonl(tmp_path / "m.jsonl", [
        {"audio": "a.wav", "utt_id": "f1", "text": "bonjour [laugh]", "language": "fr"},
        {"audio": "a.wav", "utt_id": "e1", "text": "hello [laugh]", "language": "en"}])
    r = cli("chorus-prep", "generic", "--src", man, "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "left out 1 utterance(s) (fr: 1)" in r.stderr
    ref = [json.loads(l) for l in (tmp_path / "out/train/ref.jsonl").read_text().splitlines()]
    assert [x["language"] for x in ref] == ["en"]
    assert "f1 bonjour [laugh]" in (tmp_path / "out/train/text").read_text()
    ref_file = tmp_path / "out/train/ref.jsonl"
    r = cli("chorus-score", "track1", "--single-language", "--ref", ref_file, "--hyp", ref_file, "--output-json", tmp_path / "o.json")
    assert r.returncode == 0, r.stderr
