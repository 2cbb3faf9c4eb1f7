#!/usr/bin/env bash
# Forked from nvv_asr_en by utils/fork_recipe.sh (--lang en).
# NVV-aware English ASR (NVVSpeech Challenge Track 1), ESPnet conformer CTC/attention.
# All stages live in local/nvv_asr.sh; this file only sets the English options.
# Options given on the command line override these (./run.sh --help lists them all).
set -euo pipefail

lang=en            # text normaliser: pyutils/asr/text_norm.py (FORK HOOK)
token_type=bpe

./local/nvv_asr.sh \
  --lang "${lang}" \
  --token_type "${token_type}" \
  --nbpe 150 \
  "$@"
