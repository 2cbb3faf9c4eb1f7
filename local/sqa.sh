#!/usr/bin/env bash
# Speech quality assessment (QualiSpeech-style): one quality score in [1, 5] and
# per-fault (noise, distortion, pause) presence + time intervals, no reference.
# Generic stage script, called from egs/<recipe>/run.sh (ESPnet TEMPLATE style).
#
# Stages:
#   0 corpus      offline mini corpus (chorus-synth sqa) unless db.sh sets QUALISPEECH
#   1 data prep   data/<set>/{wav.scp,utt2spk,spk2utt,ref.jsonl[,faults.jsonl: kind of each simulated fault]}
#   2 dump        16 kHz mono + log-mel fbank to dump/<set>/ (JOB=1:nj via ${train_cmd});
#                 with --utt-embed true also DNSMOS P.808 + pooled Whisper encoder states (embed.scp)
#                 and the Whisper encoder frames at 20 ms, projected (frames.scp, for the fault head)
#   3 stats       global mean/std of the training features
#   4 baselines   silero-vad pauses, DNSMOS score, energy noise (tuned on dev, scored on test)
#   5 train       multi-task conv+TCN model (+ utterance embeddings); post-processing tuned on dev
#   6 infer       test sets -> frame probabilities + hyp.jsonl
#   7 score       chorus-score sqa, RESULTS.md (+ per-kind breakdown on simulated splits), plots
#   8 package     submission/sqa_<set>.jsonl (validated with the scorer's rules)
set -euo pipefail

log() { echo "$(date '+%Y-%m-%dT%H:%M:%S') ($(basename "$0"):${BASH_LINENO[0]}) $*"; }

# --preset must be known before the defaults below are chosen.
preset=default          # ci | default | large: corpus size and training config
for _a in "$@"; do
  case "${_prev:-}" in --preset) preset="${_a}" ;; esac
  case "${_a}" in --preset=*) preset="${_a#--preset=}" ;; esac
  _prev="${_a}"
done
case "${preset}" in
  ci|default|large) ;;
  *) echo "$0: unknown --preset '${preset}' (use ci, default or large)" >&2; exit 2 ;;
esac

stage=0                 # first stage to run
stop_stage=8            # last stage to run
nj=2                    # parallel jobs for dump and baselines
corpus_dir=corpus/sqa_mini3_${preset}   # where stage 0 writes the mini corpus (3: real talkers in train)
seed=0                  # corpus seed
n_mels=80               # log-mel bins
vad_feature=false       # append the silero-vad speech probability to the features
cue_feature=false       # append the physical frame cues (pyutils.sqa.cues: reverb tails, noise floor,
                        # modulation, several voices); off: see RESULTS.md "physical frame cues"
pitch_feature=true      # append the pitch contour (pyutils.sqa.cues.pitch_track: voicing and the
                        # log period's change per 10 ms; RESULTS.md)
pitch_rate=16000        # the rate the contour is analysed at: 16000, or 8000 (about 2x cheaper)
data_dir=data           # Kaldi-style data dirs
dump_dir=dump           # features + 16 kHz audio
exp_dir=exp             # models, logs, results
train_set=train         # training set name
dev_set=dev             # set used for early stopping and tuning
test_sets="test test_real"   # sets to infer and score (test_real: real speech, dropped if the corpus has none)
utt_embed=true          # stage 2: cache utterance embeddings (pyutils.sqa.embed) for the score head
embed_opts="--whisper base --whisper-layer 3 --p808 true --p835 false"   # options of pyutils.sqa.embed (block 3: RESULTS.md)
                        # dump; add "--frames-dim 48" to keep the Whisper frames (frame_embed: true in the config)
train_config=conf/train_${preset}.yaml   # training hyper-parameters
tag=${preset}           # model dir is exp/sqa_<tag>
score_column="Overall quality"   # QualiSpeech column used as the reference score
prep_opts=""            # extra options for `chorus-prep qualispeech` (real data), e.g. "--untimed-fault drop"
region_tune=after       # stage 5: noise/distortion class per detected region, its threshold tuned on dev
                        # after the per-fault parameters (after), with them re-tuned under it (joint: better on
                        # unseen fault families, slightly worse in-distribution, RESULTS.md), or off
run_baselines=true      # stage 4 on/off
num_plots=4             # recordings plotted in stage 7
submission_dir=submission   # stage 8 output dir
copy_results=auto       # copy RESULTS.md into the recipe dir (auto: only for preset default)
help_message="Usage: $0 [--preset ci|default|large] [--stage N] [--stop-stage M] [options]
Speech quality assessment recipe: a score in [1,5] and noise/distortion/pause intervals."

. ./path.sh
. ./cmd.sh
. ./db.sh
qualispeech=${QUALISPEECH:-}   # QualiSpeech root (default: QUALISPEECH in db.sh); empty = mini corpus
. utils/parse_options.sh

if [ $# -ne 0 ]; then
  echo "${help_message}" >&2
  echo "$0: unexpected arguments: $*" >&2
  exit 2
fi
case "${region_tune}" in
  after|joint|off) ;;
  *) echo "$0: unknown --region_tune '${region_tune}' (use after, joint or off)" >&2; exit 2 ;;
esac
case "${pitch_rate}" in
  16000|8000) ;;
  *) echo "$0: unknown --pitch_rate '${pitch_rate}' (use 16000 or 8000)" >&2; exit 2 ;;
esac
. utils/stage_prelude.sh "${exp_dir}"   # checks --stage/--stop-stage, one run per exp dir

# the mini corpus has test_real only where pocketsphinx-testdata is installed
drop_real() { test_sets=$(echo " ${test_sets} " | sed 's/ test_real / /; s/^ *//; s/ *$//'); }
if [ -n "${qualispeech}" ]; then
  drop_real
elif [ ! -d /usr/share/pocketsphinx/test/data/librivox ] \
     || { [ -f "${corpus_dir}/.done" ] && [ ! -d "${corpus_dir}/data/test_real" ]; }; then
  drop_real
fi
model_dir=${exp_dir}/sqa_${tag}
stats_file=${dump_dir}/${train_set}/feats_stats.npz   # lives with the features it describes
all_sets="${train_set} ${dev_set} ${test_sets}"
baseline_dir=${exp_dir}/sqa_baselines_${tag}
real_corpus=${qualispeech}
mkdir -p "${exp_dir}"
# wall time across resumed runs: seconds spent by earlier runs of this recipe (stage 0 resets it)
[ ${stage} -le 0 ] && echo 0 > "${exp_dir}/.sqa_seconds"
prior_seconds=$(cat "${exp_dir}/.sqa_seconds" 2>/dev/null || echo 0)
trap 'echo $(( SECONDS + prior_seconds )) > "${exp_dir}/.sqa_seconds"' EXIT
times_file=${exp_dir}/stage_times.tsv
. utils/stage_timer.sh "${times_file}"   # stage_timer "<n> <name>": wall/CPU seconds per stage

if [ ${stage} -le 0 ] && [ ${stop_stage} -ge 0 ]; then
  if [ -n "${real_corpus}" ]; then
    [ -d "${real_corpus}" ] || { echo "$0: --qualispeech ${real_corpus} is not a directory" >&2; exit 2; }
    log "stage 0: using QualiSpeech at ${real_corpus}; nothing to generate"
  elif [ -f "${corpus_dir}/.done" ]; then
    log "stage 0: mini corpus already in ${corpus_dir}"
  else
    log "stage 0: generating the mini SQA corpus (preset ${preset}) in ${corpus_dir}"
    mkdir -p "${exp_dir}/log"
    chorus-synth sqa --preset "${preset}" --seed "${seed}" --out "${corpus_dir}" \
      --nj "${nj}" --cmd "${train_cmd}" 2>&1 | tee "${exp_dir}/log/synth_sqa.log"
    [ -f "${corpus_dir}/.done" ] || { log "stage 0 failed: no ${corpus_dir}/.done (see ${exp_dir}/log/synth_sqa.log)"; exit 1; }
  fi
  stage_timer "0 corpus"
fi

if [ ${stage} -le 1 ] && [ ${stop_stage} -ge 1 ]; then
  log "stage 1: data preparation"
  if [ -n "${real_corpus}" ]; then
    mkdir -p "${exp_dir}/log"
    log "  chorus-prep qualispeech --src ${real_corpus} (log ${exp_dir}/log/prep_qualispeech.log)"
    # shellcheck disable=SC2086
    chorus-prep qualispeech --src "${real_corpus}" --out "${data_dir}" --score-column "${score_column}" \
      ${prep_opts} > "${exp_dir}/log/prep_qualispeech.log" 2>&1 \
      || { tail -n 20 "${exp_dir}/log/prep_qualispeech.log"; exit 1; }
    tail -n 5 "${exp_dir}/log/prep_qualispeech.log"
  else
    for s in ${all_sets}; do
      [ -d "${corpus_dir}/data/${s}" ] || { log "no ${corpus_dir}/data/${s}: run stage 0"; exit 1; }
      mkdir -p "${data_dir}/${s}"
      for f in wav.scp utt2spk spk2utt utt2dur; do
        [ -f "${corpus_dir}/data/${s}/${f}" ] && cp "${corpus_dir}/data/${s}/${f}" "${data_dir}/${s}/${f}"
      done
      cp "${corpus_dir}/ref/${s}.jsonl" "${data_dir}/${s}/ref.jsonl"
      # the kind of every simulated fault (for the report's per-kind table; absent for real data)
      if [ -f "${corpus_dir}/faults/${s}.jsonl" ]; then cp "${corpus_dir}/faults/${s}.jsonl" "${data_dir}/${s}/faults.jsonl"; fi
    done
  fi
  for s in ${all_sets}; do
    for f in wav.scp ref.jsonl; do
      [ -s "${data_dir}/${s}/${f}" ] || { log "missing or empty ${data_dir}/${s}/${f}"; exit 1; }
    done
    log "  ${s}: $(wc -l < "${data_dir}/${s}/wav.scp") recordings"
  done
  stage_timer "1 data"
fi

if [ ${stage} -le 2 ] && [ ${stop_stage} -ge 2 ]; then
  log "stage 2: dump 16 kHz mono audio and log-mel features (nj=${nj})"
  pending=""; declare -A _sig   # sets dumped in this run (and their signatures): embedded together below, then marked
  for s in ${all_sets}; do
    out=${dump_dir}/${s}
    # the marker holds a checksum of the source wav.scp: another corpus/preset is re-dumped
    sig="$( (cat "${data_dir}/${s}/wav.scp"; echo "n_mels=${n_mels} vad=${vad_feature} embed=${utt_embed} ${embed_opts}$( [ "${cue_feature}" = true ] && echo " cues=true")$( [ "${pitch_feature}" = true ] && echo " pitch=true")$( [ "${pitch_feature}" = true ] && [ "${pitch_rate}" != 16000 ] && echo " pitch_rate=${pitch_rate}")") \
      | md5sum | cut -d' ' -f1)"
    # the marker vouches for every dumped file (size + checksum): a deleted or damaged ark is re-dumped
    if _why=$(python -m pyutils.jobs.stage_marker check "${out}/.done" --sig "${sig}"); then
      log "  ${s}: already dumped"; continue
    fi
    [ -e "${out}/.done" ] && log "  ${s}: dumping again: ${_why}"
    rm -rf "${out}"
    mkdir -p "${out}/split${nj}" "${out}/log"
    # round-robin split of wav.scp into nj pieces (no piece is empty unless nj > #utts)
    n_utt=$(wc -l < "${data_dir}/${s}/wav.scp")
    _nj=$(( n_utt < nj ? n_utt : nj ))
    rm -f "${out}"/split${nj}/wav.*.scp
    awk -v n="${_nj}" -v d="${out}/split${nj}" '{ print > (d "/wav." ((NR - 1) % n + 1) ".scp") }' \
      "${data_dir}/${s}/wav.scp"
    ${train_cmd} JOB=1:${_nj} "${out}/log/dump.JOB.log" \
      python -m pyutils.sqa.features dump --wav-scp "${out}/split${nj}/wav.JOB.scp" --outdir "${out}" --job JOB \
        --n-mels "${n_mels}" $( [ "${vad_feature}" = true ] && echo --vad ) \
        $( [ "${cue_feature}" = true ] && echo --cues ) $( [ "${pitch_feature}" = true ] && echo --pitch --pitch-rate "${pitch_rate}" )
    echo "${_nj}" > "${out}/nj"
    pending="${pending} ${s}"; _sig[${s}]=${sig}
  done
  if [ "${utt_embed}" = true ] && [ -n "${pending}" ]; then
    # one array job for all sets: each process loads Whisper and DNSMOS once (~10 s), not once per set
    _pairs=(); _maxnj=1
    for s in ${pending}; do
      _pairs+=(--wav-scp "${dump_dir}/${s}/wav.JOB.scp" --outdir "${dump_dir}/${s}")
      _n=$(cat "${dump_dir}/${s}/nj"); [ "${_n}" -gt "${_maxnj}" ] && _maxnj=${_n}
    done
    log "  embedding${pending} (logs: ${dump_dir}/log/embed.*.log)"
    mkdir -p "${dump_dir}/log"
    # shellcheck disable=SC2086
    ${train_cmd} JOB=1:${_maxnj} "${dump_dir}/log/embed.JOB.log" \
      python -m pyutils.sqa.embed dump "${_pairs[@]}" --missing-ok --job JOB ${embed_opts}
  fi
  for s in ${pending}; do
    out=${dump_dir}/${s}
    _nj=$(cat "${out}/nj")
    for f in feats wav $( [ "${utt_embed}" = true ] && echo embed) \
             $( [ "${utt_embed}" = true ] && [ -f "${out}/frames.1.scp" ] && echo frames); do
      for j in $(seq "${_nj}"); do cat "${out}/${f}.${j}.scp"; done | sort > "${out}/${f}.scp"
    done
    for f in utt2num_frames utt2dur bad; do
      for j in $(seq "${_nj}"); do cat "${out}/${f}.${j}"; done | sort > "${out}/${f}"
    done
    cp "${data_dir}/${s}/ref.jsonl" "${out}/ref.jsonl"
    n_utt=$(wc -l < "${data_dir}/${s}/wav.scp")
    n_bad=$(wc -l < "${out}/bad")
    if [ "${n_bad}" -gt 0 ]; then
      log "  ${s}: skipped ${n_bad} of ${n_utt} recordings (unreadable, empty or too short); list: ${out}/bad"
      head -n 3 "${out}/bad" | sed 's/^/    /'
    fi
    [ -s "${out}/feats.scp" ] || { log "  ${s}: no usable recordings"; exit 1; }
    log "  ${s}: $(wc -l < "${out}/feats.scp") recordings dumped (logs: ${out}/log/dump.*.log)"
    python -m pyutils.jobs.stage_marker write "${out}/.done" --sig "${_sig[${s}]}" --dir "${out}"
  done
  stage_timer "2 features+embeddings"
fi

if [ ${stage} -le 3 ] && [ ${stop_stage} -ge 3 ]; then
  log "stage 3: global feature statistics of ${train_set}"
  mkdir -p "${dump_dir}/${train_set}/log"
  ${train_cmd} "${dump_dir}/${train_set}/log/stats.log" \
    python -m pyutils.sqa.features stats --feats-scp "${dump_dir}/${train_set}/feats.scp" --out "${stats_file}"
  stage_timer "3 stats"
fi

if [ ${stage} -le 4 ] && [ ${stop_stage} -ge 4 ] && [ "${run_baselines}" = true ]; then
  log "stage 4: non-learned baselines (silero-vad pauses, DNSMOS, energy noise)"
  for s in ${dev_set} ${test_sets}; do
    out=${baseline_dir}/${s}
    _sig=$(md5sum < "${dump_dir}/${s}/.done" | cut -d' ' -f1)   # measured on exactly this dump
    if python -m pyutils.jobs.stage_marker check "${out}/.raw.done" --sig "${_sig}" > /dev/null; then continue; fi
    mkdir -p "${out}/log"
    _nj=$(cat "${dump_dir}/${s}/nj")
    _opts=""; [ "${s}" = "${dev_set}" ] && _opts="--no-dnsmos"   # dev only tunes thresholds
    ${decode_cmd} JOB=1:${_nj} "${out}/log/measure.JOB.log" \
      python -m pyutils.sqa.baselines measure --wav-scp "${dump_dir}/${s}/wav.JOB.scp" \
        --utt2dur "${dump_dir}/${s}/utt2dur" --out "${out}/measures.JOB.jsonl" ${_opts}
    for j in $(seq "${_nj}"); do cat "${out}/measures.${j}.jsonl"; done > "${out}/measures.jsonl"
    python -m pyutils.jobs.stage_marker write "${out}/.raw.done" --sig "${_sig}" "${out}/measures.jsonl"
  done
  ${decode_cmd} "${baseline_dir}/log/tune.log" \
    python -m pyutils.sqa.baselines tune --measures "${baseline_dir}/${dev_set}/measures.jsonl" \
      --ref "${dump_dir}/${dev_set}/ref.jsonl" --out "${baseline_dir}/params.json"
  for s in ${test_sets}; do
    out=${baseline_dir}/${s}
    python -m pyutils.sqa.baselines hyp --measures "${out}/measures.jsonl" --params "${baseline_dir}/params.json" \
      --all-ids "${data_dir}/${s}/wav.scp" --outdir "${out}"
    chorus-score sqa --ref "${data_dir}/${s}/ref.jsonl" --hyp "${out}/hyp_combined.jsonl" \
      --output-json "${out}/score_combined.json" > "${out}/score_combined.txt"
    log "  ${s}: baseline (combined) $(grep -m1 'Final' "${out}/score_combined.txt" | sed 's/^ *//')"
  done
  stage_timer "4 baselines"
fi

if [ ${stage} -le 5 ] && [ ${stop_stage} -ge 5 ]; then
  log "stage 5: train the SQA model -> ${model_dir} (config ${train_config}; log ${model_dir}/log/train.log)"
  mkdir -p "${model_dir}/log"
  if _why=$(python -m pyutils.jobs.stage_marker check "${model_dir}/.train.done"); then
    log "  already trained (remove ${model_dir}/.train.done to retrain)"
  else
    if [ -e "${model_dir}/.train.done" ]; then
      # it had finished, and its model has gone or changed since: train again from scratch
      log "  training again: ${_why}"
      rm -f "${model_dir}/.train.done" "${model_dir}/model.pt" "${model_dir}/last.pt"
    fi
    ${cuda_cmd} "${model_dir}/log/train.log" \
      python -m pyutils.sqa.train --config "${train_config}" --resume \
        --train-dir "${dump_dir}/${train_set}" --train-ref "${dump_dir}/${train_set}/ref.jsonl" \
        --dev-dir "${dump_dir}/${dev_set}" --dev-ref "${dump_dir}/${dev_set}/ref.jsonl" \
        --stats "${stats_file}" --outdir "${model_dir}"
    grep -E '^epoch|^best|^stopping' "${model_dir}/log/train.log" | tail -n 3 | sed 's/^/    /'
    python -m pyutils.jobs.stage_marker write "${model_dir}/.train.done" "${model_dir}/model.pt" \
      "${model_dir}/train_log.tsv"
  fi
  if [ -f "${model_dir}/postproc.json" ] && [ "${model_dir}/postproc.json" -nt "${model_dir}/model.pt" ]; then
    log "  post-processing already tuned: ${model_dir}/postproc.json"
  else
    log "  tuning post-processing on ${dev_set} (log ${model_dir}/log/tune_postproc.log)"
    _quick=""; [ "${preset}" = ci ] && _quick="--quick"
    ${decode_cmd} "${model_dir}/log/infer_${dev_set}.log" \
      python -m pyutils.sqa.infer --model-dir "${model_dir}" --data-dir "${dump_dir}/${dev_set}" \
        --outdir "${model_dir}/infer_${dev_set}"
    ${decode_cmd} "${model_dir}/log/tune_postproc.log" \
      python -m pyutils.sqa.postproc tune ${_quick} --region "${region_tune}" \
        --outputs "${model_dir}/infer_${dev_set}/outputs.npz" \
        --ref "${dump_dir}/${dev_set}/ref.jsonl" --out "${model_dir}/postproc.json"
    grep -E '^(noise|distortion|pause|region):' "${model_dir}/log/tune_postproc.log" | sed 's/^/    dev /'
  fi
  stage_timer "5 train+tune"
fi

if [ ${stage} -le 6 ] && [ ${stop_stage} -ge 6 ]; then
  log "stage 6: inference on ${test_sets}"
  for s in ${test_sets}; do
    ${decode_cmd} "${model_dir}/log/infer_${s}.log" \
      python -m pyutils.sqa.infer --model-dir "${model_dir}" --data-dir "${dump_dir}/${s}" \
        --outdir "${model_dir}/infer_${s}" --postproc "${model_dir}/postproc.json" \
        --all-ids "${data_dir}/${s}/wav.scp"
    tail -n 2 "${model_dir}/log/infer_${s}.log" | grep -v '^#' | sed 's/^/    /' || true
  done
  stage_timer "6 inference"
fi

if [ ${stage} -le 7 ] && [ ${stop_stage} -ge 7 ]; then
  log "stage 7: scoring, RESULTS.md and plots"
  for s in ${test_sets}; do
    chorus-score sqa --ref "${data_dir}/${s}/ref.jsonl" --hyp "${model_dir}/infer_${s}/hyp.jsonl" \
      --output-json "${model_dir}/infer_${s}/score.json" > "${model_dir}/infer_${s}/score.txt"
    sed 's/^/    /' "${model_dir}/infer_${s}/score.txt"
    ${decode_cmd} "${model_dir}/log/plots_${s}.log" \
      python -m pyutils.sqa.plots --infer-dir "${model_dir}/infer_${s}" --ref "${data_dir}/${s}/ref.jsonl" \
        --wav-scp "${dump_dir}/${s}/wav.scp" --num "${num_plots}" --outdir "${model_dir}/plots_${s}"
  done
  stage_timer "7 scoring+plots"
  python -m pyutils.sqa.report --model-dir "${model_dir}" --test-sets "${test_sets}" \
    --baseline-dir "${baseline_dir}" --preset "${preset}" --out "${model_dir}/RESULTS.md" \
    --data-dir "${data_dir}" \
    --stage-times "${times_file}" \
    --wall-seconds "$(( SECONDS + prior_seconds ))" --load "$(cut -d' ' -f1-3 /proc/loadavg)"
  log "  wrote ${model_dir}/RESULTS.md"
  if [ "${copy_results}" = true ] || { [ "${copy_results}" = auto ] && [ "${preset}" = default ]; }; then
    python -m pyutils.results_file --report "${model_dir}/RESULTS.md" --into RESULTS.md
    log "  copied to $(pwd)/RESULTS.md"
  fi
  grep -E '^Final' "${model_dir}/RESULTS.md" | sed 's/^/    /'
fi

if [ ${stage} -le 8 ] && [ ${stop_stage} -ge 8 ]; then
  log "stage 8: package submissions"
  mkdir -p "${submission_dir}"
  for s in ${test_sets}; do
    python -m pyutils.sqa.package --hyp "${model_dir}/infer_${s}/hyp.jsonl" \
      --ids "${data_dir}/${s}/wav.scp" --out "${submission_dir}/sqa_${s}.jsonl"
  done
fi
log "done (stages ${stage}..${stop_stage})"
