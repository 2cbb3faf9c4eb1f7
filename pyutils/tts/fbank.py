"""ESPnet's log-mel filterbank (``LogMelFbank``) with a TTS config's settings: exactly the frames
a fbank TTS model sees, and their cepstra (the forced aligner's features). Shared by the forced
aligner (:mod:`pyutils.tts.align`), the WORLD features (:mod:`pyutils.tts.world`) and the
HiFi-GAN vocoder's level fit (:mod:`pyutils.tts.hifigan`).
"""

from __future__ import annotations

import numpy as np

N_CEPS = 13


class FbankConfigError(ValueError):
    """A TTS config whose features are not ESPnet's fbank."""


def feature_extractor(config: dict):
    """ESPnet's LogMelFbank with the settings of the TTS config (``feats_extract_conf``)."""
    from espnet2.tts.feats_extract.log_mel_fbank import LogMelFbank

    if config.get("feats_extract") != "fbank":
        raise FbankConfigError("forced alignment needs feats_extract: fbank in the TTS config "
                               f"(got {config.get('feats_extract')!r})")
    conf = dict(config.get("feats_extract_conf") or {})
    return LogMelFbank(**conf)


def logmel(fe, x: np.ndarray) -> np.ndarray:
    """(T, n_mels) log-mel frames of one waveform ``x`` by the extractor ``fe``."""
    import torch

    with torch.no_grad():
        feats, _ = fe(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))[None],
                      torch.tensor([len(x)]))
    return feats[0].numpy()


def cepstra(lm: np.ndarray) -> np.ndarray:
    """Log-mel (T, n_mels) -> 13 cepstra (DCT-II, orthonormal) + deltas + delta-deltas (T, 39)."""
    from scipy.fft import dct

    c = dct(lm, type=2, axis=1, norm="ortho")[:, :N_CEPS]
    d1 = np.gradient(c, axis=0) if len(c) > 1 else np.zeros_like(c)
    d2 = np.gradient(d1, axis=0) if len(c) > 1 else np.zeros_like(c)
    return np.concatenate([c, d1, d2], axis=1).astype(np.float32)
