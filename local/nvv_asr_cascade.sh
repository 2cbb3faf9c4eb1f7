# Stages 3-6 of local/nvv_asr.sh --asr_method cascade: sourced by it (never run alone), after
# its stage 2 (16 kHz dumps of the test sets), with its options, functions and stage clock.
#   3 not used (Whisper keeps its own tokens; tags are placed by time, not decoded)
#   4 features of the detector's sets: the mini corpus's train (first --detector_train_utts)
#     and dev splits (exact event times: CORPUS/events/<split>.jsonl), the real-NVV train/dev
#     sets of pyutils.nvv_detect.devset when installed, with DEEPLY_NVV in db.sh the Deeply NVV
#     clips of its train/dev speakers spliced the same way (<corpus_dir>/deeply_nvv/real_{train,dev},
#     feature sets deeply_{train,dev}): frozen Whisper encoder frames
#     (pyutils.nvv_detect.whisper_frames, feats/wf_<set>.<part>.npz)
#     (--nj jobs per set; verified markers); --detector_labels transcript (auto: with real corpora): the
#     train/dev sets' tagged transcripts give each tag a time window (frozen Whisper forced to the text,
#     pyutils.nvv_detect.weak_labels -> feats/weak_corpus_{train,dev}/windows.jsonl), the features of those
#     utterances carry the windows; with real corpora, --detector_mini true (default) adds the mini corpus's
#     train/dev splits with their exact event times (feature sets mini_{train,dev})
#   5 fit the detector on the train sets, thresholds on the dev sets (pyutils.nvv_detect.frame_heads)
#     -> <asr_exp>/nvv_detector.npz (+ .sha256, detector_report.json);
#     --detector_labels transcript: --labels spans (each tag window taken as the sound's span); no
#     train or dev set to fit on (real corpora with --detector_labels times and --detector_mini false,
#     no real-NVV sets, no DEEPLY_NVV; or stage 4 not run): an error saying what to give;
#     --skip_train true: no stages 4-5 (--asr_exp names a fitted cascade exp dir)
#   6 per test set: detector events (pyutils.nvv_detect.detect) -> frozen Whisper base
#     text with word times, NVV words, events placed by time (pyutils.asr.cascade) ->
#     <decode_root>/<set>/{events.jsonl,track1.jsonl,details.jsonl,text}, RTF; --decode_pack true
#     (default): clips of <= 10 s several to one 30 s Whisper window (cascade --pack); false: one
#     clip per window, Whisper's words kept in <decode_root>/<set>/whisper_cache.jsonl (by audio
#     hash and decoder settings): a rerun with another detector decodes only the detector (its
#     RTF then omits Whisper)
# Stage 7 (score) and 8 (package) of local/nvv_asr.sh read <decode_root>/<set>/text as for ESPnet.
# shellcheck shell=bash disable=SC2154

_featdir=${asr_exp}/feats
_det=${asr_exp}/nvv_detector.npz
_namer_file=${asr_exp}/nvv_namer.npz
_nj_det=$(min "${nj}" 4)

# ---------------------------------------------------------------- stage 3
if in_stage 3 "tokens"; then
  log "stage 3: not used by --asr_method cascade (Whisper keeps its own tokens; the tags are placed by time)"
fi

# ---------------------------------------------------------------- stage 4
# frames_set NAME SIG ARGS...: Whisper-encoder frames of one set in ${_nj_det} parts, ${_featdir}/wf_NAME.<part>.npz.
frames_set() { _cached_set "wf_$1" "$2 layers=${detector_layers}" pyutils.nvv_detect.whisper_frames "${@:3}" --layers "${detector_layers}"; }
_cached_set() {
  local name=$1 sig=$2 module=$3; shift 3
  local marker=${_featdir}/.${name}.done outs=() i
  for i in $(seq "${_nj_det}"); do outs+=("${_featdir}/${name}.${i}.npz" "${_featdir}/${name}.${i}.npz.sha256"); done
  if stage_done "${marker}" --sig "${sig} $* ${_nj_det} emb"; then
    log "  ${name}: done, skipping"; return 0
  fi
  rm -f "${marker}" "${_featdir}/${name}".*.npz*
  ${train_cmd} JOB=1:"${_nj_det}" "${_featdir}/log/${name}.JOB.log" \
    python -m "${module}" "$@" --part JOB --parts "${_nj_det}" --out "${_featdir}/${name}.JOB.npz"
  stage_mark "${marker}" --sig "${sig} $* ${_nj_det} emb" "${outs[@]}"
  log "  ${name}: $(grep -h ' utterances, .* -> ' "${_featdir}"/log/"${name}".*.log | awk '{u += $2; p += $4} END {print u " utterances, " p " " $5}')"
}
# weak_set NAME DATA_DIR ARGS...: tag windows from the tagged transcripts of a data dir (pyutils.nvv_detect.weak_labels)
# -> ${_featdir}/weak_NAME/{windows.jsonl,wav.scp,report.json}; an utterance that gives none is skipped and counted.
weak_set() {
  local name=$1 data=$2; shift 2
  local out=${_featdir}/weak_${name} sig
  sig="$(cat "${data}/wav.scp" "${data}/text" | md5sum | cut -d' ' -f1) ${lang} $*"
  if stage_done "${out}/.weak.done" --sig "${sig}"; then
    log "  weak_${name}: done, skipping"; return 0
  fi
  rm -rf "${out}"
  ${train_cmd} "${_featdir}/log/weak_${name}.log" \
    python -m pyutils.nvv_detect.weak_labels --data-dir "${data}" --lang "${lang}" --out "${out}" --threads "${_nj_det}" "$@"
  stage_mark "${out}/.weak.done" --sig "${sig}" --dir "${out}"
  log "  $(grep -h '^nvv_detect.weak_labels: ' "${_featdir}/log/weak_${name}.log")"
}
# the labels: exact event times (the mini corpus) or tag windows from tagged transcripts (real corpora)
_det_labels=${detector_labels}
if [ "${_det_labels}" = auto ]; then
  _det_labels=times
  [ "${use_mini}" = true ] || _det_labels=transcript
fi

_use_real=false
if [ "${detector_real}" != false ]; then
  if _why=$(python -m pyutils.nvv_detect.devset --check 2>&1); then
    _use_real=true
  elif [ "${detector_real}" = true ]; then
    echo "$0: --detector_real true, but the real-NVV set material is missing: ${_why}" >&2; exit 1
  fi
fi

if [ "${skip_train}" != true ] && in_stage 4 "detector features"; then
  log "stage 4: Whisper-encoder frames of the NVV detector's train/dev sets -> ${_featdir} (${_nj_det} jobs per set)"
  mkdir -p "${_featdir}/log"
  if [ "${_det_labels}" = transcript ]; then
    # tagged transcripts without times: each tag's window from frozen Whisper forced to the transcript
    _wtr=${datadir}/${train_set} _wdv=${datadir}/${valid_set}
    [ "${use_mini}" = true ] && _wtr=${mini_dir}/data/train _wdv=${mini_dir}/data/dev
    log "  --detector_labels transcript: tag windows of ${_wtr} and ${_wdv} (pyutils.nvv_detect.weak_labels)"
    weak_set corpus_train "${_wtr}" --max-utts "${detector_train_utts}"
    weak_set corpus_dev "${_wdv}"
    for s in train dev; do
      frames_set "corpus_${s}" "$(cat "${_featdir}/weak_corpus_${s}/"{wav.scp,windows.jsonl} | md5sum | cut -d' ' -f1)" \
        --weak-dir "${_featdir}/weak_corpus_${s}"
    done
  elif [ "${use_mini}" = false ] && [ "${mini_for_detector}" = false ]; then
    log "  real corpora (${corpora}) have no NVV event times (--detector_labels times): no corpus sets for the detector"
  fi
  # the mini corpus's exact event times: the corpus itself (sets corpus_*), or beside real corpora (mini_*)
  _mini_sets=
  if [ "${use_mini}" = true ] && [ "${_det_labels}" = times ]; then _mini_sets=corpus; fi
  if [ "${mini_for_detector}" = true ]; then _mini_sets=mini; fi
  if [ -n "${_mini_sets}" ]; then
    for s in train dev; do
      [ -f "${mini_dir}/events/${s}.jsonl" ] || { echo "$0: ${mini_dir}/events/${s}.jsonl not found: the detector is fitted on the event times that chorus-synth nvv writes there (run stage 0$([ "${_mini_sets}" = mini ] && echo ", or give --detector_mini false"))" >&2; exit 1; }
    done
    [ "${_mini_sets}" = corpus ] || log "  --detector_mini true: the mini corpus's exact event times beside the real corpora (${mini_dir})"
    _sig_tr=$(cat "${mini_dir}/data/train/wav.scp" "${mini_dir}/events/train.jsonl" | md5sum | cut -d' ' -f1)
    _sig_dv=$(cat "${mini_dir}/data/dev/wav.scp" "${mini_dir}/events/dev.jsonl" | md5sum | cut -d' ' -f1)
    frames_set "${_mini_sets}_train" "${_sig_tr}" --corpus "${mini_dir}" --split train --max-utts "${detector_train_utts}"
    frames_set "${_mini_sets}_dev" "${_sig_dv}" --corpus "${mini_dir}" --split dev
  fi
  if [ "${_use_real}" = true ]; then
    _sig_real=$(md5sum < "${_chorus_root}/conf/nvv_detect_speech.json" | cut -d' ' -f1)
    frames_set real_train "${_sig_real}" --devset-split train --variants 12
    frames_set real_dev "${_sig_real}" --devset-split dev --variants 6
  else
    log "  real-NVV sets not used (--detector_real ${detector_real}; material: make -C tools real_speech nvv_bank)"
  fi
  if [ -n "${DEEPLY_NVV:-}" ]; then   # db.sh: Deeply NVV clips of the train (dev) speakers spliced into real speech
    [ -f "${_deeply}/.prep.done" ] || { echo "$0: ${_deeply}/.prep.done not found: run stage 0 (DEEPLY_NVV is set in db.sh)" >&2; exit 1; }
    for s in train dev; do
      _sig_dn="$(md5sum < "${_deeply}/.prep.done" | cut -d' ' -f1) $(md5sum < "${_chorus_root}/conf/nvv_detect_speech.json" | cut -d' ' -f1)"
      if ! stage_done "${_deeply}/.real_${s}.done" --sig "${_sig_dn}"; then
        utils/run.pl "${_featdir}/log/deeply_real_${s}.log" \
          python -m pyutils.nvv_detect.devset --split "${s}" --clips-from "${_deeply}" --out "${_deeply}/real_${s}"
        stage_mark "${_deeply}/.real_${s}.done" --sig "${_sig_dn}" --dir "${_deeply}/real_${s}"
      fi
      log "  $(grep -h '^nvv_detect.devset: ' "${_featdir}/log/deeply_real_${s}.log" || echo "${_deeply}/real_${s}")"
      frames_set "deeply_${s}" "$(md5sum < "${_deeply}/real_${s}/events.jsonl" | cut -d' ' -f1)" --data-dir "${_deeply}/real_${s}"
    done
  fi
fi

# ---------------------------------------------------------------- stage 5
if [ "${skip_train}" != true ] && in_stage 5 "train detector"; then
  mkdir -p "${asr_exp}/log"
  _train=() _dev=()
  _sets=(corpus real deeply)
  [ "${mini_for_detector}" = true ] && _sets+=(mini)
  for n in "${_sets[@]}"; do
    for f in "${_featdir}/wf_${n}"_train.*.npz; do [ -f "${f}" ] && _train+=(--train-feats "${f}"); done
    for f in "${_featdir}/wf_${n}"_dev.*.npz; do [ -f "${f}" ] && _dev+=(--dev-feats "${f}"); done
  done
  if [ ${#_train[@]} -eq 0 ] || [ ${#_dev[@]} -eq 0 ]; then
    _have="$(( ${#_train[@]} / 2 )) train / $(( ${#_dev[@]} / 2 )) dev feature files in ${_featdir}"
    if [ "${use_mini}" = false ] && [ "${_det_labels}" = times ] && [ "${mini_for_detector}" = false ] \
       && [ "${_use_real}" = false ] && [ -z "${DEEPLY_NVV:-}" ]; then
      echo "$0: stage 5: nothing to fit the NVV detector on (${_have}): the real corpora (${corpora}) have no NVV" \
        "event times (--detector_labels times), --detector_mini is false, the real-NVV sets are not installed" \
        "(--detector_real ${detector_real}; make -C tools real_speech nvv_bank) and DEEPLY_NVV is not set in db.sh:" \
        "give --detector_labels transcript (tag windows from the corpora's tagged transcripts) or --detector_mini true" \
        "(the mini corpus's exact event times)" >&2
    else
      echo "$0: stage 5: the NVV detector needs at least one train and one dev set, found ${_have}: run stage 4" \
        "first (--stage 4)" >&2
    fi
    exit 1
  fi
  log "stage 5: fit the NVV detector on $(( ${#_train[@]} / 2 )) train / $(( ${#_dev[@]} / 2 )) dev feature files -> ${_det}"
  _det_args=(--threads "$(min "${nj}" 2)" --heads "${detector_heads}")
  [ "${_det_labels}" = transcript ] && _det_args+=(--labels spans)
  # (the signature keeps the word "whisper", the former --detector value, so that exps fitted before stay valid)
  _sig="$(cat "${_featdir}"/*.npz.sha256 | md5sum | cut -d' ' -f1) whisper ${_det_args[*]} ${detector_args}"
  _trained=("${_det}" "${_det}.sha256" "${asr_exp}/recipe_options.sh")
  if stage_done "${asr_exp}/.train.done" --sig "${_sig}"; then
    log "  ${_det} is fitted, skipping (remove ${asr_exp}/.train.done to fit again)"
  else
    rm -f "${asr_exp}/.train.done"
    log "  log: ${asr_exp}/log/train_detector.log"
    ${train_cmd} "${asr_exp}/log/train_detector.log" \
      python -m pyutils.nvv_detect.frame_heads "${_train[@]}" "${_dev[@]}" "${_det_args[@]}" --out "${_det}" \
        --report "${asr_exp}/detector_report.json" ${detector_args}
    grep -h 'dev micro' "${asr_exp}/log/train_detector.log" | sed 's/^/  /' || true
    # Options a later decode needs (parsed, never sourced, by pyutils.asr.decode_dir).
    printf 'lang=%s\nasr_method=cascade\nwhisper_model=%s\n' "${lang}" "${whisper_model:-base}" \
      > "${asr_exp}/recipe_options.sh"
    stage_mark "${asr_exp}/.train.done" --sig "${_sig}" "${_trained[@]}"
  fi
  log "  detector sha256: $(cut -d' ' -f1 "${_det}.sha256")"
  # The namer of stage 6: fitted on real labelled sounds where there are some (DEEPLY_NVV: its train
  # and dev speakers' clips, the test speakers stay unheard; a real corpus's tag windows), else the
  # zero-shot fusion.
  _nm_src=() _nm_inputs=()   # the namer's sources, and the files its signature reads
  if [ -n "${DEEPLY_NVV:-}" ]; then
    _nm_src+=(--data "${_deeply}/train" --data "${_deeply}/dev") _nm_inputs+=("${_deeply}/.prep.done")
  fi
  if [ "${_det_labels}" = transcript ] && [ "${use_mini}" != true ]; then
    for s in train dev; do
      _nm_src+=(--windows "${_featdir}/weak_corpus_${s}")
      _nm_inputs+=("${_featdir}/weak_corpus_${s}/windows.jsonl" "${_featdir}/weak_corpus_${s}/wav.scp")
    done
  fi
  if [ ${#_nm_src[@]} -gt 0 ] && [ "${nvv_naming}" = true ]; then
    _sig_nm=$(cat "${_nm_inputs[@]}" | md5sum | cut -d' ' -f1)
    if stage_done "${asr_exp}/.namer.done" --sig "${_sig_nm}"; then
      log "  ${_namer_file} is fitted, skipping"
    else
      log "  fit the event namer on ${_nm_src[*]} -> ${_namer_file} (log: ${asr_exp}/log/fit_namer.log)"
      ${train_cmd} "${asr_exp}/log/fit_namer.log" \
        python -m pyutils.nvv_detect.naming fit "${_nm_src[@]}" --embed \
          --threads "$(min "${nj}" 2)" --out "${_namer_file}"
      grep -h '^naming: fitted' "${asr_exp}/log/fit_namer.log" | sed 's/^/  /'
      stage_mark "${asr_exp}/.namer.done" --sig "${_sig_nm}" "${_namer_file}" "${_namer_file}.sha256"
    fi
  else
    rm -f "${asr_exp}/.namer.done" "${_namer_file}" "${_namer_file}.sha256"
  fi
fi

# ---------------------------------------------------------------- stage 6
if in_stage 6 "decode"; then
  log "stage 6: decode ${test_sets}: detector events + frozen Whisper ${whisper_model:-base} (pyutils.asr.cascade)"
  [ -f "${_det}" ] || { echo "$0: ${_det} not found: fit the detector first (stage 5) or give --asr_exp" >&2; exit 1; }
  for dset in ${test_sets}; do
    _data=${dumpdir}/raw/${dset}
    _dir=${decode_root}/${dset}
    _logdir=${_dir}/logdir
    dumped_test_set "${dset}" || continue
    rm -rf "${_logdir}"; mkdir -p "${_logdir}"
    _pack=(); [ "${decode_pack}" = true ] && _pack=(--pack)
    OMP_NUM_THREADS=1 \
    ${decode_cmd} "${_logdir}/asr_inference.detect.log" \
      python -m pyutils.nvv_detect.detect --wav-scp "${_data}/wav.scp" --model "${_det}" \
        --out "${_dir}/events.detected.jsonl"
    if [ "${nvv_naming}" = true ]; then
      _namer=(); [ -f "${_namer_file}" ] && _namer=(--model "${_namer_file}")
      OMP_NUM_THREADS=1 \
      ${decode_cmd} "${_logdir}/asr_inference.naming.log" \
        python -m pyutils.nvv_detect.naming name --wav-scp "${_data}/wav.scp" --events "${_dir}/events.detected.jsonl" \
          --out "${_dir}/events.jsonl" --threads "$(min "${nj}" 2)" "${_namer[@]}" ${naming_args}
      log "  $(grep -h '^naming: .* events -> ' "${_logdir}/asr_inference.naming.log")"
    else
      cp "${_dir}/events.detected.jsonl" "${_dir}/events.jsonl"
    fi
    ${decode_cmd} "${_logdir}/asr_inference.cascade.log" \
      python -m pyutils.asr.cascade --wav-scp "${_data}/wav.scp" --lang "${lang}" --model "${whisper_model:-base}" \
        --events "${_dir}/events.jsonl" --threads "${nj}" --jsonl "${_dir}/track1.jsonl" \
        --details "${_dir}/details.jsonl" --text "${_dir}/text" --whisper-cache "${_dir}/whisper_cache.jsonl" \
        --no-progress "${_pack[@]}" ${cascade_args}
    log "  ${_dir}/text: $(nlines "${_dir}/text") utterances, $(nlines "${_dir}/events.jsonl") detected events"
    ${decode_cmd} "${_dir}/log/rtf.log" \
      python -m pyutils.asr.timing rtf --logdir "${_logdir}" --utt2dur "${_data}/utt2dur" --json "${_dir}/rtf.json"
  done
fi
