"""``espnet2.bin.asr_inference`` with ``encoder/decoder: chorus_whisper`` available.

    python -m pyutils.whisper.asr_inference <the usual espnet2.bin.asr_inference options>
"""

if __name__ == "__main__":
    from pyutils.whisper.espnet_task import run_espnet

    run_espnet("espnet2.bin.asr_inference")
