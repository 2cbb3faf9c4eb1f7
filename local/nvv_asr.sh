#!/usr/bin/env bash
# NVV-aware ASR (NVVSpeech Challenge Track 1: audio in, tagged transcript out).
# Generic stage script shared by egs/nvv_asr_* (and reused by egs/vivc, egs/nvv_tts):
# run it from a recipe dir, through the recipe's thin run.sh. Stages (--asr_method espnet):
#   0 corpus   1 data prep   2 format/dump   3 tokens   4 collect stats
#   5 train    6 decode      7 score + RESULTS.md       8 package submission
# --asr_method cascade (the default of egs/nvv_asr_{en,zh}/run.sh; stages 3-6 in
# local/nvv_asr_cascade.sh): 2 dumps the test sets only, 3 not used, 4 detector features of
# the corpus (Whisper-encoder frames), 5 fit the NVV detector, 6 detector events + frozen
# Whisper text -> tagged text.
# Every stage is resumable; every Python step logs (<exp>/log/<step>.log, the set's log/,
# ESPnet's own logdir/), and a failure prints "stage N failed at nvv_asr.sh:<line>" and the
# log to read (utils/stage_prelude.sh); wall/CPU time per stage: <expdir>/stage_times.tsv.
# Finished steps leave verified markers <dir>/.<step>.done (stage_done/stage_mark of
# utils/stage_prelude.sh: output files with sizes and checksums): a rerun skips them only
# while their outputs are intact.
# Options (./run.sh --help lists them with their docs), their checks and the settings derived
# from them: local/nvv_asr_options.sh.
# ESPnet runs only as `python -m espnet2.bin.*`.
set -euo pipefail
# The whole script is one { ... } block, parsed before it runs: editing this file while
# a long run is going cannot change (or break) that run.
{

_cmdline="$0 $*"

. "$(dirname "${BASH_SOURCE[0]}")/nvv_asr_options.sh"   # options, help_message, check_options, derive_settings
. utils/stage_prelude.sh --parse "$@"   # options, path.sh/cmd.sh/db.sh, --preset, stages, lock, clock, failure line
derive_settings   # preset defaults, test sets, real corpora (corpora, use_mini), asr_exp, decode_root
mkdir -p "${expdir}"
log "${_cmdline}"
log "lang=${lang} preset=${preset} nj=${nj} ngpu=${ngpu} data=$([ "${use_mini}" = true ] && echo "mini corpus" || echo "${corpora}") asr_exp=${asr_exp}"

# ---------------------------------------------------------------- stage 0
_mini_given=false
if [ -n "${mini_dir}" ]; then _mini_given=true; else mini_dir=${corpus_dir}/nvv_${lang}_${preset}${DEEPLY_NVV:+_deeply}; fi
# Deeply NVV (db.sh DEEPLY_NVV, read only when set): chorus-prep deeply_nvv -> ${_deeply}
# (split by speaker), its train speakers' clips an extra NVV bank of the mini corpus
# (${_deeply}/bank_train); the cascade's stage 4 splices its train/dev clips into real speech.
_deeply=${corpus_dir}/deeply_nvv
if in_stage 0 "corpus"; then
  if [ -n "${DEEPLY_NVV:-}" ]; then
    [ -d "${DEEPLY_NVV}" ] || { echo "$0: DEEPLY_NVV=${DEEPLY_NVV} (db.sh) is not a directory" >&2; exit 1; }
    if stage_done "${_deeply}/.prep.done" --sig "${DEEPLY_NVV}"; then
      log "stage 0: Deeply NVV ${_deeply} done, skipping"
    else
      log "stage 0: Deeply NVV ${DEEPLY_NVV} -> ${_deeply} (chorus-prep deeply_nvv; train speakers -> ${_deeply}/bank_train)"
      utils/run.pl "${expdir}/log/prep_deeply_nvv.log" \
        chorus-prep deeply_nvv --src "${DEEPLY_NVV}" --out "${_deeply}" --nj "${nj}"
      utils/run.pl "${expdir}/log/bank_deeply_nvv.log" \
        python -m pyutils.synth.nvv_bank from-prep --prep "${_deeply}" --out "${_deeply}/bank_train" --splits train
      grep -h '^nvv_bank: ' "${expdir}/log/bank_deeply_nvv.log" | sed 's/^/  /'
      stage_mark "${_deeply}/.prep.done" --sig "${DEEPLY_NVV}" $(find "${_deeply}" -type f ! -name '.*' \
        ! -name '*.log' ! -path '*/real_*' | LC_ALL=C sort)
    fi
    if { [ "${use_mini}" = true ] || [ "${mini_for_detector}" = true ]; } && [ "${_mini_given}" = false ]; then
      synth_args+=" --nvv-bank-extra ${_deeply}/bank_train"
    fi
  fi
  if [ "${use_mini}" = true ] || [ "${mini_for_detector}" = true ]; then
    log "stage 0: mini NVV corpus (${lang}, ${preset}) -> ${mini_dir}$([ "${use_mini}" = true ] || echo " (the cascade detector's exact event times, --detector_mini true)")"
    if [ "${_mini_given}" = true ]; then
      [ -f "${mini_dir}/.done" ] || { echo "$0: --mini_dir ${mini_dir} has no .done marker (expects DIR/data/{train,dev,test} and DIR/.done)" >&2; exit 1; }
      log "stage 0: using ${mini_dir}"
    elif [ -f "${mini_dir}/.done" ] && { [ -e "${mini_dir}/.corpus.done" ] || : > "${mini_dir}/.corpus.done"; } \
         && stage_done "${mini_dir}/.corpus.done" --adopt --dir "${mini_dir}"; then   # (a corpus made before markers is adopted)
      log "stage 0: ${mini_dir} is complete, skipping"
    else
      # a finished corpus whose files were deleted or changed is made anew (chorus-synth alone
      # would resume and keep the damage); an unfinished one is resumed
      if [ -f "${mini_dir}/.done" ]; then rm -rf "${mini_dir}"; fi
      # any language espeak-ng speaks (en/zh/vi grammars, others from CLDR); otherwise
      # chorus-synth exits 2 with one message saying what to provide instead
      log "  chorus-synth nvv (log ${expdir}/log/synth_nvv_${lang}_${preset}.log)"
      utils/run.pl "${expdir}/log/synth_nvv_${lang}_${preset}.log" \
        chorus-synth nvv --lang "${lang}" --preset "${preset}" \
          --out "${mini_dir}" --nj "${nj}" --cmd "${train_cmd}" ${synth_args}
      stage_mark "${mini_dir}/.corpus.done" --dir "${mini_dir}"
    fi
  fi
  if [ "${use_mini}" = false ]; then
    log "stage 0: checking the real corpora named in db.sh: ${corpora}"
    for c in ${corpora}; do
      [ -n "${!c:-}" ] || { echo "$0: ${c} is not set in db.sh" >&2; exit 1; }
      [ -d "${!c}" ] || { echo "$0: ${c}=${!c} (db.sh) is not a directory" >&2; exit 1; }
      log "  ${c}=${!c}"
    done
  fi
  if [ -n "${NVV_TRACK1_TEST:-}" ] && [ ! -d "${NVV_TRACK1_TEST}" ]; then
    echo "$0: NVV_TRACK1_TEST=${NVV_TRACK1_TEST} (db.sh) is not a directory" >&2; exit 1
  fi
fi

# ---------------------------------------------------------------- stage 1
if in_stage 1 "data prep"; then
  if [ "${use_mini}" = true ]; then
    log "stage 1: data prep from the mini corpus ${mini_dir}"
    [ -f "${mini_dir}/.done" ] || { echo "$0: ${mini_dir} is not finished: run stage 0" >&2; exit 1; }
    for s in train dev test; do
      mkdir -p "${datadir}/${s}"
      for f in wav.scp text utt2spk spk2utt utt2dur; do
        cp "${mini_dir}/data/${s}/${f}" "${datadir}/${s}/${f}"
      done
      if [ -f "${mini_dir}/ref/${s}.jsonl" ]; then cp "${mini_dir}/ref/${s}.jsonl" "${datadir}/${s}/ref.jsonl"; fi
      log "  ${datadir}/${s}: $(nlines "${datadir}/${s}/wav.scp") utterances"
    done
  else
    log "stage 1: data prep of ${corpora} with conf/nvv_tags.yaml (--unmapped ${unmapped}), lang=${lang}"
    _trains=() _devs=() _tests=()
    for c in ${corpora}; do
      _name=$(echo "${c}" | tr '[:upper:]' '[:lower:]')
      _out=${datadir}/local/${_name}
      _sig="${!c} ${unmapped}"
      if stage_done "${_out}/.prep.done" --sig "${_sig}"; then
        log "  ${_out} done, skipping"
      else
        mkdir -p "${_out}"
        # chorus-prep prints its counts (mapped/dropped labels and utterances); kept in its log.
        utils/run.pl "${expdir}/log/prep_${_name}.log" \
          chorus-prep "${_name}" --src "${!c}" --out "${_out}" --unmapped "${unmapped}" --nj "${nj}"
        grep -v '^#' "${expdir}/log/prep_${_name}.log" | tail -n 5
        # the data dirs (not the audio chorus-prep extracted from tables: wav.scp names it)
        stage_mark "${_out}/.prep.done" --sig "${_sig}" $(find "${_out}" -mindepth 2 -maxdepth 2 -type f \
          ! -name '.*' ! -name '*.log' ! -path '*_audio/*' | LC_ALL=C sort)
      fi
      for d in "${_out}"/*/; do
        d=${d%/}; [ -f "${d}/wav.scp" ] || continue
        # Keep this recipe's language only (utt2lang written by chorus-prep).
        _sel=${d}
        if [ -f "${d}/utt2lang" ]; then
          awk -v l="${lang}" '$2 == l { print $1 }' "${d}/utt2lang" > "${d}/.utts_${lang}"
          _nsel=$(nlines "${d}/.utts_${lang}")
          if [ "${_nsel}" -eq 0 ]; then continue; fi
          if [ "${_nsel}" -lt "$(nlines "${d}/wav.scp")" ]; then
            _sel=${d}_${lang}
            utils/subset_data_dir.sh --utt-list "${d}/.utts_${lang}" "${d}" "${_sel}"
          fi
        fi
        _base=$(basename "${d}")
        if [ "${c}" = NVBENCH ]; then
          # NV-Bench is an evaluation benchmark: its subsets are test sets.
          _tests+=("${_sel}"); continue
        fi
        case "${_base}" in
          *train*) _trains+=("${_sel}") ;;
          *dev*|*valid*|*val) _devs+=("${_sel}") ;;
          *test*|*eval*) _tests+=("${_sel}") ;;
          *) _trains+=("${_sel}") ;;
        esac
      done
    done
    [ ${#_trains[@]} -gt 0 ] || { echo "$0: no ${lang} training data among ${corpora} (data/local/*)" >&2; exit 1; }
    utils/combine_data.sh "${datadir}/${train_set}" "${_trains[@]}"
    if [ ${#_devs[@]} -gt 0 ]; then
      utils/combine_data.sh "${datadir}/${valid_set}" "${_devs[@]}"
    else
      log "  no dev split in the corpora: holding out 5 % of training as ${valid_set}"
      ${train_cmd} "${expdir}/log/holdout.log" \
        python -m pyutils.asr.holdout --fraction 0.05 "${datadir}/${train_set}" "${datadir}/${valid_set}"
    fi
    if [ ${#_tests[@]} -gt 0 ]; then utils/combine_data.sh "${datadir}/test" "${_tests[@]}"; fi
    for s in ${train_set} ${valid_set} test; do
      if [ -f "${datadir}/${s}/wav.scp" ]; then
        log "  ${datadir}/${s}: $(nlines "${datadir}/${s}/wav.scp") utterances; tags: $(python -c 'import sys
from pyutils.asr.tags_text import tag_counts
c = tag_counts(l.split(maxsplit=1)[1] if " " in l.strip() else "" for l in open(sys.argv[1], encoding="utf-8"))
print(", ".join(f"{k}={v}" for k, v in c.items() if v) or "none")' "${datadir}/${s}/text" 2>/dev/null || echo "?")"
      fi
    done
  fi
  if [ -n "${NVV_TRACK1_TEST:-}" ]; then
    _t1=${datadir}/local/track1_test
    log "stage 1: official Track 1 test set ${NVV_TRACK1_TEST} -> ${datadir}/${_t1set} (no references)"
    if ! stage_done "${_t1}/.prep.done" --sig "${NVV_TRACK1_TEST} ${lang}"; then
      mkdir -p "${_t1}"
      utils/run.pl "${expdir}/log/prep_track1_test_${lang}.log" \
        chorus-prep track1_test --src "${NVV_TRACK1_TEST}" --out "${_t1}" --lang "${lang}"
      stage_mark "${_t1}/.prep.done" --sig "${NVV_TRACK1_TEST} ${lang}" $(find "${_t1}" -mindepth 2 -maxdepth 2 -type f \
        ! -name '.*' ! -name '*.log' ! -path '*_audio/*' | LC_ALL=C sort)
    fi
    [ -d "${_t1}/test_${lang}" ] || { echo "$0: ${_t1}/test_${lang} missing after chorus-prep track1_test" >&2; exit 1; }
    rm -rf "${datadir:?}/${_t1set}"; cp -r "${_t1}/test_${lang}" "${datadir}/${_t1set}"
  fi
fi

# ---------------------------------------------------------------- stage 2
# Split the keys of $1 into $3 files $2.1 .. $2.N (round robin keeps sizes equal).
split_keys() {
  local src=$1 prefix=$2 n=$3
  mkdir -p "$(dirname "${prefix}")"
  awk -v n="${n}" -v p="${prefix}" '{ print > (p "." ((NR - 1) % n + 1)) }' "${src}"
}

# dumped_test_set SET: 0 when stage 2 dumped SET; 1 (with a warning) when --test_sets auto
# named a set the corpus does not have; exits when a named set was not dumped.
dumped_test_set() {
  if [ ! -f "${dumpdir}/raw/$1/wav.scp" ] && [ "${_auto_tests}" = true ] && [ ! -f "${datadir}/$1/wav.scp" ]; then
    log "  WARNING: no ${datadir}/$1: not decoded"; return 1
  fi
  [ -f "${dumpdir}/raw/$1/wav.scp" ] || { echo "$0: ${dumpdir}/raw/$1/wav.scp not found: run stage 2 with --test_sets $1" >&2; exit 1; }
}

if in_stage 2 "format"; then
  log "stage 2: format audio (${fs} Hz mono PCM16) -> ${dumpdir}/raw"
  # (the cascade trains no ESPnet model: its detector reads the corpus itself, stage 4)
  if [ "${skip_train}" = true ] || [ "${asr_method}" = cascade ]; then _sets=${test_sets}; else _sets="${train_set} ${valid_set} ${test_sets}"; fi
  _sets=$(echo "${_sets}" | tr ' ' '\n' | awk 'NF && !seen[$0]++')
  for dset in ${_sets}; do
    _src=${datadir}/${dset}
    if [ ! -f "${_src}/wav.scp" ] && [ "${_auto_tests}" = true ] && [[ " ${test_sets} " == *" ${dset} "* ]]; then
      log "  WARNING: no ${_src} (the corpora have no such split): not decoded"; continue
    fi
    [ -f "${_src}/wav.scp" ] || { echo "$0: ${_src}/wav.scp not found" >&2; exit 1; }
    if [ "${dset}" = "${train_set}" ] || [ "${dset}" = "${valid_set}" ]; then
      _out=${dumpdir}/raw/org/${dset}; _onerr=fail; _mindur=0
    else
      # Test sets: every utterance must get a hypothesis, so unreadable audio becomes
      # silence (with a warning) and very short audio is padded.
      _out=${dumpdir}/raw/${dset}; _onerr=silence; _mindur=0.3
    fi
    # made from exactly these inputs and settings
    _sig=$(for f in wav.scp segments text utt2spk; do [ ! -f "${_src}/${f}" ] || md5sum < "${_src}/${f}"; done
           echo "${fs} ${_onerr} ${_mindur} ${lang} ${nvv_tags}")
    if stage_done "${_out}/.dump.done" --sig "${_sig}"; then
      log "  ${_out} done, skipping"; continue
    fi
    rm -rf "${_out}"; mkdir -p "${_out}/log"
    _n=$(nlines "${_src}/wav.scp")
    [ "${_n}" -gt 0 ] || { echo "$0: ${_src}/wav.scp is empty" >&2; exit 1; }
    _nj=$(min "${nj}" "${_n}")
    split_keys "${_src}/wav.scp" "${_out}/log/wav.scp" "${_nj}"
    _seg=()
    [ -f "${_src}/segments" ] && _seg=(--segments "${_src}/segments")
    ${train_cmd} JOB=1:"${_nj}" "${_out}/log/dump.JOB.log" \
      python -m pyutils.asr.dump_audio --fs "${fs}" --on-error "${_onerr}" --min-dur "${_mindur}" \
        "${_seg[@]}" "${_out}/log/wav.scp.JOB" "${_out}/data/format.JOB"
    for f in wav.scp utt2dur; do
      for i in $(seq "${_nj}"); do cat "${_out}/data/format.${i}/${f}"; done | sort > "${_out}/${f}"
    done
    for f in utt2spk spk2utt utt2lang; do [ -f "${_src}/${f}" ] && cp "${_src}/${f}" "${_out}/${f}"; done
    if [ ! -f "${_out}/utt2spk" ]; then awk '{print $1, $1}' "${_out}/wav.scp" > "${_out}/utt2spk"; fi
    if [ -f "${_src}/text" ]; then
      ${train_cmd} "${_out}/log/prepare_text.log" \
        python -m pyutils.asr.prepare_text --lang "${lang}" --nvv-tags "${nvv_tags}" "${_src}/text" "${_out}/text"
    fi
    echo raw > "${_out}/feats_type"
    stage_mark "${_out}/.dump.done" --sig "${_sig}" --dir "${_out}"
    log "  ${_out}: $(nlines "${_out}/wav.scp") utterances, $(awk '{s+=$2} END {printf "%.1f", s/3600}' "${_out}/utt2dur") h"
  done
  # Remove too short / too long / empty-text utterances from training and validation.
  _filter_sets="${train_set} ${valid_set}"; { [ "${skip_train}" = true ] || [ "${asr_method}" = cascade ]; } && _filter_sets=""
  for dset in ${_filter_sets}; do
    _org=${dumpdir}/raw/org/${dset}; _out=${dumpdir}/raw/${dset}
    mkdir -p "${_out}"
    awk -v lo="${min_wav_duration}" -v hi="${max_wav_duration}" 'FNR==NR { if (NF > 1) ok[$1]=1; next }
         ($1 in ok) && $2 >= lo && $2 <= hi { print $1 }' "${_org}/text" "${_org}/utt2dur" > "${_out}/keep"
    for f in wav.scp utt2dur text utt2spk; do
      awk 'FNR==NR { k[$1]=1; next } ($1 in k)' "${_out}/keep" "${_org}/${f}" > "${_out}/${f}"
    done
    awk '{ s[$2] = s[$2] " " $1 } END { for (k in s) print k s[k] }' "${_out}/utt2spk" | sort > "${_out}/spk2utt"
    cp "${_org}/feats_type" "${_out}/feats_type"
    log "  ${_out}: kept $(nlines "${_out}/keep") of $(nlines "${_org}/wav.scp") utterances (${min_wav_duration}-${max_wav_duration} s, non-empty text)"
    rm "${_out}/keep"
  done
fi

# Names of the ESPnet stages 3-6 (token lists, statistics, Whisper fine-tuning).
token_dir=${datadir}/token_list/${lang}_${token_type}
[ "${token_type}" = bpe ] && token_dir+=${nbpe}
[ "${token_type}" = whisper ] && token_dir+=_$(basename "${whisper_model:-base}" | tr -c 'A-Za-z0-9_.\n-' _)
[ "${nvv_tags}" = true ] || token_dir+=_notags
bpeprefix=${token_dir}/bpe
bpemodel=${bpeprefix}.model
token_list=${token_dir}/tokens.txt
nlsyms_txt=${token_dir}/nlsyms.txt
# Feature statistics depend on the front-end settings: their hash is part of the name,
# so a config with another front-end never reuses stale stats.
_fe_hash=$(python3 -c 'import sys, yaml, hashlib, json
try:
    c = yaml.safe_load(open(sys.argv[1])) or {}
except OSError:
    c = {}
print(hashlib.md5(json.dumps([c.get("frontend"), c.get("frontend_conf")], sort_keys=True).encode()).hexdigest()[:6])' "${asr_config}")
asr_stats_dir=${expdir}/asr_stats_raw_$(basename "${token_dir}")_fe${_fe_hash}
_nlsyms_opt=()
[ "${token_type}" = char ] && [ "${nvv_tags}" = true ] && _nlsyms_opt=(--non_linguistic_symbols "${nlsyms_txt}")
_bpe_opt=()
[ "${token_type}" = bpe ] && _bpe_opt=(--bpemodel "${bpemodel}")
# Whisper: ESPnet reads pre-tokenised text (text_whisper: Whisper BPE pieces and tags,
# see pyutils/asr/whisper_tokens.py) as "word" tokens, and runs the chorus_whisper classes
# through pyutils.whisper.asr_train/asr_inference (espnet2.bin.* with them registered).
_text=text; _espnet_token_type=${token_type}
_asr_train_mod=espnet2.bin.asr_train; _asr_inference_mod=espnet2.bin.asr_inference
_whisper_args=()
if [ "${token_type}" = whisper ]; then
  _text=text_whisper; _espnet_token_type=word
  _asr_train_mod=pyutils.whisper.asr_train; _asr_inference_mod=pyutils.whisper.asr_inference
  if [ -n "${whisper_model}" ]; then
    [ "${whisper_model}" = base ] || whisper_model=$(readlink -f "${whisper_model}")
    _whisper_args=(--encoder_conf whisper_model="${whisper_model}" --decoder_conf whisper_model="${whisper_model}")
  fi
fi


# Stages 3-6 of --asr_method cascade (frozen Whisper text + the NVV detector) live in
# local/nvv_asr_cascade.sh; the ESPnet stages 3-6 below run only with --asr_method espnet.
if [ "${asr_method}" = cascade ]; then
  . "$(dirname "${BASH_SOURCE[0]}")/nvv_asr_cascade.sh"
fi

# ---------------------------------------------------------------- stage 3
if [ "${skip_train}" != true ] && [ "${asr_method}" = espnet ] && in_stage 3 "tokens"; then
  log "stage 3: token list (${token_type}, nvv_tags=${nvv_tags}) -> ${token_dir}"
  mkdir -p "${token_dir}"
  if [ "${token_type}" = whisper ]; then
    [ "${nvv_tags}" = true ] || { echo "$0: --whisper true needs --nvv_tags true" >&2; exit 2; }
    ${train_cmd} "${token_dir}/log/verify_weights.log" \
      python -m pyutils.whisper.weights --verify "${whisper_model:-base}"
    ${train_cmd} "${token_dir}/log/token_list.log" \
      python -m pyutils.asr.whisper_tokens token-list --model "${whisper_model:-base}" --out "${token_list}"
    for dset in ${train_set} ${valid_set}; do
      # From the official-form text (Whisper keeps case and punctuation), for the
      # utterances that stage 2 kept.
      ${train_cmd} "${token_dir}/log/encode_${dset}.log" \
        python -m pyutils.asr.whisper_tokens encode --model "${whisper_model:-base}" --lang "${lang}" \
          --keys "${dumpdir}/raw/${dset}/text" "${datadir}/${dset}/text" "${dumpdir}/raw/${dset}/${_text}"
    done
  else
    ${train_cmd} "${token_dir}/log/nlsyms.log" python -m pyutils.asr.tokens nlsyms "${nlsyms_txt}"
    cut -f 2- -d ' ' "${dumpdir}/raw/${train_set}/text" > "${token_dir}/train.txt"
    if [ "${token_type}" = bpe ]; then
      ${train_cmd} "${token_dir}/log/train_bpe.log" \
        python -m pyutils.asr.tokens train-bpe --text "${token_dir}/train.txt" \
          --vocab-size "${nbpe}" --model-prefix "${bpeprefix}" --model-type "${bpe_model_type}" --nvv-tags "${nvv_tags}"
      grep -v '^#' "${token_dir}/log/train_bpe.log" | tail -n 1
    fi
    # Vocabulary from the training text, as ESPnet's asr.sh does; the tags are appended
    # so that a tag absent from training still has its token.
    { cat "${token_dir}/train.txt"; [ "${nvv_tags}" = true ] && cat "${nlsyms_txt}"; true; } \
      > "${token_dir}/vocab_text.txt"
    # (the backend joins words without white space unquoted, Kaldi's rule: '<...>' quoted for its shell)
    ${train_cmd} "${token_dir}/log/tokenize_text.log" \
      python -m espnet2.bin.tokenize_text \
        --token_type "${token_type}" "${_bpe_opt[@]}" "${_nlsyms_opt[@]}" \
        --input "${token_dir}/vocab_text.txt" --output "${token_list}" --field 1- \
        --cleaner none --g2p none --write_vocabulary true \
        --add_symbol "'<blank>:0'" --add_symbol "'<unk>:1'" --add_symbol "'<sos/eos>:-1'"
    ${train_cmd} "${token_dir}/log/check.log" \
      python -m pyutils.asr.tokens check --token-list "${token_list}" --token-type "${token_type}" \
        --bpemodel "${bpemodel}" --nvv-tags "${nvv_tags}"
    grep -v '^#' "${token_dir}/log/check.log" | tail -n 1
  fi
fi

# ---------------------------------------------------------------- stage 4
_train_dir=${dumpdir}/raw/${train_set}
_valid_dir=${dumpdir}/raw/${valid_set}
_common_args=(--use_preprocessor true --token_type "${_espnet_token_type}" --token_list "${token_list}"
  "${_bpe_opt[@]}" "${_nlsyms_opt[@]}" --cleaner none --g2p none)
if [ "${skip_train}" != true ] && [ "${asr_method}" = espnet ] && in_stage 4 "stats"; then
  log "stage 4: collect stats -> ${asr_stats_dir}"
  [ -f "${asr_config}" ] || { echo "$0: training config ${asr_config} not found" >&2; exit 1; }
  if grep -qE '^normalize:' "${asr_config}"; then
    echo "$0: ${asr_config} sets 'normalize:'; remove it: the recipe gives --normalize ${feats_normalize} for training only (collect-stats must run without it)" >&2
    exit 1
  fi
  _logdir=${asr_stats_dir}/logdir
  rm -rf "${_logdir}"; mkdir -p "${_logdir}"
  _nj=$(min "${nj}" "$(nlines "${_train_dir}/wav.scp")" "$(nlines "${_valid_dir}/wav.scp")")
  split_keys "${_train_dir}/wav.scp" "${_logdir}/train.scp" "${_nj}"
  split_keys "${_valid_dir}/wav.scp" "${_logdir}/valid.scp" "${_nj}"
  ${train_cmd} JOB=1:"${_nj}" "${_logdir}/stats.JOB.log" \
    python -m "${_asr_train_mod}" --collect_stats true "${_common_args[@]}" "${_whisper_args[@]}" \
      --train_data_path_and_name_and_type "${_train_dir}/wav.scp,speech,sound" \
      --train_data_path_and_name_and_type "${_train_dir}/${_text},text,text" \
      --valid_data_path_and_name_and_type "${_valid_dir}/wav.scp,speech,sound" \
      --valid_data_path_and_name_and_type "${_valid_dir}/${_text},text,text" \
      --train_shape_file "${_logdir}/train.scp.JOB" --valid_shape_file "${_logdir}/valid.scp.JOB" \
      --output_dir "${_logdir}/stats.JOB" --config "${asr_config}" --frontend_conf fs="${fs}" ${asr_args}
  _inputs=()
  for i in $(seq "${_nj}"); do _inputs+=(--input_dir "${_logdir}/stats.${i}"); done
  ${train_cmd} "${_logdir}/aggregate_stats.log" \
    python -m espnet2.bin.aggregate_stats_dirs "${_inputs[@]}" --output_dir "${asr_stats_dir}"
  # Text shapes with the vocabulary size appended (ESPnet's convention).
  _ntok=$(nlines "${token_list}")
  for s in train valid; do
    awk -v N="${_ntok}" '{ print $0 "," N }' "${asr_stats_dir}/${s}/text_shape" > "${asr_stats_dir}/${s}/text_shape.${token_type}"
  done
fi

# ---------------------------------------------------------------- stage 5
if [ "${skip_train}" != true ] && [ "${asr_method}" = espnet ] && in_stage 5 "train"; then
  log "stage 5: train ${asr_exp} (config ${asr_config}, ngpu=${ngpu}, num_nodes=${num_nodes})"
  _trained=("${asr_exp}/${inference_model}" "${asr_exp}/config.yaml" "${asr_exp}/recipe_options.sh")
  if stage_done "${asr_exp}/.train.done" --adopt "${_trained[@]}"; then
    log "  ${asr_exp} is trained, skipping (remove ${asr_exp}/.train.done to train again)"
  else
    mkdir -p "${asr_exp}"
    _train_extra=()
    [ -n "${init_param}" ] && _train_extra+=(--init_param "${init_param}")
    [ "${feats_normalize}" = global_mvn ] && _train_extra+=(--normalize global_mvn --normalize_conf stats_file="${asr_stats_dir}/train/feats_stats.npz")
    [ "${feats_normalize}" = utterance_mvn ] && _train_extra+=(--normalize utterance_mvn)
    [ "${feats_normalize}" = none ] && _train_extra+=(--normalize none)
    log "  log: ${asr_exp}/train.log"
    OMP_NUM_THREADS=${train_threads} MKL_NUM_THREADS=${train_threads} \
    python -m espnet2.bin.launch \
      --cmd "${cuda_cmd} --name ${asr_exp}/train.log" --log "${asr_exp}/train.log" \
      --ngpu "${ngpu}" --num_nodes "${num_nodes}" \
      --init_file_prefix "${asr_exp}/.dist_init_" --multiprocessing_distributed true -- \
      python -m "${_asr_train_mod}" "${_common_args[@]}" "${_whisper_args[@]}" \
        --config "${asr_config}" --frontend_conf fs="${fs}" \
        --train_data_path_and_name_and_type "${_train_dir}/wav.scp,speech,sound" \
        --train_data_path_and_name_and_type "${_train_dir}/${_text},text,text" \
        --train_shape_file "${asr_stats_dir}/train/speech_shape" \
        --train_shape_file "${asr_stats_dir}/train/text_shape.${token_type}" \
        --valid_data_path_and_name_and_type "${_valid_dir}/wav.scp,speech,sound" \
        --valid_data_path_and_name_and_type "${_valid_dir}/${_text},text,text" \
        --valid_shape_file "${asr_stats_dir}/valid/speech_shape" \
        --valid_shape_file "${asr_stats_dir}/valid/text_shape.${token_type}" \
        --resume true --fold_length 80000 --fold_length 150 \
        --output_dir "${asr_exp}" "${_train_extra[@]}" ${asr_args}
    [ -e "${asr_exp}/${inference_model}" ] || { echo "$0: training ended without ${asr_exp}/${inference_model}; see ${asr_exp}/train.log" >&2; exit 1; }
    # Options a later decode needs (parsed, never sourced, by pyutils.asr.decode_dir:
    # key=value lines with plain values).
    printf 'lang=%s\ntoken_type=%s\nnbpe=%s\nnvv_tags=%s\nfs=%s\nwhisper=%s\nwhisper_model=%s\n' "${lang}" "${token_type}" \
      "${nbpe}" "${nvv_tags}" "${fs}" "${whisper}" "${whisper_model}" > "${asr_exp}/recipe_options.sh"
    stage_mark "${asr_exp}/.train.done" "${_trained[@]}"
  fi
fi

# ---------------------------------------------------------------- stage 6
if [ "${asr_method}" = espnet ] && in_stage 6 "decode"; then
  log "stage 6: decode ${test_sets} with ${asr_exp}/${inference_model} (${inference_config})"
  [ -f "${asr_exp}/config.yaml" ] || { echo "$0: ${asr_exp}/config.yaml not found: train first (stage 5) or give --asr_exp" >&2; exit 1; }
  [ -e "${asr_exp}/${inference_model}" ] || { echo "$0: ${asr_exp}/${inference_model} not found" >&2; exit 1; }
  [ -f "${inference_config}" ] || { echo "$0: decoding config ${inference_config} not found" >&2; exit 1; }
  _ngpu_inf=0; [ "${gpu_inference}" = true ] && _ngpu_inf=1
  for dset in ${test_sets}; do
    _data=${dumpdir}/raw/${dset}
    _dir=${decode_root}/${dset}
    _logdir=${_dir}/logdir
    dumped_test_set "${dset}" || continue
    rm -rf "${_logdir}"; mkdir -p "${_logdir}"
    cp "${inference_config}" "${_dir}/decode_config.yaml"
    _nj=$(min "${inference_nj}" "$(nlines "${_data}/wav.scp")")
    split_keys "${_data}/wav.scp" "${_logdir}/keys.scp" "${_nj}"
    _rc=0
    # One thread per job (Kaldi convention; oversubscribed OpenMP threads spin).
    OMP_NUM_THREADS=1 \
    ${decode_cmd} --gpu "${_ngpu_inf}" JOB=1:"${_nj}" "${_logdir}/asr_inference.JOB.log" \
      python -m "${_asr_inference_mod}" --batch_size 1 --ngpu "${_ngpu_inf}" \
        --data_path_and_name_and_type "${_data}/wav.scp,speech,sound" \
        --key_file "${_logdir}/keys.scp.JOB" \
        --asr_train_config "${asr_exp}/config.yaml" --asr_model_file "${asr_exp}/${inference_model}" \
        --output_dir "${_logdir}/output.JOB" --config "${inference_config}" ${inference_args} || _rc=$?
    if [ ${_rc} -ne 0 ]; then
      if [ -f "${datadir}/${dset}/text" ]; then
        echo "$0: decoding ${dset} failed; see ${_logdir}/asr_inference.*.log" >&2; exit 1
      fi
      log "  WARNING: some decode jobs of ${dset} failed (see ${_logdir}); their utterances get empty transcripts"
    fi
    for i in $(seq "${_nj}"); do
      [ -f "${_logdir}/output.${i}/1best_recog/text" ] && cat "${_logdir}/output.${i}/1best_recog/text"
    done | sort > "${_dir}/text.raw" || true
    if [ "${token_type}" = whisper ]; then
      mv "${_dir}/text.raw" "${_dir}/tokens.raw"
      ${decode_cmd} "${_logdir}/whisper_decode_tokens.log" \
        python -m pyutils.asr.whisper_tokens decode --model "${whisper_model:-base}" --lang "${lang}" \
          "${_dir}/tokens.raw" "${_dir}/text.raw"
    fi
    ${decode_cmd} "${_logdir}/repair.log" \
      python -m pyutils.asr.postprocess repair --lang "${lang}" --nvv-tags "${nvv_tags}" \
        --keys "${_data}/wav.scp" "${_dir}/text.raw" "${_dir}/text"
    ${decode_cmd} "${_logdir}/rtf.log" \
      python -m pyutils.asr.timing rtf --logdir "${_logdir}" --utt2dur "${_data}/utt2dur" --json "${_dir}/rtf.json"
  done
fi

# ---------------------------------------------------------------- stage 7
# RESULTS.md of this decode (stage 7): ${decode_root}/RESULTS.md, copied to ${asr_exp}/
# (unless --copy_results false) and to the recipe dir after a default run.
write_results() {
  ${decode_cmd} "${decode_root}/log/results.log" \
    python -m pyutils.asr.results --exp "${asr_exp}" --decode-root "${decode_root}" --inference-tag "${inference_tag}" \
      --test-sets "${test_sets}" --lang "${lang}" --preset "${preset}" --asr-method "${asr_method}" --asr-config "${asr_config}" \
      --inference-config "${inference_config}" --data "$([ "${use_mini}" = true ] && echo "mini corpus ${mini_dir}" || echo "${corpora}")" \
      --stage-times "${expdir}/stage_times.tsv" --out "${decode_root}/RESULTS.md"
  [ "${copy_results}" = false ] || cp "${decode_root}/RESULTS.md" "${asr_exp}/RESULTS.md"
  if [ "${copy_results}" = true ] || { [ "${copy_results}" = auto ] && [ "${preset}" = default ]; }; then
    # The default path (egs/nvv_asr_*/run.sh: the cascade) owns RESULTS.md; the ESPnet
    # conformer and the Whisper fine-tuning have their own files.
    local _name=RESULTS.md
    [ "${asr_method}" = espnet ] && _name=RESULTS_conformer.md
    [ "${whisper}" = true ] && _name=RESULTS_whisper.md
    ${decode_cmd} "${decode_root}/log/copy_results.log" \
      python -m pyutils.results_file --report "${decode_root}/RESULTS.md" --into "${_name}"
    log "  RESULTS.md -> $(pwd)/${_name}"
  fi
}

if in_stage 7 "score"; then
  log "stage 7: score -> ${decode_root}/<set>/score, RESULTS.md"
  _scored=()
  for dset in ${test_sets}; do
    _dir=${decode_root}/${dset}
    [ -f "${_dir}/text" ] || { log "  ${dset}: not decoded, not scored"; continue; }
    if [ ! -f "${datadir}/${dset}/text" ]; then
      log "  ${dset}: no reference text, not scored"; continue
    fi
    if [ "${nvv_tags}" != true ] || { [ "${lang}" != en ] && [ "${lang}" != zh ]; }; then
      _sc=${_dir}/score; mkdir -p "${_sc}"
      ${decode_cmd} "${_sc}/wer.log" \
        python -m pyutils.asr.wer --lang "${lang}" --nvv-tags "${nvv_tags}" \
          --ref "${datadir}/${dset}/text" --hyp "${_dir}/text" --json "${_sc}/wer.json"
      _scored+=("${dset}"); continue
    fi
    _sc=${_dir}/score; mkdir -p "${_sc}"
    # Reference JSONL from the Kaldi text; the hypothesis goes through the official
    # packager, i.e. exactly the JSONL a submission would hold.
    ${decode_cmd} "${_sc}/ref_jsonl.log" \
      python -m pyutils.asr.postprocess jsonl --lang "${lang}" "${datadir}/${dset}/text" "${_sc}/ref.jsonl"
    ${decode_cmd} "${_sc}/package.log" \
      chorus-score package-track1 --text "${_dir}/text" --ref-ids "${_sc}/ref.jsonl" --out "${_sc}/hyp.jsonl"
    ${decode_cmd} "${_sc}/track1.log" \
      chorus-score track1 --single-language --ref "${_sc}/ref.jsonl" --hyp "${_sc}/hyp.jsonl" \
        --output-json "${_sc}/track1.json" --per-utt-report "${_sc}/track1_per_utt.txt"
    if [ "${score_nvbench}" = true ]; then
      ${decode_cmd} "${_sc}/nvbench.log" \
        chorus-score nvbench --format kaldi --lang "${lang}" --ref "${datadir}/${dset}/text" --hyp "${_dir}/text" \
          --output-json "${_sc}/nvbench.json" \
        || log "  WARNING: chorus-score nvbench failed: see ${_sc}/nvbench.log"
    fi
    _scored+=("${dset}")
  done
  _ps=/usr/share/pocketsphinx/test/data/librivox/transcription
  if [ "${real_speech}" = true ] || { [ "${real_speech}" = auto ] && [ "${lang}" = en ] && [ "${preset}" != ci ] && [ -f "${_ps}" ]; }; then
    log "  real speech: decoding pocketsphinx-testdata (log: ${decode_root}/real_speech/log/real_speech.log)"
    mkdir -p "${decode_root}/real_speech"
    ${decode_cmd} "${decode_root}/real_speech/log/real_speech.log" \
      python -m pyutils.asr.real_speech --asr-exp "$(cd "${asr_exp}" && pwd)" --work "${decode_root}/real_speech" \
        --md "${decode_root}/real_speech/table.md" \
      || log "  WARNING: real-speech evaluation failed: see ${decode_root}/real_speech/log/real_speech.log"
  fi
  write_results
  log "  ${decode_root}/RESULTS.md:"
  grep -E '^(## |Track1Score|WER|CER)' "${decode_root}/RESULTS.md" | sed 's/^/    /' || true
fi

# ---------------------------------------------------------------- stage 8
if in_stage 8 "package"; then
  log "stage 8: package Track 1 submissions for: ${package_sets}"
  _subdir=submission/$(basename "${asr_exp}")
  mkdir -p "${_subdir}"
  for dset in ${package_sets}; do
    _dir=${decode_root}/${dset}
    [ -f "${_dir}/text" ] || { echo "$0: ${_dir}/text not found: decode ${dset} first (stage 6, --test_sets)" >&2; exit 1; }
    _sub=${_subdir}/track1_${dset}.jsonl
    ${decode_cmd} "${decode_root}/log/package_${dset}.log" \
      chorus-score package-track1 --text "${_dir}/text" --ref-ids "${dumpdir}/raw/${dset}/wav.scp" \
        --out "${_sub}" --zip "${_sub%.jsonl}.zip"
    ${decode_cmd} "${decode_root}/log/validate_${dset}.log" \
      chorus-score validate-track1 --hyp "${_sub}"
    log "  ${_sub} (+ .zip): $(nlines "${_sub}") utterances, valid"
  done
fi

stage_end
log "successfully finished stages ${stage}-${stop_stage} [elapsed=${SECONDS}s]"
exit 0
}
