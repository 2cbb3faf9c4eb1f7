"""Slurm job backend (``utils/slurm.pl``): a JOB array as one sbatch job array.

Usage::

    utils/slurm.pl [--config conf/slurm.conf] [--mem 4G] [--gpu N]
        [--num-threads N] [--num-nodes N] [--time T] [--max-jobs-run N]
        JOB=1:N exp/x/log/foo.JOB.log command args...

Options are mapped to sbatch arguments through a config file in the format
of Kaldi's/ESPnet's slurm.pl (default: ``conf/slurm.conf`` of the current
directory, else the Chorus one)::

    command sbatch --export=ALL          # base command
    option mem=* --mem-per-cpu $0        # --mem 4G -> --mem-per-cpu 4G
    option mem=0                         # --mem 0  -> nothing
    default gpu=0                        # applied when --gpu is not given
    option gpu=0 -p cpu                  # an exact value wins over `*`
    option gpu=* -p gpu --gres=gpu:$0 -c $0

``--max-jobs-run M`` becomes the array throttle ``--array=1-N%M``. Options
the config does not know are reported and ignored (Kaldi stops; we keep
going so that run.pl-only options do not break a Slurm run).

The sbatch script is written to ``<logdir>/q/<name>.sh``; Slurm's own output
goes to ``<logdir>/q/<name>.<task>.out``. Each task writes its JOB log in
run.pl's format and its exit status to ``<logdir>/q/<name>.status/<task>``.
We wait for the array (polling ``squeue``), then report failures exactly
like run.pl. Ctrl-C/SIGTERM/SIGHUP cancel the array with ``scancel``.

Jobs die with their run (see :mod:`pyutils.jobs.guard`): slurm.pl gets
SIGTERM when its parent dies; a watchdog in its own session runs ``scancel``
if slurm.pl itself is killed (even by SIGKILL); and the owner file
``<logdir>/q/<name>.lock`` records the Slurm job id, so a rerun cancels a
still-queued/running array of a dead slurm.pl before submitting again (and
refuses to submit while that slurm.pl is alive).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import Interrupted, JobArray, UsageError, backend_main, failure_report, read_exit_code
from .guard import ArrayLock, Busy, Watchdog, die_with_parent

PROG = "slurm.pl"
_ROOT = Path(__file__).resolve().parents[2]

#: options handled by slurm.pl itself rather than through the config
_SPECIAL = {"config", "max_jobs_run"}


@dataclass
class SlurmConfig:
    """Parsed ESPnet/Kaldi slurm.conf."""

    command: list[str] = field(default_factory=lambda: ["sbatch", "--export=ALL"])
    exact: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    wildcard: dict[str, list[str]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, path: str | Path) -> "SlurmConfig":
        conf = cls()
        for lineno, raw in enumerate(Path(path).read_text().splitlines(), 1):
            line = re.sub(r"(^|\s)#.*$", "", raw).strip()
            if not line:
                continue
            words = line.split()
            kind = words[0]
            if kind == "command":
                if len(words) < 2:
                    raise UsageError(f"{path}:{lineno}: 'command' needs a program")
                conf.command = words[1:]
                continue
            if kind not in ("option", "default") or len(words) < 2 or "=" not in words[1]:
                raise UsageError(
                    f"{path}:{lineno}: expected 'command ...', 'option name=value args...' "
                    f"or 'default name=value', got: {raw.strip()}")
            name, value = words[1].split("=", 1)
            name = name.replace("-", "_")
            if kind == "default":
                conf.defaults[name] = value
            elif value == "*":
                conf.wildcard[name] = words[2:]
            else:
                conf.exact[(name, value)] = words[2:]
        return conf

    def sbatch_args(self, options: dict[str, str], warn=None) -> list[str]:
        """sbatch arguments for the given (normalised) backend options."""
        merged = dict(self.defaults)
        merged.update(options)
        out: list[str] = []
        for name, value in merged.items():
            if name in _SPECIAL:
                continue
            if (name, value) in self.exact:
                out += self.exact[(name, value)]
            elif name in self.wildcard:
                out += [w.replace("$0", value) for w in self.wildcard[name]]
            elif warn is not None:
                warn(f"{PROG}: option --{name.replace('_', '-')} {value} is not in "
                     "the config file; ignored")
        return out


def find_config(options: dict[str, str]) -> Path | None:
    if "config" in options:
        path = Path(options["config"])
        if not path.is_file():
            raise UsageError(f"{PROG}: config file {path} (from --config) does not exist")
        return path
    for cand in (Path("conf/slurm.conf"), _ROOT / "conf" / "slurm.conf"):
        if cand.is_file():
            return cand
    return None


def _base_name(job: JobArray) -> str:
    name = Path(job.log).name
    if job.var:
        name = name.replace("." + job.var, "").replace(job.var, "")
    if name.endswith(".log"):
        name = name[:-4]
    return name or "job"


def write_script(job: JobArray, qdir: Path, name: str, status_dir: Path) -> Path:
    """Write the sbatch script that runs task $SLURM_ARRAY_TASK_ID."""
    q = shlex.quote
    cwd = os.getcwd()
    lines = [
        "#!/bin/bash",
        f"# Generated by {PROG} on {time.strftime('%Y-%m-%d %H:%M:%S')}; "
        "one case per array task.",
        f"cd {q(cwd)} || exit 1",
        "[ -f ./path.sh ] && . ./path.sh",
        'task="${SLURM_ARRAY_TASK_ID:-1}"',
        'case "${task}" in',
    ]
    for task in job.task_ids:
        log = job.log_for(task)
        if not os.path.isabs(log):
            log = os.path.join(cwd, log)
        lines.append(f"  {task}) log={q(log)}; cmd={q(job.command_for(task))} ;;")
    lines += [
        f'  *) echo "{PROG}: no task ${{task}} in this array" >&2; exit 1 ;;',
        "esac",
    ]
    if job.var:
        lines.append(f'export {job.var}="${{task}}"')
    threads = job.threads
    status = q(str(status_dir.resolve())) + '/"${task}"'
    lines += [
        'mkdir -p "$(dirname "${log}")"',
        '{ printf \'# %s\\n\' "${cmd}"; echo "# Started at $(date)";',
        '  echo "# Running on $(hostname) as Slurm job ${SLURM_ARRAY_JOB_ID:-?}_${task}";',
        '  echo "#"; } > "${log}"',
        "t0=$(date +%s)",
        'bash -c "${cmd}" >> "${log}" 2>&1 < /dev/null',
        "ret=$?",
        f'echo "# Accounting: time=$(( $(date +%s) - t0 )) threads={threads}" >> "${{log}}"',
        'echo "# Ended (code ${ret}) at $(date)" >> "${log}"',
        f'echo "${{ret}}" > {status}.tmp && mv {status}.tmp {status}',
        "exit ${ret}",
    ]
    path = qdir / f"{name}.sh"
    tmp = path.with_suffix(".sh.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path


def _squeue_states(jobid: str) -> list[str] | None:
    """States of the array's tasks still known to squeue; None if unreachable."""
    try:
        proc = subprocess.run(["squeue", "-h", "-r", "-j", jobid, "-o", "%T"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return []  # already purged from the controller
        return None
    return [s for s in proc.stdout.split() if s]


def submit_and_wait(job: JobArray, poll_max: float = 10.0, grace: float = 5.0) -> int:
    """Submit ``job`` as an sbatch array, wait for it, report; return 0/1."""
    if shutil.which("sbatch") is None:
        print(f"{PROG}: sbatch not found in PATH (is Slurm installed? use "
              "cmd_backend=local to run locally)", file=sys.stderr)
        return 1
    die_with_parent()
    name = _base_name(job)
    qdir = Path(job.log_for(job.start)).parent / "q"
    try:
        with ArrayLock(qdir / f"{name}.lock", PROG, what=f"{PROG} {job.log}") as lock:
            _cancel_orphans(lock.previous)
            watchdog = Watchdog()
            try:
                return _submit_and_wait(job, poll_max, grace, lock, watchdog)
            finally:
                watchdog.close()
    except Busy as e:
        print(e, file=sys.stderr)
        return 1


def _cancel_orphans(previous: dict) -> None:
    """Cancel the Slurm arrays of an earlier slurm.pl that died before they ended."""
    if previous.get("finished"):
        return
    for jobid in previous.get("slurm", []):
        states = _squeue_states(jobid)
        if states:
            subprocess.run(["scancel", jobid], capture_output=True)
            print(f"{PROG}: Slurm job {jobid} of an earlier, killed slurm.pl "
                  f"(pid {previous.get('pid')}) was still {states[0].lower()}; cancelled it",
                  file=sys.stderr)


def _submit_and_wait(job: JobArray, poll_max: float, grace: float, lock: ArrayLock,
                     watchdog: Watchdog) -> int:
    conf_path = find_config(job.options)
    conf = SlurmConfig.parse(conf_path) if conf_path else SlurmConfig()
    warn = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    name = _base_name(job)
    logdir = Path(job.log_for(job.start)).parent
    qdir = logdir / "q"
    qdir.mkdir(parents=True, exist_ok=True)
    status_dir = qdir / f"{name}.status"
    shutil.rmtree(status_dir, ignore_errors=True)
    status_dir.mkdir(parents=True)
    script = write_script(job, qdir, name, status_dir)

    array = f"{job.start}-{job.end}"
    if job.options.get("max_jobs_run"):
        try:
            limit = int(job.options["max_jobs_run"])
        except ValueError:
            raise UsageError(f"{PROG}: --max-jobs-run needs an integer")
        if limit > 0:
            array += f"%{limit}"
    argv = (conf.command + ["--job-name", name]
            + conf.sbatch_args(job.options, warn)
            + ["--parsable", f"--array={array}",
               "--output", str((qdir / f"{name}.%a.out").resolve()), str(script.resolve())])
    # Keep the exact submission next to the script, for debugging/resubmitting.
    (qdir / f"{name}.sbatch").write_text(shlex.join(argv) + "\n")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{PROG}: sbatch failed (code {proc.returncode}): {shlex.join(argv)}\n"
              f"{proc.stderr.strip()}", file=sys.stderr)
        return 1
    jobid = proc.stdout.strip().split(";")[0]
    watchdog.track_slurm(jobid)
    lock.record(f"slurm {jobid}")

    def on_signal(signum, _frame):
        raise Interrupted(signum)

    old = {s: signal.signal(s, on_signal)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    tasks = job.task_ids
    try:
        delay, unreachable_since = 0.5, None
        while True:
            if all((status_dir / str(t)).exists() for t in tasks):
                break
            states = _squeue_states(jobid)
            if states is None:
                unreachable_since = unreachable_since or time.time()
                if time.time() - unreachable_since > 600:
                    print(f"{PROG}: squeue has failed for 10 minutes; giving up on job "
                          f"{jobid}", file=sys.stderr)
                    break
            elif not states:
                # Gone from the queue: give slow shared filesystems a moment.
                deadline = time.time() + grace
                while time.time() < deadline and not all(
                        (status_dir / str(t)).exists() for t in tasks):
                    time.sleep(0.5)
                break
            else:
                unreachable_since = None
            time.sleep(delay)
            delay = min(delay * 1.5, poll_max)
    except Interrupted as e:
        subprocess.run(["scancel", jobid], capture_output=True)
        print(f"{PROG}: interrupted by {signal.Signals(e.signum).name}; "
              f"cancelled Slurm job {jobid}", file=sys.stderr)
        return 128 + e.signum
    finally:
        for s, h in old.items():
            signal.signal(s, h)

    failed = []
    for t in tasks:
        code = None
        try:
            code = int((status_dir / str(t)).read_text().strip())
        except (OSError, ValueError):
            code = read_exit_code(job.log_for(t))
        if code is None:
            out = qdir / f"{name}.{t}.out"
            print(f"{PROG}: task {t} of Slurm job {jobid} left no exit status (killed "
                  f"by Slurm: time limit, memory, node failure or scancel?); see {out}",
                  file=sys.stderr)
        if code != 0:
            failed.append((t, job.log_for(t)))
    if failed:
        sys.stderr.write(failure_report(PROG, failed, len(tasks)))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return backend_main(argv, PROG, __doc__, submit_and_wait)


if __name__ == "__main__":
    sys.exit(main())
