#!/usr/bin/env bash
# Speech quality assessment without reference (QualiSpeech-style): a score and fault intervals.
# All stages live in local/sqa.sh; this file names the sets and config of this recipe.
#   ./run.sh                      # default preset: mini corpus, ~8-14 min on 2 cores (depends on the CPU)
#   ./run.sh --preset ci          # whole recipe in ~2-3 minutes (CI)
#   ./run.sh --stage 5 --stop_stage 7
# Real data: QUALISPEECH=/path/to/QualiSpeech in db.sh, then ./run.sh --corpus qualispeech. All options: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"

train_set=train                # data/<set> made by stage 1 from the mini corpus (or QualiSpeech)
valid_set=dev                  # early stopping, post-processing thresholds
test_sets="test test_real"     # test_real: real talkers (dropped where the corpus has none)
sqa_config=                    # empty: conf/train_sqa_<preset>.yaml (ci | default | large)

exec ./local/sqa.sh \
  --train_set "${train_set}" \
  --valid_set "${valid_set}" \
  --test_sets "${test_sets}" \
  --sqa_config "${sqa_config}" \
  "$@"
