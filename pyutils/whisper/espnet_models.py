"""ESPnet encoder/decoder classes for Whisper that load local weights (never a hub).

espnet2's ``OpenAIWhisperEncoder``/``OpenAIWhisperDecoder`` accept only the official
model names and fetch them with ``whisper.load_model``, which downloads. These
subclasses keep their forward passes (log-mel front-end, blocks, beam-search scoring)
and replace only the construction:

* ``whisper_model``: ``base`` (the weights ``make -C tools`` installed) or a path
  accepted by :func:`pyutils.whisper.convert.load_any`; ``null`` with
  ``whisper_dims`` builds a randomly initialised Whisper of those dims (CI, tests).
* the decoder's token embedding (tied to the output layer) is rebuilt for the ESPnet
  token list of :mod:`pyutils.asr.whisper_tokens`: pretrained rows at ``token_offset``
  (after ``<blank>``), new rows (the NVV tags, ``<unk>``) drawn from the pretrained
  rows' mean and std, as espnet2 does for an expanded vocabulary.

Registered as ``encoder: chorus_whisper`` / ``decoder: chorus_whisper`` by
:mod:`pyutils.whisper.espnet_task`.
"""

from __future__ import annotations

from typing import Optional

import torch
from typeguard import typechecked

from espnet2.asr.decoder.abs_decoder import AbsDecoder
from espnet2.asr.decoder.whisper_decoder import OpenAIWhisperDecoder
from espnet2.asr.encoder.abs_encoder import AbsEncoder
from espnet2.asr.encoder.whisper_encoder import OpenAIWhisperEncoder
from espnet2.asr.specaug.specaug import SpecAug


def build_whisper(whisper_model: Optional[str], whisper_dims: Optional[dict]):
    """An openai-whisper ``Whisper`` module with pretrained (or, without a model, random) weights."""
    import whisper.model as wm

    from pyutils.whisper.convert import load_any
    from pyutils.whisper.weights import resolve

    if whisper_model:
        spec = resolve(whisper_model)
        if spec.installed:  # our own converted file: tensors only, checked at install
            ckpt = torch.load(spec.source, map_location="cpu", weights_only=True)
        else:
            ckpt = load_any(spec.source)
        model = wm.Whisper(wm.ModelDimensions(**ckpt["dims"]))
        model.load_state_dict(ckpt["model_state_dict"])
        return model.float()
    if not whisper_dims:
        raise ValueError("chorus_whisper: give whisper_model (e.g. base) or whisper_dims")
    return wm.Whisper(wm.ModelDimensions(**whisper_dims))


class ChorusWhisperEncoder(OpenAIWhisperEncoder):
    """Whisper's audio encoder on raw 16 kHz audio (its own log-mel front-end)."""

    @typechecked
    def __init__(
        self,
        input_size: int = 1,
        dropout_rate: float = 0.0,
        whisper_model: Optional[str] = "base",
        whisper_dims: Optional[dict] = None,
        use_specaug: bool = False,
        specaug_conf: Optional[dict] = None,
        do_pad_trim: bool = False,
    ):
        AbsEncoder.__init__(self)
        import whisper.audio as wa

        model = build_whisper(whisper_model, whisper_dims)
        self.n_fft = wa.N_FFT
        self.win_length = wa.N_FFT
        self.hop_length = wa.HOP_LENGTH
        self.n_mels = model.dims.n_mels
        self.mel_filters = wa.mel_filters
        self.dropout = torch.nn.Dropout(dropout_rate)
        self.encoders = model.encoder
        self.encoders.train()
        self.specaug = SpecAug(**specaug_conf) if use_specaug else None
        self.do_pad_trim = do_pad_trim
        self.pad_samples = wa.N_SAMPLES


class OffsetTokenEmbedding(torch.nn.Module):
    """Token embedding ``[new rows before | pretrained rows | new rows after]``, kept as
    three parameters so that the pretrained rows can be frozen on their own
    (``freeze_param: [decoder.decoders.token_embedding.pretrained]``) while the tags'
    rows learn. ``weight`` is the full matrix (the decoder ties its output layer to it)."""

    def __init__(self, pretrained: torch.nn.Embedding, offset: int, vocab_size: int):
        super().__init__()
        n, dim = pretrained.weight.shape
        with torch.no_grad():
            std, mean = torch.std_mean(pretrained.weight.float())
        self.pretrained = torch.nn.Parameter(pretrained.weight.detach().clone())
        self.before = torch.nn.Parameter(torch.empty(offset, dim).normal_(mean.item(), std.item()))
        self.after = torch.nn.Parameter(
            torch.empty(vocab_size - offset - n, dim).normal_(mean.item(), std.item()))
        self.num_embeddings, self.embedding_dim = vocab_size, dim

        self._cache: Optional[torch.Tensor] = None
        self._cache_key: tuple = ()

    @property
    def weight(self) -> torch.Tensor:
        parts = (self.before, self.pretrained, self.after)
        if self.training and torch.is_grad_enabled():
            return torch.cat(parts, dim=0)
        # Inference calls this twice per decoding step (input embedding, tied output
        # layer): keep one concatenated copy while the parameters are unchanged.
        key = tuple((p.data_ptr(), p._version, p.device, p.dtype) for p in parts)
        if self._cache is None or key != self._cache_key:
            self._cache = torch.cat([p.detach() for p in parts], dim=0)
            self._cache_key = key
        return self._cache

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.embedding(ids, self.weight)


class ChorusWhisperDecoder(OpenAIWhisperDecoder):
    """Whisper's text decoder over the Chorus token list (Whisper ids shifted by
    ``token_offset``; tags and ``<unk>`` appended)."""

    @typechecked
    def __init__(
        self,
        vocab_size: int,
        encoder_output_size: int,
        dropout_rate: float = 0.0,
        whisper_model: Optional[str] = "base",
        whisper_dims: Optional[dict] = None,
        token_offset: int = 1,
    ):
        AbsDecoder.__init__(self)
        model = build_whisper(whisper_model, whisper_dims)
        self.decoders = model.decoder
        orig = self.decoders.token_embedding
        n_orig, dim = orig.num_embeddings, orig.embedding_dim
        if vocab_size < n_orig + token_offset:
            raise ValueError(f"chorus_whisper decoder: token list has {vocab_size} entries, "
                             f"fewer than Whisper's {n_orig} + offset {token_offset}: build it "
                             f"with `python -m pyutils.asr.whisper_tokens token-list`")
        emb = OffsetTokenEmbedding(orig, token_offset, vocab_size)
        self.decoders.token_embedding = emb
        self.dropout = torch.nn.Dropout(dropout_rate)
        self.load_origin_token_embedding = False
        self.decoders.train()
