# Options of local/sqa.sh (sourced by it, before utils/stage_prelude.sh --parse): the
# declarations NAME=DEFAULT  # doc (./run.sh --help lists them with their docs), help_message,
# check_options (called by the prelude once the options are parsed: a bad option exits 2 naming
# it) and derive_settings (called by the script right after the prelude: the defaults left to
# the preset, the real corpus, the test sets, the model and feature paths).
_sp_options=${BASH_SOURCE[0]}   # where --help reads the options (utils/stage_prelude.sh)

stage=0                 # first stage to run
stop_stage=8            # last stage to run
preset=default          # ci | default | large: corpus size and training config
nj=auto                 # parallel jobs (auto: the number of cores, at most 8)
corpus=mini             # mini (chorus-synth sqa) | qualispeech (QUALISPEECH in db.sh)
corpus_dir=             # the mini corpus (default: corpus/sqa_mini4_<preset>)
synth_args=             # more chorus-synth sqa options, e.g. "--voices espeak" (give another --corpus_dir with it)
prep_args=              # more chorus-prep qualispeech options, e.g. "--untimed-fault drop"
seed=0                  # corpus seed
n_mels=80               # log-mel bins
pitch_feature=true      # append the pitch contour (pyutils.sqa.cues.pitch_track; RESULTS.md)
datadir=data            # Kaldi-style data dirs
dumpdir=dump            # features + 16 kHz audio
expdir=exp              # models, logs, results
train_set=train         # training set name
valid_set=dev           # set used for early stopping and tuning
test_sets="test test_real"   # sets to infer and score (test_real: real speech, dropped if the corpus has none)
utt_embed=true          # stage 2: cache utterance embeddings (pyutils.sqa.embed) for the score head
embed_args="--whisper base --whisper-layer 3 --p808 true --p835 false"   # pyutils.sqa.embed options (see --help)
sqa_config=             # training hyper-parameters (default: conf/train_sqa_<preset>.yaml)
sqa_tag=                # model dir is exp/sqa_<sqa_tag> (default: the preset)
score_column="Overall quality"   # QualiSpeech column used as the reference score
region_tune=after       # stage 5: a noise/distortion class per detected region, tuned on dev (after | off)
skip_baselines=false    # true: skip stage 4 (non-learned baselines)
num_plots=4             # recordings plotted in stage 7
submission_dir=submission   # stage 8 output dir
copy_results=auto       # copy RESULTS.md into the recipe dir (auto: only for preset default)
help_message="Usage: $0 [--preset ci|default|large] [--stage N] [--stop_stage M] [options]
Speech quality assessment recipe: a score in [1,5] and noise/distortion/pause intervals.
Stages: 0 corpus, 1 data, 2 features+embeddings, 3 stats, 4 baselines, 5 train, 6 inference,
7 scoring, 8 package (header of local/sqa.sh). --embed_args: block 3 of Whisper base (RESULTS.md).
Examples:
  ./run.sh                                  # default preset, all stages
  ./run.sh --preset ci                      # whole recipe in ~2-3 minutes
  ./run.sh --corpus qualispeech             # QualiSpeech (QUALISPEECH in db.sh)
  ./run.sh --stage 5 --stop_stage 7 --sqa_config conf/my_train.yaml --sqa_tag mytry"

check_options() {   # (called by the prelude once the options are parsed)
  check_choice region_tune after off
  check_choice corpus mini qualispeech
  [ "${corpus}" = mini ] || corpus_path "${corpus}" > /dev/null
}

derive_settings() {   # (called by local/sqa.sh right after the prelude)
  : "${corpus_dir:=corpus/sqa_mini4_${preset}}"
  : "${sqa_config:=conf/train_sqa_${preset}.yaml}"
  : "${sqa_tag:=${preset}}"
  real_corpus=""; [ "${corpus}" = mini ] || real_corpus=$(corpus_path "${corpus}")
  # the mini corpus has test_real only where pocketsphinx-testdata is installed
  if [ -n "${real_corpus}" ] || [ ! -d /usr/share/pocketsphinx/test/data/librivox ] \
     || { [ -f "${corpus_dir}/.done" ] && [ ! -d "${corpus_dir}/data/test_real" ]; }; then
    test_sets=$(echo " ${test_sets} " | sed 's/ test_real / /; s/^ *//; s/ *$//')
  fi
  model_dir=${expdir}/sqa_${sqa_tag}
  stats_file=${dumpdir}/${train_set}/feats_stats.npz   # lives with the features it describes
  all_sets="${train_set} ${valid_set} ${test_sets}"
  baseline_dir=${expdir}/sqa_baselines_${sqa_tag}
  times_file=${expdir}/stage_times.tsv   # stage_begin/stage_end (utils/stage_prelude.sh)
}
