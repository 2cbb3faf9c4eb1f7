"""Jobs die with their run: a watchdog process, owner files and orphan cleanup.

Three layers, so that no job outlives the run that started it, whichever way
that run ends:

* :func:`die_with_parent` -- ``run.pl``/``slurm.pl`` ask the kernel for a
  SIGTERM when the process that started them (the recipe shell) dies, even by
  SIGKILL; their SIGTERM handler then kills/cancels their jobs.
* :class:`Watchdog` -- a small process in its own session (so a ``kill -9``
  of the run's whole process group does not reach it) holding the read end of
  a pipe from the backend. When the backend dies, however it dies, the pipe
  reaches EOF and the watchdog kills the job process groups it was told about
  (``killpg``) and cancels Slurm jobs (``scancel``).
* :class:`ArrayLock` -- an owner file next to the job logs, ``flock``-ed by the
  backend and inherited by every local job, recording the owner's pid and the
  jobs' process groups / Slurm job id. A rerun that finds it held by jobs whose
  owner is gone kills those orphans first; one whose owner is still alive is
  refused with a clear message (two copies would write the same logs).

The same orphan cleanup serves the per-exp-dir recipe lock of
``utils/stage_prelude.sh`` (``python -m pyutils.jobs.guard reclaim LOCK``).

Command line (internal)::

    python -m pyutils.jobs.guard watch            # the watchdog, reads stdin
    python -m pyutils.jobs.guard reclaim LOCKFILE [--wait S]
        # exit 0: every process holding LOCKFILE belonged to a dead owner and
        # was killed (or there were none); 1: the owner is alive (message printed)
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: seconds between SIGTERM and SIGKILL when cleaning up
GRACE = 3.0


# ---------------------------------------------------------------- processes
def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Have the kernel send ``sig`` to this process when its parent dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() == 1:  # the parent died before prctl: act now
        os.kill(os.getpid(), sig)


def start_time(pid: int) -> str | None:
    """Kernel start time of ``pid`` (guards against pid reuse), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: split after its closing ')'
    fields = stat[stat.rfind(")") + 2:].split()
    if fields and fields[0] == "Z":
        return None  # a zombie is as good as gone
    return fields[19] if len(fields) > 19 else None


def alive(pid: int, started: str | None) -> bool:
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def _ancestors() -> set[int]:
    """This process and its ancestors (a rerun holding the file itself is not an orphan)."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        m = [line for line in status.splitlines() if line.startswith("PPid:")]
        pid = int(m[0].split()[1]) if m else 0
    return out


def holders(path: str | Path) -> list[int]:
    """Pids of processes (ours to see, not our ancestors) that have ``path`` open."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    found = []
    mine = _ancestors()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
            for fd in fds:
                try:
                    s = os.stat(fd.path)
                except OSError:
                    continue
                if s.st_ino == st.st_ino and s.st_dev == st.st_dev:
                    found.append(int(entry.name))
                    break
        except OSError:
            continue
    return found


def held_lock_fds() -> tuple[int, ...]:
    """Our open fds on the recipe locks named in ``CHORUS_HELD_LOCKS``.

    run.pl passes them on to its jobs, so a job orphaned by a killed run still
    holds its exp dir's lock: a rerun waits for it (or kills it) instead of
    working beside it.
    """
    paths = [p for p in os.environ.get("CHORUS_HELD_LOCKS", "").split(":") if p]
    if not paths:
        return ()
    wanted = set()
    for p in paths:
        try:
            st = os.stat(p)
            wanted.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    fds = []
    try:
        entries = os.listdir("/proc/self/fd")
    except OSError:
        return ()
    for name in entries:
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in wanted:
            fds.append(int(name))
    return tuple(fds)


def kill_groups(pgids, sig: int) -> None:
    for pg in pgids:
        try:
            os.killpg(pg, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_holders(path: str | Path, sig: int) -> list[int]:
    """Signal every holder of ``path``: its whole process group when the group's
    leader holds the file too (a job group we created), else just the process
    (never the group of whatever launched the dead run)."""
    pids = holders(path)
    held = set(pids)
    for pid in pids:
        try:
            pg = os.getpgid(pid)
        except ProcessLookupError:
            continue
        try:
            if pg in held and pg != os.getpgrp():
                os.killpg(pg, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return pids


def try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def wait_lock(fd: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while True:
        if try_lock(fd):
            return True
        if time.time() >= deadline:
            return False
        time.sleep(0.1)


# ---------------------------------------------------------------- owner files
def read_owner(path: str | Path) -> dict:
    """Parse an owner file: ``owner PID START [text]``, ``pgid N``, ``slurm ID``, ``finished``."""
    info: dict = {"pid": None, "start": None, "what": "", "pgids": [], "slurm": [],
                  "finished": False}
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return info
    for line in lines:
        words = line.split(" ", 3)
        if words[0] == "owner" and len(words) >= 3 and words[1].isdigit():
            info.update(pid=int(words[1]), start=words[2],
                        what=words[3] if len(words) > 3 else "")
        elif words[0] == "pgid" and len(words) > 1 and words[1].isdigit():
            info["pgids"].append(int(words[1]))
        elif words[0] == "slurm" and len(words) > 1:
            info["slurm"].append(words[1])
        elif words[0] == "finished":
            info["finished"] = True
    return info


def reclaim(lock: str | Path, fd: int, prog: str, wait: float = 10.0) -> None:
    """Take the flock on ``fd`` (open on ``lock``), killing orphans of a dead owner.

    Raises :class:`Busy` when the recorded owner is still alive, or when the
    holders cannot be killed.
    """
    if try_lock(fd):
        return
    info = read_owner(lock)
    if info["pid"] is not None and alive(info["pid"], info["start"]):
        raise Busy(f"{prog}: {lock} is held by a run that is still going (pid "
                   f"{info['pid']}{': ' + info['what'] if info['what'] else ''}); refusing "
                   "to start a second one in the same place. Wait for it to finish, or "
                   f"stop it (kill {info['pid']}) and run again.")
    # The owner is gone: give its own cleanup (pdeathsig, watchdog) a moment ...
    if wait_lock(fd, min(wait, GRACE)):
        return
    # ... then kill what is left: process groups it recorded, and every holder.
    pids = holders(lock)
    kill_groups(info["pgids"], signal.SIGTERM)
    _kill_holders(lock, signal.SIGTERM)
    owner = f" (pid {info['pid']})" if info["pid"] else ""
    print(f"{prog}: an earlier run{owner} was killed but its jobs kept running "
          f"(pids {' '.join(map(str, pids)) or '?'}, holding {lock}); killed them",
          file=sys.stderr)
    if wait_lock(fd, GRACE):
        return
    kill_groups(info["pgids"], signal.SIGKILL)
    _kill_holders(lock, signal.SIGKILL)
    if wait_lock(fd, max(wait - 2 * GRACE, GRACE)):
        return
    left = holders(lock)
    raise Busy(f"{prog}: {lock} is still held by pids {' '.join(map(str, left))} "
               "after SIGKILL; stop them and run again")


class Busy(RuntimeError):
    """Another live run holds the lock."""


class ArrayLock:
    """Owner file of one job array, held (flock) by the backend and its local jobs.

    ``path`` is e.g. ``exp/x/log/.foo.JOB.log.lock``. Entering it reclaims it
    from orphans of a dead owner (see :func:`reclaim`) or raises :class:`Busy`.
    """

    def __init__(self, path: str | Path, prog: str, what: str = ""):
        self.path = Path(path)
        self.prog = prog
        self.what = what.replace("\n", " ")[:300]
        self.fd: int | None = None

    def __enter__(self) -> "ArrayLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            reclaim(self.path, self.fd, self.prog)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        self._previous = read_owner(self.path)
        os.ftruncate(self.fd, 0)
        self.record(f"owner {os.getpid()} {start_time(os.getpid())} {self.what}")
        return self

    @property
    def previous(self) -> dict:
        """What the owner file said before we took it (slurm ids of a dead run)."""
        return self._previous

    def record(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            self.record("finished")
            os.close(self.fd)
            self.fd = None


# ---------------------------------------------------------------- watchdog
class Watchdog:
    """Kill our job groups / cancel our Slurm jobs if this process dies.

    Use ``track_group(pgid)``/``untrack_group(pgid)`` around each local job,
    ``track_slurm(jobid)`` for a Slurm array, and ``close()`` on a normal exit
    (then the watchdog does nothing).
    """

    def __init__(self):
        self.proc = None
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pyutils.jobs.guard", "watch"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": _pythonpath()})
        except OSError as e:  # pragma: no cover - cannot fork
            print(f"guard: watchdog not started ({e}); jobs may outlive a killed run",
                  file=sys.stderr)

    def _send(self, line: str) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.proc = None

    def track_group(self, pgid: int) -> None:
        self._send(f"pgid {pgid}")

    def untrack_group(self, pgid: int) -> None:
        self._send(f"end {pgid}")

    def track_slurm(self, jobid: str) -> None:
        self._send(f"slurm {jobid}")

    def close(self) -> None:
        if self.proc is None:
            return
        self._send("done")
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.proc = None


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[2])
    old = os.environ.get("PYTHONPATH", "")
    return root + (os.pathsep + old if old else "")


def _watch() -> int:
    """Watchdog body: remember groups/jobs from stdin; on EOF without 'done', kill them."""
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)  # only EOF on stdin ends us
    groups: set[int] = set()
    slurm: set[str] = set()
    for raw in sys.stdin.buffer:
        words = raw.decode(errors="replace").split()
        if not words:
            continue
        if words[0] == "done":
            return 0
        if words[0] == "pgid" and len(words) > 1 and words[1].isdigit():
            groups.add(int(words[1]))
        elif words[0] == "end" and len(words) > 1 and words[1].isdigit():
            groups.discard(int(words[1]))
        elif words[0] == "slurm" and len(words) > 1:
            slurm.add(words[1])
    # EOF without "done": the backend died. Kill everything it started.
    for jobid in slurm:
        try:
            subprocess.run(["scancel", jobid], capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pass
    kill_groups(groups, signal.SIGTERM)
    deadline = time.time() + GRACE
    while time.time() < deadline and any(_group_exists(g) for g in groups):
        time.sleep(0.1)
    kill_groups(groups, signal.SIGKILL)
    return 0


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["watch"]:
        return _watch()
    if argv[:1] == ["reclaim"] and len(argv) >= 2:
        # Used by utils/stage_prelude.sh after its own `flock -n` failed: kill the
        # orphans of a dead owner and wait until the lock is free (the shell then
        # takes it). We take and drop the lock here only to know it is free.
        lock = argv[1]
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            reclaim(lock, fd, os.environ.get("CHORUS_PROG", "run"))
        except Busy as e:
            print(e, file=sys.stderr)
            return 1
        finally:
            os.close(fd)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
