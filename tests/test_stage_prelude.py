"""utils/stage_prelude.sh: stage-range checks and one run per exp dir (all local/*.sh).

Stage ranges are checked on the real recipes' run.sh (they stop before any work);
the lock is checked on a small stage script that sources the prelude the same way.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECIPES = [("nvv_asr_en", "--expdir"), ("nvv_asr_zh", "--expdir"), ("nvv_tts", "--expdir"),
           ("sqa", "--expdir"), ("vivc", "--expdir")]


@pytest.mark.parametrize("recipe,exp_opt", RECIPES)
@pytest.mark.parametrize("args,message", [
    (["--stage", "5", "--stop-stage", "2"], "--stage 5 is after --stop_stage 2"),
    (["--stage", "99"], "--stage 99 is out of range"),
    (["--stage", "abc"], "--stage 'abc' is not a stage number"),
    (["--stop_stage", "-1"], "--stop_stage '-1' is not a stage number"),
    (["--stop-stage", "9"], "--stop_stage 9 is out of range"),
])
def test_bad_stage_range_is_an_error(recipe, exp_opt, args, message, tmp_path):
    r = subprocess.run(["./run.sh", exp_opt, str(tmp_path / "exp"), *args],
                       cwd=ROOT / "egs" / recipe, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert "successfully" not in r.stdout + r.stderr


# The stage scripts and the options file each one sources (NAME=DEFAULT  # doc, help_message,
# check_options, derive_settings), run through the recipe named here.
STAGE_SCRIPTS = [("nvv_asr", "nvv_asr_en"), ("nvv_tts", "nvv_tts"), ("vc", "vivc"), ("sqa", "sqa")]


def _declared_options(script):
    """(name, doc) of the NAME=DEFAULT  # doc lines of local/<script>_options.sh."""
    import re
    text = (ROOT / "local" / f"{script}_options.sh").read_text()
    return [(m.group(1), (m.group(2) or "").strip())
            for m in re.finditer(r"^([a-z][a-z0-9_]*)=[^\n]*?(?:\s#\s*([^\n]*))?$", text, re.M)
            if m.group(1) != "help_message"]


@pytest.mark.parametrize("script,recipe", STAGE_SCRIPTS)
def test_the_setup_before_stage_0_is_short(script, recipe):
    """A stage script's setup (header, options file, prelude, derived settings) fits in 60 lines:
    the options, their checks and derived settings live in local/<script>_options.sh."""
    lines = (ROOT / "local" / f"{script}.sh").read_text().splitlines()
    gate = next(i for i, line in enumerate(lines) if line.startswith("if in_stage 0 "))
    assert gate <= 60, f"local/{script}.sh: {gate} lines before its stage-0 gate"
    setup = "\n".join(lines[:gate])
    assert f'/{script}_options.sh"' in setup and "utils/stage_prelude.sh --parse" in setup
    assert len(_declared_options(script)) >= 15


@pytest.mark.parametrize("script,recipe", STAGE_SCRIPTS)
def test_help_lists_every_option_of_the_options_file_with_its_doc(script, recipe, tmp_path):
    r = subprocess.run(["./run.sh", "--help"], cwd=ROOT / "egs" / recipe, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0][2:]: line for line in r.stdout.splitlines() if line.startswith("  --")}
    for name, doc in _declared_options(script):
        assert name in listed, f"--{name} not in the --help of local/{script}.sh"
        assert doc in listed[name], (name, doc, listed[name])
    assert not [n for n in listed if n.startswith("_")], "internal variables listed as options"
    known = {"nvv_asr": ("detector_heads", "an ensemble of N conv heads"),
             "nvv_tts": ("tts_voice", "cascade: the voice-bank voice that speaks"),
             "vc": ("pretrained_asr", "task 1: ESPnet ASR exp dir"),
             "sqa": ("region_tune", "a noise/distortion class per detected region")}[script]
    assert known[1] in listed[known[0]]
    # --config FILE: its values are the options' current values
    cfg = tmp_path / "my.conf"
    cfg.write_text(f"{known[0]}=from_config\n")
    r = subprocess.run(["./run.sh", "--config", str(cfg), "--help"], cwd=ROOT / "egs" / recipe,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and f'--{known[0]} "from_config"' in r.stdout, r.stdout + r.stderr


STAGE_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
stage=0
stop_stage=8
expdir=exp
nested=false
bg=false
. utils/parse_options.sh
. utils/stage_prelude.sh "${expdir}"
echo "running $$" >> ran.txt
if [ "${nested}" = true ]; then ./local.sh --expdir "${expdir}"; exit 0; fi
if [ "${bg}" = true ] && [ ! -f go ]; then sleep 120 & echo $! > bg.pid; fi
[ -f go ] || utils/run.pl "${expdir}/log/train.log" 'echo $$ > job.pid; sleep 120'
echo finished >> ran.txt
"""


@pytest.fixture
def recipe(tmp_path):
    (tmp_path / "utils").symlink_to(ROOT / "utils")
    script = tmp_path / "local.sh"
    script.write_text(STAGE_SCRIPT)
    script.chmod(0o755)
    return tmp_path


def _wait_file(path, timeout=30):
    for _ in range(int(timeout * 10)):
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


def _gone(pid):
    p = Path(f"/proc/{pid}/status")
    return not p.exists() or "\nState:\tZ" in p.read_text()


def test_second_run_in_the_same_exp_dir_is_refused(recipe):
    first = subprocess.Popen(["./local.sh"], cwd=recipe, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        _wait_file(recipe / "job.pid")
        r = subprocess.run(["./local.sh"], cwd=recipe, capture_output=True, text=True, timeout=60)
        assert r.returncode == 1
        assert f"pid {first.pid}" in r.stderr and "refusing" in r.stderr
        assert (recipe / "ran.txt").read_text().count("running") == 1
        # another exp dir is fine
        (recipe / "go").touch()
        r = subprocess.run(["./local.sh", "--expdir", "exp2"], cwd=recipe, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=20)


@pytest.mark.parametrize("how", ["shell", "group"])
def test_kill9_then_rerun_never_runs_beside_an_orphan(recipe, how):
    first = subprocess.Popen(["./local.sh"], cwd=recipe, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    job = int(_wait_file(recipe / "job.pid"))
    if how == "shell":
        first.kill()                           # kill -9 of the stage script alone
    else:
        os.killpg(first.pid, signal.SIGKILL)   # kill -9 of its whole process group
    first.wait()
    (recipe / "go").touch()
    r = subprocess.run(["./local.sh"], cwd=recipe, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert _gone(job), "the first run's job is still running"
    assert (recipe / "ran.txt").read_text().splitlines()[-1] == "finished"


def test_rerun_kills_a_background_orphan_holding_the_lock(recipe):
    first = subprocess.Popen(["./local.sh", "--bg", "true"], cwd=recipe,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    job = int(_wait_file(recipe / "job.pid"))
    bg = int(_wait_file(recipe / "bg.pid"))
    first.kill()
    first.wait()
    time.sleep(0.2)
    assert not _gone(bg)  # a plain background process of the dead run: an orphan
    (recipe / "go").touch()
    r = subprocess.run(["./local.sh"], cwd=recipe, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "was killed but its jobs kept running" in r.stderr
    assert _gone(bg) and _gone(job)


def test_nested_stage_script_shares_the_lock(recipe):
    (recipe / "go").touch()
    r = subprocess.run(["./local.sh", "--nested", "true"], cwd=recipe, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (recipe / "ran.txt").read_text().count("running") == 2


FAILING_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
stage=0
stop_stage=8
expdir=exp
fail=job
. utils/parse_options.sh
. utils/stage_prelude.sh "${expdir}"
step() {  # a job of the backend that fails, with its log
  ${train_cmd} "${expdir}/log/bad_step.log" python3 -c 'import sys; print("model diverged"); sys.exit(3)'
}
train_cmd=utils/run.pl
stage_begin 2 "format"
${train_cmd} "${expdir}/log/good_step.log" python3 -c 'import sys; print("fine")'
stage_end
stage_begin 5 "train"
if [ "${fail}" = job ]; then step; else false; fi
stage_end
echo "not reached"
"""


@pytest.fixture
def failing(tmp_path):
    (tmp_path / "utils").symlink_to(ROOT / "utils")
    script = tmp_path / "fake_stage.sh"
    script.write_text(FAILING_SCRIPT)
    script.chmod(0o755)
    return tmp_path


def test_a_failing_job_names_its_stage_line_and_log(failing):
    r = subprocess.run(["./fake_stage.sh"], cwd=failing, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3        # the job's own status, not the backend's 1
    assert "not reached" not in r.stdout
    lines = [l for l in r.stderr.splitlines() if "stage 5" in l]
    # the innermost failing line (inside the function), reported once
    assert len([l for l in lines if "failed at" in l]) == 1, r.stderr
    assert "stage 5 failed at fake_stage.sh:10: ${train_cmd} \"${expdir}/log/bad_step.log\"" in r.stderr
    log = failing / "exp" / "log" / "bad_step.log"
    assert f"stage 5: read {log} (the job ended with code 3)" in r.stderr
    assert "model diverged" in log.read_text()
    # the stage that finished has its time row, the failed one none
    rows = (failing / "exp" / "stage_times.tsv").read_text().splitlines()
    assert [row.split("\t")[0] for row in rows[1:]] == ["2 format"]


def test_a_failing_shell_command_says_there_is_no_job_log(failing):
    # an earlier stage's job log is never named for a later failure
    r = subprocess.run(["./fake_stage.sh"], cwd=failing, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    r = subprocess.run(["./fake_stage.sh", "--fail", "shell"], cwd=failing, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
    assert "stage 5 failed at fake_stage.sh:17: false (exit 1)" in r.stderr
    assert "stage 5: no job log" in r.stderr
    assert "bad_step.log" not in r.stderr
