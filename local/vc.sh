#!/usr/bin/env bash
# Vietnamese zero-shot voice conversion (VLSP 2025 VC), two methods (--vc_method):
#   knn      (Task 1, the recipe default) content from the source, timbre from the reference:
#            source frames matched to the reference clip's frames by frozen Whisper base
#            encoder features, WORLD synthesis (pyutils/vc/knn.py); nothing is trained
#            (stages 3-5 are skipped, stage 2 formats the pairs only), WER is the judge's.
#   cascade  (Task 2, everything trained here) ASR(source) -> text, then
#            TTS(text, speaker embedding of the target's reference clip) -> waveform;
#            with --task 1, local checkpoints may replace any model (--pretrained_*).
#
#   0 corpus      mini corpus (chorus-synth vc) or VLSP 2025 VC (chorus-prep vlsp_vc, db.sh)
#   1 data prep   data/: normalised transcripts, speaker-stratified dev split,
#                 pairs lists validated (every problem at once) -> <name>_pairs_{src,ref}
#   2 format      dump/raw/<set>: 16 kHz mono PCM16 audio (pyutils.asr.dump_audio)
#   3 speaker     (cascade) ESPnet-SPK x-vector trained on transcribed + audio-only speech;
#                 embeddings of training utterances and of every reference clip
#   4 ASR         Vietnamese character ASR (local/nvv_asr.sh stages 2-6)
#   5 TTS         (cascade) multi-speaker FastSpeech conditioned on the embeddings, token durations
#                 from an HMM forced alignment of the training speech (local/nvv_tts.sh 2-5)
#   6 convert     knn: pyutils.vc.knn; cascade: ASR of the sources -> TTS with the references'
#                 embeddings -> exp/vc[_knn]_<preset>/convert_<name>/wav/<converted name>
#                 (16 kHz PCM16), validated
#   7 evaluate    SIM(ref,out), SIM(src,out) (resemblyzer), MOS (DNSMOS), WER (pretrained Whisper judge)
#                 -> chorus-score vc -> exp/vc[_knn]_<preset>/RESULTS.md (RESULTS_<name>.md for --pairs)
#   8 package     submission/<name>/ (+ .zip), chorus-score validate-vc
#
# Every stage prints "stage N: ..."; every Python step logs (<exp>/log/<step>.log or the
# set's log/), and a failure prints "stage N failed at vc.sh:<line>" and the log to read
# (utils/stage_prelude.sh); wall/CPU time per stage: <expdir>/stage_times.tsv. A finished
# step leaves its output (or a verified marker <dir>/.<step>.done, utils/stage_prelude.sh)
# and is skipped when run again while that output is intact.
# Options (./run.sh --help lists them with their docs), their checks and the settings derived
# from them: local/vc_options.sh.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/vc_options.sh"   # options, help_message, check_options, derive_settings
. utils/stage_prelude.sh --parse "$@"   # options, path.sh/cmd.sh/db.sh, --preset, stages, lock, clock, failure line
_asr_pid=
trap '[ -z "${_asr_pid}" ] || kill_tree "${_asr_pid}"' EXIT
derive_settings   # configs, corpus_dir, test_sets of --pairs, exp dirs, asr_common/tts_common
mkdir -p "${vc_exp}/log"
log "preset=${preset} task=${task} vc_method=${vc_method} corpus=${corpus} (${corpus_dir}) test_sets=${test_sets} nj=${nj}"
pairs_tsv() { if [ -n "${pairs}" ]; then echo "${pairs}"; else echo "${corpus_dir}/pairs/$1.tsv"; fi; }   # name -> TSV
local_asr() { ./local/nvv_asr.sh "${asr_common[@]}" "$@"; }   # the recipe ASR on Kaldi dirs under dump/raw
asr_decode() {  # asr_decode SET... -> ${asr_exp}/decode/<set>/text
  local_asr --stage 2 --stop_stage 2 --test_sets "$*"
  local_asr --stage 6 --stop_stage 6 --test_sets "$*"
}

# ---------------------------------------------------------------- stage 0
if in_stage 0 corpus; then
  log "stage 0: corpus (${corpus}) -> ${corpus_dir}"
  # (chorus-synth's own .done says the corpus was finished; .corpus.done vouches for its files;
  # a corpus made before this marker is adopted once)
  if [ -f "${corpus_dir}/.done" ] && { [ -e "${corpus_dir}/.corpus.done" ] || : > "${corpus_dir}/.corpus.done"; } \
     && stage_done "${corpus_dir}/.corpus.done" --adopt --dir "${corpus_dir}/data"; then
    log "stage 0: ${corpus_dir} is complete, keeping it"
  elif [ "${corpus}" = mini ]; then
    # verified marker (utils/stage_prelude.sh): a damaged corpus is made anew, an unfinished one resumed
    if [ -f "${corpus_dir}/.done" ]; then rm -rf "${corpus_dir}"; fi
    log "stage 0: chorus-synth vc (log ${expdir}/log/synth_vc_${preset}.log)"
    utils/run.pl "${expdir}/log/synth_vc_${preset}.log" \
      chorus-synth vc --preset "${preset}" --out "${corpus_dir}" --nj "${nj}" --cmd "${train_cmd}"
    stage_mark "${corpus_dir}/.corpus.done" --dir "${corpus_dir}"
  else
    mkdir -p "${corpus_dir}/pairs"
    utils/run.pl "${expdir}/log/prep_vlsp_vc.log" \
      chorus-prep vlsp_vc --src "$(corpus_path "${corpus}")" --out "${corpus_dir}/data" \
        --pairs-out "${corpus_dir}/pairs/test.tsv"
    touch "${corpus_dir}/.done"
    stage_mark "${corpus_dir}/.corpus.done" --dir "${corpus_dir}/data" --dir "${corpus_dir}/pairs"
  fi
  stage_end
fi

# ---------------------------------------------------------------- stage 1
if in_stage 1 "data prep"; then
  log "stage 1: data prep -> ${datadir}"
  for s in train_text train_audio test_src test_ref; do
    _src=${corpus_dir}/data/${s}
    if [ ! -f "${_src}/wav.scp" ]; then
      [ "${s}" = train_audio ] && { log "  no audio-only set (${_src})"; continue; }
      echo "$0: ${_src}/wav.scp not found (run stage 0)" >&2; exit 1
    fi
    rm -rf "${datadir:?}/${s}"; mkdir -p "${datadir}/${s}"
    for f in wav.scp utt2spk spk2utt utt2dur; do
      [ -f "${_src}/${f}" ] && cp "${_src}/${f}" "${datadir}/${s}/${f}"
    done
    if [ -f "${_src}/text" ]; then
      cp "${_src}/text" "${datadir}/${s}/text.orig"
      ${train_cmd} "${expdir}/log/norm_text_${s}.log" \
        python -m pyutils.vc.prep norm-text "${_src}/text" "${datadir}/${s}/text"
    fi
    log "  ${datadir}/${s}: $(nlines "${datadir}/${s}/wav.scp") utterances, $(nlines "${datadir}/${s}/spk2utt") speakers"
  done
  ${train_cmd} "${expdir}/log/holdout.log" \
    python -m pyutils.vc.prep holdout --data "${datadir}/train_text" --n-per-spk "${dev_per_spk}" \
      --train "${datadir}/tr_text" --dev "${datadir}/dev_text"
  # The pairs lists: every problem of a list is reported at once, before any conversion.
  for name in ${test_sets}; do
    _tsv=$(pairs_tsv "${name}")
    ${train_cmd} "${expdir}/log/pairs_${name}.log" \
      python -m pyutils.vc.pairs --pairs "${_tsv}" ${audio_root:+--audio-root "${audio_root}"} \
        ${src_text:+--src-text "${src_text}"} \
        --src-text-dir "${datadir}/test_src" \
        --out-src "${datadir}/${name}_pairs_src" --out-ref "${datadir}/${name}_pairs_ref"
  done
  stage_end
fi

# ---------------------------------------------------------------- stage 2
_dump_sets=
if [ "${vc_method}" = cascade ]; then   # the kNN conversion trains nothing: its pairs only
  _dump_sets="tr_text dev_text"
  [ -f "${datadir}/train_audio/wav.scp" ] && _dump_sets+=" train_audio"
fi
for name in ${test_sets}; do _dump_sets+=" ${name}_pairs_src ${name}_pairs_ref"; done
if in_stage 2 "format audio"; then
  log "stage 2: format audio (16 kHz mono PCM16) -> ${dumpdir}/raw"
  for s in ${_dump_sets}; do
    _src=${datadir}/${s}; _out=${dumpdir}/raw/${s}
    _sig=$(for f in wav.scp text utt2spk; do [ ! -f "${_src}/${f}" ] || md5sum < "${_src}/${f}"; done)
    if stage_done "${_out}/.dump.done" --sig "${_sig}"; then
      log "  ${_out} done, skipping"; continue
    fi
    rm -rf "${_out}"; mkdir -p "${_out}/log"
    _nj=$(min "${nj}" "$(nlines "${_src}/wav.scp")")
    ${train_cmd} "${_out}/log/split_scp.log" \
      python -m pyutils.tts.audio split-scp "${_src}/wav.scp" "${_out}/log/wav" "${_nj}"
    _onerr=fail
    case "${s}" in *_pairs_*) _onerr=fail ;; esac
    ${train_cmd} JOB=1:"${_nj}" "${_out}/log/dump.JOB.log" \
      python -m pyutils.asr.dump_audio --fs 16000 --on-error "${_onerr}" --min-dur 0.3 \
        "${_out}/log/wav.JOB.scp" "${_out}/format.JOB"
    for f in wav.scp utt2dur; do
      for i in $(seq "${_nj}"); do cat "${_out}/format.${i}/${f}"; done | sort > "${_out}/${f}"
    done
    for f in text text.orig utt2spk spk2utt pairs.tsv; do
      [ -f "${_src}/${f}" ] && cp "${_src}/${f}" "${_out}/${f}"
    done
    stage_mark "${_out}/.dump.done" --sig "${_sig}" --dir "${_out}"
    log "  ${_out}: $(nlines "${_out}/wav.scp") utterances"
  done
  stage_end
fi

# ---------------------------------------------------------------- stage 3
# Embeddings from the speaker model, one extraction run for all the sets:
# spk_extract SET... -> ${emb_dir}/<set>/xvector.scp (per utterance) + spk_xvector.scp
spk_extract() {
  local _o=${emb_dir}/extract_$$ s _datas=()
  for s in "$@"; do _datas+=(--data "${dumpdir}/raw/${s}"); done
  rm -rf "${_o}"; mkdir -p "${_o}/log" "${_o}/npz"   # spk_embed_extract needs its output dir to exist
  ${decode_cmd} "${_o}/log/trials.log" \
    python -m pyutils.vc.spk_embed extract-trials "${_datas[@]}" --out "${_o}/trials"
  ${decode_cmd} "${_o}/log/extract.log" \
    python -m espnet2.bin.spk_embed_extract --use_preprocessor true --output_dir "${_o}/npz" \
      --data_path_and_name_and_type "${_o}/trials/trial.scp,speech,sound" \
      --data_path_and_name_and_type "${_o}/trials/trial2.scp,speech2,sound" \
      --data_path_and_name_and_type "${_o}/trials/trial_label,spk_labels,text" \
      --shape_file "${_o}/trials/speech_shape" --fold_length 120000 --average_embd true \
      --spk_train_config "${spk_exp}/config.yaml" --spk_model_file "${spk_exp}/${spk_inference_model}"
  for s in "$@"; do
    rm -rf "${emb_dir:?}/${s}"; mkdir -p "${emb_dir}/${s}"
    cp "${_o}/npz/trials_embeddings.npz" "${emb_dir}/${s}/embeddings.npz"
    ${decode_cmd} "${emb_dir}/log/to_ark_${s}.log" \
      python -m pyutils.vc.spk_embed to-ark --npz "${emb_dir}/${s}/embeddings.npz" \
        --data "${dumpdir}/raw/${s}" --out "${emb_dir}/${s}"
  done
  mkdir -p "${emb_dir}/log"; mv "${_o}/log/extract.log" "${emb_dir}/log/extract.$(date +%s).log"
  rm -rf "${_o}"
}
if [ "${vc_method}" = knn ] && in_stage 3 "speaker model + embeddings"; then
  log "stage 3: skipped: the kNN conversion needs no speaker model (SIM is judged by pretrained encoders)"
elif in_stage 3 "speaker model + embeddings"; then
  if [ -n "${pretrained_spk}" ]; then
    log "stage 3: speaker model: pretrained ${pretrained_spk} (task 1), not trained"
  elif stage_done "${spk_exp}/.train.done" --adopt "${spk_exp}/${spk_inference_model}" "${spk_exp}/config.yaml"; then
    log "stage 3: ${spk_exp} is trained, not training again"
  else
    log "stage 3: train the speaker model (${spk_config}) -> ${spk_exp}"
    _tr=${dumpdir}/raw/spk_train
    _srcs=("${dumpdir}/raw/tr_text")
    if [ "${spk_use_audio_only}" = true ] && [ -f "${dumpdir}/raw/train_audio/wav.scp" ]; then
      _srcs+=("${dumpdir}/raw/train_audio")
    fi
    rm -rf "${_tr}"; mkdir -p "${_tr}"
    for f in wav.scp utt2spk utt2dur; do cat "${_srcs[@]/%//${f}}" | sort > "${_tr}/${f}"; done
    awk '{s[$2]=s[$2]" "$1} END {for (k in s) print k s[k]}' "${_tr}/utt2spk" | sort > "${_tr}/spk2utt"
    cp "${_tr}/spk2utt" "${_tr}/category2utt"   # the category iterator samples by speaker
    awk '{printf "%s %d\n", $1, $2 * 16000}' "${_tr}/utt2dur" > "${_tr}/speech_shape"
    ${train_cmd} "${spk_exp}/log/valid_trials.log" \
      python -m pyutils.vc.spk_embed valid-trials --data "${dumpdir}/raw/dev_text" \
        --out "${dumpdir}/raw/spk_valid" --n 200
    _nspk=$(nlines "${_tr}/spk2utt")
    log "  ${_nspk} speakers, $(nlines "${_tr}/wav.scp") utterances ($(echo "${_srcs[@]}")); log: ${spk_exp}/train.log"
    mkdir -p "${spk_exp}"
    _cmd=${train_cmd}; [ "${ngpu}" -gt 0 ] && _cmd=${cuda_cmd}
    # shellcheck disable=SC2086
    ${_cmd} --gpu "${ngpu}" "${spk_exp}/train.log" \
      python -m espnet2.bin.spk_train --use_preprocessor true --ngpu "${ngpu}" \
        --config "${spk_config}" --use_tensorboard false \
        --train_data_path_and_name_and_type "${_tr}/wav.scp,speech,sound" \
        --train_data_path_and_name_and_type "${_tr}/utt2spk,spk_labels,text" \
        --valid_data_path_and_name_and_type "${dumpdir}/raw/spk_valid/trial.scp,speech,sound" \
        --valid_data_path_and_name_and_type "${dumpdir}/raw/spk_valid/trial2.scp,speech2,sound" \
        --valid_data_path_and_name_and_type "${dumpdir}/raw/spk_valid/trial_label,spk_labels,text" \
        --train_shape_file "${_tr}/speech_shape" --valid_shape_file "${dumpdir}/raw/spk_valid/speech_shape" \
        --fold_length 120000 --spk2utt "${_tr}/spk2utt" --spk_num "${_nspk}" \
        --resume true --output_dir "${spk_exp}" ${spk_args}
    [ -e "${spk_exp}/${spk_inference_model}" ] || { echo "$0: no ${spk_exp}/${spk_inference_model}; see ${spk_exp}/train.log" >&2; exit 1; }
    grep -o "valid\] eer=[0-9.]*" "${spk_exp}/train.log" | tail -n 1 | sed 's/^/  last epoch: /' || true
    stage_mark "${spk_exp}/.train.done" "${spk_exp}/${spk_inference_model}" "${spk_exp}/config.yaml"
  fi
  log "stage 3: speaker embeddings -> ${emb_dir}/<set>/xvector.scp"
  _emb_sets="tr_text dev_text"
  for name in ${test_sets}; do _emb_sets+=" ${name}_pairs_ref"; done
  [ "${tts_audio_only_asr}" = true ] && _emb_sets+=" train_audio"
  # shellcheck disable=SC2086
  spk_extract ${_emb_sets}
  if ${decode_cmd} "${emb_dir}/log/eer_dev.log" \
       python -m pyutils.vc.spk_embed eer --npz "${emb_dir}/dev_text/embeddings.npz" \
         --trials "${dumpdir}/raw/spk_valid/trial_label"; then
    grep -v '^#' "${emb_dir}/log/eer_dev.log" | tee "${spk_exp}/eer_dev.txt"
  fi
  stage_end
fi

# ---------------------------------------------------------------- stage 4
asr_stage() {  # $1: torch threads of the ASR training
  if [ -n "${pretrained_asr}" ]; then
    log "stage 4: ASR: pretrained ${pretrained_asr} (task 1), not trained"
  else
    log "stage 4: Vietnamese character ASR (${asr_config}) -> ${asr_exp} (local/nvv_asr.sh stages 2-6)"
    mkdir -p "${asr_exp}"
    local_asr --stage 2 --stop_stage 6 --test_sets dev_text --asr_config "${asr_config}" \
      --train_threads "$1" ${asr_args:+--asr_args "${asr_args}"}
    _wer=$(python -m pyutils.vc.evaluate wer --ref "${dumpdir}/raw/dev_text/text" \
      --hyp "${asr_exp}/decode/dev_text/text" 2>/dev/null || echo "n/a")
    echo "${_wer}" > "${asr_exp}/wer_dev_text.txt"
    log "  ASR WER on dev_text (held-out utterances of training speakers): ${_wer}"
  fi
  if [ "${tts_audio_only_asr}" = true ] && [ -f "${dumpdir}/raw/train_audio/wav.scp" ]; then
    log "stage 4: ASR transcripts of the audio-only set (for TTS training)"
    asr_decode train_audio
  fi
}
if [ "${vc_method}" = knn ] && in_stage 4 "ASR (foreground, or the start of the background job)"; then
  log "stage 4: skipped: the kNN conversion trains no ASR (WER: the judge; pairs without transcripts are scored against its transcript of the source)"
elif in_stage 4 "ASR (foreground, or the start of the background job)"; then
  if [ "${parallel_train}" = true ] && [ "${stop_stage}" -ge 5 ] && [ "${tts_audio_only_asr}" = false ] \
     && [ "${vc_method}" = cascade ] \
     && [ -z "${pretrained_asr}" ] && [ -z "${pretrained_tts}" ]; then
    log "stage 4: ASR training runs in the background, in parallel with stage 5 (log: ${vc_exp}/log/asr.log)"
    asr_stage 1 > "${vc_exp}/log/asr.log" 2>&1 &
    _asr_pid=$!
  else
    asr_stage auto 2>&1 | tee "${vc_exp}/log/asr.log"
  fi
  stage_end
fi

# ---------------------------------------------------------------- stage 5
if [ "${vc_method}" = knn ] && in_stage 5 TTS; then
  log "stage 5: skipped: the kNN conversion trains no TTS"
# bash reaps a background job as soon as it ends: the ASR's CPU is counted in the row
# during which it ended (this one or the wait below); add both rows for the parallel part
elif in_stage 5 "TTS$([ -z "${_asr_pid}" ] || echo " (parallel with the stage 4 ASR)")"; then
  _edim=$(python -c "import kaldiio,sys; print(next(iter(kaldiio.load_scp('${emb_dir}/tr_text/xvector.scp').values())).shape[0])")
  ${train_cmd} "${vc_exp}/log/tts_dir_dev.log" \
    python -m pyutils.vc.prep tts-dir --text "${dumpdir}/raw/dev_text/text" --utt2spk "${dumpdir}/raw/dev_text/utt2spk" \
      --embed "${emb_dir}/dev_text/xvector.scp" --wav-scp "${dumpdir}/raw/dev_text/wav.scp" --out "${tts_data}/tts_dev"
  if [ -n "${pretrained_tts}" ]; then
    log "stage 5: TTS: pretrained ${pretrained_tts} (task 1), not trained"
  else
    log "stage 5: multi-speaker TTS conditioned on ${_edim}-dim speaker embeddings (${tts_config}) -> ${tts_exp}"
    ${train_cmd} "${vc_exp}/log/tts_dir_train.log" \
      python -m pyutils.vc.prep tts-dir --text "${dumpdir}/raw/tr_text/text" --utt2spk "${dumpdir}/raw/tr_text/utt2spk" \
        --embed "${emb_dir}/tr_text/xvector.scp" --wav-scp "${dumpdir}/raw/tr_text/wav.scp" --out "${tts_data}/tts_train"
    if [ "${tts_audio_only_asr}" = true ] && [ -f "${asr_exp}/decode/train_audio/text" ]; then
      ${train_cmd} "${vc_exp}/log/tts_dir_audio_asr.log" \
        python -m pyutils.vc.prep tts-dir --text "${asr_exp}/decode/train_audio/text" \
          --utt2spk "${dumpdir}/raw/train_audio/utt2spk" --embed "${emb_dir}/train_audio/xvector.scp" \
          --wav-scp "${dumpdir}/raw/train_audio/wav.scp" --out "${tts_data}/tts_audio_asr"
      for f in text utt2spk spk_embed.scp wav.scp; do
        cat "${tts_data}/tts_train/${f}" "${tts_data}/tts_audio_asr/${f}" | sort -o "${tts_data}/tts_train/${f}"
      done
      awk '{s[$2]=s[$2]" "$1} END {for (k in s) print k s[k]}' "${tts_data}/tts_train/utt2spk" | sort > "${tts_data}/tts_train/spk2utt"
      log "  + $(nlines "${tts_data}/tts_audio_asr/text") audio-only utterances with ASR transcripts"
    fi
    ./local/nvv_tts.sh "${tts_common[@]}" --stage 2 --stop_stage 5 --test_sets tts_dev \
      --spk_embed_dim "${_edim}" ${tts_args:+--train_args "${tts_args}"} 2>&1 | tee "${vc_exp}/log/tts.log"
    [ -e "${tts_exp}/${tts_inference_model}" ] || { echo "$0: no ${tts_exp}/${tts_inference_model}; see ${tts_exp}/log/train.log" >&2; exit 1; }
  fi
  stage_end
fi

if [ -n "${_asr_pid}" ]; then
  stage_begin 4 "ASR, wait for the background job (parallel with stage 5)"
  log "stage 4: waiting for the background ASR training (log: ${vc_exp}/log/asr.log)"
  _bg=${_asr_pid}; _asr_pid=
  step_log=${vc_exp}/log/asr.log   # a failure of the background asr_stage names its log
  wait "${_bg}"
  step_log=
  grep -E "ASR WER on dev_text|successfully finished" "${vc_exp}/log/asr.log" | tail -n 2
  stage_end
fi

# ---------------------------------------------------------------- stage 6
if in_stage 6 convert; then
  [ "${vc_method}" = knn ] \
    || _edim=$(python -c "import kaldiio,sys; print(next(iter(kaldiio.load_scp('${emb_dir}/tr_text/xvector.scp').values())).shape[0])")
  for name in ${test_sets}; do
    log "stage 6: convert the pairs of ${name}"
    # Checked again here: a list edited after stage 1 must not fail halfway through.
    ${train_cmd} "${vc_exp}/log/pairs_check_${name}.log" \
      python -m pyutils.vc.pairs --pairs "$(pairs_tsv "${name}")" ${audio_root:+--audio-root "${audio_root}"} \
        ${src_text:+--src-text "${src_text}"}
    _src=${name}_pairs_src
    if [ "${vc_method}" = knn ]; then
      log "  kNN conversion (log: ${vc_exp}/log/convert_${name}.log)"
      _out=${vc_exp}/convert_${name}/wav
      rm -rf "${_out}"
      ${decode_cmd} "${vc_exp}/log/convert_${name}.log" \
        python -m pyutils.vc.knn --pair-table "${dumpdir}/raw/${_src}/pairs.tsv" --out "${_out}" \
          ${knn_args}
      grep -v '^#' "${vc_exp}/log/convert_${name}.log" | tail -n 1
      ${decode_cmd} "${vc_exp}/log/validate_${name}.log" \
        chorus-score validate-vc --pairs "$(pairs_tsv "${name}")" --dir "${_out}"
      grep -v '^#' "${vc_exp}/log/validate_${name}.log" | tail -n 2
      continue
    fi
    log "  ASR of the ${name} sources"
    logged "${vc_exp}/log/asr_${_src}.log" asr_decode "${_src}"
    [ -f "${emb_dir}/${name}_pairs_ref/xvector.scp" ] || spk_extract "${name}_pairs_ref"
    _tset=${name}_pairs${_tsfx}
    _text=${asr_exp}/decode/${_src}/text
    if [ "${oracle_text}" = true ]; then
      [ -f "${dumpdir}/raw/${_src}/text" ] || { echo "$0: --oracle_text true needs the sources' transcripts (${dumpdir}/raw/${_src}/text)" >&2; exit 2; }
      _text=${dumpdir}/raw/${_src}/text
      log "  --oracle_text true: the TTS reads the true source transcripts (diagnosis, not a conversion system)"
    fi
    # Every pair must be converted: a pair whose reference clip has no embedding is an
    # error naming it; an empty ASR transcript gets a one-syllable placeholder ('a'),
    # counted, named in the log and listed in ${tts_data}/${_tset}/empty_text_fallback;
    # characters the Vietnamese TTS front-end refuses (brackets, other scripts) are removed,
    # counted and listed in ${tts_data}/${_tset}/text_cleaned.
    ${train_cmd} "${vc_exp}/log/tts_dir_${_tset}.log" \
      python -m pyutils.vc.prep tts-dir --text "${_text}" \
        --utt2spk "${dumpdir}/raw/${name}_pairs_ref/utt2spk" --embed "${emb_dir}/${name}_pairs_ref/xvector.scp" \
        --out "${tts_data}/${_tset}" --strict --empty-text a --lang vi
    grep -v '^#' "${vc_exp}/log/tts_dir_${_tset}.log" | tail -n 3
    log "  TTS with the reference clips' embeddings (log: ${vc_exp}/log/tts_${name}.log)"
    logged "${vc_exp}/log/tts_${name}_dump.log" \
      ./local/nvv_tts.sh "${tts_common[@]}" --stage 2 --stop_stage 2 --test_sets "${_tset}" --spk_embed_dim "${_edim}"
    logged "${vc_exp}/log/tts_${name}.log" \
      ./local/nvv_tts.sh "${tts_common[@]}" --stage 6 --stop_stage 6 --test_sets "${_tset}" \
        --spk_embed_dim "${_edim}" --inference_args "${tts_inference_args}"
    _out=${vc_exp}/convert_${name}/wav
    rm -rf "${_out}"
    ${decode_cmd} "${vc_exp}/log/convert_${name}.log" \
      python -m pyutils.vc.convert --pairs "${dumpdir}/raw/${_src}/pairs.tsv" \
        --tts-dir "${tts_exp}/synth_${_tset}/wav" --out "${_out}" --f0-match "${f0_match}"
    grep -v '^#' "${vc_exp}/log/convert_${name}.log" | tail -n 1
    ${decode_cmd} "${vc_exp}/log/validate_${name}.log" \
      chorus-score validate-vc --pairs "$(pairs_tsv "${name}")" --dir "${_out}"
    grep -v '^#' "${vc_exp}/log/validate_${name}.log" | tail -n 2
  done
  stage_end
fi

# ---------------------------------------------------------------- stage 7
if in_stage 7 evaluate; then
  _report_args=()
  for name in ${test_sets}; do
    log "stage 7: evaluate ${name} (SIM: resemblyzer + d-vector, MOS: DNSMOS + DistillMOS, WER: ${wer_asr})"
    _src=${name}_pairs_src; _o=${name}_pairs_out${_tsfx}; _e=${vc_exp}/eval_${name}
    mkdir -p "${_e}" "${dumpdir}/raw/${_o}"
    # the converted files as a data dir keyed by pair id, decoded by the recipe ASR
    awk -F'\t' -v d="$(pwd)/${vc_exp}/convert_${name}/wav" '{print $1, d "/" $4}' \
      "${dumpdir}/raw/${_src}/pairs.tsv" | sort > "${dumpdir}/raw/${_o}/wav.scp"
    awk '{print $1, $1}' "${dumpdir}/raw/${_o}/wav.scp" > "${dumpdir}/raw/${_o}/utt2spk"
    cp "${dumpdir}/raw/${_o}/utt2spk" "${dumpdir}/raw/${_o}/spk2utt"
    mkdir -p "${_e}/log"
    # Both listeners (the kNN conversion: the judge only, it trains no ASR): the independent
    # judge (pretrained Whisper, as VLSP scores with a pretrained ASR) and the recipe's own ASR,
    # each on the outputs and on the sources (the sources give each listener's ceiling on this
    # data). --wer_asr picks the Score's.
    for _w in "${_o}" "${_src}"; do
      ${decode_cmd} "${_e}/log/judge_${_w}.log" \
        python -m pyutils.whisper.judge --lang vi --model "${judge_model}" \
          --wav-scp "${dumpdir}/raw/${_w}/wav.scp" --out "${_e}/judge/${_w}/text"
    done
    if [ "${vc_method}" = cascade ]; then
      logged "${vc_exp}/log/asr_${_o}.log" asr_decode "${_o}"
    fi
    if [ "${wer_asr}" = judge ]; then _hyp=${_e}/judge/${_o}/text; else _hyp=${asr_exp}/decode/${_o}/text; fi
    # reference words: the source transcript, else the ASR transcript of the source (kNN: the judge's)
    if [ -f "${dumpdir}/raw/${_src}/text" ]; then
      _ref=${dumpdir}/raw/${_src}/text; _refdesc="source transcripts"
    elif [ "${vc_method}" = knn ]; then
      _ref=${_e}/judge/${_src}/text; _refdesc="the judge's transcripts of the sources (no source transcripts)"
    else
      _ref=${asr_exp}/decode/${_src}/text; _refdesc="ASR transcripts of the sources (no source transcripts)"
    fi
    log "  WER reference: ${_refdesc}; Score's WER by: ${wer_asr}"
    rm -f "${_e}/wer_table.tsv"
    for _row in "judge:${_e}/judge/${_src}/text:judge (Whisper base) on the source recordings (its ceiling)" \
                "judge:${_e}/judge/${_o}/text:judge (Whisper base) on the converted outputs" \
                "recipe:${asr_exp}/decode/${_src}/text:recipe ASR on the source recordings (the cascade's text)" \
                "recipe:${asr_exp}/decode/${_o}/text:recipe ASR on the converted outputs"; do
      IFS=: read -r _by _h _label <<< "${_row}"
      [ "${_h}" = "${_ref}" ] && continue   # no transcripts: the ASR of the sources is the reference
      [ "${_by}" = recipe ] && [ "${vc_method}" = knn ] && continue   # no recipe ASR
      _v=$(python -m pyutils.vc.evaluate wer --ref "${_ref}" --hyp "${_h}")
      printf '%s\t%s\t%s\n' "${_label}" "${_v}" "$([ "${_by}" = "${wer_asr}" ] && [ "${_h}" = "${_hyp}" ] && echo "Score" || true)" \
        >> "${_e}/wer_table.tsv"
      log "  corpus WER, ${_label}: ${_v}"
    done
    grep "judge (Whisper base) on the source" "${_e}/wer_table.tsv" | cut -f2 > "${_e}/judge_wer_sources.txt" || true
    ${decode_cmd} "${_e}/log/evaluate.log" \
      python -m pyutils.vc.evaluate --pairs "${dumpdir}/raw/${_src}/pairs.tsv" \
        --out-dir "${vc_exp}/convert_${name}/wav" --ref-text "${_ref}" \
        --hyp-text "${_hyp}" --output "${_e}/components.tsv"
    grep -v '^#' "${_e}/log/evaluate.log" | tail -n 1
    ${decode_cmd} "${_e}/log/score.log" \
      chorus-score vc --hyp "${_e}/components.tsv" --output-json "${_e}/score.json"
    grep -v '^#' "${_e}/log/score.log" | sed 's/^/  /'
    _report_args+=(--set "${name}" "${_e}/components.tsv" "${_e}/score.json" --wer-table "${name}" "${_e}/wer_table.tsv")
  done
  _asr_note="ASR ${asr_exp} (WER on held-out dev_text $(cat "${asr_exp}/wer_dev_text.txt" 2>/dev/null || echo "n/a"))"
  if [ "${vc_method}" = knn ]; then
    _models_note="Conversion: kNN (pyutils/vc/knn.py: frozen Whisper base encoder block features, matched reference frames, WORLD; a pretrained model, so Task 1; options: ${knn_args:-defaults}); nothing trained (no speaker model, ASR or TTS)."
  else
    _models_note="Models: speaker ${spk_exp} ($(cat "${spk_exp}/eer_dev.txt" 2>/dev/null || echo "EER n/a")); ${_asr_note}; TTS ${tts_exp} ($(basename "${tts_config}")); f0_match=${f0_match}."
  fi
  _report=${vc_exp}/RESULTS.md   # a --pairs list gets its own report beside the test set's
  [ -n "${pairs}" ] && _report=${vc_exp}/RESULTS_${test_sets}.md
  ${decode_cmd} "${vc_exp}/log/report.log" \
  python -m pyutils.vc.report "${_report_args[@]}" --output "${_report}" \
    --note "Recipe: egs/vivc, preset=${preset}, task=${task}, corpus=${corpus} (${corpus_dir}).$([ "${oracle_text}" = true ] && echo " DIAGNOSIS RUN (--oracle_text true): the TTS read the true source transcripts, not the ASR's; not a conversion system.")" \
    --note "${_models_note}" \
    --wer-by "$([ "${wer_asr}" = judge ] && echo "the pretrained Whisper base judge (pyutils/whisper/judge.py, never trained on Chorus data; VLSP scores with a pretrained ASR too, so the judge is the faithful proxy)" || echo "the recipe's own ASR (trained on this corpus: a lenient listener)")" \
    --note "Run: host load $(cut -d' ' -f1-3 /proc/loadavg), $(env -u OMP_NUM_THREADS nproc) CPUs, elapsed so far ${SECONDS}s."
  log "stage 7: ${_report}"
  ${decode_cmd} "${vc_exp}/log/report_check.log" \
    python -m pyutils.vc.report --check "${_report}"
  grep -v '^#' "${vc_exp}/log/report_check.log" | sed 's/^/  /'
  # the recipe's default (kNN, default options) on the mini corpus's test pairs fills ./RESULTS.md
  if [ "${preset}" = default ] && [ "${corpus}" = mini ] && [ "${vc_method}" = knn ] && [ -z "${knn_args}" ] \
     && [ -z "${pairs}" ] && [ "${oracle_text}" = false ]; then
    ${decode_cmd} "${vc_exp}/log/copy_results.log" \
      python -m pyutils.results_file --report "${vc_exp}/RESULTS.md" --into RESULTS.md
    for name in ${test_sets}; do
      [ -f "${vc_exp}/sim_${name}.png" ] && cp "${vc_exp}/sim_${name}.png" .
    done
    log "  copied to $(pwd)/RESULTS.md"
  fi
  stage_end
fi

# ---------------------------------------------------------------- stage 8
if [ "${oracle_text}" = true ] && in_stage 8 package; then
  log "stage 8: skipped (--oracle_text true is a diagnosis, not a submission)"
elif in_stage 8 package; then
  for name in ${test_sets}; do
    _sub=${submission_dir}/${name}
    log "stage 8: package ${name} -> ${_sub} (+ ${_sub}.zip)"
    rm -rf "${_sub}"; mkdir -p "${_sub}"
    cp "${vc_exp}/convert_${name}/wav/"*.wav "${_sub}/"
    ${decode_cmd} "${vc_exp}/log/package_${name}.validate.log" \
      chorus-score validate-vc --pairs "$(pairs_tsv "${name}")" --dir "${_sub}"
    grep -v '^#' "${vc_exp}/log/package_${name}.validate.log" | tail -n 1
    ${decode_cmd} "${vc_exp}/log/package_${name}.zip.log" \
      python -m pyutils.vc.package_zip --dir "${_sub}" --out "${submission_dir}/${name}.zip"
    log "  $(find "${_sub}" -name '*.wav' | wc -l) files, ${_sub}.zip"
  done
fi

stage_end
log "Successfully finished stages ${stage}-${stop_stage} [elapsed=${SECONDS}s]"
