#!/usr/bin/env bash
# Local job backend (Kaldi/ESPnet name kept: espnet2.bin.launch recognises it).
#   utils/run.pl [--max-jobs-run N] [--mem 4G ...] JOB=1:N exp/x/log/foo.JOB.log cmd args...
# Implementation: pyutils/jobs/local.py (run with --help-style errors on bad usage).
_root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
_py="${_root}/tools/venv/bin/python"
[ -x "${_py}" ] || _py="$(command -v python3)"
export PYTHONPATH="${_root}${PYTHONPATH:+:${PYTHONPATH}}"   # this checkout's pyutils first
exec "${_py}" -m pyutils.jobs.local "$@"
