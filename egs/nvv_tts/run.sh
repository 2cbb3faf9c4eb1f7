#!/usr/bin/env bash
# NVV-controllable TTS (NVVSpeech Challenge Track 2): tagged text -> speech.
# Defaults: mini English corpus, tiny FastSpeech + WORLD vocoder (see README.md
# for why), ~20 min on 2 CPU cores. All options: ./run.sh --help
set -euo pipefail
cd "$(dirname "$0")"
exec ./local/nvv_tts.sh "$@"
