"""Command-line grammar and log format shared by the job backends.

Grammar (Kaldi's run.pl/queue.pl/slurm.pl)::

    $cmd [--opt value | --opt=value]... [JOB=1:N | JOB=N] LOG command args...

``JOB`` may be any identifier; every occurrence of it in LOG and in the
command words is replaced by the task id. Options may appear before and after
the ``JOB=`` spec, as Kaldi allows. Option names are normalised to
underscores (``--num-threads`` and ``--num_threads`` are the same option).

Log layout (Kaldi's)::

    # <command>
    # Started at <date>
    #
    <stdout and stderr of the command>
    # Accounting: time=<seconds> threads=<n>
    # Ended (code <exit status>) at <date>
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

_RANGE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+):(\d+)$")
_SINGLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+)$")
_RANGE_LIKE = re.compile(r"^[A-Z_][A-Z0-9_]*=[^/.]*$")  # looks like a range, matches neither form

#: How many lines of a failing log are echoed to stderr.
TAIL_LINES = 20


class UsageError(ValueError):
    """Malformed backend command line."""


class Interrupted(Exception):
    """A backend's wait cut short by signal ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@dataclass
class JobArray:
    """One invocation of a backend: N tasks sharing a command template."""

    log: str
    command: list[str]
    options: dict[str, str] = field(default_factory=dict)
    var: str | None = None
    start: int = 1
    end: int = 1

    @property
    def task_ids(self) -> list[int]:
        return list(range(self.start, self.end + 1))

    def _sub(self, text: str, task: int) -> str:
        return text.replace(self.var, str(task)) if self.var else text

    def log_for(self, task: int) -> str:
        return self._sub(self.log, task)

    def command_for(self, task: int) -> str:
        words = [self._sub(a, task) for a in self.command]
        if len(words) == 1:
            # One word is taken as a whole shell script: `$cmd log 'a | b > c'`.
            return words[0]
        return join_command(words)

    @property
    def threads(self) -> int:
        value = self.options.get("num_threads", "1")
        try:
            return max(1, int(value))
        except ValueError:
            return 1


def join_command(words: list[str]) -> str:
    """Join command words into one bash string, the way Kaldi's run.pl does.

    Words without whitespace are passed verbatim, so shell syntax such as
    ``'|'``, ``'>'`` or ``'&&'`` given as separate words still works
    (``$cmd log a.JOB \\| gzip -c \\> b.JOB.gz``). Words containing
    whitespace are quoted as one argument. (Kaldi double-quotes them, which
    lets ``$`` expand inside; we single-quote with shlex, which is safe for
    any text.) A command given as one single word is used verbatim as a
    shell script (see :meth:`JobArray.command_for`).
    """
    out = []
    for w in words:
        if w == "":
            out.append("''")
        elif re.search(r"\s", w):
            out.append(shlex.quote(w))
        else:
            out.append(w)
    return " ".join(out)


def normalise_option(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def parse_argv(argv: list[str], prog: str) -> JobArray:
    """Parse a backend command line into a :class:`JobArray`."""
    args = list(argv)
    options: dict[str, str] = {}
    var, start, end = None, 1, 1
    for _ in range(2):  # options, JOB=..., more options (Kaldi allows both)
        while len(args) >= 2 and args[0].startswith("-") and args[0] != "--":
            opt = args.pop(0)
            if "=" in opt and opt.startswith("--"):
                name, value = opt.split("=", 1)
            else:
                name, value = opt, args.pop(0)
            options[normalise_option(name)] = value
        if args and args[0] == "--":
            args.pop(0)
        if args and var is None:
            m = _RANGE.match(args[0])
            if m:
                var, start, end = m.group(1), int(m.group(2)), int(m.group(3))
                args.pop(0)
                continue
            m = _SINGLE.match(args[0])
            if m:
                var, start = m.group(1), int(m.group(2))
                end = start
                args.pop(0)
            elif _RANGE_LIKE.match(args[0]):  # JOB=a:2, JOB=1-4, ...: not a log file name
                raise UsageError(f"{prog}: bad job range {args[0]!r} (expected JOB=1:N or JOB=N)")
    if len(args) < 2 or args[0] in ("-h", "--help"):
        raise UsageError(
            f"usage: {prog} [options] [JOB=1:N] <log-file> <command> [args...]\n"
            f"  e.g. {prog} --mem 4G JOB=1:4 exp/x/log/foo.JOB.log "
            "python -m mymodule --part JOB\n"
            "  options: --mem M --gpu N --num-threads N --time T "
            "--max-jobs-run N --config FILE"
        )
    if end < start:
        raise UsageError(f"{prog}: empty job range {var}={start}:{end}")
    log = args.pop(0)
    if var is not None and end > start and var not in log:
        raise UsageError(
            f"{prog}: running {end - start + 1} parallel jobs but the log file "
            f"'{log}' does not contain '{var}', so they would overwrite each other"
        )
    return JobArray(log=log, command=args, options=options, var=var,
                    start=start, end=end)


def now_str() -> str:
    return time.strftime("%a %b %d %H:%M:%S %Z %Y")


def log_header(command: str) -> str:
    return f"# {command}\n# Started at {now_str()}\n#\n"


def log_footer(seconds: float, threads: int, code: int) -> str:
    return (f"# Accounting: time={int(round(seconds))} threads={threads}\n"
            f"# Ended (code {code}) at {now_str()}\n")


def log_tail(path: str | Path, n: int = TAIL_LINES) -> list[str]:
    """Last ``n`` output lines of a job log (without the footer)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        return [f"(cannot read log: {e})"]
    lines = text.splitlines()
    while lines and (lines[-1].startswith("# Accounting:")
                     or lines[-1].startswith("# Ended (code")):
        lines.pop()
    return lines[-n:]


def note_failed_log(log: str | Path) -> None:
    """Tell the stage script which log to read: ``$CHORUS_FAILED_LOG`` gets the path.

    utils/stage_prelude.sh sets the variable and names that log in its
    "stage N failed at <script>:<line>" message; outside a stage script it is unset.
    """
    dest = os.environ.get("CHORUS_FAILED_LOG")
    if not dest:
        return
    try:
        tmp = f"{dest}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(os.path.abspath(str(log)) + "\n")
        os.replace(tmp, dest)
    except OSError:
        pass  # the report on stderr still names the log


def failure_report(prog: str, failed: list[tuple[int, str]], total: int) -> str:
    """Message for stderr: how many failed, first failing log and its tail.

    ``failed`` holds ``(task_id, log_path)`` sorted by task id.
    """
    task, log = failed[0]
    note_failed_log(log)
    if total == 1:
        head = f"{prog}: job failed, log is in {log}"
    else:
        others = ""
        if len(failed) > 1:
            ids = ",".join(str(t) for t, _ in failed[:10])
            others = f" (failed tasks: {ids}{',...' if len(failed) > 10 else ''})"
        head = (f"{prog}: {len(failed)} / {total} failed{others}, "
                f"first failing log is {log}")
    tail = log_tail(log)
    body = "\n".join("  | " + line for line in tail)
    return f"{head}\n{prog}: last {len(tail)} lines of {log}:\n{body}\n"


def read_exit_code(log: str | Path) -> int | None:
    """Exit code from a log's ``# Ended (code X)`` footer, or None."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read().decode(errors="replace")
    except OSError:
        return None
    m = re.findall(r"^# Ended \(code (-?\d+)\)", tail, flags=re.M)
    return int(m[-1]) if m else None


def backend_main(argv: list[str] | None, prog: str, doc: str, runner) -> int:
    """Shared command-line entry of run.pl/slurm.pl: parse Kaldi-style argv, run.

    Returns the process exit code: 0 all jobs ok, 1 some job failed, 2 bad usage.
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(doc)
        return 0
    try:
        return runner(parse_argv(argv, prog))
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
