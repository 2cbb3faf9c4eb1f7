#!/usr/bin/env bash
# NVV-aware Mandarin ASR (NVVSpeech Challenge Track 1), ESPnet conformer CTC/attention.
# All stages live in local/nvv_asr.sh; this file only sets the Mandarin options.
# Options given on the command line override these (./run.sh --help lists them all).
set -euo pipefail

lang=zh            # text normaliser, scorer language (fork: utils/fork_recipe.sh)
token_type=char    # characters; the 16 tags are non-linguistic symbols (atomic)

exec ./local/nvv_asr.sh \
  --lang "${lang}" \
  --token_type "${token_type}" \
  "$@"
