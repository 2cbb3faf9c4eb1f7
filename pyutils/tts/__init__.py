"""NVV-controllable TTS helpers: text front-end, input checks, synthesis
post-processing (submission format), objective evaluation and reports.

Used by ``local/nvv_tts.sh`` (recipe ``egs/nvv_tts``) and reused by the
Vietnamese VC recipe for its multi-speaker TTS stages.
"""
