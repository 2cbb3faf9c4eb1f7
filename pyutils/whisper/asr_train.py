"""``espnet2.bin.asr_train`` with ``encoder/decoder: chorus_whisper`` available.

    python -m pyutils.whisper.asr_train <the usual espnet2.bin.asr_train options>
"""

from pyutils.whisper.espnet_task import register


def main(cmd=None):
    register()
    from espnet2.bin.asr_train import main as espnet_main

    espnet_main(cmd)


if __name__ == "__main__":
    main()
