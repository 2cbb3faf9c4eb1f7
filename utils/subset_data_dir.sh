#!/usr/bin/env bash
# Kaldi-named wrapper: `chorus-datadir subset` (pyutils/datadir). Run with --help for usage.
_root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
_py="${_root}/tools/venv/bin/python"
[ -x "${_py}" ] || _py="$(command -v python3)"
export PYTHONPATH="${_root}${PYTHONPATH:+:${PYTHONPATH}}"   # this checkout's pyutils first
exec "${_py}" -m pyutils.datadir.cli subset "$@"
