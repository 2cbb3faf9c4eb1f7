#!/usr/bin/env bash
# Shared prelude of the stage scripts in local/ (nvv_asr.sh nvv_tts.sh sqa.sh vc.sh): the one
# place that owns their shell plumbing. A stage script sources its options file, then hands
# everything else to this file:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/<script>_options.sh"   # NAME=DEFAULT  # doc, help_message,
#                                             # check_options() (exit 2 naming the option) and the
#                                             # settings derived from the options (derive_settings)
#   . utils/stage_prelude.sh --parse "$@"     # calls check_options after parsing, before the lock
#   if in_stage 0 corpus; then ... fi         # every stage gate
#
#    An options file sets _sp_options=${BASH_SOURCE[0]}: --help lists the options declared there
#    (without it, those of the script before the line that sources this file).
# 0. --parse: the options (utils/parse_options.sh: --name value, --name=value, --config FILE;
#    --help prints help_message and the options with their docs), any other argument refused
#    (exit 2), then the recipe's ./path.sh, ./cmd.sh and ./db.sh (in that order: a recipe dir is
#    the working dir), then --preset checked (ci|default|large; exit 2), then the script's
#    check_options when it has one, then 1-7 below with ${expdir}. Helpers for the stages: in_stage N NAME (6), min, nlines, kill_tree (8);
#    for check_options: check_choice, check_match, option_error, corpus_path (below).
#    (Without --parse: `. utils/stage_prelude.sh EXPDIR` after parse_options.sh, 1-8 only.)
# 1. Stage range: --stage and --stop_stage (or --stop-stage) must be whole numbers in 0..${max_stage:-8}
#    with stage <= stop_stage; anything else is an error (exit 2), never a silent no-op.
#    --nj (and --inference_nj where the script has it) must be whole numbers >= 1 (or auto).
# 2. One run per exp dir: an flock on <expdir>/.run.lock, held for the whole run and
#    inherited by everything it starts. A second run in the same exp dir is refused
#    (exit 1) while the first is alive. If the first was killed (kill -9) but some of
#    its processes are still going, they are killed before this run starts
#    (pyutils.jobs.guard reclaim), so a rerun never works beside an orphan.
#    A stage script called by another one (vc.sh -> nvv_asr.sh) with the same exp dir
#    shares its caller's lock (CHORUS_HELD_LOCKS): it is "nested" (_sp_nested=true).
# 3./4. Verified stage markers (stage_done/stage_mark, chain_done/chain_mark), below.
# 5. log MESSAGE: "<time> (<script>:<line>:<function>) MESSAGE" on stdout (ESPnet's log()).
# 6. Stages and their clock:
#      stage_begin N NAME      # stage N starts (the open one ends): named by the failure line, clock reset
#      ... the stage ...
#      stage_end               # (no-op unless a stage is open) appends "N NAME<TAB>wall_s<TAB>cpu_s<TAB>load" to <expdir>/stage_times.tsv
#    One timing file per exp dir, written only by the run that holds the lock (a nested stage
#    script's time is part of its caller's stage). CPU seconds are the user+sys time of this
#    shell and of every child it has waited for (/proc/<pid>/stat fields 14-17), so a run on a
#    busy machine still tells what it costs on an idle one: on 2 idle cores a stage's wall time
#    lies between about CPU/2 (both cores busy) and CPU (one). A run that starts at stage N
#    keeps the rows of the stages before N (their outputs were made by an earlier run) and
#    drops the others, so the file always describes the outputs now on disk.
#    pyutils.jobs.stage_times reads it (the reports' "Time per stage" table).
# 7. Failures: an ERR trap (set -E: also inside functions) prints, once, on stderr
#      <time> stage N failed at <script>:<line>: <command> (exit S)
#      <time> stage N: read <the failing job's log> (the job ended with code C)
#    The log is the one the job backend (utils/run.pl, utils/slurm.pl) names when a job of
#    this stage fails (it writes it to $CHORUS_FAILED_LOG); a step that is no backend job has
#    its output on the console just above. The script then exits with the job's own status C
#    (the backends report 1 for any failure; a step refusing bad input exits 2, and so does
#    the stage script), or with the failed command's status.
# Every Python step of a stage therefore runs through a job backend, with its log:
#      ${train_cmd} <exp>/log/<step>.log python -m ...
#    (corpus generation and preparation, chorus-synth/chorus-prep, which hand out their own
#    jobs with --cmd "${train_cmd}", run through utils/run.pl: on the machine that drives the
#    recipe, as Kaldi's local/data.sh does).

# Option checks (for a script's check_options): a bad value is refused with "$0: ..." on
# stderr and exit 2, before any lock is taken or file touched.
#   check_choice NAME VALUE...    $NAME is one of the VALUEs   (--NAME must be a, b or c, got 'x')
#   check_match NAME REGEX WHAT   $NAME matches the extended REGEX   (--NAME must be WHAT, got 'x')
#   option_error MESSAGE          any other refusal (options that do not go together, ...)
#   corpus_path NAME              (below) also checks the db.sh path of a real corpus
option_error() { echo "$0: $*" >&2; exit 2; }
check_choice() {
  local name=$1 v list i; shift
  for v in "$@"; do [ "${!name}" != "${v}" ] || return 0; done
  list=$1
  for ((i = 2; i < $#; i++)); do list+=", ${!i}"; done
  [ $# -lt 2 ] || list+=" or ${!#}"
  option_error "--${name} must be ${list}, got '${!name}'"
}
check_match() { [[ "${!1}" =~ $2 ]] || option_error "--$1 must be $3, got '${!1}'"; }
corpus_path() {  # corpus_path NAME: the dir db.sh gives --corpus NAME (variable NAME in capitals), checked
  local var; var=$(echo "$1" | tr '[:lower:]' '[:upper:]')
  [ -n "${!var:-}" ] || { echo "$0: --corpus $1 needs ${var}=<dir> in db.sh" >&2; exit 2; }
  [ -d "${!var}" ] || { echo "$0: ${var}=${!var} (db.sh, --corpus $1) is not a directory" >&2; exit 2; }
  echo "${!var}"
}
if [ "${1:-}" = --parse ]; then
  shift
  _po_script=${_sp_options:-${BASH_SOURCE[1]}}   # the options whose docs --help prints
  . "$(dirname "${BASH_SOURCE[0]}")/parse_options.sh"
  unset _po_script
  if [ $# -ne 0 ]; then
    printf '%b\n' "${help_message:-}" >&2
    echo "$0: unexpected argument(s): $*  (options are --name value; see --help)" >&2
    exit 2
  fi
  for _sp_f in path.sh cmd.sh db.sh; do
    [ -f "${_sp_f}" ] || { echo "$0: ./${_sp_f} not found: run this from a recipe dir (egs/<recipe>) through its run.sh" >&2; exit 1; }
  done
  . ./path.sh
  . ./cmd.sh
  . ./db.sh   # the paths of real corpora: read only where --corpus names one
  case "${preset-default}" in ci|default|large) ;;
    *) echo "$0: unknown --preset '${preset}' (use ci, default or large)" >&2; exit 2 ;;
  esac
  # the script's own option checks (a function it defines before this line): a bad option is
  # refused before any lock is taken or file touched
  if declare -F check_options > /dev/null; then check_options; fi
  SECONDS=0
  set -- "${expdir:?a stage script has an --expdir option}"
  unset _sp_f
fi

_sp_fail() { echo "$0: $*" >&2; exit 2; }
_sp_max=${max_stage:-8}
for _sp_name in stage stop_stage; do
  _sp_val=${!_sp_name}
  [[ "${_sp_val}" =~ ^[0-9]+$ ]] \
    || _sp_fail "--${_sp_name} '${_sp_val}' is not a stage number (0..${_sp_max})"
  _sp_val=$((10#${_sp_val}))
  [ "${_sp_val}" -le "${_sp_max}" ] \
    || _sp_fail "--${_sp_name} ${_sp_val} is out of range: stages are 0..${_sp_max}"
  printf -v "${_sp_name}" '%s' "${_sp_val}"
done
[ "${stage}" -le "${stop_stage}" ] \
  || _sp_fail "--stage ${stage} is after --stop_stage ${stop_stage}: nothing would run"
# Job counts: a whole number >= 1 (nj may also be "auto"; inference_nj may be empty)
for _sp_name in nj inference_nj; do
  _sp_val=${!_sp_name-}
  case "${_sp_name}:${_sp_val}" in nj:auto|inference_nj:) continue ;; esac
  [ -z "${!_sp_name+x}" ] && continue   # the script has no such option
  [[ "${_sp_val}" =~ ^[0-9]+$ ]] && [ "$((10#${_sp_val}))" -ge 1 ] \
    || _sp_fail "--${_sp_name} '${_sp_val}' must be a whole number >= 1"
done

# nj auto: the number of cores (path.sh's OMP_NUM_THREADS=1 is not the machine's), at most 8
if [ "${nj-}" = auto ]; then
  nj=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
  [ "${nj}" -le 8 ] || nj=8
fi

_sp_nested=false
_sp_expdir=${1:-}
if [ -n "${1:-}" ]; then
  mkdir -p "$1"
  _sp_lock="$(cd "$1" && pwd -P)/.run.lock"
  case ":${CHORUS_HELD_LOCKS:-}:" in
    *":${_sp_lock}:"*) _sp_nested=true ;;  # our caller holds it
    *)
      exec {_sp_fd}>>"${_sp_lock}"
      if ! flock -n "${_sp_fd}"; then
        _sp_root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
        _sp_py="${_sp_root}/tools/venv/bin/python"
        [ -x "${_sp_py}" ] || _sp_py=python3
        # exit 1 with a message if the owner is alive; else kill its orphans
        CHORUS_PROG="$0" PYTHONPATH="${_sp_root}${PYTHONPATH:+:${PYTHONPATH}}" \
          "${_sp_py}" -m pyutils.jobs.guard reclaim "${_sp_lock}" || exit 1
        flock -w 5 "${_sp_fd}" || { echo "$0: ${_sp_lock} is held by another run; refusing to start" >&2; exit 1; }
      fi
      # owner line read by pyutils.jobs.guard: pid, kernel start time (pid reuse), what
      _sp_stat=$(< "/proc/$$/stat"); _sp_stat=${_sp_stat##*) }
      read -r -a _sp_fields <<< "${_sp_stat}"
      printf 'owner %s %s %s\n' "$$" "${_sp_fields[19]:-?}" "$0 (in $(pwd))" > "${_sp_lock}"
      export CHORUS_HELD_LOCKS="${CHORUS_HELD_LOCKS:+${CHORUS_HELD_LOCKS}:}${_sp_lock}"
      ;;
  esac
fi
unset _sp_name _sp_val _sp_max _sp_stat _sp_fields _sp_root _sp_py
unset -f _sp_fail

# 3. Verified stage markers (pyutils.jobs.stage_marker: the output files with sizes and
#    SHA-256), the one implementation behind every stage script's "already done" test:
#      if stage_done MARKER [--sig S] [--adopt (FILE | --dir DIR)...]; then skip; fi
#      ... run the stage ...
#      stage_mark MARKER [--sig S] (FILE | --dir DIR)...
#    stage_done fails (and says why, when a marker was there) if an output is missing,
#    changed, or was made from other inputs/settings (--sig): the stage is then redone.
#    --adopt: an old empty marker whose outputs exist is upgraded instead of redone.
_chorus_root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
_chorus_marker() {
  local py="${_chorus_root}/tools/venv/bin/python"
  [ -x "${py}" ] || py=python3
  PYTHONPATH="${_chorus_root}${PYTHONPATH:+:${PYTHONPATH}}" "${py}" -m pyutils.jobs.stage_marker "$@"
}
stage_done() {
  local why
  if why=$(_chorus_marker check "$@"); then
    [ -n "${why}" ] && echo "$(basename "$0"): ${why}" >&2
    return 0
  fi
  [ -e "$1" ] && echo "$(basename "$0"): ${why}: doing that step again" >&2
  return 1
}
stage_mark() { _chorus_marker write "$@"; }

# 4. Markers that depend on other markers (local/nvv_tts.sh):
#      if chain_done MARKER [--after EARLIER_MARKER]... [SETTING]...; then skip; else
#        ... run the step ...
#        chain_mark MARKER (FILE | --dir DIR)...
#      fi
#    chain_done is stage_done with --sig = the SETTINGs plus the checksums of the EARLIER
#    markers (which list their outputs' checksums): a step is redone when its own outputs
#    are missing or damaged, when its settings changed, or when a step it reads from was
#    redone with other outputs. When it is to run, its old marker is removed first (a kill
#    mid-step leaves none) and chain_stale tells whether there was one (the step had
#    finished before).
declare -A _chain_sigs=()
chain_stale=false
chain_done() {
  local marker=$1 m; shift
  local -a settings=() after=()
  while [ $# -gt 0 ]; do
    if [ "$1" = --after ]; then after+=("$2"); shift 2; else settings+=("$1"); shift; fi
  done
  _chain_sigs[${marker}]=$( { printf '%s\n' "${settings[@]}"
    for m in "${after[@]}"; do if [ -f "${m}" ]; then md5sum < "${m}"; else echo none; fi; done; } | md5sum | cut -d' ' -f1)
  if stage_done "${marker}" --sig "${_chain_sigs[${marker}]}"; then
    echo "$(basename "$0"): done, skipping (${marker} vouches for its outputs)" >&2
    return 0
  fi
  chain_stale=false
  if [ -e "${marker}" ]; then chain_stale=true; rm -f "${marker}"; fi
  return 1
}
chain_mark() { stage_mark "$1" --sig "${_chain_sigs[$1]:?chain_mark $1 without chain_done}" "${@:2}"; }

# 5. Logging (ESPnet's log(): time, file:line:function of the caller)
log() {
  local fname=${BASH_SOURCE[1]##*/}
  echo -e "$(date '+%Y-%m-%dT%H:%M:%S') (${fname}:${BASH_LINENO[0]}:${FUNCNAME[1]}) $*"
}

# 6. Stages and their clock (one <expdir>/stage_times.tsv)
_sp_stage=""; _sp_stage_name=""; _sp_stage_t0=$(date +%s)
_sp_times=""
[ -z "${_sp_expdir}" ] || ${_sp_nested} || _sp_times=${_sp_expdir}/stage_times.tsv
_sp_times_fresh=false
_sp_times_start() {  # at the first stage_begin (a run refused by its option checks leaves the file alone)
  ${_sp_times_fresh} && return 0
  _sp_times_fresh=true
  [ -n "${_sp_times}" ] || return 0
  if [ -f "${_sp_times}" ] && [ "${stage}" -gt 0 ]; then
    awk -F'\t' -v s="${stage}" 'NR == 1 || ($1 + 0 < s)' "${_sp_times}" > "${_sp_times}.tmp"
  else
    printf 'stage\twall_s\tcpu_s\tload\n' > "${_sp_times}.tmp"
  fi
  mv "${_sp_times}.tmp" "${_sp_times}"
}
_sp_cpu_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$$/stat"; }
_sp_tck=$(getconf CLK_TCK)
_sp_wall=${SECONDS}
_sp_cpu=$(_sp_cpu_ticks)
_sp_open=false
stage_begin() {  # stage_begin N NAME (ends the stage still open, if any)
  stage_end > /dev/null
  _sp_times_start
  _sp_stage=$1; _sp_stage_name=${2:-}; _sp_open=true
  _sp_stage_t0=$(date +%s)
  _sp_wall=${SECONDS}; _sp_cpu=$(_sp_cpu_ticks)
  [ -z "${CHORUS_FAILED_LOG:-}" ] || rm -f "${CHORUS_FAILED_LOG}"   # a log of an earlier stage is not this one's
}
stage_end() {  # the time row of the stage begun last (kept only by a run that holds the lock)
  local c wall cpu load
  ${_sp_open} || return 0   # no stage begun since the last stage_end
  _sp_open=false
  c=$(_sp_cpu_ticks)
  wall=$((SECONDS - _sp_wall))
  cpu=$(awk -v a="${c}" -v b="${_sp_cpu}" -v t="${_sp_tck}" 'BEGIN {printf "%.0f", (a - b) / t}')
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  if [ -n "${_sp_times}" ]; then
    printf '%s\t%s\t%s\t%s\n' "${_sp_stage}${_sp_stage_name:+ ${_sp_stage_name}}" "${wall}" "${cpu}" "${load}" >> "${_sp_times}"
  fi
  echo "$(date '+%Y-%m-%dT%H:%M:%S') timing: stage ${_sp_stage}${_sp_stage_name:+ ${_sp_stage_name}}: wall ${wall} s, CPU ${cpu} s, load ${load}"
  _sp_wall=${SECONDS}; _sp_cpu=${c}
}
in_stage() {  # in_stage N NAME: true, with stage N begun, when this run covers stage N
  [ "${stage}" -le "$1" ] && [ "${stop_stage}" -ge "$1" ] || return 1
  stage_begin "$1" "${2:-}"
}

# 7. The failure line (ERR trap). The job backends write the failing job's log to
#    $CHORUS_FAILED_LOG (pyutils.jobs.common.failure_report); a nested stage script keeps
#    its caller's file, so the caller names the same log.
if [ -z "${CHORUS_FAILED_LOG:-}" ] && [ -n "${_sp_expdir}" ]; then
  mkdir -p "${_sp_expdir}/log"
  CHORUS_FAILED_LOG="$(cd "${_sp_expdir}/log" && pwd -P)/.failed_job_log"
  export CHORUS_FAILED_LOG
fi
_sp_err_reported=false
exec {_sp_stderr}>&2   # the failure lines reach the console even from a step whose output goes to a log
# _sp_src_cmd FILE LINE: the command written at FILE:LINE (with its continuation lines)
_sp_src_cmd() {
  awk -v n="$2" 'NR >= n { sub(/^[ \t]+/, ""); c = c (c == "" ? "" : " ") $0
                  if (!sub(/[ \t]*\\$/, "", c)) { print c; exit } }' "$1" 2>/dev/null | cut -c1-400
}
_sp_on_err() {  # $1 exit status, $2 line, $3 command (as written in the script)
  [ "${BASH_SUBSHELL}" -eq 0 ] || return 0    # reported by the shell that runs the script
  ${_sp_err_reported} && return 0
  _sp_err_reported=true
  local what="stage ${_sp_stage:-?}" logf="" code="" now file=${BASH_SOURCE[1]} line=$2 cmd=$3
  [ -n "${_sp_stage}" ] || what="set-up (before stage ${stage})"
  # a function that returned its command's status (return ${rc}), or a wrapper that runs its
  # arguments ("$@"): the command is the one written where that function was called
  # (a failed `return` is reported in its caller's frame, at the call)
  if [[ "${cmd}" == '"$@"'* ]] && [ -n "${BASH_SOURCE[2]:-}" ]; then
    file=${BASH_SOURCE[2]}; line=${BASH_LINENO[1]}; cmd=$(_sp_src_cmd "${file}" "${line}")
  elif [[ "${cmd}" == return* || "${cmd}" == tee\ * ]]; then   # (tee: the pipeline as written)
    cmd=$(_sp_src_cmd "${file}" "${line}")
  fi
  now=$(date '+%Y-%m-%dT%H:%M:%S')
  echo "${now} ${what} failed at ${file##*/}:${line}: ${cmd} (exit $1)" >&"${_sp_stderr}"
  if [ -n "${CHORUS_FAILED_LOG:-}" ] && [ -s "${CHORUS_FAILED_LOG}" ] \
     && [ "$(stat -c %Y "${CHORUS_FAILED_LOG}")" -ge "${_sp_stage_t0}" ]; then
    logf=$(< "${CHORUS_FAILED_LOG}")
    # the job's own exit status (the backends say 1 for any failure): a step that refuses its
    # input with 2 makes the stage script exit 2 too, as if it had run without a backend
    code=$(sed -n 's/^# Ended (code \([0-9][0-9]*\)).*/\1/p' "${logf}" 2>/dev/null | tail -n 1)
    echo "${now} ${what}: read ${logf}${code:+ (the job ended with code ${code})}" >&"${_sp_stderr}"
    [ -z "${step_log:-}" ] || echo "${now} ${what}: (the step's own output: ${step_log})" >&"${_sp_stderr}"
    if [ -n "${code}" ] && [ "${code}" -ne 0 ]; then exit "${code}"; fi
  elif [ -n "${step_log:-}" ]; then
    echo "${now} ${what}: read ${step_log}" >&"${_sp_stderr}"
  else
    echo "${now} ${what}: no job log: the command's own output is above" >&"${_sp_stderr}"
  fi
}
set -E
trap '_sp_on_err "$?" "${LINENO}" "${BASH_COMMAND}"' ERR

# 8. Helpers of the stages.
#      logged LOG CMD...   CMD's output goes to LOG (a nested stage script, a function running
#                          several steps); if it fails, the failure line names CMD and LOG
#      min A B...          the smallest of whole numbers
#      nlines FILE         lines of FILE (0 when it does not exist)
#      corpus_path NAME    the dir of real corpus NAME in db.sh (--corpus NAME; NAME in capitals there)
#      kill_tree PID       end a background job and everything it started (ours, by id)
logged() {
  local _lg=$1; shift
  mkdir -p "$(dirname "${_lg}")"
  step_log=${_lg}
  "$@" > "${_lg}" 2>&1
  step_log=
}
min() { local a=$1 b; shift; for b in "$@"; do [ "$b" -lt "$a" ] && a=$b; done; echo "$a"; }
nlines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
kill_tree() {
  local pid=$1 child
  for child in $(ps -o pid= --ppid "${pid}" 2>/dev/null); do kill_tree "${child}"; done
  kill "${pid}" 2>/dev/null || true
}
