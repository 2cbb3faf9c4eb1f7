# Options of local/nvv_asr.sh (sourced by it, before utils/stage_prelude.sh --parse): the
# declarations NAME=DEFAULT  # doc (./run.sh --help lists them with their docs), help_message,
# check_options (called by the prelude once the options are parsed: a bad option exits 2 naming
# it) and derive_settings (called by the script right after the prelude: the defaults left to
# the preset, the test sets, the real corpora, the exp and decode dir names).
_sp_options=${BASH_SOURCE[0]}   # where --help reads the options (utils/stage_prelude.sh)
# ---------------------------------------------------------------- options
# General
stage=0                  # first stage to run
stop_stage=8             # last stage to run
preset=default           # ci|default|large: corpus size, configs (conf/train_asr_<preset>.yaml, conf/decode_asr_<preset>.yaml)
lang=en                  # language of the recipe (text normaliser, scorer language)
nj=auto                  # parallel jobs for dump/stats/decode (auto: number of cores, max 8)
inference_nj=            # parallel decode jobs (default: nj)
ngpu=0                   # GPUs per node for training (0: CPU)
num_nodes=1              # nodes for training (needs cmd_backend=slurm beyond 1)
gpu_inference=false      # decode on GPU
train_threads=1          # torch threads of CPU training: 1 is fastest on a shared machine (OpenMP threads spin when cores are oversubscribed: measured 10x slower with 2 threads at load 11 on 2 cores)
datadir=data             # Kaldi data dirs
dumpdir=dump             # dumped audio
expdir=exp               # experiments
corpus_dir=corpus        # where stage 0 writes the mini corpus
synth_args=              # more chorus-synth nvv options, e.g. "--voices espeak" (give another --corpus_dir with it)
mini_dir=                # Kaldi data dirs to use instead of the generated mini corpus (DIR/data/{train,dev,test}; DIR/.done)
skip_train=false         # only decode with an existing model (--asr_exp): skip training data in stage 2 and stages 3-5

# Data
corpus=mini              # mini | real corpora by name, several allowed ("nvbench mnv17"; paths in db.sh) | all: those set in db.sh
unmapped=drop_tag        # chorus-prep policy for source labels without a challenge tag: drop_tag|keep_text|drop_utt
train_set=train          # training data dir name under datadir
valid_set=dev            # validation data dir name
test_sets=auto           # data dirs to decode (and score when they have a text file); auto: "dev test" ("test" for --preset ci)
package_sets=test        # test sets to package as Track 1 submissions (stage 8)
fs=16000                 # sampling rate of the dumped audio
min_wav_duration=0.1     # drop shorter training/validation utterances (s)
max_wav_duration=30      # drop longer training/validation utterances (s)

# Tokens
nvv_tags=true            # model the 16 NVV tags as atomic tokens (false: plain ASR, tags removed)
token_type=bpe           # bpe|char|whisper (whisper: Whisper's own BPE, set by --whisper true)
nbpe=150                 # BPE vocabulary size (token_type=bpe)
bpe_model_type=bpe       # sentencepiece model type: bpe|unigram

# Method
asr_method=espnet        # espnet: an ESPnet model (conformer from scratch, or --whisper true: Whisper fine-tuned);
                         # cascade: frozen Whisper base text + an NVV detector fitted on the corpus, tags
                         # placed by time (pyutils.asr.cascade; en, zh; the default of egs/nvv_asr_{en,zh}/run.sh)
detector_layers=5        # cascade: the frozen Whisper base encoder blocks whose states the NVV detector's conv heads read
                         # (pyutils.nvv_detect.frame_heads)
detector_train_utts=0    # cascade: corpus train utterances the detector is fitted on (0: all)
detector_labels=auto     # cascade: the detector's labels: times (exact event times, the mini corpus's events/) |
                         # transcript (tag windows from the train/dev sets' tagged transcripts, frozen Whisper forced
                         # to each, pyutils.nvv_detect.weak_labels; fitted as the sounds' spans); auto: times for the mini corpus, transcript for
                         # real corpora (--corpus NAME)
detector_mini=true       # cascade, real corpora (--corpus NAME): also fit the detector on the generated mini corpus's
                         # exact event times (made in stage 0, or --mini_dir); false: the real corpora's tag windows alone
detector_real=auto       # cascade: also fit/tune on the real-NVV sets (pyutils.nvv_detect.devset): auto (when
                         # tools/models/{real_speech,nvv_bank} are installed) | true | false
detector_heads=3         # cascade: an ensemble of N conv heads (seeds 0, 1000, ...), their
                         # per-frame posteriors averaged; 12 epochs shared among them (12/N each: the cost of one head;
                         # >= 100 steps per head on a small corpus: the ci preset's heads get 12 epochs)
detector_args=           # cascade: extra arguments of pyutils.nvv_detect.frame_heads (e.g. "--real-weight 8")
nvv_naming=true          # cascade: name each detected event from YAMNet + Whisper's subtitle labels + the heads
                         # (pyutils.nvv_detect.naming; a namer fitted in stage 5 on real labelled sounds: DEEPLY_NVV's
                         # train speakers, a real corpus's tag windows; else the zero-shot fusion); false: the detector's tags
naming_args=             # cascade: extra arguments of `pyutils.nvv_detect.naming name` (e.g. "--min-prob 0.5")
decode_pack=true         # cascade: decode clips of <= 10 s several to a 30 s Whisper window (pyutils.asr.cascade
                         # --pack: one encoder pass per window); false: one clip per window, Whisper's words cached
cascade_args=            # cascade: extra arguments of pyutils.asr.cascade (e.g. "--model DIR")
# options of designs that were not adopted (utils/parse_options.sh refuses them with the reason)
_retired_options="detector: the YAMNet-patch detector was not adopted (64.62 en against 69.16); the NVV detector is the Whisper-frame heads (code: git show c9e6e28)
detector_embed: an option of the removed YAMNet-patch detector (--detector yamnet; code: git show c9e6e28)
detector_l2: an option of the removed YAMNet-patch detector (--detector yamnet; code: git show c9e6e28)"

# Pretrained Whisper (fine-tuning instead of training from scratch)
whisper=false            # true: fine-tune pretrained Whisper (conf/train_asr_whisper_<preset>.yaml, Whisper tokens, tags atomic)
whisper_model=           # Whisper weights: base (installed by make -C tools) or a path (CTranslate2/transformers dir, openai .pt); empty: as in the config

# Training
asr_config=              # training config (default: conf/train_asr_<preset>.yaml)
asr_args=                # extra arguments of espnet2.bin.asr_train
asr_tag=                 # exp dir suffix (default: from the config name)
asr_exp=                 # exp dir of the model (default: expdir/asr_<asr_tag>); set it to decode with an existing model
init_param=              # initialise from a local checkpoint, e.g. /path/model.pth or "model.pth:encoder:encoder"
feats_normalize=global_mvn  # normalisation layer: global_mvn|utterance_mvn|none (given on the command line, never in the YAML: see stage 4)

# Decoding / scoring
inference_config=        # decoding config (default: conf/decode_asr_<preset>.yaml, else conf/decode_asr.yaml)
inference_args=          # extra arguments of espnet2.bin.asr_inference
inference_model=valid.acc.ave.pth  # checkpoint file under asr_exp
inference_tag=           # decode dir name (default: <inference config name>_<model>, e.g. decode_asr_valid_acc_ave)
decode_root=             # where decode outputs go (default: <asr_exp>/<inference_tag>)
score_nvbench=true       # also run `chorus-score nvbench`
real_speech=auto         # stage 7: WER on real English speech (Debian pocketsphinx-testdata; never trained on) + zero-shot Whisper; auto: lang en, preset default|large
copy_results=auto        # copy <decode dir>/RESULTS.md to the exp dir and the recipe dir (auto: recipe dir only for --preset default; false: neither)

help_message=$(cat <<EOF
Usage: $0 [options]   (run from a recipe dir through its run.sh)

NVV-aware ASR recipe, stages 0-8 (--asr_method espnet: the ESPnet stages below;
--asr_method cascade: 2 dump of the test sets, 3 not used, 4 detector features of the corpus
(frozen Whisper encoder frames), 5 fit the NVV detector, 6 detector events + frozen Whisper
text -> tagged transcripts):
  0 corpus (mini corpus, or check the real corpora of --corpus, paths in db.sh)
  1 data prep (Kaldi data dirs; real corpora via chorus-prep)
  2 format: 16 kHz mono dump + utt2dur, too short/long training utts removed
  3 tokens (BPE or characters; the 16 NVV tags atomic)
  4 collect feature/shape statistics      5 train (espnet2.bin.launch)
  6 decode (espnet2.bin.asr_inference) + RTF
  7 score (chorus-score track1, nvbench) + RESULTS.md
  8 package the Track 1 submission (chorus-score package-track1)

Examples:
  ./run.sh                                   # default preset, all stages (egs/nvv_asr_{en,zh}: the cascade)
  ./run.sh --asr_method espnet               # the ESPnet conformer trained from scratch
  ./run.sh --preset ci                       # CI-sized run
  ./run.sh --corpus "nvbench mnv17"          # real corpora (NVBENCH, MNV17 in db.sh)
  ./run.sh --stage 5 --ngpu 1 --asr_config conf/tuning/train_asr_conformer_large.yaml
  ./run.sh --asr_method espnet --whisper true   # fine-tune pretrained Whisper base (tags as new tokens)
  ./run.sh --whisper true --whisper_model ~/.cache/hf/faster-whisper-small   # another Whisper
  ./run.sh --detector_heads 1 --asr_tag heads1  # another cascade detector in exp/asr_heads1
  # decode any Kaldi data dir (wav.scp) with a trained model:
  ./run.sh --stage 2 --stop_stage 6 --test_sets mydata --asr_exp exp/asr_train_asr_default_en_bpe300
EOF
)

check_options() {   # (called by the prelude once the options are parsed)
  local c
  _db_corpora=(NVBENCH EMILIA_NV NONVERBALTTS MNV17 SMIIP_NV)   # training corpora of --corpus (db.sh names)
  if [ "${whisper}" = true ]; then
    token_type=whisper
    feats_normalize=none   # Whisper normalises its own log-mel features
    : "${asr_config:=conf/train_asr_whisper_${preset}.yaml}"
    if [ -z "${inference_config}" ]; then
      inference_config=conf/decode_asr_whisper_${preset}.yaml
      [ -f "${inference_config}" ] || inference_config=conf/decode_asr_whisper.yaml
    fi
  fi
  check_choice asr_method espnet cascade
  check_match detector_layers '^[1-6](,[1-6])*$' "encoder blocks 1-6 separated by commas"
  check_choice detector_real auto true false
  if [ "${asr_method}" = cascade ]; then
    [ "${whisper}" != true ] || option_error "--whisper true fine-tunes Whisper inside ESPnet: give --asr_method espnet with it (the cascade keeps Whisper frozen)"
    case "${lang}" in en|zh) ;; *) option_error "--asr_method cascade supports --lang en and zh (placement and NVV-word rules), got '${lang}': use --asr_method espnet" ;; esac
    check_match detector_train_utts '^[0-9]+$' "a whole number"
    check_match detector_heads '^[1-9][0-9]*$' "a whole number >= 1"
    check_choice nvv_naming true false
    check_choice detector_labels auto times transcript
    if [ "${corpus}" != mini ] && [ "${detector_labels}" = times ] && [ "${detector_mini}" = false ] \
       && [ "${detector_real}" = false ] && [ -z "${DEEPLY_NVV:-}" ] && [ "${skip_train}" != true ]; then
      option_error "--detector_labels times with real corpora (--corpus ${corpus}; they have no NVV event times)," \
        "--detector_mini false, --detector_real false and no DEEPLY_NVV in db.sh: the NVV detector has nothing to" \
        "fit on: give --detector_labels transcript (tag windows from the tagged transcripts) or --detector_mini true"
    fi
  fi
  check_choice token_type bpe char whisper
  [ "${token_type}" != whisper ] || [ "${whisper}" = true ] || option_error "--token_type whisper goes with --whisper true"
  check_choice unmapped drop_tag keep_text drop_utt
  if [[ " ${corpus} " == *" all "* ]]; then
    for c in "${_db_corpora[@]}"; do [ -z "${!c:-}" ] || return 0; done
    option_error "--corpus all: no corpus is set in db.sh"
  fi
  case " ${corpus} " in *" mini "*|*" all "*) [[ "${corpus}" =~ ^\ *(mini|all)\ *$ ]] && return 0
    option_error "--corpus '${corpus}': mini and all stand alone" ;; esac
  for c in ${corpus}; do
    [[ " ${_db_corpora[*]} " == *" ${c^^} "* ]] || option_error "unknown --corpus '${c}' (mini, all, or some of: ${_db_corpora[*],,})"
    corpus_path "${c}" > /dev/null
  done
}

derive_settings() {   # (called by local/nvv_asr.sh right after the prelude)
  local c
  : "${inference_nj:=${nj}}"
  [ "${train_threads}" != auto ] || train_threads=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
  _auto_tests=false
  if [ "${test_sets}" = auto ]; then
    _auto_tests=true
    # (the cascade's dev split chooses the detector's thresholds: its score would flatter it)
    if [ "${preset}" = ci ] || [ "${asr_method}" = cascade ]; then test_sets=test; else test_sets="dev test"; fi
  fi
  corpora=""   # the db.sh names of the real training corpora (--corpus)
  case "${corpus}" in
    mini) ;;
    all) for c in "${_db_corpora[@]}"; do [ -z "${!c:-}" ] || corpora+="${corpora:+ }${c}"; done ;;
    *) for c in ${corpus}; do corpora+="${corpora:+ }${c^^}"; done ;;
  esac
  use_mini=true; [ -z "${corpora}" ] || use_mini=false
  # the mini corpus beside real corpora: the cascade detector's exact event times
  mini_for_detector=false
  if [ "${use_mini}" = false ] && [ "${asr_method}" = cascade ] && [ "${detector_mini}" = true ] \
     && [ "${skip_train}" != true ]; then
    mini_for_detector=true
  fi
  if [ -n "${NVV_TRACK1_TEST:-}" ] && [ "${skip_train}" != true ]; then
    _t1set="track1_test_${lang}"
    [[ " ${test_sets} " == *" ${_t1set} "* ]] || test_sets+=" ${_t1set}"
    [[ " ${package_sets} " == *" ${_t1set} "* ]] || package_sets+=" ${_t1set}"
  fi

  # preset defaults (options left empty)
  : "${asr_config:=conf/train_asr_${preset}.yaml}"
  if [ -z "${inference_config}" ]; then
    inference_config=conf/decode_asr_${preset}.yaml
    [ -f "${inference_config}" ] || inference_config=conf/decode_asr.yaml
  fi
  # decode dir: ESPnet's naming, the decoding config's name (decode_asr...) and the model's
  if [ "${asr_method}" = cascade ]; then
    : "${asr_tag:=cascade_${preset}_${lang}}"
    : "${inference_tag:=decode_cascade}"
  fi
  _tag=$(basename "${asr_config}" .yaml)_${lang}_${token_type}$([ "${token_type}" != bpe ] || echo "${nbpe}")
  : "${asr_tag:=${_tag}$([ "${nvv_tags}" = true ] || echo _notags)}"
  : "${asr_exp:=${expdir}/asr_${asr_tag}}"
  : "${inference_tag:=$(basename "${inference_config}" .yaml)_$(basename "${inference_model%.*}" | tr . _)}"
  : "${decode_root:=${asr_exp}/${inference_tag}}"
}
