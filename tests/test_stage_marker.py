"""pyutils.jobs.stage_marker: a stage marker vouches for its outputs (finding 2)."""

import subprocess
import sys
from pathlib import Path

from pyutils.jobs.stage_marker import check_marker, write_marker

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pyutils.jobs.stage_marker", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_marker_detects_deleted_damaged_and_resized_outputs(tmp_path):
    d = tmp_path / "dump"
    (d / "log").mkdir(parents=True)
    (d / "feats.1.ark").write_bytes(b"x" * 1000)
    (d / "feats.2.ark").write_bytes(b"y" * 1000)
    (d / "log" / "dump.1.log").write_text("log lines are not outputs")
    write_marker(d / ".done", dirs=[d], sig="abc")
    assert check_marker(d / ".done", "abc") is None
    assert "other inputs" in check_marker(d / ".done", "other")
    (d / "log" / "dump.1.log").write_text("changed")           # logs are not vouched for
    assert check_marker(d / ".done", "abc") is None
    (d / "feats.2.ark").write_bytes(b"y" * 999 + b"z")          # same size, other bytes
    assert "checksum" in check_marker(d / ".done", "abc")
    (d / "feats.2.ark").write_bytes(b"y" * 10)
    assert "changed size" in check_marker(d / ".done", "abc")
    (d / "feats.2.ark").write_bytes(b"y" * 1000)
    assert check_marker(d / ".done", "abc") is None
    (d / "feats.1.ark").unlink()
    assert check_marker(d / ".done", "abc") == f"missing {d / 'feats.1.ark'}"


def test_cli_and_old_style_markers(tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes(b"weights")
    assert _cli("write", tmp_path / ".train.done", model).returncode == 0
    assert _cli("check", tmp_path / ".train.done").returncode == 0
    model.unlink()
    r = _cli("check", tmp_path / ".train.done")
    assert r.returncode == 1 and f"missing {model}" in r.stdout
    (tmp_path / ".old.done").write_text("")  # a `touch`ed marker vouches for nothing
    r = _cli("check", tmp_path / ".old.done")
    assert r.returncode == 1 and "not a stage marker" in r.stdout
    r = _cli("write", tmp_path / ".x.done", tmp_path / "nope.pt")
    assert r.returncode == 2 and "nope.pt" in r.stderr and "Traceback" not in r.stderr


def test_cli_options_between_marker_and_files(tmp_path):
    f = tmp_path / "measures.jsonl"
    f.write_text("{}\n")
    assert _cli("write", tmp_path / ".raw.done", "--sig", "s1", f).returncode == 0
    assert _cli("check", tmp_path / ".raw.done", "--sig", "s1").returncode == 0
    assert _cli("check", tmp_path / ".raw.done", "--sig", "s2").returncode == 1


# --------------------------------------------------------------- the shell side (utils/stage_prelude.sh)
FAKE_STAGE = r'''
set -euo pipefail
stage=0; stop_stage=0
. "$ROOT/utils/stage_prelude.sh" "$EXP"
if stage_done "$EXP/.step.done" --sig "$SIG" --adopt --dir "$EXP/out"; then
  echo SKIPPED
else
  echo RUN
  mkdir -p "$EXP/out/log"
  printf 'feats of %s\n' "$SIG" > "$EXP/out/feats.ark"
  echo 7 > "$EXP/out/count"
  date > "$EXP/out/log/step.log"
  stage_mark "$EXP/.step.done" --sig "$SIG" --dir "$EXP/out"
fi
'''


def _fake_stage(tmp_path, sig="s1"):
    import os
    env = {**os.environ, "ROOT": str(ROOT), "EXP": str(tmp_path / "exp"), "SIG": sig}
    r = subprocess.run(["bash", "-c", FAKE_STAGE], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1], r.stderr


def test_a_stage_whose_output_was_deleted_or_damaged_is_redone(tmp_path):
    """finding 2, the shared shell helpers: stage_done / stage_mark."""
    out = tmp_path / "exp" / "out"
    assert _fake_stage(tmp_path)[0] == "RUN"
    assert _fake_stage(tmp_path)[0] == "SKIPPED"
    (out / "log" / "step.log").write_text("logs are not outputs")
    assert _fake_stage(tmp_path)[0] == "SKIPPED"
    (out / "feats.ark").unlink()                                   # deleted
    what, err = _fake_stage(tmp_path)
    assert what == "RUN" and f"missing {out / 'feats.ark'}" in err and "doing that step again" in err
    assert (out / "feats.ark").read_text() == "feats of s1\n"
    (out / "count").write_text("8\n")                              # damaged, same size
    what, err = _fake_stage(tmp_path)
    assert what == "RUN" and "checksum" in err
    assert _fake_stage(tmp_path)[0] == "SKIPPED"
    what, err = _fake_stage(tmp_path, sig="s2")                    # other inputs
    assert what == "RUN" and "other inputs" in err
    assert (out / "feats.ark").read_text() == "feats of s2\n"


def test_an_old_empty_marker_is_adopted_once(tmp_path):
    out = tmp_path / "exp" / "out"
    out.mkdir(parents=True)
    (out / "feats.ark").write_text("made by an older run\n")
    (tmp_path / "exp" / ".step.done").write_text("")               # `touch`ed by an older script
    what, err = _fake_stage(tmp_path)
    assert what == "SKIPPED" and "older marker" in err
    assert check_marker(tmp_path / "exp" / ".step.done", "s1") is None
    (out / "feats.ark").unlink()
    assert _fake_stage(tmp_path)[0] == "RUN"
