"""A failing step of every stage script (local/*.sh) is reported by the ERR trap of
utils/stage_prelude.sh with the command as written and the log to read:

    <time> stage N failed at <script>:<line>: <the command> (exit S)
    <time> stage N: read <the failing job's log> ...

Each recipe runs one cheap stage (``--stage N --stop_stage N``) on a tiny prepared data
dir whose Python step must fail: nothing is generated or trained.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from hostile_cases import recipe_copy, wav

ROOT = Path(__file__).resolve().parents[1]


def _run(recipe_dir: Path, *args) -> subprocess.CompletedProcess:
    r = subprocess.run(["./run.sh", *map(str, args)], cwd=recipe_dir, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr.split("failed at")[-1]
    return r


def _failure_lines(r, stage: int, script: str, command: str, log_name: str):
    """The two lines of the trap: the failed command (as written in the script) and its log."""
    err = r.stderr
    failed = re.search(rf"stage {stage} failed at {re.escape(script)}:(\d+): (.*) \(exit (\d+)\)", err)
    assert failed, err
    line, cmd = int(failed.group(1)), failed.group(2)
    assert command in cmd, f"{command!r} not in the failure line {cmd!r}"
    assert not cmd.startswith("return"), cmd
    src = (ROOT / "local" / script).read_text().splitlines()
    # the line it names is where that command is written (a continued command: its first line)
    assert command.split()[0] in " ".join(src[line - 1:line + 6]), src[line - 1]
    read = re.search(rf"stage {stage}: read (\S+)", err)
    assert read, err
    log = Path(read.group(1))
    assert log.name == log_name and log.is_file(), read.group(1)
    return int(failed.group(3)), log


def test_sqa_stats_of_a_missing_dump(tmp_path):
    d = recipe_copy(tmp_path, "sqa")
    r = _run(d, "--preset", "ci", "--stage", "3", "--stop_stage", "3", "--expdir", tmp_path / "exp",
             "--dumpdir", tmp_path / "dump")
    _, log = _failure_lines(r, 3, "sqa.sh", "pyutils.sqa.features stats", "stats.log")
    assert "feats.scp" in log.read_text()
    assert not (tmp_path / "dump" / "train" / "feats_stats.npz").exists()


def test_vc_holdout_without_utt2spk(tmp_path):
    d = recipe_copy(tmp_path, "vivc")
    corpus = tmp_path / "corpus"
    for s in ("train_text", "test_src", "test_ref"):
        (corpus / "data" / s).mkdir(parents=True)
        (corpus / "data" / s / "wav.scp").write_text(f"u1 {wav(tmp_path / 'a.wav')}\n")
    r = _run(d, "--preset", "ci", "--stage", "1", "--stop_stage", "1", "--corpus_dir", corpus,
             "--datadir", tmp_path / "data", "--expdir", tmp_path / "exp")
    _failure_lines(r, 1, "vc.sh", "pyutils.vc.prep holdout", "holdout.log")


def test_tts_track2_input_refused_keeps_exit_2(tmp_path):
    """A Track 2 input that the checker refuses (exit 2): the stage script exits 2 too, and
    the trap names the checker's log (formerly `|| exit 2`, which named nothing)."""
    d = recipe_copy(tmp_path, "nvv_tts")
    raw = tmp_path / "dump" / "raw" / "train_en_ci"
    raw.mkdir(parents=True)
    (raw / "spk2sid").write_text("en_s01 0\n")
    bad = tmp_path / "track2.jsonl"
    bad.write_text('{"utt_id": "a", "text_with_nvvs": "hello [laugh] there"}\n{"utt_id": "b"}\n')
    r = _run(d, "--preset", "ci", "--stage", "6", "--stop_stage", "6", "--infer_jsonl", bad,
             "--dumpdir", tmp_path / "dump", "--expdir", tmp_path / "exp")
    code, log = _failure_lines(r, 6, "nvv_tts.sh", "pyutils.tts.inputs", "inputs.log")
    assert code != 0 and r.returncode == 2, r.stderr
    assert f"{bad}:2" in log.read_text()


def test_tts_check_text_of_a_missing_set(tmp_path):
    d = recipe_copy(tmp_path, "nvv_tts")
    (tmp_path / "data" / "train_en_ci").mkdir(parents=True)
    r = _run(d, "--preset", "ci", "--stage", "1", "--stop_stage", "1", "--skip_data_prep", "true",
             "--datadir", tmp_path / "data", "--corpus_dir", tmp_path / "corpus", "--expdir", tmp_path / "exp")
    _failure_lines(r, 1, "nvv_tts.sh", "pyutils.tts.inputs --kaldi-text", "check_text_train_en_ci.log")


def test_asr_dump_of_unreadable_training_audio(tmp_path):
    d = recipe_copy(tmp_path, "nvv_asr_en")
    for s in ("train", "dev", "test"):
        (tmp_path / "data" / s).mkdir(parents=True)
        (tmp_path / "data" / s / "wav.scp").write_text(f"{s}1 {tmp_path / 'missing.wav'}\n")
        (tmp_path / "data" / s / "text").write_text(f"{s}1 hello\n")
    r = _run(d, "--preset", "ci", "--asr_method", "espnet", "--stage", "2", "--stop_stage", "2",
             "--datadir", tmp_path / "data", "--dumpdir", tmp_path / "dump", "--expdir", tmp_path / "exp")
    _, log = _failure_lines(r, 2, "nvv_asr.sh", "pyutils.asr.dump_audio", "dump.1.log")
    assert "missing.wav" in log.read_text()


def test_a_bad_option_is_refused_by_name_while_another_run_holds_the_exp_dir(tmp_path):
    """check_options runs before the lock: the answer is the option's error (exit 2), not
    "another run is going" (exit 1), and the running run's stage_times.tsv is left alone."""
    import fcntl
    import os

    d = recipe_copy(tmp_path, "sqa")
    exp = tmp_path / "exp"
    exp.mkdir()
    times = exp / "stage_times.tsv"
    times.write_text("stage\twall_s\tcpu_s\tload\n0 corpus\t5\t3\t1 1 1\n")
    lock = exp / ".run.lock"
    with open(lock, "w") as f:
        f.write(f"owner {os.getpid()} 0 a test holding the exp dir\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = subprocess.run(["./run.sh", "--expdir", str(exp), "--region_tune", "joint"], cwd=d,
                           capture_output=True, text=True, timeout=60)
        busy = subprocess.run(["./run.sh", "--expdir", str(exp), "--stage", "8"], cwd=d,
                              capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--region_tune must be after or off, got 'joint'" in r.stderr, r.stderr
    assert busy.returncode == 1, busy.stderr                 # a good command line meets the lock
    assert times.read_text().endswith("0 corpus\t5\t3\t1 1 1\n")
