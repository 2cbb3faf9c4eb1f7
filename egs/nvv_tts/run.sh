#!/usr/bin/env bash
# NVV-controllable TTS (NVVSpeech Challenge Track 2): tagged text -> speech.
# All stages live in local/nvv_tts.sh; this file names the language, sets and config of this
# recipe. Defaults: mini English corpus, tiny FastSpeech + WORLD vocoder (see README.md for
# why), ~20 min on 2 CPU cores. Options given on the command line override these
# (./run.sh --help lists them all), e.g. ./run.sh --preset ci, ./run.sh --lang zh.
set -euo pipefail
cd "$(dirname "$0")"

lang=en            # en | zh | vi: the text front-end (one language per run)
train_set=         # empty: train_<lang> (train_<lang>_<preset> for ci and large)
valid_set=         # empty: dev_<lang>[_<preset>]
test_sets=         # empty: test_<lang>[_<preset>]
tts_config=        # empty: conf/train_fastspeech_world_<preset>.yaml (ci, default);
                   #   --preset large: conf/tuning/train_vits.yaml

exec ./local/nvv_tts.sh \
  --lang "${lang}" \
  --train_set "${train_set}" \
  --valid_set "${valid_set}" \
  --test_sets "${test_sets}" \
  --tts_config "${tts_config}" \
  "$@"
