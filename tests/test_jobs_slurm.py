"""utils/slurm.pl against a real Slurm (tests/slurm/start_slurm.sh).

Runs only with CHORUS_TEST_SLURM=1 (CI starts Slurm and sets it). With the
variable set, a cluster that does not answer is a test FAILURE, not a skip.
The config-file mapping is also tested without Slurm (always runs).
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyutils.jobs.slurm import SlurmConfig

ROOT = Path(__file__).resolve().parents[1]
SLURM_PL = str(ROOT / "utils" / "slurm.pl")
CONF = str(ROOT / "conf" / "slurm.conf")
WANT = os.environ.get("CHORUS_TEST_SLURM") == "1"


@pytest.fixture(scope="module")
def slurm():
    if not WANT:
        pytest.skip("real-Slurm tests need CHORUS_TEST_SLURM=1 and a running cluster "
                    "(sudo tests/slurm/start_slurm.sh)")
    try:
        p = subprocess.run(["sinfo", "-h", "-o", "%P %T"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"CHORUS_TEST_SLURM=1 but sinfo failed: {e}")
    if p.returncode != 0 or not p.stdout.strip():
        pytest.fail(f"CHORUS_TEST_SLURM=1 but sinfo failed: {p.stderr.strip()}")
    return p.stdout


def slurm_pl(args, cwd, timeout=180):
    return subprocess.run([SLURM_PL, "--config", CONF, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_config_mapping_espnet_format(tmp_path):
    conf = SlurmConfig.parse(CONF)
    args = conf.sbatch_args({"mem": "2G", "num_threads": "4", "time": "1:00:00"})
    assert conf.command[0] == "sbatch"
    assert args[:2] == ["-p", "cpu"]  # default gpu=0
    assert "--mem-per-cpu 2G" in " ".join(args)
    assert "--cpus-per-task 4" in " ".join(args)
    assert "--time 1:00:00" in " ".join(args)
    gpu = " ".join(conf.sbatch_args({"gpu": "2", "mem": "0", "num_threads": "1"}))
    assert gpu == "-p gpu --gres=gpu:2 -c 2 --cpus-per-task 1"
    warned = []
    conf.sbatch_args({"bogus": "1", "max_jobs_run": "3"}, warned.append)
    assert len(warned) == 1 and "--bogus" in warned[0]
    bad = tmp_path / "bad.conf"
    bad.write_text("command sbatch\noptoin mem=* --mem $0\n")
    with pytest.raises(ValueError, match="bad.conf:2"):
        SlurmConfig.parse(bad)


def test_array_of_four_lands_all_logs(slurm, tmp_path):
    p = slurm_pl(["--mem", "200M", "--num-threads", "1", "--max-jobs-run", "3",
                  "JOB=1:4", "exp/log/foo.JOB.log", "echo", "hello from JOB",
                  "&&", "echo", "task=$SLURM_ARRAY_TASK_ID"], tmp_path)
    assert p.returncode == 0, p.stderr
    for j in range(1, 5):
        text = (tmp_path / f"exp/log/foo.{j}.log").read_text()
        assert f"\nhello from {j}\n" in text
        assert f"\ntask={j}\n" in text  # really ran as array task j
        assert re.search(r"# Ended \(code 0\)", text)
    sbatch = (tmp_path / "exp/log/q/foo.sbatch").read_text()
    assert "--mem-per-cpu 200M" in sbatch
    assert "--cpus-per-task 1" in sbatch
    assert "--array=1-4%3" in sbatch
    assert (tmp_path / "exp/log/q/foo.sh").is_file()


def test_failing_task_fails_the_command(slurm, tmp_path):
    p = slurm_pl(["JOB=1:3", "log/bad.JOB.log", "echo out JOB; test JOB -ne 2"], tmp_path)
    assert p.returncode == 1
    assert "1 / 3 failed" in p.stderr
    assert "log/bad.2.log" in p.stderr
    assert "out 2" in p.stderr  # the tail of the failing log
    assert "# Ended (code 1)" in (tmp_path / "log/bad.2.log").read_text()


def test_options_reach_the_scheduler(slurm, tmp_path):
    """--mem/--num-threads/--time appear in the live job (scontrol show job)."""
    proc = subprocess.Popen([SLURM_PL, "--config", CONF, "--mem", "300M",
                             "--num-threads", "2", "--time", "0:05:00",
                             "log/opt.log", "sleep 30"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = ""
        for _ in range(100):
            q = subprocess.run(["squeue", "-h", "-n", "opt", "-o", "%i"],
                               capture_output=True, text=True)
            ids = q.stdout.split()
            if ids:
                info = subprocess.run(["scontrol", "show", "job", ids[0]],
                                      capture_output=True, text=True).stdout
                if info:
                    break
            time.sleep(0.2)
        assert "NumCPUs=2" in info or "MinCPUsNode=2" in info, info
        assert "TimeLimit=00:05:00" in info, info
        assert "MinMemoryCPU=300M" in info, info
        assert "Partition=cpu" in info, info
    finally:
        proc.terminate()  # SIGTERM -> slurm.pl cancels the job
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert "cancelled Slurm job" in err
    left = "?"
    for _ in range(100):       # scancel is asynchronous: poll up to 10 s, do not guess a sleep
        left = subprocess.run(["squeue", "-h", "-n", "opt", "-t", "PD,R"],
                              capture_output=True, text=True).stdout.strip()
        if not left:
            break
        time.sleep(0.1)
    assert left == ""


def test_launch_py_spelling(slurm, tmp_path):
    """espnet2.bin.launch calls slurm.pl with --gpu 0 --num_threads 1 --num_nodes 1."""
    p = slurm_pl(["--gpu", "0", "--num_threads", "1", "--num_nodes", "1",
                  "train.log", "echo", "launched"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "\nlaunched\n" in (tmp_path / "train.log").read_text()
    sbatch = (tmp_path / "q/train.sbatch").read_text()
    assert "--nodes 1" in sbatch and "-p cpu" in sbatch


def test_sbatch_missing_is_a_clear_error(tmp_path):
    env = dict(os.environ, PATH="/nonexistent")
    p = subprocess.run([sys.executable, "-m", "pyutils.jobs.slurm", "x.log", "true"],
                       cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 1
    assert "sbatch not found" in p.stderr


def test_task_killed_by_slurm_is_a_failure(slurm, tmp_path):
    """A task that Slurm kills (here: cancelled) leaves no exit status -> failure."""
    # The array variable is TASK here: with JOB, "$SLURM_JOB_ID" would be
    # substituted too (every occurrence is replaced, as in Kaldi). One task
    # only: in an array, one task carries the array's own id, and cancelling
    # that id would cancel its siblings too (a race in a two-task version).
    p = slurm_pl(["TASK=1:1", "log/k.TASK.log",
                  'scancel "$SLURM_JOB_ID"; sleep 20; echo done TASK'], tmp_path)
    assert p.returncode == 1
    assert "task 1 of Slurm job" in p.stderr and "left no exit status" in p.stderr
    assert "job failed, log is in" in p.stderr and "log/k.1.log" in p.stderr
    # The wrapper was killed before it could write its footer. (Whether "done 1" shows
    # is not Slurm's promise: it signals the job's processes one after another, so the
    # inner shell can reap its killed sleep and run the echo before its own SIGTERM.)
    log = (tmp_path / "log/k.1.log").read_text()
    assert "# Ended (code" not in log and "# Accounting:" not in log
    assert not (tmp_path / "log/q/k.status/1").exists()


def _jobid_of(tmp_path, name, timeout=60):
    lock = tmp_path / "log" / "q" / f"{name}.lock"
    for _ in range(timeout * 10):
        if lock.exists():
            ids = [l.split()[1] for l in lock.read_text().splitlines() if l.startswith("slurm ")]
            if ids:
                return ids[0]
        time.sleep(0.1)
    raise AssertionError("no Slurm job id recorded")


def _squeue(jobid):
    p = subprocess.run(["squeue", "-h", "-j", jobid, "-o", "%T"], capture_output=True, text=True)
    return p.stdout.split()


def _wait_cancelled(jobid, timeout=30):
    for _ in range(timeout * 10):
        if not _squeue(jobid) or all(s in ("CANCELLED", "COMPLETING") for s in _squeue(jobid)):
            return True
        time.sleep(0.1)
    return False


def test_kill9_of_slurm_pl_cancels_its_array(slurm, tmp_path):
    # slurm.pl and its whole process group are SIGKILLed: the watchdog runs scancel
    proc = subprocess.Popen([SLURM_PL, "--config", CONF, "JOB=1:2", "log/w.JOB.log", "sleep 120"],
                            cwd=tmp_path, start_new_session=True, stderr=subprocess.DEVNULL)
    jobid = _jobid_of(tmp_path, "w")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_cancelled(jobid), f"Slurm job {jobid} still {_squeue(jobid)}"


def test_rerun_cancels_the_array_of_a_dead_slurm_pl(slurm, tmp_path):
    # slurm.pl AND its watchdog are SIGKILLed: the rerun reads the owner file,
    # sees its owner is gone and cancels the orphaned array before submitting
    proc = subprocess.Popen([SLURM_PL, "--config", CONF, "JOB=1:2", "log/w.JOB.log", "sleep 120"],
                            cwd=tmp_path, start_new_session=True, stderr=subprocess.DEVNULL)
    jobid = _jobid_of(tmp_path, "w")
    out = subprocess.run(["pgrep", "-f", "pyutils.jobs.guard watch"], capture_output=True,
                         text=True).stdout.split()
    for pid in out:
        status = Path(f"/proc/{pid}/status")
        if status.exists() and f"PPid:\t{proc.pid}\n" in status.read_text():
            os.kill(int(pid), signal.SIGKILL)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    assert _squeue(jobid), "the orphaned array should still be queued/running here"
    p = slurm_pl(["JOB=1:2", "log/w.JOB.log", "echo again JOB"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"Slurm job {jobid} of an earlier, killed slurm.pl" in p.stderr
    assert _wait_cancelled(jobid)
    assert "again 2" in (tmp_path / "log/w.2.log").read_text()


def test_second_concurrent_slurm_pl_is_refused(slurm, tmp_path):
    first = subprocess.Popen([SLURM_PL, "--config", CONF, "JOB=1:2", "log/w.JOB.log", "sleep 30"],
                             cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        _jobid_of(tmp_path, "w")
        p = slurm_pl(["JOB=1:2", "log/w.JOB.log", "echo second"], tmp_path, timeout=60)
        assert p.returncode == 1
        assert f"pid {first.pid}" in p.stderr and "refusing" in p.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
