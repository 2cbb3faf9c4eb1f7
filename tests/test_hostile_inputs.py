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
    if field == "split":
        assert_error(r, man, 2, text=repr(value))
        assert files_under(tmp_path) == before
    else:  # chorus-prep makes utterance ids safe file names (a/b -> a_b)
        assert r.returncode == 0, r.stderr
        new = set(files_under(tmp_path)) - set(before)
        assert new and all(f.startswith("w1/w2/w3/out/") for f in new), new
        ids = [l.split()[0] for l in (work / "out/train/wav.scp").read_text().splitlines()]
        assert all("/" not in u and not u.startswith(".") for u in ids), ids


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
            "--num-test", "1", "--num-voices", "2", "--nj", "2", "--cmd", "utils/run.pl",
            "--out", out, cwd=tmp_path, timeout=300)
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
