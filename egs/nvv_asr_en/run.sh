#!/usr/bin/env bash
# NVV-aware English ASR (NVVSpeech Challenge Track 1). Default: the cascade (frozen pretrained
# Whisper base text with word times + an NVV detector on its frozen encoder frames fitted on the
# corpus; tags placed by time); --asr_method espnet: the ESPnet conformer CTC/attention trained from scratch
# (add --whisper true to fine-tune Whisper base instead). All stages live in local/nvv_asr.sh
# (the cascade's stages 3-6 in local/nvv_asr_cascade.sh); this file names the method, sets,
# configs and token settings of this recipe. Options given on the command line override these
# (./run.sh --help lists them all), e.g. ./run.sh --preset ci, ./run.sh --stage 5 --stop_stage 7.
set -euo pipefail

asr_method=cascade     # cascade | espnet (the conformer below; --whisper true: Whisper fine-tuned)
lang=en                # text normaliser, scorer language (fork: utils/fork_recipe.sh)
train_set=train        # data/<set> made by stage 1 from the mini corpus (or the corpora in db.sh)
valid_set=dev
test_sets=auto         # auto: "test" (cascade, --preset ci), "dev test" (espnet)
asr_config=            # espnet: empty: conf/train_asr_<preset>.yaml (ci | default | large);
                       #   --whisper true: conf/train_asr_whisper_<preset>.yaml
inference_config=      # empty: conf/decode_asr_<preset>.yaml where it exists, else conf/decode_asr.yaml
token_type=bpe         # sentencepiece BPE, the 16 tags as user-defined symbols
nbpe=300               # ~ whole words of the mini corpus (246 word types + tags); use 500-5000 on real data

exec ./local/nvv_asr.sh \
  --asr_method "${asr_method}" \
  --lang "${lang}" \
  --train_set "${train_set}" \
  --valid_set "${valid_set}" \
  --test_sets "${test_sets}" \
  --asr_config "${asr_config}" \
  --inference_config "${inference_config}" \
  --token_type "${token_type}" \
  --nbpe "${nbpe}" \
  "$@"
