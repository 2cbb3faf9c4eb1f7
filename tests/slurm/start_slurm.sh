#!/usr/bin/env bash
# Bring up a real single-node Slurm (slurmctld + slurmd + munged) on this
# machine, for tests/test_jobs_slurm.py and CI. Idempotent: if our cluster is
# already up and the node is idle, it does nothing. Needs root (writes
# /etc/slurm/slurm.conf). No systemd needed: the daemons are started directly.
#
#   sudo tests/slurm/start_slurm.sh      # then: CHORUS_TEST_SLURM=1 pytest tests/test_jobs_slurm.py
#   sudo tests/slurm/stop_slurm.sh
#
# The node gets the CPUs/memory that `slurmd -C` reports and is in two
# partitions, `cpu` (default) and `gpu` (no GRES: enough for option-mapping
# tests, which never request GPUs). State, pid and log files live in
# $CHORUS_SLURM_DIR (default /var/spool/chorus-slurm).
set -euo pipefail

STATE=${CHORUS_SLURM_DIR:-/var/spool/chorus-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# chorus-test-slurm"
HOST=$(hostname -s)

log() { echo "start_slurm.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (it writes ${CONF} and starts daemons)"

node_state() { sinfo -h -n "${HOST}" -o %T 2>/dev/null | head -n1; }

# --- 0. already up? ------------------------------------------------------
if [ -f "${CONF}" ] && grep -q "^${MARK}" "${CONF}" && [ "$(node_state)" = idle ]; then
  log "Slurm already running, node ${HOST} idle"
  exit 0
fi

# --- 1. packages ---------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y slurmctld slurmd slurm-client munge >&2 \
    || { apt-get update >&2 && apt-get install -y slurmctld slurmd slurm-client munge >&2; }
fi

# Leftovers of an earlier, half-started cluster.
"$(dirname "$0")/stop_slurm.sh" >/dev/null 2>&1 || true

# --- 2. munge ------------------------------------------------------------
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating /etc/munge/munge.key"
  if command -v mungekey >/dev/null; then
    mungekey --create --force --keyfile=/etc/munge/munge.key
  else
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
  fi
fi
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  rm -f /run/munge/munged.pid
  if command -v runuser >/dev/null; then
    runuser -u munge -- /usr/sbin/munged
  else
    su -s /bin/sh munge -c /usr/sbin/munged
  fi
  for _ in $(seq 1 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.2
  done
  munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
fi

# --- 3. slurm.conf -------------------------------------------------------
mkdir -p "${STATE}/ctld" "${STATE}/d" /etc/slurm
# `slurmd -C` prints e.g. "NodeName=vm CPUs=2 Boards=1 ... RealMemory=7937"
hw=$(slurmd -C | head -n1 | sed -e 's/^NodeName=[^ ]* *//')
[ -n "${hw}" ] || die "slurmd -C printed nothing"
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"${hw}")
realmem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"${hw}")
# Jobs without --mem get an equal share per CPU (not the whole node, which
# would serialise every array).
defmem=$(( ${realmem:-1024} / ${cpus:-1} ))
if [ -f "${CONF}" ] && ! grep -q "^${MARK}" "${CONF}"; then
  log "keeping the existing ${CONF} as ${CONF}.orig-chorus"
  mv "${CONF}" "${CONF}.orig-chorus"
fi
tmp=$(mktemp "${CONF}.XXXXXX")
cat > "${tmp}" <<EOF
${MARK}: single-node test cluster written by tests/slurm/start_slurm.sh
ClusterName=chorus
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=${STATE}/ctld
SlurmdSpoolDir=${STATE}/d
SlurmctldPidFile=${STATE}/slurmctld.pid
SlurmdPidFile=${STATE}/slurmd.pid
SlurmctldLogFile=${STATE}/slurmctld.log
SlurmdLogFile=${STATE}/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=${defmem}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
DependencyParameters=kill_invalid_depend
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=300
MinJobAge=300
NodeName=${HOST} NodeAddr=127.0.0.1 ${hw} State=UNKNOWN
PartitionName=cpu Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=${HOST} MaxTime=INFINITE State=UP
EOF
chmod 0644 "${tmp}"
mv "${tmp}" "${CONF}"

# --- 4. daemons ----------------------------------------------------------
slurmctld -c -i   # clean state; daemonizes
for _ in $(seq 1 50); do
  scontrol ping 2>/dev/null | grep -q UP && break
  sleep 0.2
done
scontrol ping | grep -q UP || die "slurmctld did not come up; see ${STATE}/slurmctld.log"
slurmd -N "${HOST}"   # daemonizes

# --- 5. wait for the node ------------------------------------------------
state=""
for i in $(seq 1 120); do
  state=$(node_state)
  case "${state}" in
    idle) break ;;
    down*|drain*|fail*)
      scontrol update NodeName="${HOST}" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  sleep 0.5
done
[ "${state}" = idle ] || die "node ${HOST} is '${state}', not idle after 60 s; see ${STATE}/slurmd.log"
log "Slurm up: node ${HOST} idle, partitions: $(sinfo -h -o %P | tr '\n' ' ')"
