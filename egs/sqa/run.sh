#!/usr/bin/env bash
# Speech quality assessment without reference (QualiSpeech-style): a score and fault intervals.
#   ./run.sh                      # default preset: mini corpus, ~8-14 min on 2 cores (depends on the CPU)
#   ./run.sh --preset ci          # whole recipe in ~2-3 minutes (CI)
#   ./run.sh --stage 5 --stop-stage 7
# Real data: set QUALISPEECH=/path/to/QualiSpeech in db.sh. All options: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
exec ./local/sqa.sh "$@"
