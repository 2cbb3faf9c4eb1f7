#!/usr/bin/env bash
# Kaldi-style option parsing. Source it AFTER the script has set its defaults:
#
#   nj=4            # number of parallel jobs
#   use_gpu=false   # true|false
#   help_message="Usage: $0 [options] <data-dir>"
#   . utils/parse_options.sh
#
# Then `--nj 8`, `--nj=8`, `--use-gpu true` set $nj / $use_gpu. Rules:
#   * --foo-bar VALUE and --foo-bar=VALUE set $foo_bar, but only if foo_bar
#     was already defined (otherwise: "unknown option --foo-bar", exit 1).
#   * an option whose default is true/false only accepts true or false.
#   * --config FILE sources FILE (bash name=value lines) before the other
#     options are applied, so the command line wins over the file.
#   * --help / -h prints $help_message and the options (spelt --foo_bar, the
#     spelling of the docs; --foo-bar is accepted too) with their current
#     values (taken from the NAME=VALUE lines of the sourcing script before
#     the line that sources this file or utils/stage_prelude.sh, or of the
#     options file of a stage script, with their trailing `# comment`; names
#     starting with _ are internal, never listed), then exits 0.
#   * an option the script lists in $_retired_options (lines "name: why it went")
#     is refused with that reason instead of "unknown option".
#   * parsing stops at the first argument that does not start with --
#     (or at a lone `--`); the rest stays in "$@".

# Everything below uses the _po_ prefix so it cannot clash with script options.

_po_print_help() {
  if [ -n "${help_message:-}" ]; then
    printf '%b\n' "${help_message}"
  else
    echo "Usage: $0 [options] ..."
  fi
  local _po_src="${_po_script:-${BASH_SOURCE[2]:-$0}}"   # (utils/stage_prelude.sh names its caller)
  [ -f "${_po_src}" ] || return 0
  local _po_line _po_name _po_comment _po_printed=false
  # Top-level NAME=VALUE lines before the line that sources this file.
  while IFS= read -r _po_line; do
    # (the line that sources this file or the prelude; a comment naming them is no end)
    [[ "${_po_line}" =~ ^[[:space:]]*(\.|source)[[:space:]].*(parse_options|stage_prelude)\.sh ]] && break
    if [[ "${_po_line}" =~ ^([A-Za-z_][A-Za-z0-9_]*)= ]]; then
      _po_name="${BASH_REMATCH[1]}"
      [ "${_po_name}" = help_message ] || [[ "${_po_name}" == _* ]] && continue
      # Only variables that are (still) defined are options.
      [ -z "${!_po_name+x}" ] && continue
      _po_comment=""
      if [[ "${_po_line}" =~ [[:space:]]#[[:space:]]*(.*)$ ]]; then
        _po_comment="${BASH_REMATCH[1]}"
      fi
      if ! ${_po_printed}; then echo; echo "Options (current value):"; _po_printed=true; fi
      printf '  --%-28s %s\n' "${_po_name} \"${!_po_name}\"" "${_po_comment}"
    fi
  done < "${_po_src}"
}

# Pass 1: --config FILE (sourced first so command-line options override it).
_po_args=("$@")
for ((_po_i = 0; _po_i < ${#_po_args[@]}; _po_i++)); do
  _po_a="${_po_args[_po_i]}"
  [ "${_po_a}" = "--" ] && break
  [[ "${_po_a}" == --* ]] || break
  _po_cfg=""
  if [ "${_po_a}" = "--config" ]; then
    _po_cfg="${_po_args[_po_i + 1]:-}"
    _po_i=$((_po_i + 1))
  elif [[ "${_po_a}" == --config=* ]]; then
    _po_cfg="${_po_a#--config=}"
  elif [[ "${_po_a}" != *=* ]]; then
    _po_i=$((_po_i + 1))  # skip the value of --name VALUE
    continue
  else
    continue
  fi
  if [ -z "${_po_cfg}" ] || [ ! -r "${_po_cfg}" ]; then
    echo "$0: cannot read config file '${_po_cfg}' given by --config" >&2
    exit 1
  fi
  # shellcheck disable=SC1090
  . "${_po_cfg}"
  config="${_po_cfg}"
done
unset _po_args _po_i _po_a _po_cfg

# Pass 2: the options themselves.
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h)
      _po_print_help
      exit 0
      ;;
    --)
      shift
      break
      ;;
    --config)
      shift 2 || { echo "$0: option --config needs a value" >&2; exit 1; }
      ;;
    --config=*)
      shift
      ;;
    --?*)
      _po_opt="${1%%=*}"
      _po_name="${_po_opt#--}"
      _po_name="${_po_name//-/_}"
      if [[ ! "${_po_name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        echo "$0: invalid option ${_po_opt}" >&2
        exit 1
      fi
      if [ -z "${!_po_name+x}" ]; then
        _po_why=$(printf '%s\n' "${_retired_options:-}" | sed -n "s/^[[:space:]]*${_po_name}:[[:space:]]*//p" | head -n 1)
        [ -n "${_po_why}" ] && { echo "$0: option ${_po_opt} was removed: ${_po_why}" >&2; exit 1; }
        echo "$0: unknown option ${_po_opt} (try --help)" >&2
        exit 1
      fi
      if [[ "$1" == *=* ]]; then
        _po_val="${1#*=}"
        shift
      else
        if [ $# -lt 2 ]; then
          echo "$0: option ${_po_opt} needs a value" >&2
          exit 1
        fi
        _po_val="$2"
        shift 2
      fi
      _po_old="${!_po_name}"
      if { [ "${_po_old}" = true ] || [ "${_po_old}" = false ]; } \
          && [ "${_po_val}" != true ] && [ "${_po_val}" != false ]; then
        echo "$0: option ${_po_opt} expects true or false, got '${_po_val}'" >&2
        exit 1
      fi
      printf -v "${_po_name}" '%s' "${_po_val}"
      ;;
    *)
      break
      ;;
  esac
done
unset _po_opt _po_name _po_val _po_old _po_why
unset -f _po_print_help
true
