#!/usr/bin/env bash
# NVV-controllable TTS stages (ESPnet egs2/TEMPLATE/tts1 style), shared by
# egs/nvv_tts (tagged text -> speech with laughs, coughs, ...) and any recipe
# that needs a multi-speaker TTS on Kaldi data dirs (e.g. egs/vivc).
#
#   0 corpus         mini nvv corpus (chorus-synth) or a real corpus (chorus-prep, db.sh)
#   1 data prep      data/<set>: copy + check tagged transcripts (tags known, text non-empty)
#   2 format/dump    dump/raw/<set>: front-end tokens (tags atomic), wav.scp, utt2sid/spk_embed;
#                    WORLD-feature models: feats.scp of train/valid (pyutils/tts/world.py, --world_conf)
#   3 tokens         token list (train tokens + every challenge tag); duration models (FastSpeech):
#                    token durations by forced alignment (pyutils/tts/align.py, NVV spans pinned)
#   4 stats          ESPnet --collect_stats (feature/shape statistics)
#   5 train          espnet2.bin.{gan_tts,tts}_train
#   6 synthesis      espnet2.bin.tts_inference for every test set (+ --infer_jsonl); log-mel
#                    models: Griffin-Lim by pyutils/tts/vocoder.py (--vocoder, --gl_iters, --gl_power),
#                    WORLD-feature models (config with odim): the WORLD vocoder (pyutils/tts/world.py)
#   7 evaluation     ASR-based CER/PCER/OCER + Track 1 F1/mNTD, Whisper judge WER, YAMNet NVV recall/false
#                    alarms, speaker SIM (2 encoders), DNSMOS + DistillMOS, FD -> RESULTS.md
#   8 submission     <utt_id>.wav 16 kHz mono PCM16 + chorus-score validate-track2
#
# --tts_method cascade (the default of egs/nvv_tts/run.sh for en and zh; pyutils/tts/cascade.py):
# nothing is trained. 2 dumps the front-end tokens (no WORLD features), 3 the token list (no
# alignment), 4 is not used, 5 makes a kNN "speaker model" per target speaker (its training
# recordings, NVVs cut out: Whisper-encoder content + WORLD frames; --tts_convert true), 6 speaks
# the words between tags with a pretrained voice of the voice bank (--tts_voice), splices a
# recorded NVV of the bank's train split per tag (else the corpus's generated sound) and converts
# the speech to the target speaker by kNN-VC (pyutils/vc/knn.py); 7 and 8 as above.
#
# Every stage prints "stage N: ..."; every Python step logs to <exp>/log/<step>.log (or the
# set's log/ dir), and a failure prints "stage N failed at nvv_tts.sh:<line>" and the log to
# read (utils/stage_prelude.sh); wall/CPU time per stage: <expdir>/stage_times.tsv.
# Stages 1-7 (and 0 for the mini corpus) leave verified markers <dir>/.<step>.done
# (chain_done/chain_mark of utils/stage_prelude.sh: output
# files with sizes and checksums, the settings, and the markers of the steps they read from):
# a rerun skips a finished stage (per set in stages 2 and 6) while its outputs are intact and
# it would be made from the same inputs, and redoes it otherwise (the stages after it then see
# changed inputs and are redone too); a stage killed halfway is redone. Stage 8 always runs.
# Options (./run.sh --help lists them with their docs), their checks and the settings derived
# from them: local/nvv_tts_options.sh.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/nvv_tts_options.sh"   # options, help_message, check_options, derive_settings
. utils/stage_prelude.sh --parse "$@"   # options, path.sh/cmd.sh/db.sh, --preset, stages, lock, clock, failure line
derive_settings   # preset defaults, set names, corpus_dir, tts_task, tts_tag, tts_exp
python=python3; command -v python >/dev/null && python=python
_all_sets="${train_set} ${valid_set} ${test_sets}"
_dump_done() { echo "${dumpdir}/raw/$1/.dump.done"; }   # stage 2 marker of a set
! { ${use_sid} && ${use_spk_embed}; } || log "note: both --use_sid and --use_spk_embed are true; the model gets both"

# ---------------------------------------------------------------- stage 0
if in_stage 0 "corpus"; then
  log "stage 0: corpus (${corpus}, ${lang}) -> ${corpus_dir}"
  if ${skip_data_prep}; then
    log "stage 0: skipped (--skip_data_prep true)"
  elif [ "${corpus}" = mini ]; then
    # verified marker (utils/stage_prelude.sh), the same as the NVV-ASR recipe's stage 0
    if [ -f "${corpus_dir}/.done" ] && { [ -e "${corpus_dir}/.corpus.done" ] || : > "${corpus_dir}/.corpus.done"; } \
       && stage_done "${corpus_dir}/.corpus.done" --adopt --dir "${corpus_dir}"; then
      log "stage 0: ${corpus_dir} is complete, keeping it"
    else
      if [ -f "${corpus_dir}/.done" ]; then rm -rf "${corpus_dir}"; fi   # damaged: made anew (as nvv_asr.sh)
      log "stage 0: chorus-synth nvv (log ${expdir}/log/synth_nvv_${lang}_${preset}.log)"
      utils/run.pl "${expdir}/log/synth_nvv_${lang}_${preset}.log" \
        chorus-synth nvv --lang "${lang}" --out "${corpus_dir}" --preset "${preset}" \
          --nj "${nj}" --cmd "${train_cmd}" ${synth_args}
      stage_mark "${corpus_dir}/.corpus.done" --dir "${corpus_dir}"
    fi
  else
    _src=$(corpus_path "${corpus}")
    utils/run.pl "${expdir}/log/prep_${corpus}_${lang}.log" \
      chorus-prep "${corpus}" --src "${_src}" --out "${corpus_dir}/data" --nj "${nj}" --unmapped "${unmapped}"
    touch "${corpus_dir}/.done"
  fi
fi
stage_end

# ---------------------------------------------------------------- stage 1
if in_stage 1 "data prep" && ! chain_done "${datadir}/${train_set}/.data.done" \
     --after "${corpus_dir}/.corpus.done" "${corpus_dir} ${corpus_splits} ${_all_sets} ${skip_data_prep}" \
     "$(cat "${corpus_dir}"/data/*/{wav.scp,text} 2>/dev/null | md5sum)"; then
  log "stage 1: data prep -> ${datadir}/{${train_set},${valid_set},${test_sets// /,}}"
  if ! ${skip_data_prep}; then
    # corpus split names: train dev test
    read -r _ctr _cdv _cte <<< "${corpus_splits}"
    for pair in "${_ctr}:${train_set}" "${_cdv}:${valid_set}" "${_cte}:${test_sets%% *}"; do
      _src=${corpus_dir}/data/${pair%%:*}
      _dst=${datadir}/${pair#*:}
      [ -d "${_src}" ] || { echo "$0: ${_src} missing (run stage 0)" >&2; exit 1; }
      rm -rf "${_dst}"; mkdir -p "${_dst}"
      for f in wav.scp text utt2spk spk2utt utt2dur segments; do
        [ -f "${_src}/${f}" ] && cp "${_src}/${f}" "${_dst}/${f}"
      done
      # per-event times of the tags in the real audio (used by the stage 7 plots)
      _ev=${corpus_dir}/events/${pair%%:*}.jsonl
      [ -f "${_ev}" ] && cp "${_ev}" "${_dst}/events.jsonl"
    done
  fi
  for s in ${train_set} ${valid_set} ${test_sets}; do
    ${train_cmd} "${expdir}/log/check_text_${s}.log" \
      ${python} -m pyutils.tts.inputs --kaldi-text "${datadir}/${s}/text" --lang "${lang}"
  done
  chain_mark "${datadir}/${train_set}/.data.done" $(for s in ${_all_sets}; do echo "--dir ${datadir}/${s}"; done)
fi
stage_end

# ---------------------------------------------------------------- the model's features (stages 2-7)
_feats=$(sed -n 's/^feats_extract: *\([a-z_]*\).*/\1/p' "${tts_config}")
_world=false   # a config with odim predicts WORLD vocoder features, read from the dump (stage 2; not the cascade)
if grep -q "^odim:" "${tts_config}" && ! ${_cascade}; then _world=true; _feats=world; fi
: "${tts_stats_dir:=${expdir}/tts_stats_${lang}_${token_type}_${_feats:-raw}${_sfx}}"
# duration models (FastSpeech) learn from token durations of a forced alignment (stage 3);
# their front-end adds pause slots ('|' at the start and around tags) that take the silences
_dur_model=false
case "$(sed -n 's/^tts: *\([a-z0-9_]*\).*/\1/p' "${tts_config}")" in fastspeech|fastspeech2) _dur_model=true ;; esac
_fe_args=""; ! ${_dur_model} || _fe_args="--pauses --tag-parts ${tag_parts}"
_align_dir=${expdir}/align_${lang}_${token_type}_${_feats:-raw}${_sfx}
_align=${_dur_model}; ! ${_cascade} || _align=false   # stage 3's forced alignment: duration models only
token_list_dir=${dumpdir}/token_list/${lang}_${token_type}${_sfx}
token_list=${token_list_dir}/tokens.txt
# Model/feature settings come from the config (fs must match the data: 16 kHz).
_fs=$(${python} -c "import yaml,sys; c=yaml.safe_load(open(sys.argv[1])); print((c.get('feats_extract_conf') or {}).get('fs') or (c.get('tts_conf') or {}).get('sampling_rate') or 16000)" "${tts_config}")

# ---------------------------------------------------------------- stage 2
if in_stage 2 "format/dump"; then
  log "stage 2: front-end (${lang}, ${token_type}; tags atomic) -> ${dumpdir}/raw"
  mkdir -p "${dumpdir}/raw"
  _dumped=""
  for s in ${_all_sets}; do
    _src=${datadir}/${s}; _dst=${dumpdir}/raw/${s}
    _w_args=""; ${_world} && _w_args="world $(md5sum < "${world_conf}") $(sed -n '/^feats_extract_conf:/,/^[^ ]/p' "${tts_config}" | md5sum)"
    # the subset size of this set only: a new --test_max_utts redoes the test dumps (and
    # stages 6-8), never the training dump and with it the alignment, statistics and model
    _max=0
    [ "${s}" = "${valid_set}" ] && _max=${valid_max_utts}
    [[ " ${test_sets} " == *" ${s} "* ]] && _max=${test_max_utts}
    if chain_done "$(_dump_done "${s}")" "${lang} ${token_type} ${_fe_args} ${_fs} max=${_max} ${_w_args}" \
         "${use_spk_embed} ${train_set} $([ "${s}" != "${valid_set}" ] || echo valid)$([[ " ${test_sets} " != *" ${s} "* ]] || echo test)" "$(cat "${_src}"/{wav.scp,text,utt2spk,utt2dur} \
         "${_src}"/{events.jsonl,spk_embed.scp} "${datadir}/${train_set}/utt2spk" 2>/dev/null | md5sum)"; then continue; fi
    _dumped+=" ${s}"
    mkdir -p "${_dst}/log"
    for f in wav.scp utt2spk spk2utt utt2dur events.jsonl spk_embed.scp; do
      [ -f "${_src}/${f}" ] && cp "${_src}/${f}" "${_dst}/${f}"
    done
    if [ "${_max}" -gt 0 ] && [ "$(wc -l < "${_dst}/utt2spk")" -gt "${_max}" ]; then
      # an even spread over the (sorted) utterances, hence over the speakers
      awk -v n="$(wc -l < "${_dst}/utt2spk")" -v m="${_max}" 'int(NR*m/n)!=int((NR-1)*m/n){print $1}' \
        "${_dst}/utt2spk" > "${_dst}/keep"
      for f in wav.scp utt2spk utt2dur spk_embed.scp; do
        [ -f "${_dst}/${f}" ] && awk 'NR==FNR{k[$1]=1; next} ($1 in k)' "${_dst}/keep" "${_dst}/${f}" > "${_dst}/${f}.tmp" \
          && mv "${_dst}/${f}.tmp" "${_dst}/${f}"
      done
      awk 'NR==FNR{k[$1]=1; next} ($1 in k)' "${_dst}/keep" "${_src}/text" > "${_dst}/text.tagged"
      log "stage 2: ${s}: kept ${_max} of $(wc -l < "${_src}/text") utterances (--valid_max_utts/--test_max_utts)"
    else
      cp "${_src}/text" "${_dst}/text.tagged"
    fi
    awk '{l[$2]=l[$2]" "$1} END{for(s in l) print s l[s]}' "${_dst}/utt2spk" | LC_ALL=C sort > "${_dst}/spk2utt"
    ${train_cmd} "${_dst}/log/frontend.log" \
      ${python} -m pyutils.tts.frontend --lang "${lang}" --token-type "${token_type}" ${_fe_args} \
        "${_dst}/text.tagged" "${_dst}/text"
    if [ -f "${_dst}/wav.scp" ]; then
      ${train_cmd} "${_dst}/log/check_audio.log" \
        ${python} -m pyutils.tts.audio check-scp "${_dst}/wav.scp" --fs "${_fs}" --fix-dir "${_dst}/wav"
    fi
    if ${_world} && { [ "${s}" = "${train_set}" ] || [ "${s}" = "${valid_set}" ]; }; then
      # the training targets: WORLD features of the (checked) audio, nj jobs
      rm -f "${_dst}"/feats.*   # a killed extraction leaves no scp pointing into a rewritten ark
      _n=$(wc -l < "${_dst}/wav.scp"); _nj=$(( nj < _n ? nj : _n ))
      ${train_cmd} "${_dst}/log/split_scp.log" \
        ${python} -m pyutils.tts.audio split-scp "${_dst}/wav.scp" "${_dst}/log/wav" "${_nj}"
      ${train_cmd} JOB=1:"${_nj}" "${_dst}/log/world.JOB.log" \
        ${python} -m pyutils.tts.world extract --config "${tts_config}" --world-conf "${world_conf}" \
          --wav-scp "${_dst}/log/wav.JOB.scp" --out-scp "${_dst}/feats.JOB.scp"
      for i in $(seq "${_nj}"); do cat "${_dst}/feats.${i}.scp"; done > "${_dst}/feats.scp"
      rm -f "${_dst}"/feats.[0-9]*.scp
      log "stage 2: ${s}: WORLD features of $(wc -l < "${_dst}/feats.scp") utterances -> ${_dst}/feats.scp"
    fi
    if ${use_spk_embed} && [ ! -f "${_dst}/spk_embed.scp" ]; then
      echo "$0: --use_spk_embed true but ${_src}/spk_embed.scp is missing" >&2; exit 1
    fi
  done
  # speaker ids from the training speakers (ESPnet's utt2sid / spk2sid)
  cut -d' ' -f1 "${dumpdir}/raw/${train_set}/spk2utt" | LC_ALL=C sort | awk '{print $1, NR-1}' \
    > "${dumpdir}/raw/${train_set}/spk2sid"
  for s in ${_all_sets}; do
    ${train_cmd} "${dumpdir}/raw/${s}/log/utt2sid.log" \
      ${python} -m pyutils.tts.audio utt2sid "${dumpdir}/raw/${train_set}/spk2sid" \
        "${dumpdir}/raw/${s}/utt2spk" "${dumpdir}/raw/${s}/utt2sid"
  done
  for s in ${_dumped}; do   # (durations in these folders are stage 3's)
    chain_mark "$(_dump_done "${s}")" $(find "${dumpdir}/raw/${s}" -maxdepth 1 -type f ! -name '.*' ! -name durations
                                        [ ! -d "${dumpdir}/raw/${s}/wav" ] || echo "--dir ${dumpdir}/raw/${s}/wav")
  done
fi
stage_end

# ---------------------------------------------------------------- stage 3
if in_stage 3 "tokens + alignment" && ! chain_done "${token_list_dir}/.tokens.done" \
     --after "$(_dump_done "${train_set}")" --after "$(_dump_done "${valid_set}")" "${_align} $(md5sum < "${tts_config}")"; then
  log "stage 3: token list -> ${token_list}"
  mkdir -p "${token_list_dir}"
  ${train_cmd} "${token_list_dir}/log/tokens.log" \
    ${python} -m pyutils.tts.tokens "${dumpdir}/raw/${train_set}/text" "${token_list}"
  log "stage 3: $(wc -l < "${token_list}") tokens (all 16 challenge tags included)"
  if ${_align}; then
    # durations (frames per token + <eos>) for FastSpeech: HMM forced alignment trained on the
    # training set; the mini corpus's exact NVV times (events.jsonl) pin each tag's span
    log "stage 3: forced alignment -> ${dumpdir}/raw/{${train_set},${valid_set}}/durations (log: ${_align_dir}/log/align.log)"
    ${train_cmd} "${_align_dir}/log/align.log" \
      ${python} -m pyutils.tts.align --config "${tts_config}" --train "${dumpdir}/raw/${train_set}" \
        --align "${dumpdir}/raw/${train_set}" --align "${dumpdir}/raw/${valid_set}" --out-dir "${_align_dir}"
    grep -E "iteration|durations written" "${_align_dir}/log/align.log" | tail -n 3
  fi
  chain_mark "${token_list_dir}/.tokens.done" "${token_list}" $(! ${_align} || echo \
    "${dumpdir}/raw/${train_set}/durations" "${dumpdir}/raw/${valid_set}/durations" "${_align_dir}/align_stats.json")
fi

# Data arguments shared by stats, training and the shape files.
_data_args() {  # $1 = train|valid, $2 = set
  local d=${dumpdir}/raw/$2 o=""
  o+="--${1}_data_path_and_name_and_type ${d}/text,text,text "
  if ${_world}; then o+="--${1}_data_path_and_name_and_type ${d}/feats.scp,speech,kaldi_ark "
  else o+="--${1}_data_path_and_name_and_type ${d}/wav.scp,speech,sound "; fi
  ${use_sid} && o+="--${1}_data_path_and_name_and_type ${d}/utt2sid,sids,text_int "
  ${_dur_model} && o+="--${1}_data_path_and_name_and_type ${d}/durations,durations,text_int "
  ${use_spk_embed} && o+="--${1}_data_path_and_name_and_type ${d}/spk_embed.scp,spembs,kaldi_ark "
  echo "${o}"
}
_model_args() {
  local o="--token_type word --token_list ${token_list} --cleaner none --g2p none"
  local nspk
  nspk=$(wc -l < "${dumpdir}/raw/${train_set}/spk2sid")
  # VITS keeps speaker settings under tts_conf.generator_params
  local k=""; [ "${tts_task}" = gan_tts ] && k="generator_params."
  ${use_sid} && o+=" --tts_conf ${k}spks=${nspk}"
  ${use_spk_embed} && o+=" --tts_conf ${k}spk_embed_dim=${spk_embed_dim}"
  echo "${o}"
}
stage_end

# ---------------------------------------------------------------- stage 4
if ${_cascade} && in_stage 4 "stats"; then
  log "stage 4: not used by --tts_method cascade (nothing is trained)"
elif in_stage 4 "stats" && ! chain_done "${tts_stats_dir}/.stats.done" \
     --after "$(_dump_done "${train_set}")" --after "$(_dump_done "${valid_set}")" \
     --after "${token_list_dir}/.tokens.done" "${train_args} ${use_sid} $(md5sum < "${tts_config}")"; then
  log "stage 4: statistics -> ${tts_stats_dir}"
  _logdir=${tts_stats_dir}/logdir
  rm -rf "${_logdir}"; mkdir -p "${_logdir}"
  _ntrain=$(wc -l < "${dumpdir}/raw/${train_set}/wav.scp")
  _nvalid=$(wc -l < "${dumpdir}/raw/${valid_set}/wav.scp")
  _nj=$(( nj < _nvalid ? nj : _nvalid ))
  for _s in train valid; do
    _set=${train_set}; [ "${_s}" = valid ] && _set=${valid_set}
    ${train_cmd} "${_logdir}/split_${_s}.log" \
      ${python} -m pyutils.tts.audio split-scp "${dumpdir}/raw/${_set}/wav.scp" "${_logdir}/${_s}" "${_nj}"
  done
  # shellcheck disable=SC2046
  ${train_cmd} JOB=1:"${_nj}" "${_logdir}/stats.JOB.log" \
    ${python} -m espnet2.bin.${tts_task}_train --collect_stats true --use_preprocessor true --normalize none \
      --config "${tts_config}" $(_model_args) \
      $(_data_args train "${train_set}") $(_data_args valid "${valid_set}") \
      --train_shape_file "${_logdir}/train.JOB.scp" --valid_shape_file "${_logdir}/valid.JOB.scp" \
      --output_dir "${_logdir}/stats.JOB" ${train_args}
  _dirs=""
  for i in $(seq "${_nj}"); do _dirs+=" --input_dir ${_logdir}/stats.${i}"; done
  # shellcheck disable=SC2086
  ${train_cmd} "${_logdir}/aggregate_stats.log" \
    ${python} -m espnet2.bin.aggregate_stats_dirs ${_dirs} --output_dir "${tts_stats_dir}"
  log "stage 4: ${_ntrain} train / ${_nvalid} valid utterances"
  chain_mark "${tts_stats_dir}/.stats.done" --dir "${tts_stats_dir}/train" --dir "${tts_stats_dir}/valid"
fi
stage_end

# ---------------------------------------------------------------- stage 5
# the cascade's speaker models: the target speakers (of the test sets and --infer_spk)
_knn_dir=${tts_exp}/speaker_models
_cascade_spks() {
  { for s in ${test_sets}; do cut -d' ' -f2 "${dumpdir}/raw/${s}/utt2spk"; done
    [ -z "${infer_jsonl}" ] || echo "${infer_spk:-$(head -n1 "${dumpdir}/raw/${train_set}/spk2sid" | cut -d' ' -f1)}"
  } | LC_ALL=C sort -u | tr '\n' ' '
}
_warp_dir=${tts_exp}/speaker_warps
if ${_cascade} && in_stage 5 "speaker models"; then
  if ${tts_warp} && ! chain_done "${tts_exp}/.warps.done" --after "$(_dump_done "${train_set}")" \
       "warp ${tts_voice} ${knn_ref_s} $(_cascade_spks) same-texts f0-range"; then
    log "stage 5: ${tts_voice} warped to each speaker's median F0 -> ${_warp_dir}"
    rm -rf "${_warp_dir}"; mkdir -p "${tts_exp}/log"
    _ev=${dumpdir}/raw/${train_set}/events.jsonl
    ${train_cmd} "${tts_exp}/log/speaker_warps.log" \
      ${python} -m pyutils.tts.cascade speaker-warps --wav-scp "${dumpdir}/raw/${train_set}/wav.scp" \
        --utt2spk "${dumpdir}/raw/${train_set}/utt2spk" --text "${dumpdir}/raw/${train_set}/text.tagged" \
        $([ ! -f "${_ev}" ] || echo "--events ${_ev}") --spks "$(_cascade_spks)" --lang "${lang}" \
        --voice "${tts_voice}" --max-s "${knn_ref_s}" --cache "${expdir}/speech_cache" --out-dir "${_warp_dir}"
    chain_mark "${tts_exp}/.warps.done" --dir "${_warp_dir}"
  fi
  if ! ${tts_convert}; then
    log "stage 5: --tts_convert false: no kNN speaker models (the voice ${tts_voice}$(! ${tts_warp} || echo ", warped"))"
  elif ! chain_done "${tts_exp}/.speakers.done" --after "$(_dump_done "${train_set}")" \
         "knn ${knn_ref_s} $(_cascade_spks)"; then
    _spks=$(_cascade_spks)
    log "stage 5: kNN speaker models (${knn_ref_s} s of training speech each) of: ${_spks}-> ${_knn_dir}"
    rm -rf "${_knn_dir}"; mkdir -p "${tts_exp}/log"
    _ev=${dumpdir}/raw/${train_set}/events.jsonl
    ${train_cmd} "${tts_exp}/log/speaker_models.log" \
      ${python} -m pyutils.tts.cascade speaker-models --wav-scp "${dumpdir}/raw/${train_set}/wav.scp" \
        --utt2spk "${dumpdir}/raw/${train_set}/utt2spk" $([ ! -f "${_ev}" ] || echo "--events ${_ev}") \
        --spks "${_spks}" --max-s "${knn_ref_s}" --out-dir "${_knn_dir}"
    chain_mark "${tts_exp}/.speakers.done" --dir "${_knn_dir}"
  fi
elif in_stage 5 "train" && ! chain_done "${tts_exp}/.train.done" \
     --after "$(_dump_done "${train_set}")" --after "$(_dump_done "${valid_set}")" \
     --after "${token_list_dir}/.tokens.done" --after "${tts_stats_dir}/.stats.done" \
     "${train_args} ${ngpu} ${use_sid} ${use_spk_embed} ${spk_embed_dim} $(md5sum < "${tts_config}")"; then
  log "stage 5: train ${tts_task} (${tts_config}) -> ${tts_exp}"
  mkdir -p "${tts_exp}/log"
  # a training that had finished (its model damaged, or its inputs changed) is done anew, not resumed
  if ${chain_stale}; then rm -f "${tts_exp}/checkpoint.pth"; fi
  # --resume continues checkpoint.pth; one of a different config or token list cannot load
  # (other layers / embedding size): that run is started afresh instead of failing
  if [ -f "${tts_exp}/checkpoint.pth" ] && { ! cmp -s "${tts_config}" "${tts_exp}/train_config.src.yaml" \
       || ! cmp -s "${token_list}" "${tts_exp}/tokens.src.txt"; }; then
    log "stage 5: ${tts_exp}/checkpoint.pth is of another config or token list: training from scratch"
    rm -f "${tts_exp}/checkpoint.pth"
  fi
  cp "${tts_config}" "${tts_exp}/train_config.src.yaml"
  cp "${token_list}" "${tts_exp}/tokens.src.txt"
  ${_world} && cp "${world_conf}" "${tts_exp}/world.src.yaml"   # stage 6 synthesises with the settings it learnt
  _train_extra=""
  if [ -f "${tts_stats_dir}/train/feats_stats.npz" ] && grep -q "^normalize: *global_mvn" "${tts_config}"; then
    _train_extra+="--normalize_conf stats_file=${tts_stats_dir}/train/feats_stats.npz "
  fi
  _cmd=${train_cmd}; [ "${ngpu}" -gt 0 ] && _cmd=${cuda_cmd}
  log "stage 5: progress: tail -f ${tts_exp}/log/train.log"
  # shellcheck disable=SC2046,SC2086
  OMP_NUM_THREADS=${train_threads} MKL_NUM_THREADS=${train_threads} \
  ${_cmd} --gpu "${ngpu}" --num-threads "${train_threads}" "${tts_exp}/log/train.log" \
    ${python} -m espnet2.bin.${tts_task}_train \
      --use_preprocessor true --ngpu "${ngpu}" --config "${tts_config}" $(_model_args) \
      $(_data_args train "${train_set}") $(_data_args valid "${valid_set}") \
      --train_shape_file "${tts_stats_dir}/train/text_shape" \
      --train_shape_file "${tts_stats_dir}/train/speech_shape" \
      --valid_shape_file "${tts_stats_dir}/valid/text_shape" \
      --valid_shape_file "${tts_stats_dir}/valid/speech_shape" \
      --fold_length 150 --fold_length 204800 \
      --resume true --use_tensorboard false --output_dir "${tts_exp}" ${_train_extra} ${train_args}
  chain_mark "${tts_exp}/.train.done" "${tts_exp}/${inference_model}" "${tts_exp}/config.yaml" \
    $(! ${_world} || echo "${tts_exp}/world.src.yaml ${tts_exp}/train_config.src.yaml")
fi
stage_end

# ---------------------------------------------------------------- stage 6
# the cascade's synthesis of set $1 (pyutils/tts/cascade.py): wav/, durations/durations (samples
# per front-end token), nvv_sources.jsonl (which NVV each tag got), then the common post-processing
_cascade_synth() {
  local s=$1 _data=${dumpdir}/raw/$1 _dir=${tts_exp}/synth_$1 _n _nj _models=""
  ${tts_convert} && _models="--speaker-models ${_knn_dir}"
  ${tts_warp} && _models+=" --warps ${_warp_dir}"
  if chain_done "${_dir}/.synth.done" $(! ${tts_convert} || echo "--after ${tts_exp}/.speakers.done") \
       $(! ${tts_warp} || echo "--after ${tts_exp}/.warps.done") \
       --after "$(_dump_done "${s}")" "cascade ${tts_voice} ${tts_convert} ${tts_warp}" \
       "$(cat "${_data}"/{text.tagged,text,utt2spk} 2>/dev/null | md5sum)"; then return 0; fi
  rm -rf "${_dir}"; mkdir -p "${_dir}/log" "${_dir}/durations"
  _n=$(wc -l < "${_data}/text"); _nj=$(( nj < _n ? nj : _n ))
  ${decode_cmd} "${_dir}/log/split_keys.log" \
    ${python} -m pyutils.tts.audio split-scp "${_data}/text" "${_dir}/log/keys" "${_nj}"
  log "stage 6: ${s}: ${_n} utterances, voice ${tts_voice}$(! ${tts_warp} || echo ", warped")$(! ${tts_convert} || echo ", converted to each utterance's speaker"), log: ${_dir}/log/cascade.*.log"
  # shellcheck disable=SC2086
  ${decode_cmd} JOB=1:"${_nj}" "${_dir}/log/cascade.JOB.log" \
    ${python} -m pyutils.tts.cascade synth --text "${_data}/text.tagged" --tokens "${_data}/text" \
      --utt2spk "${_data}/utt2spk" --keys "${_dir}/log/keys.JOB.scp" --lang "${lang}" --voice "${tts_voice}" \
      ${_models} --cache "${expdir}/speech_cache" --out-dir "${_dir}" --job JOB
  for i in $(seq "${_nj}"); do cat "${_dir}/durations.${i}"; done | LC_ALL=C sort > "${_dir}/durations/durations"
  for i in $(seq "${_nj}"); do cat "${_dir}/nvv_sources.${i}.jsonl"; done > "${_dir}/nvv_sources.jsonl"
  rm -f "${_dir}"/durations.[0-9]* "${_dir}"/nvv_sources.[0-9]*.jsonl
  local _abs; _abs=$(cd "${_dir}" && pwd)
  find "${_abs}/wav" -name '*.wav' | LC_ALL=C sort | \
    awk '{n=$1; sub(/.*\//, "", n); sub(/\.wav$/, "", n); print n, $1}' > "${_dir}/wav_raw.scp"
  ${decode_cmd} "${_dir}/log/postprocess.log" \
    ${python} -m pyutils.tts.audio postprocess "${_dir}/wav_raw.scp" "${_abs}/wav16k" "${_dir}/wav.scp" \
      --expect-keys "${_data}/text"
  log "stage 6: ${s}: $(wc -l < "${_dir}/wav.scp") wavs in ${_dir}/wav; NVVs: $(grep -o '"source": "[a-z]*"' "${_dir}/nvv_sources.jsonl" | sort | uniq -c | awk '{printf "%s%s %s", (NR>1?", ":""), $1, $3}' | tr -d '"')"
  chain_mark "${_dir}/.synth.done" --dir "${_dir}"
}
_synth_sets="${test_sets}"
[ -n "${infer_jsonl}" ] && _synth_sets+=" infer_${lang}"
if in_stage 6 "synthesis"; then
  log "stage 6: synthesis ($(if ${_cascade}; then echo "cascade, voice ${tts_voice}"; else echo "${inference_model}"; fi)) for: ${_synth_sets}"
  if [ -n "${infer_jsonl}" ]; then
    # Track 2 input: every line checked first (file:line: CODE: message), nothing synthesised on error
    _spk=${infer_spk:-$(head -n1 "${dumpdir}/raw/${train_set}/spk2sid" | cut -d' ' -f1)}
    if ! grep -q "^${_spk} " "${dumpdir}/raw/${train_set}/spk2sid"; then
      echo "$0: --infer_spk ${_spk} is not a training speaker (see ${dumpdir}/raw/${train_set}/spk2sid)" >&2; exit 2
    fi
    _d=${dumpdir}/raw/infer_${lang}
    rm -rf "${_d}"; mkdir -p "${_d}"
    _l=${_d}/log
    ${train_cmd} "${_l}/inputs.log" \
      ${python} -m pyutils.tts.inputs "${infer_jsonl}" --lang "${lang}" --to-datadir "${_d}" --spk "${_spk}"
    mv "${_d}/text" "${_d}/text.tagged"
    ${train_cmd} "${_l}/frontend.log" \
      ${python} -m pyutils.tts.frontend --lang "${lang}" --token-type "${token_type}" ${_fe_args} "${_d}/text.tagged" "${_d}/text"
    # a token the model never saw (ESPnet would read it as <unk>) or a text of pauses only: named, nothing synthesised
    ${_cascade} || ${train_cmd} "${_l}/check_tokens.log" \
      ${python} -m pyutils.tts.tokens "${_d}/text" --check "${token_list}"
    ${train_cmd} "${_l}/utt2sid.log" \
      ${python} -m pyutils.tts.audio utt2sid "${dumpdir}/raw/${train_set}/spk2sid" "${_d}/utt2spk" "${_d}/utt2sid"
    if ${use_spk_embed}; then
      echo "$0: --infer_jsonl with --use_spk_embed needs ${_d}/spk_embed.scp: not supported yet" >&2; exit 1
    fi
    log "stage 6: ${infer_jsonl}: $(wc -l < "${_d}/text") utterances OK, voice ${_spk}"
  fi
  _cmd=${decode_cmd}; _ngpu=0
  if ${gpu_inference}; then _cmd=${cuda_cmd}; _ngpu=1; fi
  _gl=false
  [ "${vocoder}" = griffin_lim ] && [ "${tts_task}" = tts ] && [ "${_feats}" = fbank ] && _gl=true
  _hifi=false
  [ "${vocoder}" = hifigan ] && [ "${tts_task}" = tts ] && _hifi=true
  _voc_args="${vocoder} ${gl_iters} ${gl_power}"; ${_world} && _voc_args="world ${world_lifter} ${world_voicing}"
  ${_hifi} && _voc_args="hifigan"
  for s in ${_synth_sets}; do
    if ${_cascade}; then _cascade_synth "${s}"; continue; fi
    _data=${dumpdir}/raw/${s}
    _dir=${tts_exp}/synth_${s}
    _logdir=${_dir}/log
    if chain_done "${_dir}/.synth.done" --after "${tts_exp}/.train.done" --after "${token_list_dir}/.tokens.done" \
         "${inference_model} ${inference_args} ${gpu_inference} ${_voc_args} " \
         "$(cat "${_data}"/{text,utt2sid,spk_embed.scp} "${tts_exp}/${inference_model}" 2>/dev/null | md5sum)"; then continue; fi
    rm -rf "${_dir}"; mkdir -p "${_logdir}"
    _n=$(wc -l < "${_data}/text")
    _nj=$(( nj < _n ? nj : _n ))
    ${_cmd} "${_logdir}/split_keys.log" \
      ${python} -m pyutils.tts.audio split-scp "${_data}/text" "${_logdir}/keys" "${_nj}"
    _in="--data_path_and_name_and_type ${_data}/text,text,text"
    ${use_sid} && _in+=" --data_path_and_name_and_type ${_data}/utt2sid,sids,text_int"
    ${use_spk_embed} && _in+=" --data_path_and_name_and_type ${_data}/spk_embed.scp,spembs,kaldi_ark"
    log "stage 6: ${s}: ${_n} utterances, log: ${_logdir}/tts_inference.*.log"
    # (a warning, not a failure: its job report is not printed)
    if ! ${_cmd} "${_logdir}/inventory.log" \
           ${python} -m pyutils.tts.tokens "${_data}/text" --check "${token_list}" 2> /dev/null; then
      log "stage 6: warning: ${s}: $(grep -vc '^#' "${_logdir}/inventory.log") utterances with tokens outside the inventory (synthesised with <unk>): ${_logdir}/inventory.log"
    fi
    # shellcheck disable=SC2086
    ${_cmd} --gpu "${_ngpu}" JOB=1:"${_nj}" "${_logdir}/tts_inference.JOB.log" \
      ${python} -m espnet2.bin.tts_inference --ngpu "${_ngpu}" ${_in} \
        --key_file "${_logdir}/keys.JOB.scp" \
        --model_file "${tts_exp}/${inference_model}" --train_config "${tts_exp}/config.yaml" \
        --output_dir "${_logdir}/output.JOB" --vocoder_file none ${inference_args}
    mkdir -p "${_dir}/wav" "${_dir}/durations"
    for i in $(seq "${_nj}"); do
      ${_gl} || ${_world} || ${_hifi} || mv "${_logdir}/output.${i}"/wav/*.wav "${_dir}/wav/"
      if [ -f "${_logdir}/output.${i}/durations/durations" ]; then cat "${_logdir}/output.${i}/durations/durations"; fi
    done | LC_ALL=C sort > "${_dir}/durations/durations"
    if ${_gl}; then
      # the log-mel that ESPnet wrote (denorm/<utt>.npy) -> sharpened Griffin-Lim
      # (replaces ESPnet's 8-iteration GL)
      rm -rf "${_dir}/wav"
      # shellcheck disable=SC2086
      ${_cmd} JOB=1:"${_nj}" "${_logdir}/vocoder.JOB.log" \
        ${python} -m pyutils.tts.vocoder --config "${tts_exp}/config.yaml" --iters "${gl_iters}" \
          --power "${gl_power}" --out-dir "${_dir}/wav" "${_logdir}/output.JOB/denorm"
    elif ${_hifi}; then
      # the log-mel that ESPnet wrote (denorm/<utt>.npy; WORLD features: their first 80 columns) ->
      # HiFi-GAN, its level offset fitted on the first training recordings
      rm -rf "${_dir}/wav"
      _hcfg=${tts_exp}/config.yaml; [ -f "${tts_exp}/train_config.src.yaml" ] && _hcfg=${tts_exp}/train_config.src.yaml
      ${_cmd} JOB=1:"${_nj}" "${_logdir}/vocoder.JOB.log" \
        ${python} -m pyutils.tts.hifigan vocode --config "${_hcfg}" --calib-scp "${dumpdir}/raw/${train_set}/wav.scp" \
          --out-dir "${_dir}/wav" "${_logdir}/output.JOB/denorm"
    elif ${_world}; then
      # the WORLD features that ESPnet wrote (denorm/<utt>.npy) -> WORLD synthesis
      rm -rf "${_dir}/wav"
      ${_cmd} JOB=1:"${_nj}" "${_logdir}/vocoder.JOB.log" \
        ${python} -m pyutils.tts.world vocode --config "${tts_exp}/train_config.src.yaml" \
          --world-conf "${tts_exp}/world.src.yaml" --lifter "${world_lifter}" --voiced-threshold "${world_voicing}" --out-dir "${_dir}/wav" \
          "${_logdir}/output.JOB/denorm"
    fi
    _abs=$(cd "${_dir}" && pwd)
    find "${_abs}/wav" -name '*.wav' | LC_ALL=C sort | \
      awk '{n=$1; sub(/.*\//, "", n); sub(/\.wav$/, "", n); print n, $1}' > "${_dir}/wav_raw.scp"
    # post-processing: 16 kHz mono PCM16, loudness -23 dBFS (active speech), peak <= -1 dBFS
    ${_cmd} "${_logdir}/postprocess.log" \
      ${python} -m pyutils.tts.audio postprocess "${_dir}/wav_raw.scp" "${_abs}/wav16k" "${_dir}/wav.scp" \
        --expect-keys "${_data}/text"
    log "stage 6: ${s}: $(wc -l < "${_dir}/wav.scp") wavs in ${_dir}/wav"
    chain_mark "${_dir}/.synth.done" --dir "${_dir}"
  done
fi
stage_end

# ---------------------------------------------------------------- stage 7
if in_stage 7 "evaluation" && ! chain_done "${tts_exp}/.eval.done" \
     $(for s in ${test_sets}; do echo "--after ${tts_exp}/synth_${s}/.synth.done --after $(_dump_done "${s}")"; done) \
     --after "${token_list_dir}/.tokens.done" \
     "${judge} ${judge_model} yamnet=${yamnet} ${preset} ${lang} ${test_sets} ${_dur_model}" \
     "$(_a=${asr_exp:-$(${python} -m pyutils.tts.asr_bridge find-default --lang "${lang}" || true)}
        echo "${_a}"; [ -z "${_a}" ] || cat "${_a}/.train.done" 2>/dev/null || true)"; then
  log "stage 7: objective evaluation -> ${tts_exp}/RESULTS.md"
  if [ -z "${asr_exp}" ]; then
    asr_exp=$(${python} -m pyutils.tts.asr_bridge find-default --lang "${lang}" || true)
  fi
  if [ -n "${asr_exp}" ]; then
    log "stage 7: NVV-ASR model: ${asr_exp}"
  else
    log "stage 7: no NVV-ASR model found (train egs/nvv_asr_${lang} or pass --asr_exp): CER/PCER/OCER/F1 NOT computed"
  fi
  _eval_dirs=""
  for s in ${test_sets}; do
    _dir=${tts_exp}/synth_${s}
    _edir=${tts_exp}/eval_${s}
    mkdir -p "${_edir}/log"
    _asr_args=""
    if [ -n "${asr_exp}" ]; then
      # NVV-ASR transcripts of the synthesis and of the real test audio (reference point)
      for _what in synth real; do
        _scp=${_dir}/wav.scp; [ "${_what}" = real ] && _scp=${dumpdir}/raw/${s}/wav.scp
        # the NVV-ASR recipe keeps a finished dump of the same wav.scp path: the synthesis of a
        # new model has the same paths, so its work dir goes first (else the old audio is decoded)
        [ "${_what}" = synth ] && rm -rf "${_edir}/asr_synth/work"
        ${decode_cmd} "${_edir}/log/asr_${_what}.log" \
          ${python} -m pyutils.asr.decode_dir --asr-exp "$(cd "${asr_exp}" && pwd)" \
            --wav-scp "${_scp}" --out "${_edir}/asr_${_what}/text" --nj "${nj}" \
            --work-dir "$(cd "${_edir}" && pwd)/asr_${_what}/work"
        _asr_args+=" --asr-${_what}-text ${_edir}/asr_${_what}/text"
      done
    fi
    # Intelligibility by the independent judge (pretrained Whisper, pyutils/whisper/judge.py)
    if [ "${judge}" = true ]; then
      for _what in synth real; do
        _scp=${_dir}/wav.scp; [ "${_what}" = real ] && _scp=${dumpdir}/raw/${s}/wav.scp
        ${decode_cmd} "${_edir}/log/judge_${_what}.log" \
          ${python} -m pyutils.whisper.judge --lang "${lang}" --model "${judge_model}" \
            --wav-scp "${_scp}" --out "${_edir}/judge_${_what}/text"
        _asr_args+=" --judge-${_what}-text ${_edir}/judge_${_what}/text"
      done
    fi
    # shellcheck disable=SC2086
    ${decode_cmd} "${_edir}/log/evaluate.log" \
      ${python} -m pyutils.tts.evaluate \
        --real-dir "${dumpdir}/raw/${s}" --synth-scp "${_dir}/wav.scp" \
        --durations "${_dir}/durations/durations" --token-text "${dumpdir}/raw/${s}/text" \
        --lang "${lang}" --yamnet "${yamnet}" ${_asr_args} --out-dir "${_edir}"
    _eval_dirs+=" ${s}=${_edir}"
  done
  # shellcheck disable=SC2086
  _rep_args=""
  ${_align} && _rep_args="--align-stats ${_align_dir}/align_stats.json"
  ${decode_cmd} "${tts_exp}/log/report.log" \
    ${python} -m pyutils.tts.report --exp "${tts_exp}" --config "${tts_config}" ${_rep_args} \
      --stage-times "${expdir}/stage_times.tsv" --lang "${lang}" --preset "${preset}" ${_eval_dirs} --out "${tts_exp}/RESULTS.md"
  log "stage 7: wrote ${tts_exp}/RESULTS.md"
  if ${copy_results} && [ "${preset}" = default ]; then
    # en owns RESULTS.md, every other language its RESULTS_<lang>.md; notes below the marker stay
    # (the cascade, egs/nvv_tts/run.sh's default for en and zh, owns RESULTS[_<lang>].md; an
    # ESPnet model of those languages writes RESULTS_fastspeech[_<lang>].md)
    _results_name=RESULTS
    { ${_cascade} || { [ "${lang}" != en ] && [ "${lang}" != zh ]; }; } || _results_name+=_fastspeech
    [ "${lang}" = en ] || _results_name+="_${lang}"
    _results_name+=.md
    ${decode_cmd} "${tts_exp}/log/copy_results.log" \
      ${python} -m pyutils.results_file --report "${tts_exp}/RESULTS.md" --into "${_results_name}"
    log "stage 7: copied to $(pwd)/${_results_name}"
  fi
  grep -E "^(PCER|SIM):" "${tts_exp}/RESULTS.md" || true
  chain_mark "${tts_exp}/.eval.done" "${tts_exp}/RESULTS.md" $(for s in ${test_sets}; do echo "--dir ${tts_exp}/eval_${s}"; done)
fi
stage_end

# ---------------------------------------------------------------- stage 8
if in_stage 8 "submission"; then
  log "stage 8: submission (16 kHz mono PCM16 <utt_id>.wav) -> ${submission_dir}"
  for s in ${_synth_sets}; do
    _out=${submission_dir}/${s}
    _l=${tts_exp}/log/submission_${s}
    ${decode_cmd} "${_l}.to_submission.log" \
      ${python} -m pyutils.tts.audio to-submission "${tts_exp}/synth_${s}/wav.scp" "${_out}"
    ${decode_cmd} "${_l}.ref_jsonl.log" \
      ${python} -m pyutils.tts.audio text-to-jsonl "${dumpdir}/raw/${s}/text.tagged" "${_out}.ref.jsonl" --lang "${lang}"
    ${decode_cmd} "${_l}.validate.log" \
      chorus-score validate-track2 --dir "${_out}" --ref "${_out}.ref.jsonl"
    grep -v '^#' "${_l}.validate.log" | tail -n 2
    log "stage 8: ${s}: $(find "${_out}" -name '*.wav' | wc -l) files valid in ${_out}"
  done
fi
stage_end

log "Successfully finished. [elapsed=${SECONDS}s; per stage: ${expdir}/stage_times.tsv]"
