"""Local job backend (``utils/run.pl``): run a JOB array on this machine.

Usage::

    utils/run.pl [--max-jobs-run N] [other opts] JOB=1:N exp/x/log/foo.JOB.log cmd args...

Tasks run through ``bash -c`` with the caller's environment (the recipe's
path.sh), at most ``--max-jobs-run`` at once (default: number of CPUs).
Other options (--mem, --gpu, --num-threads, --time, --config, ...) are
accepted and ignored, as Kaldi's run.pl does; --num-threads is only written
to the log's Accounting line. Exit status 0 if every task succeeded, else 1
with a report naming the first failing log and its last lines. Ctrl-C,
SIGTERM or SIGHUP kills every running task (whole process group) and exits
128+signal.

Jobs die with their run (see :mod:`pyutils.jobs.guard`): run.pl gets SIGTERM
when its parent dies; a watchdog kills the job groups if run.pl itself is
killed (even ``kill -9`` of the whole process group); and the owner file
``<logdir>/.<log name>.lock`` (held by run.pl and every job) lets a rerun kill
the orphans of a dead run, or refuse to start while the earlier run is alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .common import Interrupted, JobArray, UsageError, backend_main, failure_report, log_footer, log_header
from .guard import ArrayLock, Busy, Watchdog, die_with_parent, held_lock_fds

PROG = "run.pl"


def _default_max_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def lock_path(job: JobArray) -> Path:
    """Owner file of an array: next to its logs, named after the log template."""
    log = Path(job.log)
    return log.parent / f".{log.name}.lock"


def _start(job: JobArray, task: int, lock_fds: tuple[int, ...] = ()):
    log = job.log_for(task)
    cmd = job.command_for(task)
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fh = open(log, "w")
    fh.write(log_header(cmd))
    fh.flush()
    env = dict(os.environ)
    if job.var:
        env[job.var] = str(task)
    # The job holds the array's owner file and the recipe's exp-dir lock open
    # (pass_fds), so that a rerun can tell whether orphaned jobs of a killed run
    # are still going.
    proc = subprocess.Popen(["bash", "-c", cmd], stdout=fh, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                            pass_fds=lock_fds)
    return proc, fh, time.time(), log


def _finish(fh, t0: float, threads: int, code: int) -> None:
    fh.write(log_footer(time.time() - t0, threads, code))
    fh.close()


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# options of the backends (slurm.pl maps them through conf/slurm.conf; run.pl uses max_jobs_run)
QUEUE_OPTIONS = {"mem", "gpu", "num_threads", "time", "max_jobs_run", "config", "name", "num_nodes",
                 "gpu_limit", "cpu_limit"}


def run_array(job: JobArray, prog: str = PROG, max_jobs: int | None = None) -> int:
    """Run every task of ``job``; return 0 or 1 (128+signal if interrupted)."""
    die_with_parent()
    for name in sorted(set(job.options) - QUEUE_OPTIONS):
        # Kaldi's run.pl ignores queue options so that one $cmd works on every backend;
        # an option no backend knows is most likely a typo: say so
        print(f"{prog}: warning: unknown option --{name.replace('_', '-')} ignored "
              f"(options: {', '.join('--' + o.replace('_', '-') for o in sorted(QUEUE_OPTIONS))})",
              file=sys.stderr)
    try:
        lock = ArrayLock(lock_path(job), prog, what=f"{prog} {job.log}")
        with lock:
            watchdog = Watchdog()
            try:
                return _run_array(job, prog, max_jobs, lock, watchdog)
            finally:
                watchdog.close()
    except Busy as e:
        print(e, file=sys.stderr)
        return 1


def _run_array(job: JobArray, prog: str, max_jobs: int | None, lock: ArrayLock,
               watchdog: Watchdog) -> int:
    if max_jobs is None:
        raw = job.options.get("max_jobs_run")
        try:
            max_jobs = int(raw) if raw is not None else _default_max_jobs()
        except ValueError:
            raise UsageError(f"{prog}: --max-jobs-run needs an integer, got {raw!r}")
    if max_jobs <= 0:
        max_jobs = _default_max_jobs()
    pending = job.task_ids
    recipe_locks = held_lock_fds()
    running: dict[int, tuple] = {}
    failed: list[tuple[int, str]] = []

    # A signal that lands while a job is being started is held until the job is in
    # ``running``: raised in between, it would leave that job's process group unkilled.
    starting = {"now": False, "held": None}

    def on_signal(signum, _frame):
        if starting["now"]:
            starting["held"] = signum
            return
        raise Interrupted(signum)

    old = {s: signal.signal(s, on_signal)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        delay = 0.01
        while pending or running:
            while pending and len(running) < max_jobs:
                task = pending.pop(0)
                starting["now"] = True
                try:
                    running[task] = _start(job, task, (lock.fd, *recipe_locks))
                    pgid = running[task][0].pid
                    watchdog.track_group(pgid)
                    lock.record(f"pgid {pgid}")
                except OSError as e:  # log dir not writable, bash missing, ...
                    print(f"{prog}: cannot start job {task}: {e}", file=sys.stderr)
                    failed.append((task, job.log_for(task)))
                finally:
                    starting["now"] = False
                if starting["held"] is not None:
                    raise Interrupted(starting["held"])
            done = []
            for task, (proc, fh, t0, log) in running.items():
                code = proc.poll()
                if code is not None:
                    # A negative code means killed by a signal: report 128+sig like bash.
                    code = 128 - code if code < 0 else code
                    _finish(fh, t0, job.threads, code)
                    watchdog.untrack_group(proc.pid)
                    if code != 0:
                        failed.append((task, log))
                    done.append(task)
            for task in done:
                del running[task]
            if done:
                delay = 0.01
            else:
                time.sleep(delay)
                delay = min(delay * 1.5, 0.2)
    except Interrupted as e:
        for proc, *_ in running.values():
            _kill_group(proc, signal.SIGTERM)
        deadline = time.time() + 3
        for proc, fh, t0, _log in running.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait()
            _finish(fh, t0, job.threads, 128 + e.signum)
        name = signal.Signals(e.signum).name
        print(f"{prog}: interrupted by {name}; killed {len(running)} running job(s)",
              file=sys.stderr)
        return 128 + e.signum
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if failed:
        failed.sort()
        sys.stderr.write(failure_report(prog, failed, len(job.task_ids)))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return backend_main(argv, PROG, __doc__, run_array)


if __name__ == "__main__":
    sys.exit(main())
