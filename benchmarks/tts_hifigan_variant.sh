#!/usr/bin/env bash
# The default model's stage-6 features (exp/tts_en_fastspeech_world_default) through the pretrained HiFi-GAN
# instead of WORLD, judged by stage 7's evaluate (the RESULTS.md variants row); run from egs/nvv_tts after ./run.sh:
#   ../../benchmarks/tts_hifigan_variant.sh   (what --stage 6 --vocoder hifigan and stage 7 compute, without touching the exp dir)
set -euo pipefail
. ./path.sh
e=exp/tts_en_fastspeech_world_default; s=test_en; w=exp_bench/hifi_variant
rm -rf $w; mkdir -p $w
python -m pyutils.tts.hifigan vocode --config $e/train_config.src.yaml --calib-scp dump/raw/train_en/wav.scp \
  --out-dir $w/wav $e/synth_$s/log/output.*/denorm
find "$(pwd)/$w/wav" -name '*.wav' | LC_ALL=C sort | awk '{n=$1; sub(/.*\//, "", n); sub(/\.wav$/, "", n); print n, $1}' > $w/wav_raw.scp
python -m pyutils.tts.audio postprocess $w/wav_raw.scp "$(pwd)/$w/wav16k" $w/wav.scp --expect-keys dump/raw/$s/text
python -m pyutils.whisper.judge --lang en --model base --wav-scp $w/wav.scp --out $w/judge_synth/text
python -m pyutils.tts.evaluate --real-dir dump/raw/$s --synth-scp $w/wav.scp --durations $e/synth_$s/durations/durations \
  --token-text dump/raw/$s/text --lang en --judge-synth-text $w/judge_synth/text \
  --judge-real-text $e/eval_$s/judge_real/text --n-plots 0 --out-dir $w/eval
python - <<'PY'
import json
m = json.load(open("exp_bench/hifi_variant/eval/metrics.json"))
y = m["yamnet"]["synth"]
print("judge WER", m["judge_synth"]["error_rate_pct"], "OVRL %.2f" % m["dnsmos_synth"]["OVRL"],
      "DistillMOS %.2f" % m["distillmos_synth"]["MOS"], "SIM %.3f" % m["speaker"]["SIM"],
      "YAMNet %d/%d FA/min %.2f" % (y["heard"], y["requested"], y["false_alarms_per_min"]))
PY
