"""``espnet2.bin.asr_train`` with ``encoder/decoder: chorus_whisper`` available.

    python -m pyutils.whisper.asr_train <the usual espnet2.bin.asr_train options>
"""

if __name__ == "__main__":
    from pyutils.whisper.espnet_task import run_espnet

    run_espnet("espnet2.bin.asr_train")
