# Options of local/vc.sh (sourced by it, before utils/stage_prelude.sh --parse): the
# declarations NAME=DEFAULT  # doc (./run.sh --help lists them with their docs), help_message,
# check_options (called by the prelude once the options are parsed: a bad option exits 2 naming
# it) and derive_settings (called by the script right after the prelude: the configs left to
# the preset, the corpus dir, the exp dirs, the common options of the ASR and TTS stage scripts).
_sp_options=${BASH_SOURCE[0]}   # where --help reads the options (utils/stage_prelude.sh)

stage=0                  # first stage to run
stop_stage=8             # last stage to run
preset=default           # ci|default|large: corpus size and model configs
task=2                   # 2: no external pretrained models (all trained here); 1: --pretrained_* allowed
vc_method=               # knn | cascade (see --help); empty: knn with --task 1 and no --pretrained_*, else cascade
knn_args=                # more pyutils.vc.knn options, e.g. "--rerank 0" or "--bad-ref copy-source"
nj=auto                  # parallel jobs (auto: the number of cores, at most 8)
ngpu=0                   # GPUs for training
corpus=mini              # mini (chorus-synth vc) | vlsp2025_vc (VLSP2025_VC in db.sh)
corpus_dir=              # default: corpus/mini_vc_<preset> or corpus/vlsp2025_vc
datadir=data             # Kaldi data dirs
dumpdir=dump             # 16 kHz audio, embeddings, the ASR/TTS dumps
expdir=exp               # models, logs, results
test_sets=test           # pairs lists <corpus_dir>/pairs/<name>.tsv to convert
pairs=                   # convert this pairs TSV instead (its name: file name without .tsv)
audio_root=              # base of relative paths in a pairs list (default: the TSV's folder)
src_text=                # Kaldi text of the pairs' source transcripts (by pair or source id; or a 4th pairs column)
dev_per_spk=2            # utterances per training speaker held out for validation
spk_config=              # speaker model, default: conf/train_spk_xvector_<preset>.yaml
spk_args=                # extra espnet2.bin.spk_train arguments
spk_use_audio_only=true  # train the speaker model on the audio-only set too
spk_inference_model=valid.eer.best.pth
pretrained_spk=          # task 1: ESPnet-SPK exp dir (config.yaml + ${spk_inference_model})
asr_config=              # default: conf/train_asr_vi_<preset>.yaml
asr_args=                # extra espnet2.bin.asr_train arguments
asr_inference_model=valid.acc.ave.pth
pretrained_asr=          # task 1: ESPnet ASR exp dir (config.yaml + ${asr_inference_model})
tts_config=              # default: conf/train_fastspeech_vi_<preset>.yaml (FastSpeech, aligned durations)
tts_args=                # extra ESPnet TTS trainer arguments
tts_token_type=phn       # phn (espeak-ng Vietnamese phonemes, tone on the vowel) | char (NFC letters)
tts_inference_model=latest.pth
tts_inference_args=      # extra espnet2.bin.tts_inference arguments (e.g. "--speed_control_alpha 1.1")
tts_audio_only_asr=false # also train the TTS on the audio-only set with ASR transcripts
pretrained_tts=          # task 1: ESPnet TTS exp dir trained with this recipe's embeddings
f0_match=false           # shift each output's median F0 to the reference's (sox pitch)
oracle_text=false        # diagnosis only: the TTS reads the true source transcripts (own exp dir, no RESULTS.md)
wer_asr=judge            # stage 7 WER by: judge (pretrained Whisper base, as VLSP) | recipe (the cascade's own ASR)
judge_model=base         # the judge's weights: base (make -C tools) or a CTranslate2 Whisper dir
parallel_train=true      # train the ASR (stage 4) in the background while stage 5 trains the TTS
submission_dir=submission
help_message="Usage: $0 [options]   (run from egs/vivc through its run.sh)
Vietnamese zero-shot VC, stages 0-8 (header of local/vc.sh lists them). --vc_method knn: source
frames matched to the reference's by frozen Whisper base features, WORLD (pyutils/vc/knn.py; a
pretrained model: --task 1 only; nothing trained); cascade: recipe ASR -> TTS with the reference's
speaker embedding. Examples:
  ./run.sh                                    # mini corpus, default preset, kNN conversion (Task 1)
  ./run.sh --task 2                           # the ASR -> TTS cascade, every model trained here (Task 2)
  ./run.sh --preset ci                        # whole recipe in a few minutes
  ./run.sh --corpus vlsp2025_vc               # VLSP 2025 VC data (VLSP2025_VC in db.sh)
  ./run.sh --stage 6 --pairs my_pairs.tsv     # convert your own pairs with trained models
  ./run.sh --task 1 --pretrained_asr /models/asr_vi --pretrained_spk /models/spk"

check_options() {   # (called by the prelude once the options are parsed)
  local p
  if [ -z "${vc_method}" ]; then
    vc_method=cascade
    [ "${task}" = 1 ] && [ -z "${pretrained_asr}${pretrained_tts}${pretrained_spk}" ] && vc_method=knn
  fi
  check_choice wer_asr judge recipe
  check_choice task 1 2
  if [ "${task}" = 2 ] && [ -n "${pretrained_asr}${pretrained_tts}${pretrained_spk}" ]; then
    option_error "--task 2 forbids external pretrained models; use --task 1 with --pretrained_*"
  fi
  check_choice vc_method cascade knn
  if [ "${vc_method}" = knn ]; then
    [ "${task}" = 1 ] || option_error "--vc_method knn uses the pretrained Whisper base encoder: give --task 1"
    [ "${wer_asr}" = judge ] || option_error "--vc_method knn trains no ASR: --wer_asr judge"
    [ "${oracle_text}" = false ] || option_error "--oracle_text is a diagnosis of the cascade (--vc_method cascade)"
  fi
  for p in "${pretrained_asr}" "${pretrained_tts}" "${pretrained_spk}"; do
    [ -z "${p}" ] || [ -f "${p}/config.yaml" ] || option_error "pretrained model dir ${p} has no config.yaml"
  done
  check_choice corpus mini vlsp2025_vc
  [ "${corpus}" = mini ] || corpus_path "${corpus}" > /dev/null
  [ -z "${pairs}" ] || [ -f "${pairs}" ] || option_error "--pairs ${pairs} not found"
}

derive_settings() {   # (called by local/vc.sh right after the prelude)
  : "${spk_config:=conf/train_spk_xvector_${preset}.yaml}"
  : "${asr_config:=conf/train_asr_vi_${preset}.yaml}"
  : "${tts_config:=conf/train_fastspeech_vi_${preset}.yaml}"
  : "${corpus_dir:=corpus/$([ "${corpus}" = mini ] && echo "mini_vc_${preset}" || echo "${corpus}")}"
  [ -z "${pairs}" ] || test_sets=$(basename "${pairs}" .tsv)
  # experiment dirs are named after their configs, so presets never share a model
  spk_exp=${pretrained_spk:-${expdir}/$(basename "${spk_config}" .yaml | sed 's/^train_//')}
  asr_exp=${pretrained_asr:-${expdir}/$(basename "${asr_config}" .yaml | sed 's/^train_//')}
  tts_exp=${pretrained_tts:-${expdir}/$(basename "${tts_config}" .yaml | sed 's/^train_//')}
  vc_exp=${expdir}/vc_${preset}; [ "${vc_method}" = cascade ] || vc_exp=${expdir}/vc_knn_${preset}
  _tsfx=""   # TTS set suffix: an oracle-text run never overwrites the cascade's synthesis
  if [ "${oracle_text}" = true ]; then vc_exp=${expdir}/vc_${preset}_oracletext; _tsfx=_oracletext; fi
  emb_dir=${dumpdir}/xvector_$(basename "${spk_exp}" | sed 's/^spk_//')
  asr_dump=${dumpdir}/asr; tts_data=${datadir}/tts; tts_dump=${dumpdir}/tts
  asr_common=(--lang vi --token_type char --nvv_tags false --preset "${preset}" --nj "${nj}"
    --datadir "${dumpdir}/raw" --dumpdir "${asr_dump}" --expdir "${expdir}" --asr_exp "${asr_exp}"
    --train_set tr_text --valid_set dev_text --inference_model "${asr_inference_model}"
    --inference_tag decode --copy_results false)
  tts_common=(--lang vi --token_type "${tts_token_type}" --preset "${preset}" --nj "${nj}"
    --skip_data_prep true --datadir "${tts_data}" --dumpdir "${tts_dump}" --expdir "${expdir}"
    --tts_config "${tts_config}" --tts_exp "${tts_exp}" --train_set tts_train --valid_set tts_dev
    --use_sid false --use_spk_embed true --inference_model "${tts_inference_model}" --test_max_utts 0)
}
