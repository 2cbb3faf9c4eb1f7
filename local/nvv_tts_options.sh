# Options of local/nvv_tts.sh (sourced by it, before utils/stage_prelude.sh --parse): the
# declarations NAME=DEFAULT  # doc (./run.sh --help lists them with their docs), help_message,
# check_options (called by the prelude once the options are parsed: a bad option exits 2 naming
# it) and derive_settings (called by the script right after the prelude: the defaults left to
# the preset, the set names, the corpus dir, the TTS task and exp dir).
_sp_options=${BASH_SOURCE[0]}   # where --help reads the options (utils/stage_prelude.sh)

stage=0                 # first stage to run
stop_stage=8            # last stage to run
preset=default          # ci|default|large: corpus size, model config, epochs
lang=en                 # en|zh|vi: selects the text front-end (one language per run)
nj=auto                 # parallel jobs (auto: the number of cores, at most 8)
ngpu=0                  # GPUs for training (0 = CPU)
tts_method=espnet       # espnet | cascade | auto (see --help)
tts_convert=false       # cascade: convert the speech to the target speaker (kNN-VC; egs/nvv_tts/RESULTS.md)
tts_warp=true           # cascade: --tts_voice warped (pitch, formants) to each target speaker's median F0 (stage 5)
tts_voice=              # cascade: the voice-bank voice that speaks (default <lang>_s00: piper joe / gcin speaker 3)
knn_ref_s=30            # cascade: seconds of a speaker's training speech in its kNN matching set (stage 5)
gpu_inference=false     # synthesise on GPU
corpus=mini             # mini | nvbench | emilia_nv | nonverbaltts (NVBENCH, EMILIA_NV, NONVERBALTTS in db.sh)
corpus_splits="train dev test"  # names of the corpus' train/dev/test data dirs (real corpora: e.g. "train validation test")
unmapped=drop_tag       # real corpora: labels without a challenge tag (drop_tag|keep_text|drop_utt, see chorus-prep)
corpus_dir=             # corpus location (default: corpus/nvv_<lang>_<preset>, or the identical one of ../nvv_asr_<lang>)
synth_args=             # more chorus-synth nvv options, e.g. "--voices espeak" (give another --corpus_dir with it)
datadir=data            # Kaldi data dirs
dumpdir=dump            # dumped, tokenised data
expdir=exp              # experiments
train_set=              # training data dir name under datadir (default: train_<lang>[_<preset> unless default])
valid_set=              # validation data dir name (default: dev_<lang>)
test_sets=              # space-separated test data dir names (default: test_<lang>)
valid_max_utts=         # validate on at most this many dev utterances (0 = all; default: ci 10, default 30, large 0)
test_max_utts=          # synthesise and evaluate at most this many test utterances (0 = all; default: ci 8, default 36, large 0)
train_threads=1         # torch threads of the training job (>1 only on an idle machine)
skip_data_prep=false    # true: datadir/<sets> already exist (made by the caller); start at stage 2 content
token_type=phn          # phn|char (zh also: pinyin); see pyutils/tts/frontend.py
tag_parts=3             # duration models: tokens per NVV tag ([laugh] [laugh]~2 ...), aligned in order inside the event
tts_task=               # gan_tts (VITS) | tts (Tacotron2/FastSpeech2); default from the config name
tts_config=             # training config (default: conf/train_fastspeech_world_<preset>.yaml; large: conf/tuning/train_vits.yaml)
tts_tag=                # exp dir exp/tts_<tts_tag> (default: <lang>_<config name>, or <lang>_cascade...)
tts_exp=                # experiment dir (default: exp/tts_<tts_tag>)
tts_stats_dir=          # statistics dir (default: exp/tts_stats_<lang>_<token_type>_<feats>)
train_args=             # extra arguments for the ESPnet trainer, e.g. "--max_epoch 50"
use_sid=true            # condition on speaker ids (utt2sid from train speakers)
use_spk_embed=false     # condition on speaker embeddings: <data>/<set>/spk_embed.scp (kaldi_ark) given by the caller
spk_embed_dim=256       # dimension of those embeddings
inference_model=latest.pth  # checkpoint used for synthesis (valid.loss.best.pth: measured, not better; README)
inference_args="--maxlenratio 10.0 --minlenratio 0.0"  # extra tts_inference arguments
vocoder=griffin_lim     # log-mel models: griffin_lim | espnet | hifigan (see --help)
gl_iters=32             # Griffin-Lim iterations (--vocoder griffin_lim)
gl_power=1.3            # magnitude sharpening exponent before Griffin-Lim (1 = none)
world_conf=conf/world.yaml  # WORLD analysis settings, for configs that set odim (the model predicts WORLD features)
world_lifter=80         # WORLD synthesis from a log-mel envelope: cepstral coefficients kept when smoothing it
world_voicing=          # WORLD synthesis: voiced where the predicted flag exceeds this (0..1; default zh 0.3, else 0.5)
infer_jsonl=            # Track 2 input JSONL ({utt_id,text_with_nvvs}) to synthesise too
infer_spk=              # voice (train speaker) for --infer_jsonl rows (default: first train speaker)
asr_exp=                # NVV-ASR exp dir for stage 7 (default: ../nvv_asr_<lang>/exp/<its asr dir> if present)
judge=true              # stage 7: intelligibility by the pretrained Whisper judge (pyutils/whisper/judge.py)
judge_model=base        # the judge's weights: base (make -C tools) or a CTranslate2 Whisper dir
yamnet=true             # stage 7: is each requested NVV heard near its position by YAMNet (pyutils/tts/nvv_heard.py)
submission_dir=submission  # stage 8 output: submission/<set>/<utt_id>.wav
copy_results=true       # stage 7: the report into the recipe dir's RESULTS[_<lang>].md after a --preset default run
help_message="Usage: $0 [options]
NVV-controllable TTS recipe stages 0-8 (see the header of local/nvv_tts.sh):
  0 corpus  1 data prep  2 format/dump  3 tokens+alignment  4 stats  5 train
  6 synthesis  7 evaluation + RESULTS.md  8 submission
--tts_method espnet: an ESPnet model trained here (FastSpeech + WORLD by default); cascade: pretrained
parts, nothing trained (bank voice + recorded NVVs + kNN-VC; en, zh); auto: cascade for en and zh.
--vocoder: griffin_lim (pyutils/tts/vocoder.py: sharpened, gl_iters) | espnet (tts_inference's
8-iteration GL) | hifigan (pretrained HiFi-GAN on the predicted log-mel, pyutils/tts/hifigan.py);
WORLD-feature models use WORLD unless hifigan is given.
Examples:
  ./run.sh                                  # mini English corpus, default preset
  ./run.sh --lang zh                        # Mandarin
  ./run.sh --preset ci                      # whole recipe in a few minutes
  ./run.sh --stage 6 --infer_jsonl track2_input.jsonl --infer_spk en_s00
  ./run.sh --tts_config conf/tuning/train_vits.yaml --ngpu 1 --tts_tag vits"

check_options() {   # (called by the prelude once the options are parsed)
  local bool
  if [ -z "${world_voicing}" ]; then world_voicing=0.5; [ "${lang}" = zh ] && world_voicing=0.3; fi
  check_choice tts_method espnet cascade auto
  [ "${tts_method}" != auto ] || case "${lang}" in en|zh) tts_method=cascade ;; *) tts_method=espnet ;; esac
  for bool in tts_warp tts_convert yamnet; do check_choice "${bool}" true false; done
  check_match world_voicing '^(0(\.[0-9]*)?|\.[0-9]+)$' "a number in [0, 1)"
  check_choice vocoder griffin_lim espnet hifigan
  check_choice corpus mini nvbench emilia_nv nonverbaltts
  [ "${corpus}" = mini ] || corpus_path "${corpus}" > /dev/null
  [ -z "${infer_jsonl}" ] || [ -f "${infer_jsonl}" ] || option_error "--infer_jsonl ${infer_jsonl} not found"
  [ "${tts_method}" = cascade ] || return 0
  case "${lang}" in en|zh) ;;
    *) option_error "--tts_method cascade has bank voices for en and zh only, got --lang '${lang}': use --tts_method espnet" ;;
  esac
  [[ "${knn_ref_s}" =~ ^[0-9]+(\.[0-9]*)?$ ]] && awk -v s="${knn_ref_s}" 'BEGIN{exit !(s >= 2)}' \
    || option_error "--knn_ref_s must be a number of seconds >= 2, got '${knn_ref_s}'"
  [ -z "${tts_voice}" ] || check_match tts_voice "^${lang}_s[0-9]+$" "a ${lang} bank voice id (${lang}_s00, ${lang}_s01, ...)"
}

derive_settings() {   # (called by local/nvv_tts.sh right after the prelude)
  _cascade=false; [ "${tts_method}" = espnet ] || _cascade=true
  case "${preset}" in   # preset defaults (options left empty)
    ci)      _cfg=conf/train_fastspeech_world_ci.yaml;      _nv=10; _nt=8 ;;
    default) _cfg=conf/train_fastspeech_world_default.yaml; _nv=30; _nt=36 ;;
    large)   _cfg=conf/tuning/train_vits.yaml;              _nv=0;  _nt=0 ;;
  esac
  : "${tts_config:=${_cfg}}" "${valid_max_utts:=${_nv}}" "${test_max_utts:=${_nt}}"
  _sfx=""; [ "${preset}" = default ] || _sfx="_${preset}"   # a CI run never overwrites a default run's sets
  : "${train_set:=train_${lang}${_sfx}}" "${valid_set:=dev_${lang}${_sfx}}" "${test_sets:=test_${lang}${_sfx}}"
  if [ -z "${corpus_dir}" ] && [ "${corpus}" != mini ]; then corpus_dir=corpus/${corpus}_${lang}
  elif [ -z "${corpus_dir}" ]; then
    corpus_dir=corpus/nvv_${lang}_${preset}
    # the NVV-ASR recipe generates the very same corpus (same command, preset and seed): reuse it
    _asr_corpus=../nvv_asr_${lang}/corpus/nvv_${lang}_${preset}
    if [ -z "${synth_args}" ] && [ ! -f "${corpus_dir}/.done" ] && [ -f "${_asr_corpus}/.done" ]; then corpus_dir=${_asr_corpus}; fi
  fi
  case "$(basename "${tts_config}")" in *vits*|*joint*|*gan*) : "${tts_task:=gan_tts}" ;; *) : "${tts_task:=tts}" ;; esac
  _cfg_name=$(basename "${tts_config}" .yaml)
  if ${_cascade} && [ -z "${tts_tag}" ]; then
    tts_tag=${lang}_cascade; ${tts_convert} || tts_tag+=_noconv
    ! ${tts_warp} || tts_tag+=_warp
    tts_tag+="${tts_voice:+_${tts_voice}}${_sfx}"
  fi
  : "${tts_tag:=${lang}_${_cfg_name#train_}}" "${tts_exp:=${expdir}/tts_${tts_tag}}"
  ! ${_cascade} || : "${tts_voice:=${lang}_s00}"
  if grep -q "^odim:" "${tts_config}" && [ ! -f "${world_conf}" ]; then
    option_error "--world_conf ${world_conf} not found (needed by ${tts_config}: odim)"
  fi
}
