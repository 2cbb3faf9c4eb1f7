#!/usr/bin/env bash
# Debian packages the recipes need. Installs them when running as root and a
# command is missing; otherwise prints the apt-get line to run.
set -euo pipefail
# pocketsphinx-testdata: real human English clips with transcripts (LibriVox, cards),
# used only to evaluate (never to train) and by the Whisper conversion test.
pkgs=(espeak-ng sox libsox-fmt-all flite ffmpeg libsndfile1 pocketsphinx-testdata)
declare -A probe=([espeak-ng]=espeak-ng [sox]=sox [flite]=flite [ffmpeg]=ffmpeg)
missing=()
for p in "${!probe[@]}"; do command -v "${probe[$p]}" >/dev/null || missing+=("$p"); done
[ -f /usr/share/pocketsphinx/test/data/librivox/transcription ] || missing+=(pocketsphinx-testdata)
[ ${#missing[@]} -eq 0 ] && { echo "[tools] system packages present"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[tools] installing Debian packages: ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
else
  echo "[tools] missing commands: ${missing[*]}. Please run:" >&2
  echo "  sudo apt-get install -y ${pkgs[*]}" >&2
  exit 1
fi
