#!/usr/bin/env bash
# Per-stage clock shared by the stage scripts in local/ (nvv_tts.sh sqa.sh vc.sh).
# Source it once the options are parsed:
#
#   . utils/stage_timer.sh "${expdir}/stage_times.tsv"
#   ... stage 3 ...
#   stage_timer "3 tokens"      # one row: the time since the previous call (or the source)
#
# A row holds the stage label, wall seconds, CPU seconds and the 1/5/15-minute load when the
# stage ended:  <label> TAB <wall_s> TAB <cpu_s> TAB <load1 load5 load15>
# CPU seconds are the user+sys time of this shell and of every child it has waited for
# (/proc/<pid>/stat fields 14-17), i.e. every job the stage ran, so a run on a busy machine
# still tells what it costs on an idle one: on 2 idle cores a stage's wall time lies between
# about CPU/2 (both cores busy) and CPU (one). Children still running in the background are
# counted by the stage that waits for them.
# Labels start with the stage number. A run that starts at stage N keeps the rows of the stages
# before N (their outputs were made by the earlier run) and drops the others, so the file always
# describes the outputs now on disk.

_st_file=$1
mkdir -p "$(dirname "${_st_file}")"
_st_keep_before=${stage:-0}
if [ -f "${_st_file}" ] && [ "${_st_keep_before}" -gt 0 ]; then
  awk -F'\t' -v s="${_st_keep_before}" 'NR == 1 || ($1 + 0 < s)' "${_st_file}" > "${_st_file}.tmp"
else
  printf 'stage\twall_s\tcpu_s\tload\n' > "${_st_file}.tmp"
fi
mv "${_st_file}.tmp" "${_st_file}"

_st_cpu_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$$/stat"; }
_st_tck=$(getconf CLK_TCK)
_st_wall=${SECONDS}
_st_cpu=$(_st_cpu_ticks)

stage_timer() {  # $1: stage label ("<n> <name>"); appends its row and logs it
  local c wall cpu load
  c=$(_st_cpu_ticks)
  wall=$((SECONDS - _st_wall))
  cpu=$(awk -v a="${c}" -v b="${_st_cpu}" -v t="${_st_tck}" 'BEGIN {printf "%.0f", (a - b) / t}')
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  printf '%s\t%s\t%s\t%s\n' "$1" "${wall}" "${cpu}" "${load}" >> "${_st_file}"
  echo "$(date '+%Y-%m-%dT%H:%M:%S') timing: stage $1: wall ${wall} s, CPU ${cpu} s, load ${load}"
  _st_wall=${SECONDS}; _st_cpu=${c}
}
