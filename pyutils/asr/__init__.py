"""NVV-aware ASR helpers used by ``local/nvv_asr.sh`` (ESPnet recipes egs/nvv_asr_*).

Modules (one job each):
  tags_text    official tagged text <-> ESPnet-internal form, repair of decoded text
  text_norm    per-language text normalisation registry (the fork hook)
  prepare_text data/<set>/text -> ESPnet training text (normalised, internal tags)
  tokens       sentencepiece BPE training, non-linguistic symbols, token-list checks
  dump_audio   wav.scp (paths, pipes, segments) -> 16 kHz mono PCM16 dump + utt2dur
  postprocess  merged ESPnet 1-best -> official Track 1 text for every utterance
  timing       wall-clock accounting of recipe steps, RTF and recipe overhead
  results      RESULTS.md writer
  decode_dir   "decode this wav.scp with this ASR exp dir" entry point

None of these import torch or ESPnet: ESPnet runs only as ``python -m espnet2.bin.*``
from the stage script, so its cost is measured separately from the recipe's.
"""
