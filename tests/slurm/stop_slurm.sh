#!/usr/bin/env bash
# Stop the test cluster started by tests/slurm/start_slurm.sh (slurmd,
# slurmctld, munged), by their pid files. Idempotent: nothing running is fine.
set -uo pipefail

STATE=${CHORUS_SLURM_DIR:-/var/spool/chorus-slurm}

log() { echo "stop_slurm.sh: $*" >&2; }

alive() {  # a zombie (state Z) counts as gone
  local pid=$1
  [ -d "/proc/${pid}" ] || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/${pid}/status" 2>/dev/null
}

stop_pidfile() {
  local name=$1 pidfile=$2 pid
  [ -f "${pidfile}" ] || return 0
  pid=$(cat "${pidfile}" 2>/dev/null)
  if [ -n "${pid}" ] && alive "${pid}"; then
    kill -TERM "${pid}" 2>/dev/null
    for _ in $(seq 1 75); do
      alive "${pid}" || break
      sleep 0.2
    done
    if alive "${pid}"; then
      log "${name} (pid ${pid}) ignores SIGTERM; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null
      sleep 0.5
    fi
    log "stopped ${name} (pid ${pid})"
  fi
  rm -f "${pidfile}"
}

stop_pidfile slurmd "${STATE}/slurmd.pid"
stop_pidfile slurmctld "${STATE}/slurmctld.pid"
stop_pidfile munged /run/munge/munged.pid
exit 0
