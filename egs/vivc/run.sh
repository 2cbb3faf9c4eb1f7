#!/usr/bin/env bash
# Vietnamese zero-shot voice conversion (VLSP 2025 VC).
# Default: the kNN conversion (Task 1: frozen Whisper base encoder features match each source
# frame to the reference clip's frames, WORLD synthesis; pyutils/vc/knn.py).
# Baseline: ./run.sh --task 2, the ESPnet cascade ASR(source) -> TTS(text, speaker embedding of
# the reference clip), every model trained here (VLSP Task 2).
# All stages live in local/vc.sh; this file names the task, pairs and configs of this recipe.
# Options given on the command line override these (./run.sh --help lists them all),
# e.g. ./run.sh --preset ci, ./run.sh --stage 6 --pairs my_pairs.tsv.
set -euo pipefail

task=1             # 1: pretrained models allowed (the kNN conversion's Whisper encoder); 2: every model trained here
vc_method=         # empty: knn for --task 1 (without --pretrained_*), cascade for --task 2; or knn | cascade
preset=default     # ci | default | large
test_sets=test     # pairs lists <corpus_dir>/pairs/<name>.tsv to convert
spk_config=        # cascade, empty: conf/train_spk_xvector_<preset>.yaml
asr_config=        # empty: conf/train_asr_vi_<preset>.yaml
tts_config=        # cascade, empty: conf/train_fastspeech_vi_<preset>.yaml

exec ./local/vc.sh \
  --task "${task}" \
  --vc_method "${vc_method}" \
  --preset "${preset}" \
  --test_sets "${test_sets}" \
  --spk_config "${spk_config}" \
  --asr_config "${asr_config}" \
  --tts_config "${tts_config}" \
  "$@"
