"""Vietnamese zero-shot voice conversion (VLSP 2025 VC) helpers.

The recipe (egs/vivc, local/vc.sh) builds a cascade, since espnet2 has no
VC task: ASR(source) -> text; TTS(text, speaker embedding of the reference
clip) -> waveform. The modules here do the parts around the ESPnet tools:

- ``pairs``      read and validate a pairs list, make Kaldi dirs from it
- ``spk_embed``  ESPnet speaker-model trial files, npz -> Kaldi ark/scp
- ``convert``    turn TTS outputs into the submission files (16 kHz PCM16)
- ``evaluate``   objective proxies of the challenge score (SIM, MOS, WER)
- ``report``     RESULTS.md from the scored components
"""
