#!/usr/bin/env bash
# NVV-aware English ASR (NVVSpeech Challenge Track 1), ESPnet conformer CTC/attention.
# All stages live in local/nvv_asr.sh; this file only sets the English options.
# Options given on the command line override these (./run.sh --help lists them all).
set -euo pipefail

lang=en            # text normaliser, scorer language (fork: utils/fork_recipe.sh)
token_type=bpe     # sentencepiece BPE, the 16 tags as user-defined symbols
nbpe=300           # ~ whole words of the mini corpus (246 word types + tags); use 500-5000 on real data

exec ./local/nvv_asr.sh \
  --lang "${lang}" \
  --token_type "${token_type}" \
  --nbpe "${nbpe}" \
  "$@"
