#!/usr/bin/env bash
# Shared prelude of the stage scripts in local/ (nvv_asr.sh nvv_tts.sh sqa.sh vc.sh).
# Source it once the options are parsed, with the experiment dir of the run:
#
#   . utils/parse_options.sh
#   . utils/stage_prelude.sh "${expdir}"
#
# 1. Stage range: --stage and --stop-stage must be whole numbers in 0..${max_stage:-8}
#    with stage <= stop_stage; anything else is an error (exit 2), never a silent no-op.
#    --nj (and --inference_nj where the script has it) must be whole numbers >= 1 (or auto).
# 2. One run per exp dir: an flock on <expdir>/.run.lock, held for the whole run and
#    inherited by everything it starts. A second run in the same exp dir is refused
#    (exit 1) while the first is alive. If the first was killed (kill -9) but some of
#    its processes are still going, they are killed before this run starts
#    (pyutils.jobs.guard reclaim), so a rerun never works beside an orphan.
#    A stage script called by another one (vc.sh -> nvv_asr.sh) with the same exp dir
#    shares its caller's lock (CHORUS_HELD_LOCKS).

_sp_fail() { echo "$0: $*" >&2; exit 2; }
_sp_max=${max_stage:-8}
for _sp_name in stage stop_stage; do
  _sp_val=${!_sp_name}
  [[ "${_sp_val}" =~ ^[0-9]+$ ]] \
    || _sp_fail "--${_sp_name//_/-} '${_sp_val}' is not a stage number (0..${_sp_max})"
  _sp_val=$((10#${_sp_val}))
  [ "${_sp_val}" -le "${_sp_max}" ] \
    || _sp_fail "--${_sp_name//_/-} ${_sp_val} is out of range: stages are 0..${_sp_max}"
  printf -v "${_sp_name}" '%s' "${_sp_val}"
done
[ "${stage}" -le "${stop_stage}" ] \
  || _sp_fail "--stage ${stage} is after --stop-stage ${stop_stage}: nothing would run"
# Job counts: a whole number >= 1 (nj may also be "auto"; inference_nj may be empty)
for _sp_name in nj inference_nj; do
  _sp_val=${!_sp_name-}
  case "${_sp_name}:${_sp_val}" in nj:auto|inference_nj:) continue ;; esac
  [ -z "${!_sp_name+x}" ] && continue   # the script has no such option
  [[ "${_sp_val}" =~ ^[0-9]+$ ]] && [ "$((10#${_sp_val}))" -ge 1 ] \
    || _sp_fail "--${_sp_name} '${_sp_val}' must be a whole number >= 1"
done

if [ -n "${1:-}" ]; then
  mkdir -p "$1"
  _sp_lock="$(cd "$1" && pwd -P)/.run.lock"
  case ":${CHORUS_HELD_LOCKS:-}:" in
    *":${_sp_lock}:"*) ;;  # our caller holds it
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
