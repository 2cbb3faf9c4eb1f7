#!/usr/bin/env bash
# Make a new-language recipe from an existing one: NVV-ASR (egs/nvv_asr_*) or NVV-TTS (egs/nvv_tts).
#
#   utils/fork_recipe.sh [--token-type T] [--nbpe N] [--force true] SRC DST --lang xx
#   e.g. utils/fork_recipe.sh egs/nvv_asr_en egs/nvv_asr_de --lang de
#        utils/fork_recipe.sh egs/nvv_tts egs/nvv_tts_de --lang de
#
# DST gets: run.sh (SRC's, with the language settings replaced), a copy of conf/ (links
# inside conf/ kept), and the links cmd.sh path.sh db.sh -> <repo>/egs/TEMPLATE,
# utils -> <repo>/utils, local -> <repo>/local (relative, so the fork works wherever
# the repo is cloned), and a README.md listing, in order, what to fill in. Nothing from
# SRC's outputs (data/ dump/ exp/ corpus/ RESULTS.md).
#
# Every language espeak-ng speaks runs out of the box on an offline mini corpus
# (`python -m pyutils.synth.langs check --lang xx` tells; text from Unicode CLDR).
# ASR token type: characters for languages written without spaces (ja, yue, th, ...,
# from the script), else BPE. TTS token type: espeak-ng phonemes (phn), else characters.
# egs/sqa and egs/vivc are not forked: run with --src egs/sqa or egs/vivc for why.
set -euo pipefail

lang=
token_type=       # default: from the script (see above)
nbpe=150
force=false
usage="Usage: $0 [--token-type bpe|char|phn] [--nbpe N] [--force true] SRC_RECIPE DST_RECIPE --lang xx"

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
    -h|--help) echo "${usage}"; sed -n '2,19p' "$0"; exit 0 ;;
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
[ -f "${src}/run.sh" ] && [ -d "${src}/conf" ] || { echo "$0: ${src} is not a recipe (needs run.sh and conf/)" >&2; exit 2; }
if ! [[ "${nbpe}" =~ ^[1-9][0-9]*$ ]]; then echo "$0: --nbpe must be a positive integer" >&2; exit 2; fi

root=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# Which kind of recipe: the local/ stage script its run.sh calls.
if grep -q 'local/nvv_asr.sh' "${src}/run.sh"; then kind=asr
elif grep -q 'local/nvv_tts.sh' "${src}/run.sh"; then kind=tts
elif grep -q 'local/sqa.sh' "${src}/run.sh"; then
  cat >&2 <<EOF
$0: ${src} (speech quality assessment) is not forked: it is language-independent
(audio in, a quality score and fault intervals out; no text, no tokens). For speech in
another language, put a QualiSpeech-format corpus in db.sh (QUALISPEECH=...; layout in
pyutils/corpora/README.md) and run ${src} as it is. Its offline mini corpus is English
speech (chorus-synth sqa), which is enough to check the pipeline.
EOF
  exit 2
elif grep -q 'local/vc.sh' "${src}/run.sh"; then
  cat >&2 <<EOF
$0: ${src} (VLSP 2025 voice conversion) is not forked: it is Vietnamese-specific
(local/vc.sh runs its ASR and TTS with --lang vi and scores Vietnamese WER). For voice
conversion in another language, fork its two language-dependent parts instead:
  $0 egs/nvv_asr_en egs/nvv_asr_${lang} --lang ${lang}    # the ASR behind the WER term
  $0 egs/nvv_tts egs/nvv_tts_${lang} --lang ${lang}       # the multi-speaker TTS of the cascade
and replace the --lang vi settings of local/vc.sh; the speaker-similarity and MOS parts
are language-independent.
EOF
  exit 2
else
  echo "$0: ${src}/run.sh calls none of local/nvv_asr.sh, local/nvv_tts.sh: not a forkable recipe" >&2; exit 2
fi
if [ -e "${dst}" ] && [ "${force}" != true ]; then
  echo "$0: ${dst} exists (use --force true to overwrite its run.sh, conf/ and links)" >&2; exit 2
fi

# What the offline tools know about the language (script, espeak-ng voice, CLDR text).
py=${root}/tools/venv/bin/python
[ -x "${py}" ] || py=python3
declare -A li=()
while IFS='=' read -r k v; do [ -n "${k}" ] && li[${k}]=${v}; done < <(
  cd "${root}" && PYTHONPATH="${root}${PYTHONPATH:+:${PYTHONPATH}}" "${py}" -m pyutils.synth.langs info --lang "${lang}" 2>/dev/null \
    || echo "supported=unknown")
supported=${li[supported]:-unknown}
units=${li[units]:-}
if [ -z "${units}" ]; then
  units=$(cd "${root}" && PYTHONPATH="${root}" "${py}" -c 'import sys; from pyutils.langscript import writes_without_spaces as w; print("chars" if w(sys.argv[1]) else "words")' "${lang}" 2>/dev/null || echo words)
fi
if [ -z "${token_type}" ]; then
  if [ "${kind}" = asr ]; then
    if [ "${units}" = chars ]; then token_type=char; else token_type=bpe; fi
  else
    espeak-ng --voices="${lang//_/-}" 2>/dev/null | awk 'NR > 1 && $5 !~ /^mb\// {f=1} END {exit !f}' \
      && token_type=phn || token_type=char
  fi
fi
case "${kind}:${token_type}" in
  asr:bpe|asr:char|tts:phn|tts:char) ;;
  *) echo "$0: --token-type ${token_type} is not one of $([ "${kind}" = asr ] && echo "bpe|char" || echo "phn|char") for this recipe" >&2; exit 2 ;;
esac

whisper=$(cd "${root}" && PYTHONPATH="${root}" "${py}" -c 'import sys; from pyutils.synth.langs import whisper_knows; print("yes" if whisper_knows(sys.argv[1]) else "no")' "${lang}" 2>/dev/null || echo unknown)
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
if [ "${kind}" = asr ]; then
  awk -v lang="${lang}" -v tt="${token_type}" -v nbpe="${nbpe}" -v src="$(basename "${src}")" '
    NR == 2 { print "# Forked from " src " by utils/fork_recipe.sh (--lang " lang ")." }
    /^#/ { gsub(/English|Mandarin|Chinese/, "'\''" lang "'\''") }
    /^lang=/       { print "lang=" lang "            # text normaliser: pyutils/asr/text_norm.py (FORK HOOK)"; next }
    /^asr_method=/ { if (lang != "en" && lang != "zh") { print "asr_method=espnet      # the cascade (frozen Whisper + NVV detector) knows en and zh only"; next } }
    /^token_type=/ { print "token_type=" tt; next }
    /^nbpe=/       { next }
    /--nbpe/       { next }
    /--token_type "\$\{token_type\}"/ {
      print
      if (tt == "bpe") { print "  --nbpe " nbpe " \\" }
      next
    }
    { print }' "${src}/run.sh" > "${tmp}"
else
  cat > "${tmp}" <<EOF
#!/usr/bin/env bash
# NVV-controllable TTS (NVVSpeech Challenge Track 2) for '${lang}'.
# Forked from $(basename "${src}") by utils/fork_recipe.sh (--lang ${lang}); all stages live in
# local/nvv_tts.sh (see egs/nvv_tts/README.md in the repository); this file names the language,
# sets and config of this recipe. Options given on the command line override these
# (./run.sh --help lists them all).
set -euo pipefail
cd "\$(dirname "\$0")"

lang=${lang}            # front-end (pyutils/tts/frontend.py), mini corpus, ASR of stage 7 (../nvv_asr_${lang})
token_type=${token_type}        # phn: espeak-ng phonemes of the ${lang} voice; char: letters
judge=$([ "${whisper}" = no ] && echo false || echo true)            # stage 7 intelligibility by pretrained Whisper (it knows '${lang}': ${whisper})
train_set=         # empty: train_${lang} (train_${lang}_<preset> for ci and large)
valid_set=         # empty: dev_${lang}[_<preset>]
test_sets=         # empty: test_${lang}[_<preset>]
tts_config=        # empty: conf/train_fastspeech_world_<preset>.yaml (ci, default);
                   #   --preset large: conf/tuning/train_vits.yaml

exec ./local/nvv_tts.sh \\
  --lang "\${lang}" \\
  --token_type "\${token_type}" \\
  --judge "\${judge}" \\
  --train_set "\${train_set}" \\
  --valid_set "\${valid_set}" \\
  --test_sets "\${test_sets}" \\
  --tts_config "\${tts_config}" \\
  "\$@"
EOF
fi
chmod 755 "${tmp}"
mv "${tmp}" "${dst}/run.sh"

have_norm=$(cd "${root}" && PYTHONPATH="${root}" "${py}" -c 'import sys; from pyutils.asr import text_norm; print("yes" if sys.argv[1] in text_norm._REGISTRY else "no")' "${lang}" 2>/dev/null || echo unknown)
if [ "${supported}" = yes ]; then
  corpus_line="Stage 0 makes an offline mini corpus (${li[text]:-}, spoken by ${li[voice]:-espeak-ng}), so \`./run.sh --preset ci\` runs as it is."
else
  corpus_line="No offline mini corpus for '${lang}' (\`python -m pyutils.synth.langs check --lang ${lang}\` says why): give your own data (step 1) before running."
fi

readme_asr() {
cat <<EOF
# NVV-aware ASR recipe: ${lang}

Forked from \`$(basename "${src}")\` with \`utils/fork_recipe.sh ... --lang ${lang}\`
(token type: ${token_type}, lexical units: ${units}). Everything runs through
\`local/nvv_asr.sh\`; see \`egs/nvv_asr_en/README.md\` for stages and options.
${corpus_line}

\`\`\`sh
./run.sh --preset ci      # a few minutes: mini corpus, train, decode, score
./run.sh                  # default preset
\`\`\`

## What to fill in, in this order
1. **Data** (\`db.sh\`): paths of real corpora (\`NVBENCH=...\`; stage 1 keeps the
   '${lang}' utterances). A corpus no preparer knows: write a manifest (audio, tagged
   text) and run \`chorus-prep generic --src manifest.tsv --out DIR/data --lang ${lang}\`,
   \`touch DIR/.done\`, then \`./run.sh --mini_dir DIR\` (layout: \`pyutils/corpora/README.md\`).
2. **Text normaliser (FORK HOOK)**: \`pyutils/asr/text_norm.py\`, register a function for
   \`${lang}\` (\`@register("${lang}")\`) when the generic one is not enough. Registered
   now: ${have_norm}. The generic one is driven by Unicode categories and the script
   only: NFKC, lower case, punctuation and symbols removed, combining marks kept,
   no spaces next to characters of scripts written without them.
3. **Tags' spoken forms**: when your corpus writes the non-verbal vocalisations in
   its own words (\`[Lachen]\`, \`(rire)\`), map them to the 16 challenge tags: a mapping
   in \`conf/nvv_tags.yaml\` (named corpora) or \`--label-map map.yaml\` of
   \`chorus-prep generic\`; labels without a counterpart follow \`--unmapped\`.
4. **Scoring**: the Track 1 scorer knows en and zh; '${lang}' is scored by
   \`python -m pyutils.asr.wer\` (tagged $([ "${units}" = chars ] && echo CER || echo WER), tags as units), the number in RESULTS.md.
5. **Model size**: tune \`conf/\` (model size, epochs) for your data; \`--preset ci\` first.
   Pretrained Whisper knows '${lang}': ${whisper}.$([ "${whisper}" = yes ] && echo " Fine-tune from it instead of
   training from scratch with one option: \`./run.sh --whisper true\` (pretrained Whisper,
   the 16 tags as new tokens; \`./run.sh --help\` and \`egs/nvv_asr_en/README.md\`).")
EOF
}

readme_tts() {
cat <<EOF
# NVV-controllable TTS recipe: ${lang}

Forked from \`$(basename "${src}")\` with \`utils/fork_recipe.sh ... --lang ${lang}\`
(token type: ${token_type}). Everything runs through \`local/nvv_tts.sh\`; see
\`egs/nvv_tts/README.md\` for stages and options.
${corpus_line}

\`\`\`sh
./run.sh --preset ci      # a few minutes: mini corpus, train, synthesise, evaluate, package
\`\`\`

Stage 7 measures intelligibility and tag realisation with the NVV-ASR of
\`egs/nvv_asr_${lang}\` when it has a trained model (fork it:
\`utils/fork_recipe.sh egs/nvv_asr_en egs/nvv_asr_${lang} --lang ${lang}\`, then
\`./run.sh\` there); without one RESULTS.md has SIM, DNSMOS and FD only. When both
recipes use the mini corpus of the same preset, the TTS recipe reuses the ASR's.

## What to fill in, in this order
1. **Data** (\`db.sh\`): \`--corpus nvbench|emilia_nv|nonverbaltts\` reads its path from
   db.sh; for other data make Kaldi dirs (\`chorus-prep generic --src manifest.tsv --out
   DIR/data --lang ${lang}\`) and run with \`--corpus_dir DIR\`.
2. **Text front-end**: \`pyutils/tts/frontend.py\`. '${lang}' uses $([ "${token_type}" = phn ] && echo "espeak-ng phonemes of its voice" || echo "characters") now;
   register a \`G2P\` in \`FRONTENDS\` for a better one (the ASR's normaliser,
   \`pyutils/asr/text_norm.py\` FORK HOOK, is the other text piece of the language).
3. **Tags' spoken forms**: labels your corpus writes in its own words map to the 16
   challenge tags in \`conf/nvv_tags.yaml\` / \`--label-map\` of \`chorus-prep generic\`.
4. **Model**: tune \`conf/\` for your data (\`conf/tuning/\` holds the full-size configs).
EOF
}

if [ "${kind}" = asr ]; then readme_asr > "${dst}/README.md"; else readme_tts > "${dst}/README.md"; fi

echo "$0: created ${dst} (${kind}, lang=${lang}, token_type=${token_type}); mini corpus for ${lang}: ${supported}"
if [ "${supported}" != yes ]; then
  echo "$0: NOTE: ${li[reason]:-could not check the language (pyutils.synth.langs)}" >&2
  echo "$0: NOTE: see ${dst}/README.md, step 1: give your own data before running" >&2
fi
if [ "${kind}" = asr ] && [ "${have_norm}" != yes ]; then
  echo "$0: note: generic text normaliser for '${lang}' until you fill the FORK HOOK in pyutils/asr/text_norm.py"
fi
