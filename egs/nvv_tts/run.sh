#!/usr/bin/env bash
# NVV-controllable TTS (NVVSpeech Challenge Track 2): tagged text -> speech.
# All stages live in local/nvv_tts.sh; this file names the language, sets and config of this
# recipe. Defaults: mini English corpus; en and zh: the cascade of pretrained parts (a voice-bank
# voice warped to the target speaker, recorded NVVs; nothing trained), other languages: a tiny
# FastSpeech + WORLD vocoder trained here (--tts_method espnet; README.md says why each). Options
# given on the command line override these
# (./run.sh --help lists them all), e.g. ./run.sh --preset ci, ./run.sh --lang zh.
set -euo pipefail
cd "$(dirname "$0")"

lang=en            # en | zh | vi: the text front-end (one language per run)
tts_method=auto    # auto: cascade for en and zh, espnet otherwise | cascade | espnet (FastSpeech + WORLD)
tts_warp=true      # cascade: the bank voice warped to each target speaker's median F0 (fitted in stage 5)
tts_convert=false  # cascade: convert the speech to the target speaker by kNN-VC (WORLD costs judge WER
                   #   and MOS: RESULTS.md, variants)
train_set=         # empty: train_<lang> (train_<lang>_<preset> for ci and large)
valid_set=         # empty: dev_<lang>[_<preset>]
test_sets=         # empty: test_<lang>[_<preset>]
tts_config=        # empty: conf/train_fastspeech_world_<preset>.yaml (ci, default);
                   #   --preset large: conf/tuning/train_vits.yaml

exec ./local/nvv_tts.sh \
  --lang "${lang}" \
  --tts_method "${tts_method}" \
  --tts_warp "${tts_warp}" \
  --tts_convert "${tts_convert}" \
  --train_set "${train_set}" \
  --valid_set "${valid_set}" \
  --test_sets "${test_sets}" \
  --tts_config "${tts_config}" \
  "$@"
