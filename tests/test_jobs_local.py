"""utils/run.pl (pyutils.jobs.local): JOB arrays, logs, failures, limits, Ctrl-C."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyutils.jobs import JobsFailed, run_jobs
from pyutils.jobs.common import UsageError, join_command, parse_argv

ROOT = Path(__file__).resolve().parents[1]
RUN_PL = str(ROOT / "utils" / "run.pl")


def run(args, cwd, **kw):
    return subprocess.run([RUN_PL, *args], cwd=cwd, capture_output=True, text=True, **kw)


def test_array_runs_all_jobs_with_kaldi_log_format(tmp_path):
    p = run(["JOB=1:4", "log/foo.JOB.log", "echo", "task JOB of 4", "&&", "echo", "$JOB"],
            tmp_path)
    assert p.returncode == 0, p.stderr
    for j in range(1, 5):
        lines = (tmp_path / "log" / f"foo.{j}.log").read_text().splitlines()
        assert lines[0] == f"# echo 'task {j} of 4' && echo ${j}"
        assert lines[1].startswith("# Started at ")
        assert f"task {j} of 4" in lines
        assert re.fullmatch(r"# Accounting: time=\d+ threads=1", lines[-2])
        assert lines[-1].startswith("# Ended (code 0) at ")


def test_single_job_and_single_word_script(tmp_path):
    p = run(["--gpu", "0", "--mem", "4G", "a/b/one.log", "echo x | tr x y > out.txt; cat out.txt"],
            tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out.txt").read_text() == "y\n"
    assert "\ny\n" in (tmp_path / "a/b/one.log").read_text()


def test_failure_names_first_failing_log_and_tail(tmp_path):
    script = "for i in $(seq 1 30); do echo line$i; done; [ JOB -ne 3 ] && [ JOB -ne 4 ]"
    p = run(["JOB=1:5", "exp/log/stats.JOB.log", script], tmp_path)
    assert p.returncode == 1
    assert "2 / 5 failed" in p.stderr
    assert "exp/log/stats.3.log" in p.stderr
    assert "line30" in p.stderr and "line11" in p.stderr
    assert "line10" not in p.stderr  # only the last 20 lines
    assert "# Ended (code 1)" in (tmp_path / "exp/log/stats.3.log").read_text()
    assert "# Ended (code 0)" in (tmp_path / "exp/log/stats.5.log").read_text()


def test_exit_code_recorded(tmp_path):
    p = run(["x.log", "exit 7"], tmp_path)
    assert p.returncode == 1
    assert "job failed, log is in x.log" in p.stderr
    assert "# Ended (code 7)" in (tmp_path / "x.log").read_text()


def test_max_jobs_run_limits_concurrency(tmp_path):
    # Each job records how many jobs are running (marker files) while it runs.
    script = ("touch run.JOB; sleep 1; ls run.* | wc -l > peak.JOB; rm run.JOB")
    p = run(["--max-jobs-run", "2", "JOB=1:6", "log/p.JOB.log", script], tmp_path)
    assert p.returncode == 0, p.stderr
    peaks = [int((tmp_path / f"peak.{j}").read_text()) for j in range(1, 7)]
    assert max(peaks) <= 2
    p = run(["--max-jobs-run", "6", "JOB=1:6", "log/p.JOB.log", script], tmp_path)
    peaks = [int((tmp_path / f"peak.{j}").read_text()) for j in range(1, 7)]
    assert max(peaks) >= 3  # really parallel when allowed


def test_options_after_job_spec_and_underscore_spelling(tmp_path):
    p = run(["JOB=2:3", "--num_threads", "3", "--max-jobs-run=1", "l/x.JOB.log", "echo", "JOB"],
            tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "l/x.1.log").exists()
    text = (tmp_path / "l/x.3.log").read_text()
    assert "\n3\n" in text and "threads=3" in text


def test_parallel_jobs_into_one_log_is_refused(tmp_path):
    p = run(["JOB=1:2", "same.log", "true"], tmp_path)
    assert p.returncode == 2
    assert "does not contain 'JOB'" in p.stderr


def test_usage_error(tmp_path):
    p = run(["only.log"], tmp_path)
    assert p.returncode == 2 and "usage:" in p.stderr


def test_inherits_environment(tmp_path):
    env = dict(os.environ, CHORUS_TEST_VALUE="from-parent")
    p = run(["e.log", "echo $CHORUS_TEST_VALUE"], tmp_path, env=env)
    assert p.returncode == 0
    assert "from-parent" in (tmp_path / "e.log").read_text()


def test_ctrl_c_kills_children(tmp_path):
    proc = subprocess.Popen([RUN_PL, "JOB=1:2", "log/s.JOB.log",
                             "echo $$ > pid.JOB; sleep 60"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True)
    for _ in range(300):
        if all((tmp_path / f"pid.{j}").exists() and (tmp_path / f"pid.{j}").read_text()
               for j in (1, 2)):
            break
        time.sleep(0.1)
    pids = [int((tmp_path / f"pid.{j}").read_text()) for j in (1, 2)]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "interrupted" in err
    def gone(pid):
        try:
            return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True

    for _ in range(100):  # a loaded machine may take a moment to reap them
        if all(gone(pid) for pid in pids):
            break
        time.sleep(0.1)
    assert all(gone(pid) for pid in pids)
    assert "# Ended (code 130)" in (tmp_path / "log/s.1.log").read_text()


def test_parse_argv_and_quoting():
    job = parse_argv(["--mem", "4G", "JOB=1:3", "--gpu=1", "log.JOB", "cmd", "a b", "x.JOB"],
                     "run.pl")
    assert job.options == {"mem": "4G", "gpu": "1"}
    assert (job.var, job.start, job.end) == ("JOB", 1, 3)
    assert job.log_for(2) == "log.2"
    assert job.command_for(3) == "cmd 'a b' x.3"
    assert join_command(["echo", "it's here", "|", "cat"]) == "echo 'it'\"'\"'s here' | cat"
    with pytest.raises(UsageError):
        parse_argv(["JOB=3:1", "l.JOB", "x"], "run.pl")


def test_python_api(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = run_jobs("utils/run.pl --mem 1G", "log/api.JOB.log",
                  [sys.executable, "-c", "import sys; print('part', sys.argv[1])", "JOB"],
                  njobs=3, max_jobs_run=2)
    assert rc == 0
    assert "part 2" in (tmp_path / "log/api.2.log").read_text()
    with pytest.raises(JobsFailed):
        run_jobs(None, "log/bad.log", "exit 3")


# ------------------------------------------------------------ jobs die with their run
def _wait_pids(tmp_path, n, timeout=30):
    for _ in range(int(timeout * 10)):
        files = [tmp_path / f"pid.{j}" for j in range(1, n + 1)]
        if all(f.exists() and f.read_text().strip() for f in files):
            return [int(f.read_text()) for f in files]
        time.sleep(0.1)
    raise AssertionError("jobs did not start")


def _gone(pid):
    p = Path(f"/proc/{pid}/status")
    return not p.exists() or "\nState:\tZ" in p.read_text()


def _wait_gone(pids, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.1)
    return all(_gone(p) for p in pids)


def _backend_pid(marker):
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


JOB_SCRIPT = "echo $$ > pid.JOB; sleep 120"


def test_kill9_of_the_whole_run_kills_its_jobs(tmp_path):
    # kill -9 of the run's process group: the jobs live in their own sessions, the
    # watchdog (own session too) sees run.pl's pipe close and kills them.
    proc = subprocess.Popen([RUN_PL, "JOB=1:2", "log/k.JOB.log", JOB_SCRIPT], cwd=tmp_path,
                            start_new_session=True, stderr=subprocess.DEVNULL)
    pids = _wait_pids(tmp_path, 2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_gone(pids), "jobs outlived kill -9 of their run"


def test_kill9_of_the_parent_shell_kills_its_jobs(tmp_path):
    # the recipe shell is killed alone: run.pl gets SIGTERM (parent-death signal)
    shell = subprocess.Popen(["bash", "-c", f"{RUN_PL} JOB=1:2 log/k.JOB.log '{JOB_SCRIPT}'; "
                              "echo never > after"], cwd=tmp_path, stderr=subprocess.DEVNULL)
    pids = _wait_pids(tmp_path, 2)
    shell.kill()
    shell.wait()
    assert _wait_gone(pids), "jobs outlived kill -9 of the shell that started them"
    # run.pl writes the log's last line after its jobs are gone: wait for it (slow under load)
    log = tmp_path / "log/k.1.log"
    deadline = time.time() + 20
    while time.time() < deadline and "# Ended" not in log.read_text():
        time.sleep(0.1)
    assert "# Ended (code 143)" in log.read_text()


def test_rerun_kills_orphans_of_a_run_killed_with_its_watchdog(tmp_path):
    # worst case: run.pl AND its watchdog are SIGKILLed; the jobs keep the owner
    # file locked, so the rerun finds them and kills them before starting.
    proc = subprocess.Popen([RUN_PL, "JOB=1:2", "log/k.JOB.log", JOB_SCRIPT], cwd=tmp_path,
                            start_new_session=True, stderr=subprocess.DEVNULL)
    pids = _wait_pids(tmp_path, 2)
    lock = tmp_path / "log" / ".k.JOB.log.lock"
    for line in lock.read_text().splitlines():
        assert line.split()[0] in ("owner", "pgid")
    watchdogs = [p for p in _backend_pid("pyutils.jobs.guard watch")
                 if os.getsid(p) != os.getsid(proc.pid)
                 and Path(f"/proc/{p}/status").exists()
                 and f"PPid:\t{proc.pid}\n" in Path(f"/proc/{p}/status").read_text()]
    assert len(watchdogs) == 1
    os.kill(watchdogs[0], signal.SIGKILL)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.3)
    assert not any(_gone(p) for p in pids)  # orphans, still running
    for f in tmp_path.glob("pid.*"):
        f.unlink()
    p = run(["JOB=1:2", "log/k.JOB.log", "echo rerun JOB"], tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "was killed but its jobs kept running" in p.stderr
    assert all(_gone(pid) for pid in pids)
    assert "rerun 2" in (tmp_path / "log/k.2.log").read_text()


def test_second_concurrent_run_is_refused(tmp_path):
    first = subprocess.Popen([RUN_PL, "JOB=1:2", "log/k.JOB.log", JOB_SCRIPT], cwd=tmp_path,
                             stderr=subprocess.DEVNULL)
    try:
        _wait_pids(tmp_path, 2)
        p = run(["JOB=1:2", "log/k.JOB.log", "echo second"], tmp_path, timeout=30)
        assert p.returncode == 1
        assert f"pid {first.pid}" in p.stderr and "refusing" in p.stderr
        assert "second" not in (tmp_path / "log/k.1.log").read_text()
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=20)


def test_sighup_kills_children(tmp_path):
    proc = subprocess.Popen([RUN_PL, "log/h.log", "echo $$ > pid.1; sleep 60"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True)
    pids = _wait_pids(tmp_path, 1)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGHUP
    assert _wait_gone(pids)


def test_backend_paths_resolved_only_when_relative(tmp_path, monkeypatch):
    from pyutils.jobs import cmd_problem, resolve_cmd
    monkeypatch.chdir(tmp_path)  # no utils/ here: the checkout's run.pl is used
    assert resolve_cmd("utils/run.pl --mem 2G")[0] == str(ROOT / "utils" / "run.pl")
    assert resolve_cmd("../../utils/slurm.pl")[0] == str(ROOT / "utils" / "slurm.pl")
    assert resolve_cmd("/no/such/utils/run.pl") == ["/no/such/utils/run.pl"]  # never swapped silently
    assert cmd_problem("utils/run.pl") is None
    assert "no such file" in cmd_problem("/no/such/utils/run.pl")
    assert "no such program" in cmd_problem("no-such-backend.pl")
    script = tmp_path / "backend.sh"
    script.write_text("#!/bin/sh\n")
    assert "not executable" in cmd_problem(str(script))
