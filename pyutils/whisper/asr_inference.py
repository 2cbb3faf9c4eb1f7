"""``espnet2.bin.asr_inference`` with ``encoder/decoder: chorus_whisper`` available.

    python -m pyutils.whisper.asr_inference <the usual espnet2.bin.asr_inference options>
"""

from pyutils.whisper.espnet_task import register


def main(cmd=None):
    register()
    from espnet2.bin.asr_inference import main as espnet_main

    espnet_main(cmd)


if __name__ == "__main__":
    main()
