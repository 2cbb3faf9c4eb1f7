#!/usr/bin/env bash
# Kaldi-named wrapper: `chorus-datadir validate` (pyutils/datadir). Run with --help for usage.
_root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
_py="${_root}/tools/venv/bin/python"
if [ ! -x "${_py}" ]; then
  _py="$(command -v python3)"
  export PYTHONPATH="${_root}${PYTHONPATH:+:${PYTHONPATH}}"
fi
exec "${_py}" -m pyutils.datadir.cli validate "$@"
