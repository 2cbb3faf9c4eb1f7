"""Frame features for nearest-neighbour voice conversion (:mod:`pyutils.vc.knn`).

Two views of the same 16 kHz waveform:

- **Content**: the hidden states after block ``layer`` of the frozen Whisper base
  audio encoder (Radford et al., 2022; pretrained, so a method using it is VLSP
  Task 1). The encoder maps the 80-bin log-mel (10 ms hop, whisper's own
  ``log_mel_spectrogram``) through two GELU convolutions (the second with
  stride 2) to one 512-dim vector per 20 ms, adds the sinusoidal positional
  embedding, then runs ``layer`` transformer blocks:
  ``h_0 = GELU(conv2(GELU(conv1(M)))) + P``, ``h_l = Block_l(h_{l-1})``;
  the last block is followed by ``ln_post``. Whisper was trained on 30 s windows;
  audio is cut into windows of at most 30 s, each encoded without padding
  (the positional table truncated to the window), and the frames concatenated,
  so a source longer than 30 s costs linear time and never fails.
- **Acoustics**: WORLD (Morise et al., 2016; ``pyworld``) on a 5 ms grid: F0 by
  DIO refined by StoneMask, the spectral envelope by CheapTrick (``fft_size``
  bins) and the band aperiodicity by D4C. Four WORLD frames make one Whisper frame.

Only the pretrained checkpoint installed by ``make -C tools whisper`` is read,
with ``torch.load(weights_only=True)`` (tensors only, never a pickle).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

SR = 16000
WHISPER_HOP_S = 0.02          # one encoder frame per 20 ms
WORLD_FRAME_MS = 5.0          # WORLD grid: 4 frames per encoder frame
WORLD_PER_ENC = int(round(WHISPER_HOP_S * 1000 / WORLD_FRAME_MS))
CHUNK_S = 30.0                # Whisper's training window


class WhisperContent:
    """Frozen Whisper audio encoder; :meth:`features` gives block ``layer``'s states
    (``layers``: the states of several blocks side by side in block order, ``[h_a, h_b, ...]``,
    from one pass through the deepest of them)."""

    def __init__(self, model: str = "base", layer: int = 4, threads: int = 0,
                 layers: Optional[Sequence[int]] = None) -> None:
        import torch
        import whisper.model as wm

        from pyutils.whisper.weights import WhisperWeightsError, resolve

        spec = resolve(model)
        if not str(spec.source).endswith(".pt"):
            raise WhisperWeightsError(f"{spec.source}: the content encoder needs an openai-whisper .pt "
                                      f"(the installed 'base' has one: make -C tools whisper)")
        ckpt = torch.load(str(spec.source), map_location="cpu", weights_only=True)
        dims = wm.ModelDimensions(**ckpt["dims"])
        enc = wm.AudioEncoder(dims.n_mels, dims.n_audio_ctx, dims.n_audio_state,
                              dims.n_audio_head, dims.n_audio_layer)
        prefix = "encoder."
        enc.load_state_dict({k[len(prefix):]: v for k, v in ckpt["model_state_dict"].items()
                             if k.startswith(prefix)})
        self.layers = tuple(sorted(set(layers))) if layers else (layer,)
        bad = [n for n in self.layers if not 1 <= n <= dims.n_audio_layer]
        if bad or not self.layers:
            raise ValueError(f"layer {bad}: Whisper {spec.name} has blocks 1..{dims.n_audio_layer}")
        if threads:
            torch.set_num_threads(threads)
        self.encoder = enc.float().eval()
        self.n_mels, self.layer, self.n_layers = dims.n_mels, max(self.layers), dims.n_audio_layer

    def _encode_chunk(self, x: np.ndarray) -> np.ndarray:
        import torch
        import torch.nn.functional as F
        import whisper

        enc = self.encoder
        mel = whisper.log_mel_spectrogram(torch.from_numpy(x.astype(np.float32)), n_mels=self.n_mels)
        with torch.inference_mode():
            h = F.gelu(enc.conv1(mel[None]))
            h = F.gelu(enc.conv2(h)).permute(0, 2, 1)
            h = h + enc.positional_embedding[: h.shape[1]]
            keep = getattr(self, "layers", (self.layer,))
            out = []
            for n, block in enumerate(enc.blocks[: max(keep)], 1):
                h = block(h)
                if n in keep:
                    out.append(enc.ln_post(h) if n == self.n_layers else h)
        return torch.cat(out, dim=-1)[0].numpy().astype(np.float32)

    def features(self, x: np.ndarray) -> np.ndarray:
        """(T, 512) float32 content frames, ``T = ceil(len(x)/320)`` give or take one."""
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        if x.size < 2 * 160:
            raise ValueError(f"{x.size} samples: too short for the Whisper encoder (>= 20 ms)")
        step = int(CHUNK_S * SR)
        parts = [self._encode_chunk(x[i:i + step]) for i in range(0, x.size, step)
                 if x[i:i + step].size >= 320]
        return np.concatenate(parts, axis=0)


@dataclasses.dataclass
class World:
    """WORLD parameters on the 5 ms grid: ``f0`` (T,), ``sp`` and ``ap`` (T, fft_size//2+1)."""

    f0: np.ndarray
    sp: np.ndarray
    ap: np.ndarray

    @property
    def voiced(self) -> np.ndarray:
        return self.f0 > 0


def world_analyze(x: np.ndarray, f0_floor: float = 60.0, f0_ceil: float = 600.0,
                  fft_size: Optional[int] = None) -> World:
    """DIO + StoneMask F0, CheapTrick envelope, D4C aperiodicity at ``WORLD_FRAME_MS``."""
    import pyworld

    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))
    if x.size < int(SR * WORLD_FRAME_MS / 1000) * 4:
        raise ValueError(f"{x.size} samples: too short for WORLD analysis")
    if not np.isfinite(x).all():
        raise ValueError("non-finite samples")
    f0, t = pyworld.dio(x, SR, f0_floor=f0_floor, f0_ceil=f0_ceil, frame_period=WORLD_FRAME_MS)
    f0 = pyworld.stonemask(x, f0, t, SR)
    fft = fft_size or pyworld.get_cheaptrick_fft_size(SR, f0_floor)
    sp = pyworld.cheaptrick(x, f0, t, SR, f0_floor=f0_floor, fft_size=fft)
    ap = pyworld.d4c(x, f0, t, SR, fft_size=fft)
    return World(f0=f0, sp=sp, ap=ap)


def world_synthesize(w: World) -> np.ndarray:
    """Waveform (float32, 16 kHz) from WORLD parameters."""
    import pyworld

    y = pyworld.synthesize(np.ascontiguousarray(w.f0, dtype=np.float64),
                           np.ascontiguousarray(w.sp, dtype=np.float64),
                           np.ascontiguousarray(w.ap, dtype=np.float64), SR, frame_period=WORLD_FRAME_MS)
    return y.astype(np.float32)
