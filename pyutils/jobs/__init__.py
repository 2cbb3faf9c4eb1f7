"""Job backends (Kaldi/ESPnet ``$cmd`` convention) and a Python API for them.

Shell side: ``utils/run.pl`` (:mod:`pyutils.jobs.local`) and ``utils/slurm.pl``
(:mod:`pyutils.jobs.slurm`), both called as::

    $cmd [--mem 4G] [--gpu N] [--num-threads N] [--time T] [--max-jobs-run N]
         [--config conf/slurm.conf] JOB=1:N exp/x/log/foo.JOB.log command args...

Python side: :func:`run_jobs` runs such an array through whatever ``$cmd``
the recipe chose (``$decode_cmd`` etc.), e.g. to generate data in parallel::

    from pyutils.jobs import run_jobs
    run_jobs(os.environ.get("decode_cmd", "utils/run.pl"),
             "exp/synth/log/gen.JOB.log",
             ["python", "-m", "pyutils.synth.worker", "--part", "JOB", "--nparts", "4"],
             njobs=4, mem="2G")

It raises :class:`JobsFailed` (a ``subprocess.CalledProcessError``) when any
task fails; the backend has already printed the failing log's tail.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

__all__ = ["run_jobs", "JobsFailed", "resolve_cmd", "cmd_problem"]

_ROOT = Path(__file__).resolve().parents[2]


class JobsFailed(subprocess.CalledProcessError):
    """At least one task of a job array failed."""

    def __str__(self) -> str:
        return (f"job backend exited with status {self.returncode}: "
                f"{shlex.join(self.cmd)}")


def resolve_cmd(cmd: str | Sequence[str] | None) -> list[str]:
    """Split a ``$cmd`` string and make ``utils/run.pl`` work from any cwd.

    ``None`` means ``utils/run.pl``. A first word ``utils/run.pl`` or
    ``utils/slurm.pl`` (or the bare names) that does not exist relative to the
    current directory (``../../utils/run.pl`` from another folder) is resolved
    to the copy in the Chorus checkout; an absolute path is taken as given
    (``/no/such/run.pl`` is not silently swapped).
    """
    words = shlex.split(cmd) if isinstance(cmd, str) else list(cmd or ["utils/run.pl"])
    if not words:
        words = ["utils/run.pl"]
    name = Path(words[0]).name
    relative = not os.path.isabs(words[0])
    if relative and name in ("run.pl", "slurm.pl") and not Path(words[0]).exists():
        words[0] = str(_ROOT / "utils" / name)
    return words


def cmd_problem(cmd: str | Sequence[str] | None) -> str | None:
    """Why the backend ``cmd`` cannot run (no such program, not executable), or None.

    For options checked before any work starts, rather than failing when the
    first job is launched.
    """
    try:
        program = resolve_cmd(cmd)[0]
    except ValueError as exc:  # shlex: an unclosed quote
        return f"cannot be split into words ({exc})"
    if os.sep in program:
        if not os.path.isfile(program):
            return f"{program}: no such file"
        if not os.access(program, os.X_OK):
            return f"{program}: not executable"
        return None
    return None if shutil.which(program) else f"{program}: no such program on PATH"


def run_jobs(cmd: str | Sequence[str] | None, log: str | os.PathLike,
             command: Sequence[str] | str, njobs: int | None = None, *,
             mem: str | None = None, gpu: int | None = None,
             num_threads: int | None = None, time: str | None = None,
             max_jobs_run: int | None = None, var: str = "JOB",
             check: bool = True, **extra_options) -> int:
    """Run ``command`` as tasks 1..njobs through backend ``cmd``.

    ``command`` is a list of words (``JOB`` in any word becomes the task id) or
    one string used as a shell script. ``njobs=None`` runs a single job without
    substitution. Extra keyword options become ``--name value`` (underscores
    kept as ESPnet's slurm.pl spelling accepts both). Returns the exit status;
    with ``check=True`` raises :class:`JobsFailed` on failure.
    """
    argv = resolve_cmd(cmd)
    opts = {"mem": mem, "gpu": gpu, "num_threads": num_threads, "time": time,
            "max_jobs_run": max_jobs_run, **extra_options}
    for name, value in opts.items():
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    if njobs is not None:
        argv.append(f"{var}=1:{int(njobs)}")
    argv.append(str(log))
    argv += [command] if isinstance(command, str) else [str(c) for c in command]
    proc = subprocess.run(argv)
    if check and proc.returncode != 0:
        raise JobsFailed(proc.returncode, argv)
    return proc.returncode
