#!/usr/bin/env bash
# Speech quality assessment (QualiSpeech-style): one quality score in [1, 5] and
# per-fault (noise, distortion, pause) presence + time intervals, no reference.
# Generic stage script, called from egs/<recipe>/run.sh (ESPnet TEMPLATE style).
#
# Stages:
#   0 corpus      offline mini corpus (chorus-synth sqa), or --corpus qualispeech (QUALISPEECH in db.sh)
#   1 data prep   data/<set>/{wav.scp,utt2spk,spk2utt,ref.jsonl[,faults.jsonl: kind of each simulated fault]}
#   2 dump        16 kHz mono + log-mel fbank to dump/<set>/ (JOB=1:nj via ${train_cmd});
#                 with --utt_embed true also DNSMOS P.808 + pooled Whisper encoder states (embed.scp)
#   3 stats       global mean/std of the training features
#   4 baselines   silero-vad pauses, DNSMOS score, energy noise (tuned on dev, scored on test)
#   5 train       multi-task conv+TCN model (+ utterance embeddings); post-processing tuned on dev
#   6 infer       test sets -> frame probabilities + hyp.jsonl
#   7 score       chorus-score sqa, RESULTS.md (+ report_details.md: per-kind breakdown on simulated splits), plots
#   8 package     submission/sqa_<set>.jsonl (validated with the scorer's rules)
# Options (./run.sh --help lists them with their docs), their checks and the settings derived
# from them: local/sqa_options.sh.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/sqa_options.sh"   # options, help_message, check_options, derive_settings
. utils/stage_prelude.sh --parse "$@"   # options, path.sh/cmd.sh/db.sh, --preset, stages, lock, clock, failure line
derive_settings   # corpus_dir, sqa_config, real_corpus, test_sets, model_dir, stats_file, all_sets, ...

if in_stage 0 corpus; then
  if [ -n "${real_corpus}" ]; then
    log "stage 0: using QualiSpeech at ${real_corpus}; nothing to generate"
  elif [ -f "${corpus_dir}/.done" ]; then
    log "stage 0: mini corpus already in ${corpus_dir}"
  else
    log "stage 0: generating the mini SQA corpus (preset ${preset}) in ${corpus_dir} (log ${expdir}/log/synth_sqa.log)"
    # shellcheck disable=SC2086  # synth_args: several words on purpose
    utils/run.pl "${expdir}/log/synth_sqa.log" \
      chorus-synth sqa --preset "${preset}" --seed "${seed}" --out "${corpus_dir}" \
        --nj "${nj}" --cmd "${train_cmd}" ${synth_args}
    [ -f "${corpus_dir}/.done" ] || { log "stage 0 failed: no ${corpus_dir}/.done (see ${expdir}/log/synth_sqa.log)"; exit 1; }
  fi
  stage_end
fi

if in_stage 1 data; then
  log "stage 1: data preparation"
  if [ -n "${real_corpus}" ]; then
    log "  chorus-prep qualispeech --src ${real_corpus} (log ${expdir}/log/prep_qualispeech.log)"
    # shellcheck disable=SC2086
    utils/run.pl "${expdir}/log/prep_qualispeech.log" \
      chorus-prep qualispeech --src "${real_corpus}" --out "${datadir}" --score-column "${score_column}" ${prep_args}
    grep -v '^#' "${expdir}/log/prep_qualispeech.log" | tail -n 5
  else
    for s in ${all_sets}; do
      [ -d "${corpus_dir}/data/${s}" ] || { log "no ${corpus_dir}/data/${s}: run stage 0"; exit 1; }
      mkdir -p "${datadir}/${s}"
      for f in wav.scp utt2spk spk2utt utt2dur; do
        [ -f "${corpus_dir}/data/${s}/${f}" ] && cp "${corpus_dir}/data/${s}/${f}" "${datadir}/${s}/${f}"
      done
      cp "${corpus_dir}/ref/${s}.jsonl" "${datadir}/${s}/ref.jsonl"
      # the kind of every simulated fault (for the report's per-kind table; absent for real data)
      if [ -f "${corpus_dir}/faults/${s}.jsonl" ]; then cp "${corpus_dir}/faults/${s}.jsonl" "${datadir}/${s}/faults.jsonl"; fi
    done
  fi
  for s in ${all_sets}; do
    for f in wav.scp ref.jsonl; do
      [ -s "${datadir}/${s}/${f}" ] || { log "missing or empty ${datadir}/${s}/${f}"; exit 1; }
    done
    log "  ${s}: $(wc -l < "${datadir}/${s}/wav.scp") recordings"
  done
  stage_end
fi

if in_stage 2 features+embeddings; then
  log "stage 2: dump 16 kHz mono audio and log-mel features (nj=${nj})"
  pending=""; declare -A _sig   # sets dumped in this run (and their signatures): embedded together below, then marked
  _feat_args=(--n-mels "${n_mels}")
  _feat_desc="n_mels=${n_mels} vad=false embed=${utt_embed} ${embed_args}"   # (vad=false: kept, so older dumps stay valid)
  if [ "${pitch_feature}" = true ]; then
    _feat_args+=(--pitch)
    _feat_desc+=" pitch=true"
  fi
  for s in ${all_sets}; do
    out=${dumpdir}/${s}
    # the marker holds a checksum of the source wav.scp and the settings: another corpus/preset
    # is re-dumped; it vouches for every dumped file (size + checksum): a deleted or damaged
    # ark is re-dumped
    sig="$( (cat "${datadir}/${s}/wav.scp"; echo "${_feat_desc}") | md5sum | cut -d' ' -f1)"
    if stage_done "${out}/.dump.done" --sig "${sig}"; then
      log "  ${s}: already dumped"; continue
    fi
    rm -rf "${out}"
    mkdir -p "${out}/split${nj}" "${out}/log"
    # round-robin split of wav.scp into nj pieces (no piece is empty unless nj > #utts)
    n_utt=$(wc -l < "${datadir}/${s}/wav.scp")
    _nj=$(( n_utt < nj ? n_utt : nj ))
    rm -f "${out}"/split${nj}/wav.*.scp
    awk -v n="${_nj}" -v d="${out}/split${nj}" '{ print > (d "/wav." ((NR - 1) % n + 1) ".scp") }' \
      "${datadir}/${s}/wav.scp"
    ${train_cmd} JOB=1:${_nj} "${out}/log/dump.JOB.log" \
      python -m pyutils.sqa.features dump --wav-scp "${out}/split${nj}/wav.JOB.scp" --outdir "${out}" --job JOB \
        "${_feat_args[@]}"
    echo "${_nj}" > "${out}/nj"
    pending="${pending} ${s}"; _sig[${s}]=${sig}
  done
  if [ "${utt_embed}" = true ] && [ -n "${pending}" ]; then
    # one array job for all sets: each process loads Whisper and DNSMOS once (~10 s), not once per set
    _pairs=(); _maxnj=1
    for s in ${pending}; do
      _pairs+=(--wav-scp "${dumpdir}/${s}/wav.JOB.scp" --outdir "${dumpdir}/${s}")
      _n=$(cat "${dumpdir}/${s}/nj"); [ "${_n}" -gt "${_maxnj}" ] && _maxnj=${_n}
    done
    log "  embedding${pending} (logs: ${dumpdir}/log/embed.*.log)"
    mkdir -p "${dumpdir}/log"
    # shellcheck disable=SC2086
    ${train_cmd} JOB=1:${_maxnj} "${dumpdir}/log/embed.JOB.log" \
      python -m pyutils.sqa.embed dump "${_pairs[@]}" --missing-ok --job JOB ${embed_args}
  fi
  for s in ${pending}; do
    out=${dumpdir}/${s}
    _nj=$(cat "${out}/nj")
    for f in feats wav $( [ "${utt_embed}" = true ] && echo embed); do
      for j in $(seq "${_nj}"); do cat "${out}/${f}.${j}.scp"; done | sort > "${out}/${f}.scp"
    done
    for f in utt2num_frames utt2dur bad; do
      for j in $(seq "${_nj}"); do cat "${out}/${f}.${j}"; done | sort > "${out}/${f}"
    done
    cp "${datadir}/${s}/ref.jsonl" "${out}/ref.jsonl"
    n_utt=$(wc -l < "${datadir}/${s}/wav.scp")
    n_bad=$(wc -l < "${out}/bad")
    if [ "${n_bad}" -gt 0 ]; then
      log "  ${s}: skipped ${n_bad} of ${n_utt} recordings (unreadable, empty or too short); list: ${out}/bad"
      head -n 3 "${out}/bad" | sed 's/^/    /'
    fi
    [ -s "${out}/feats.scp" ] || { log "  ${s}: no usable recordings"; exit 1; }
    log "  ${s}: $(wc -l < "${out}/feats.scp") recordings dumped (logs: ${out}/log/dump.*.log)"
    stage_mark "${out}/.dump.done" --sig "${_sig[${s}]}" --dir "${out}"
  done
  stage_end
fi

if in_stage 3 stats; then
  log "stage 3: global feature statistics of ${train_set}"
  ${train_cmd} "${dumpdir}/${train_set}/log/stats.log" \
    python -m pyutils.sqa.features stats --feats-scp "${dumpdir}/${train_set}/feats.scp" --out "${stats_file}"
  stage_end
fi

if [ "${skip_baselines}" = false ] && in_stage 4 baselines; then
  log "stage 4: non-learned baselines (silero-vad pauses, DNSMOS, energy noise)"
  for s in ${valid_set} ${test_sets}; do
    out=${baseline_dir}/${s}
    _sig=$(md5sum < "${dumpdir}/${s}/.dump.done" | cut -d' ' -f1)   # measured on exactly this dump
    if stage_done "${out}/.measure.done" --sig "${_sig}" 2> /dev/null; then continue; fi
    mkdir -p "${out}/log"
    _nj=$(cat "${dumpdir}/${s}/nj")
    _m_args=""; [ "${s}" = "${valid_set}" ] && _m_args="--no-dnsmos"   # dev only tunes thresholds
    ${decode_cmd} JOB=1:${_nj} "${out}/log/measure.JOB.log" \
      python -m pyutils.sqa.baselines measure --wav-scp "${dumpdir}/${s}/wav.JOB.scp" \
        --utt2dur "${dumpdir}/${s}/utt2dur" --out "${out}/measures.JOB.jsonl" ${_m_args}
    for j in $(seq "${_nj}"); do cat "${out}/measures.${j}.jsonl"; done > "${out}/measures.jsonl"
    stage_mark "${out}/.measure.done" --sig "${_sig}" "${out}/measures.jsonl"
  done
  ${decode_cmd} "${baseline_dir}/log/tune.log" \
    python -m pyutils.sqa.baselines tune --measures "${baseline_dir}/${valid_set}/measures.jsonl" \
      --ref "${dumpdir}/${valid_set}/ref.jsonl" --out "${baseline_dir}/params.json"
  for s in ${test_sets}; do
    out=${baseline_dir}/${s}
    ${decode_cmd} "${out}/log/hyp.log" \
      python -m pyutils.sqa.baselines hyp --measures "${out}/measures.jsonl" --params "${baseline_dir}/params.json" \
        --all-ids "${datadir}/${s}/wav.scp" --outdir "${out}"
    ${decode_cmd} "${out}/log/score_combined.log" \
      chorus-score sqa --ref "${datadir}/${s}/ref.jsonl" --hyp "${out}/hyp_combined.jsonl" \
        --output-json "${out}/score_combined.json"
    grep -v '^#' "${out}/log/score_combined.log" > "${out}/score_combined.txt"
    log "  ${s}: baseline (combined) $(grep -m1 'Final' "${out}/score_combined.txt" | sed 's/^ *//')"
  done
  stage_end
fi

if in_stage 5 train+tune; then
  log "stage 5: train the SQA model -> ${model_dir} (config ${sqa_config}; log ${model_dir}/log/train.log)"
  mkdir -p "${model_dir}/log"
  if stage_done "${model_dir}/.train.done" 2> /dev/null; then
    log "  already trained (remove ${model_dir}/.train.done to retrain)"
  else
    if [ -e "${model_dir}/.train.done" ]; then
      # it had finished, and its model has gone or changed since: train again from scratch
      log "  training again: $(_chorus_marker check "${model_dir}/.train.done" || true)"
      rm -f "${model_dir}/.train.done" "${model_dir}/model.pt" "${model_dir}/last.pt"
    fi
    ${cuda_cmd} "${model_dir}/log/train.log" \
      python -m pyutils.sqa.train --config "${sqa_config}" --resume \
        --train-dir "${dumpdir}/${train_set}" --train-ref "${dumpdir}/${train_set}/ref.jsonl" \
        --dev-dir "${dumpdir}/${valid_set}" --dev-ref "${dumpdir}/${valid_set}/ref.jsonl" \
        --stats "${stats_file}" --outdir "${model_dir}"
    grep -E '^epoch|^best|^stopping' "${model_dir}/log/train.log" | tail -n 3 | sed 's/^/    /'
    stage_mark "${model_dir}/.train.done" "${model_dir}/model.pt" "${model_dir}/train_log.tsv"
  fi
  _quick=""; [ "${preset}" = ci ] && _quick="--quick"
  # tuned for this very model (the train marker's checksums) and these settings
  if chain_done "${model_dir}/.postproc.done" --after "${model_dir}/.train.done" "${region_tune} ${_quick}"; then
    log "  post-processing already tuned: ${model_dir}/postproc.json"
  else
    log "  tuning post-processing on ${valid_set} (log ${model_dir}/log/tune_postproc.log)"
    ${decode_cmd} "${model_dir}/log/infer_${valid_set}.log" \
      python -m pyutils.sqa.infer --model-dir "${model_dir}" --data-dir "${dumpdir}/${valid_set}" \
        --outdir "${model_dir}/infer_${valid_set}"
    ${decode_cmd} "${model_dir}/log/tune_postproc.log" \
      python -m pyutils.sqa.postproc tune ${_quick} --region "${region_tune}" \
        --outputs "${model_dir}/infer_${valid_set}/outputs.npz" \
        --ref "${dumpdir}/${valid_set}/ref.jsonl" --out "${model_dir}/postproc.json"
    grep -E '^(noise|distortion|pause|region):' "${model_dir}/log/tune_postproc.log" | sed 's/^/    dev /'
    chain_mark "${model_dir}/.postproc.done" "${model_dir}/postproc.json"
  fi
  stage_end
fi

if in_stage 6 inference; then
  log "stage 6: inference on ${test_sets}"
  for s in ${test_sets}; do
    ${decode_cmd} "${model_dir}/log/infer_${s}.log" \
      python -m pyutils.sqa.infer --model-dir "${model_dir}" --data-dir "${dumpdir}/${s}" \
        --outdir "${model_dir}/infer_${s}" --postproc "${model_dir}/postproc.json" \
        --all-ids "${datadir}/${s}/wav.scp"
    tail -n 2 "${model_dir}/log/infer_${s}.log" | grep -v '^#' | sed 's/^/    /' || true
  done
  stage_end
fi

if in_stage 7 scoring+plots; then
  log "stage 7: scoring, RESULTS.md and plots"
  for s in ${test_sets}; do
    ${decode_cmd} "${model_dir}/log/score_${s}.log" \
      chorus-score sqa --ref "${datadir}/${s}/ref.jsonl" --hyp "${model_dir}/infer_${s}/hyp.jsonl" \
        --output-json "${model_dir}/infer_${s}/score.json"
    grep -v '^#' "${model_dir}/log/score_${s}.log" > "${model_dir}/infer_${s}/score.txt"
    sed 's/^/    /' "${model_dir}/infer_${s}/score.txt"
    ${decode_cmd} "${model_dir}/log/plots_${s}.log" \
      python -m pyutils.sqa.plots --infer-dir "${model_dir}/infer_${s}" --ref "${datadir}/${s}/ref.jsonl" \
        --wav-scp "${dumpdir}/${s}/wav.scp" --num "${num_plots}" --outdir "${model_dir}/plots_${s}"
  done
  stage_end
  ${decode_cmd} "${model_dir}/log/report.log" \
    python -m pyutils.sqa.report --model-dir "${model_dir}" --test-sets "${test_sets}" \
      --baseline-dir "${baseline_dir}" --preset "${preset}" --out "${model_dir}/RESULTS.md" \
      --data-dir "${datadir}" \
      --stage-times "${times_file}" \
      --wall-seconds "$(awk -F'\t' 'NR > 1 {s += $2} END {print s + 0}' "${times_file}")" --load "$(cut -d' ' -f1-3 /proc/loadavg)"
  log "  wrote ${model_dir}/RESULTS.md"
  if [ "${copy_results}" = true ] || { [ "${copy_results}" = auto ] && [ "${preset}" = default ]; }; then
    ${decode_cmd} "${model_dir}/log/copy_results.log" \
      python -m pyutils.results_file --report "${model_dir}/RESULTS.md" --into RESULTS.md
    log "  copied to $(pwd)/RESULTS.md"
  fi
  grep -E '^Final' "${model_dir}/RESULTS.md" | sed 's/^/    /'
fi

if in_stage 8 package; then
  log "stage 8: package submissions"
  mkdir -p "${submission_dir}"
  for s in ${test_sets}; do
    ${decode_cmd} "${model_dir}/log/package_${s}.log" \
      python -m pyutils.sqa.package --hyp "${model_dir}/infer_${s}/hyp.jsonl" \
        --ids "${datadir}/${s}/wav.scp" --out "${submission_dir}/sqa_${s}.jsonl"
    grep -v '^#' "${model_dir}/log/package_${s}.log" | sed 's/^/    /' || true
  done
  stage_end
fi
log "done (stages ${stage}..${stop_stage})"
