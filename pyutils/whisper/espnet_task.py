"""Register the Chorus Whisper classes as ESPnet ASR choices (``chorus_whisper``).

espnet2's ASR task picks encoders/decoders from fixed ``ClassChoices`` tables; adding
entries before the task parses its arguments is the least invasive way to use our
classes with the unmodified ``espnet2.bin.asr_train``/``asr_inference`` entry points
(see :mod:`pyutils.whisper.asr_train`, :mod:`pyutils.whisper.asr_inference`).
"""

from __future__ import annotations

NAME = "chorus_whisper"


def register() -> None:
    from espnet2.tasks.asr import decoder_choices, encoder_choices

    from pyutils.whisper.espnet_models import ChorusWhisperDecoder, ChorusWhisperEncoder

    encoder_choices.classes[NAME] = ChorusWhisperEncoder
    decoder_choices.classes[NAME] = ChorusWhisperDecoder


def run_espnet(bin_module: str) -> None:
    """Run an ``espnet2.bin`` entry point (``main()``) with the classes registered."""
    import importlib

    register()
    importlib.import_module(bin_module).main()
