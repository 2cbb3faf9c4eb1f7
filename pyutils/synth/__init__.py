"""Offline mini corpora for every Chorus recipe (``chorus-synth``).

No corpus can be downloaded in CI, so each recipe's stage 0 can generate a
small corpus with exact labels from a seed:

* ``nvv``  – English / Mandarin / Vietnamese speech, or any language espeak-ng
  speaks (CLDR text, :mod:`pyutils.synth.langs`), with the 16 challenge NVV events
  inserted at word / character boundaries (:mod:`pyutils.synth.nvv_corpus`);
* ``sqa``  – clean speech with noise / distortion / pause faults on exact
  intervals and a reference quality score (:mod:`pyutils.synth.sqa_corpus`,
  fault simulator in :mod:`pyutils.synth.faults`);
* ``vc``   – multi-speaker Vietnamese speech split like VLSP 2025 VC
  (:mod:`pyutils.synth.vc_corpus`).

Speech comes from the voice bank (:mod:`pyutils.synth.voice_bank`: piper and Kokoro
neural voices for English, recorded gcin syllables for Mandarin) in the nvv corpus, and
from espeak-ng and flite (:mod:`pyutils.synth.speech`) elsewhere and with
``--voices espeak``; NVV events from small procedural recipes (:mod:`pyutils.synth.nvv_sounds`).
"""

SAMPLE_RATE = 16000


def preset_sizes(presets: dict, splits, args) -> dict:
    """Sizes of a preset, overridden by ``--num-<split>`` / ``--num-voices`` options."""
    sizes = dict(presets[args.preset])
    for split in splits:
        value = getattr(args, f"num_{split}", None)
        if value is not None:
            sizes[split] = value
    if getattr(args, "num_voices", None):
        sizes["voices"] = args.num_voices
    if getattr(args, "real_train_copies", None) is not None:
        sizes["real_train_copies"] = args.real_train_copies
    return sizes
