#!/usr/bin/env bash
# Make a new-language NVV-ASR recipe from an existing one.
#
#   utils/fork_recipe.sh [--token-type bpe|char] [--nbpe N] [--force true] SRC DST --lang xx
#   e.g. utils/fork_recipe.sh egs/nvv_asr_en egs/nvv_asr_vi --lang vi
#
# DST gets: run.sh (SRC's, with lang/token settings replaced), a copy of conf/ (links
# inside conf/ kept), and the links cmd.sh path.sh db.sh -> <repo>/egs/TEMPLATE,
# utils -> <repo>/utils, local -> <repo>/local (relative, so the fork works wherever
# the repo is cloned). Nothing from SRC's outputs (data/ dump/ exp/ corpus/ RESULTS.md).
#
# The one language-specific piece of code is the text normaliser: see the marked
# FORK HOOK in pyutils/asr/text_norm.py (register a function for the new language;
# until then a generic one is used). The fork's README.md says what to check next.
set -euo pipefail

lang=
token_type=       # default: char for languages written without spaces (zh ja yue), else bpe
nbpe=150
force=false
usage="Usage: $0 [--token-type bpe|char] [--nbpe N] [--force true] SRC_RECIPE DST_RECIPE --lang xx"

args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lang) lang=${2:?--lang needs a value}; shift 2 ;;
    --lang=*) lang=${1#--lang=}; shift ;;
    --token-type|--token_type) token_type=${2:?}; shift 2 ;;
    --token-type=*|--token_type=*) token_type=${1#*=}; shift ;;
    --nbpe) nbpe=${2:?}; shift 2 ;;
    --nbpe=*) nbpe=${1#--nbpe=}; shift ;;
    --force) force=${2:?}; shift 2 ;;
    --force=*) force=${1#--force=}; shift ;;
    -h|--help) echo "${usage}"; sed -n '2,15p' "$0"; exit 0 ;;
    --*) echo "$0: unknown option $1" >&2; echo "${usage}" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ${#args[@]} -ne 2 ] || [ -z "${lang}" ]; then
  echo "${usage}" >&2; exit 2
fi
src=${args[0]%/}; dst=${args[1]%/}
if ! [[ "${lang}" =~ ^[a-z]{2,3}([_-][A-Za-z0-9]+)?$ ]]; then
  echo "$0: --lang '${lang}' does not look like a language code (e.g. vi, de, pt_br)" >&2; exit 2
fi
[ -f "${src}/run.sh" ] && [ -d "${src}/conf" ] || { echo "$0: ${src} is not a recipe (needs run.sh and conf/)" >&2; exit 1; }
if [ -e "${dst}" ] && [ "${force}" != true ]; then
  echo "$0: ${dst} exists (use --force true to overwrite its run.sh, conf/ and links)" >&2; exit 1
fi
if [ -z "${token_type}" ]; then
  case "${lang}" in zh*|ja*|yue*) token_type=char ;; *) token_type=bpe ;; esac
fi
case "${token_type}" in bpe|char) ;; *) echo "$0: --token-type must be bpe or char" >&2; exit 2 ;; esac

root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
mkdir -p "${dst}"
dst_abs=$(cd "${dst}" && pwd)
rel=$(realpath --relative-to="${dst_abs}" "${root}")

# Links (relative to the repo root, like the shipped recipes).
for f in cmd.sh path.sh db.sh; do ln -sfn "${rel}/egs/TEMPLATE/${f}" "${dst}/${f}"; done
ln -sfn "${rel}/utils" "${dst}/utils"
ln -sfn "${rel}/local" "${dst}/local"

# conf/: a copy (links inside kept), so the fork can tune its own configs.
rm -rf "${dst}/conf"
cp -a "${src}/conf" "${dst}/conf"

# run.sh: SRC's, with the language settings replaced.
tmp=$(mktemp "${dst}/.run.sh.XXXXXX")
awk -v lang="${lang}" -v tt="${token_type}" -v nbpe="${nbpe}" -v src="$(basename "${src}")" '
  NR == 2 { print "# Forked from " src " by utils/fork_recipe.sh (--lang " lang ")." }
  /^lang=/       { print "lang=" lang "            # text normaliser: pyutils/asr/text_norm.py (FORK HOOK)"; next }
  /^token_type=/ { print "token_type=" tt; next }
  /^nbpe=/       { next }
  /--nbpe/       { next }
  /--token_type "\$\{token_type\}"/ {
    print
    if (tt == "bpe") { print "  --nbpe " nbpe " \\" }
    next
  }
  { print }' "${src}/run.sh" > "${tmp}"
chmod +x "${tmp}"
mv "${tmp}" "${dst}/run.sh"

have_norm=$("${root}/tools/venv/bin/python" -c "import sys; from pyutils.asr import text_norm; print('yes' if '${lang}' in text_norm._REGISTRY else 'no')" 2>/dev/null || echo unknown)
cat > "${dst}/README.md" <<EOF
# NVV-aware ASR recipe: ${lang}

Forked from \`$(basename "${src}")\` with \`utils/fork_recipe.sh ... --lang ${lang}\`
(token type: ${token_type}). Everything runs through \`local/nvv_asr.sh\`; see
\`egs/nvv_asr_en/README.md\` for stages and options.

## To do after forking
1. **Text normalisation (FORK HOOK)**: \`pyutils/asr/text_norm.py\`, register a
   function for \`${lang}\` (\`@register("${lang}")\`). Registered now: ${have_norm}
   (otherwise the generic normaliser runs: NFKC, lower-case, punctuation removed).
2. **Data**: stage 0 makes a mini corpus with \`chorus-synth nvv\` (en/zh) or \`pyutils.asr.tagged_corpus\` (vi); for other languages point
   stage 1 at Kaldi data dirs (\`--mini_dir DIR\` holding data/{train,dev,test}) or set
   real corpora in db.sh.
3. **Scoring**: the Track 1 scorer knows en/zh; other languages are scored with
   \`python -m pyutils.asr.wer\` (WER, tags as units).
4. Tune \`conf/\` (model size, epochs) for your data; \`--preset ci\` first.
EOF
echo "$0: created ${dst} (lang=${lang}, token_type=${token_type}); text normaliser for ${lang} registered: ${have_norm}"
[ "${have_norm}" = yes ] || echo "$0: NOTE: fill the FORK HOOK in pyutils/asr/text_norm.py for '${lang}' (generic normaliser used until then)"
