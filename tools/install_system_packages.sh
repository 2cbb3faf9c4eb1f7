#!/usr/bin/env bash
# Debian packages the recipes need. Installs them when running as root and a
# command is missing; otherwise prints the apt-get line to run.
set -euo pipefail
# pocketsphinx-testdata: real human English clips with transcripts (LibriVox, cards),
# used only to evaluate (never to train) and by the Whisper conversion test.
# unicode-cldr-core: CLDR words and phrases of ~700 locales, the text of the offline mini
# corpus of any language a recipe is forked for (pyutils/synth/cldr_text.py).
# gcc + python3-dev: the optional C part of chorus-score track1 (make -C tools native).
# hedgewars-data, openarena-081-players, fillets-ng-data, frozen-bubble-data: recorded nonverbal vocalisations of game
# voices, the NVV sound bank of the mini corpus (make -C tools nvv_bank, pyutils/synth/nvv_bank.py).
# (installed without their Recommends: the games themselves are not needed)
# gcin-voice: recorded Mandarin syllables, the zh voices of the voice bank
# (pyutils/synth/syllable_voice.py; GPL-3/LGPL-3 and CC-BY-3.0, see pyutils/synth/README.md).
pkgs=(espeak-ng sox libsox-fmt-all flite ffmpeg libsndfile1 pocketsphinx-testdata unicode-cldr-core gcc python3-dev
      gcin-voice)
data_pkgs=(hedgewars-data openarena-081-players fillets-ng-data frozen-bubble-data)
declare -A probe=([espeak-ng]=espeak-ng [sox]=sox [flite]=flite [ffmpeg]=ffmpeg [gcc]=gcc)
py_include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || echo /nonexistent)
declare -A probe_file=([pocketsphinx-testdata]=/usr/share/pocketsphinx/test/data/librivox/transcription
                       [unicode-cldr-core]=/usr/share/unicode/cldr/common/supplemental/likelySubtags.xml
                       [python3-dev]="${py_include}/Python.h"
                       [hedgewars-data]=/usr/share/games/hedgewars/Data/Sounds/voices/Default/Laugh.ogg
                       [openarena-081-players]=/usr/share/games/openarena/baseoa/pak2-players.pk3
                       [fillets-ng-data]=/usr/share/games/fillets-ng/sound/viking2/en/dr-7-sm1.ogg
                       [frozen-bubble-data]=/usr/share/games/frozen-bubble/snd/snore.ogg
                       [gcin-voice]=/usr/share/gcin-voice/ogg/ㄅㄚ/3.ogg)
missing=()
for p in "${!probe[@]}"; do command -v "${probe[$p]}" >/dev/null || missing+=("$p"); done
for p in "${!probe_file[@]}"; do [ -f "${probe_file[$p]}" ] || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && { echo "[tools] system packages present"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[tools] installing Debian packages: ${pkgs[*]} ${data_pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${data_pkgs[@]}" >/dev/null
else
  echo "[tools] missing packages: ${missing[*]}. Please run:" >&2
  echo "  sudo apt-get install -y ${pkgs[*]}" >&2
  echo "  sudo apt-get install -y --no-install-recommends ${data_pkgs[*]}" >&2
  exit 1
fi
