#!/usr/bin/env bash
# Vietnamese zero-shot voice conversion (VLSP 2025 VC): ESPnet cascade
# ASR(source) -> TTS(text, speaker embedding of the reference clip).
# All stages live in local/vc.sh; this file only sets the recipe's options.
# Options given on the command line override these (./run.sh --help lists them all).
set -euo pipefail

task=2          # 2: every model trained here (VLSP Task 2); 1: --pretrained_{asr,tts,spk} allowed
preset=default  # ci | default | large

exec ./local/vc.sh \
  --task "${task}" \
  --preset "${preset}" \
  "$@"
