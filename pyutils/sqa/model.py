"""Multi-task SQA network at the 20 ms scoring grid.

Input: normalised log-mel frames at 10 ms (B, T, F). A conv front-end with one
stride-2 layer (the second) brings them to 20 ms (T' = ceil(T / 2)); a
bidirectional GRU or a dilated-conv TCN gives context; three heads read the
encoder output:

- frame fault head: per-frame logits for (noise, distortion, pause);
- utterance presence head: logits from [mean-pool ; max-pool] of the encoder;
- score head: attention pooling, then ``score = 1 + 4 * sigmoid(z)`` in [1, 5].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pyutils.sqa.common import FAULTS, SCORE_MAX, SCORE_MIN




@dataclass
class ModelConfig:
    input_dim: int = 80
    conv_channels: int = 128
    rnn_hidden: int = 128
    rnn_layers: int = 2
    dropout: float = 0.1
    encoder: str = "gru"        # "gru" (BiGRU) or "tcn" (dilated convolutions, faster on CPU)
    tcn_dilations: tuple = (1, 2, 4, 8, 16)
    # score head input: "att" = attention pooling + fault fractions; "rich" adds
    # max pooling and each fault's predicted duration in seconds (the reference
    # penalties depend on coverage, severity and absolute pause length)
    score_pooling: str = "att"
    # utterance embedding (pyutils.sqa.embed: DNSMOS sub-scores, pooled Whisper encoder
    # states) fed to the score head through a small projection; 0 = none
    embed_dim: int = 0
    embed_proj: int = 64
    embed_dropout: float = 0.2

    def to_dict(self) -> dict:
        return asdict(self)


def conv_ln_gelu(x: torch.Tensor, conv: nn.Conv1d, norm: nn.LayerNorm) -> torch.Tensor:
    """GELU(LayerNorm over channels(conv(x))) on x (B, C, 1, T) in channels-last memory.

    The Conv1d runs as a (1, k) conv2d on that layout, so the LayerNorm reads the
    channels as its last, contiguous dimension (a permuted view) and no tensor is
    copied between the conv, the norm and the next block; the usual (B, C, T)
    layout needs a transpose and a copy around every LayerNorm. Same function as
    conv1d -> LayerNorm -> GELU (equal to float rounding; state dicts unchanged),
    one training update of the default model ~22 % cheaper on one CPU core.
    """
    y = torch.nn.functional.conv2d(x, conv.weight.unsqueeze(2), conv.bias, stride=(1, conv.stride[0]),
                                   padding=(0, conv.padding[0]), dilation=(1, conv.dilation[0]))
    y = norm(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    return torch.nn.functional.gelu(y)


def to_channels_last(x: torch.Tensor) -> torch.Tensor:
    """(B, C, T) -> (B, C, 1, T) in channels-last memory (the layout of :func:`conv_ln_gelu`)."""
    return x.unsqueeze(2).contiguous(memory_format=torch.channels_last)


class ConvBlock(nn.Module):
    """Conv1d -> LayerNorm (over channels) -> GELU -> dropout, optional residual; x (B, C, 1, T)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, dropout: float = 0.0):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, stride=stride, padding=kernel // 2)
        self.norm = nn.LayerNorm(cout)
        self.drop = nn.Dropout(dropout)
        self.residual = cin == cout and stride == 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, 1, T), channels-last
        y = self.drop(conv_ln_gelu(x, self.conv, self.norm))
        return x + y if self.residual else y


class DilatedBlock(nn.Module):
    """Residual dilated conv: x + drop(GELU(LN(conv_dil(x)))) -- a TCN layer; x (B, C, 1, T)."""

    def __init__(self, c: int, kernel: int, dilation: int, dropout: float):
        super().__init__()
        self.conv = nn.Conv1d(c, c, kernel, padding=dilation * (kernel // 2), dilation=dilation)
        self.norm = nn.LayerNorm(c)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, 1, T), channels-last
        return x + self.drop(conv_ln_gelu(x, self.conv, self.norm))


def subsampled_lengths(lengths: torch.Tensor) -> torch.Tensor:
    """Output frames of the stride-2 conv (kernel 5, padding 2): ceil(T / 2)."""
    return (lengths + 1) // 2


class SQAModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        c, h = cfg.conv_channels, cfg.rnn_hidden
        self.frontend = nn.Sequential(
            ConvBlock(cfg.input_dim, c, 5, 1, cfg.dropout),
            ConvBlock(c, c, 5, 2, cfg.dropout),          # the stride-2 layer: 10 ms -> 20 ms
            ConvBlock(c, c, 3, 1, cfg.dropout),
            ConvBlock(c, c, 3, 1, cfg.dropout),
        )
        if cfg.encoder == "gru":
            self.rnn = nn.GRU(c, h, num_layers=cfg.rnn_layers, batch_first=True, bidirectional=True,
                              dropout=cfg.dropout if cfg.rnn_layers > 1 else 0.0)
            d = 2 * h
        elif cfg.encoder == "tcn":
            self.tcn = nn.ModuleList(DilatedBlock(c, 3, dil, cfg.dropout) for dil in cfg.tcn_dilations)
            d = c
        else:
            raise ValueError(f"unknown encoder {cfg.encoder!r} (gru or tcn)")
        self.frame_head = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, len(FAULTS)))
        self.utt_head = nn.Linear(2 * d, len(FAULTS))
        self.att = nn.Linear(d, 1)
        k = len(FAULTS)   # the score head reads each fault's predicted fraction (and seconds)
        score_in = d + k if cfg.score_pooling == "att" else 2 * d + 2 * k
        if cfg.score_pooling not in ("att", "rich"):
            raise ValueError(f"unknown score_pooling {cfg.score_pooling!r} (att or rich)")
        if cfg.embed_dim > 0:
            self.embed_proj = nn.Sequential(nn.LayerNorm(cfg.embed_dim), nn.Dropout(cfg.embed_dropout),
                                            nn.Linear(cfg.embed_dim, cfg.embed_proj), nn.GELU())
            score_in += cfg.embed_proj
        self.score_head = nn.Sequential(nn.Linear(score_in, h), nn.GELU(), nn.Linear(h, 1))

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor, embed: torch.Tensor | None = None):
        """feats (B, T, F), lengths (B,), embed (B, embed_dim) when ``embed_dim`` > 0 -> dict with
        ``frame_logits`` (B, T', 3), ``utt_logits`` (B, 3), ``score`` (B,), ``lengths`` (B,)."""
        # zero the padding before every conv so that a padded batch gives each recording
        # exactly the outputs it would get alone (convs then see the same zero padding)
        t10 = feats.shape[1]
        mask10 = (torch.arange(t10, device=feats.device)[None, :] < lengths[:, None])[:, None, None, :]
        x = to_channels_last(feats.transpose(1, 2)) * mask10      # (B, F, 1, T)
        out_lens = subsampled_lengths(lengths).clamp(min=1)
        for block in self.frontend:
            x = block(x)
            if x.shape[3] != mask10.shape[3]:
                mask10 = (torch.arange(x.shape[3], device=x.device)[None, :] < out_lens[:, None])[:, None, None, :]
            x = x * mask10
        x = x.squeeze(2).transpose(1, 2)  # (B, T', C): a view of the channels-last memory
        out_lens = out_lens.clamp(max=x.shape[1])
        mask = torch.arange(x.shape[1], device=x.device)[None, :] < out_lens[:, None]  # (B, T')
        if self.cfg.encoder == "gru":
            packed = pack_padded_sequence(x, out_lens.cpu(), batch_first=True, enforce_sorted=False)
            enc, _ = self.rnn(packed)
            enc, _ = pad_packed_sequence(enc, batch_first=True, total_length=x.shape[1])
        else:
            enc = to_channels_last(x.transpose(1, 2))               # (B, C, 1, T')
            m_ = mask[:, None, None, :].to(enc.dtype)
            for block in self.tcn:
                enc = block(enc * m_)
            enc = enc.squeeze(2).transpose(1, 2)
        frame_logits = self.frame_head(enc)
        m = mask.unsqueeze(-1).float()
        mean = (enc * m).sum(1) / m.sum(1).clamp(min=1.0)
        mx = enc.masked_fill(~mask.unsqueeze(-1), -1e4).max(1).values
        utt_logits = self.utt_head(torch.cat([mean, mx], dim=-1))
        att = self.att(enc).squeeze(-1).masked_fill(~mask, -1e4).softmax(dim=1)
        pooled = (att.unsqueeze(-1) * enc).sum(1)
        # fraction of frames the frame head marks as faulty: a strong cue for the score.
        # Each use evaluates its own sigmoid: the same values as one shared node, but the
        # backward pass then adds the gradients in the order the documented default models
        # were trained with (one shared node rounds differently, and the trained weights
        # drift: docs/experiments/sqa.md, "Reading the figures").
        def tracks():
            return torch.sigmoid(frame_logits)

        frac = (tracks() * m).sum(1) / m.sum(1).clamp(min=1.0)
        if self.cfg.score_pooling == "att":
            parts = [pooled, frac]
        else:
            secs = (tracks() * m).sum(1) * 0.02  # predicted seconds per fault (track)
            parts = [pooled, mx, frac, torch.log1p(secs)]
        if self.cfg.embed_dim > 0:
            if embed is None or embed.shape[-1] != self.cfg.embed_dim:
                got = None if embed is None else tuple(embed.shape)
                raise ValueError(f"this model needs utterance embeddings of {self.cfg.embed_dim} dims, got {got}")
            parts.append(self.embed_proj(embed))
        z = self.score_head(torch.cat(parts, dim=-1)).squeeze(-1)
        score = SCORE_MIN + (SCORE_MAX - SCORE_MIN) * torch.sigmoid(z)
        return {"frame_logits": frame_logits, "utt_logits": utt_logits, "score": score,
                "lengths": out_lens, "mask": mask}


def fit_length(x: torch.Tensor, n: int) -> torch.Tensor:
    """Crop or edge-pad (B, T, ...) along time to ``n`` frames (the grid length)."""
    t = x.shape[1]
    if t == n:
        return x
    if t > n:
        return x[:, :n]
    pad = x[:, -1:].expand(x.shape[0], n - t, *x.shape[2:])
    return torch.cat([x, pad], dim=1)


def save_model(path: str, model: SQAModel, stats: dict, extra: dict | None = None) -> None:
    """Checkpoint with everything inference needs (config, weights, feature stats)."""
    import os

    blob = {"model_config": _plain(model.cfg.to_dict()), "state_dict": model.state_dict(),
            "feat_mean": torch.as_tensor(stats["mean"]), "feat_std": torch.as_tensor(stats["std"]),
            "extra": _plain(extra or {})}
    tmp = path + ".tmp"
    torch.save(blob, tmp)
    os.replace(tmp, path)


def _plain(obj):
    """Plain Python containers/scalars only (numpy scalars -> Python), so the
    checkpoint loads with ``torch.load(weights_only=True)``."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, torch.Tensor):
        return obj.item()  # numpy scalar
    return obj


def model_config_from_dict(cfg: dict) -> ModelConfig:
    """:class:`ModelConfig` of a checkpoint's ``model_config``; ``ValueError`` naming the options
    this version does not have (options of experiments not adopted: egs/sqa/RESULTS.md)."""
    cfg = dict(cfg)
    # options every checkpoint of an earlier version names; at these values they are the model built
    for key, built in (("score_faults", "class"), ("frames_dim", 0)):
        if cfg.get(key, built) == built:
            cfg.pop(key, None)
    unknown = sorted(set(cfg) - set(ModelConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"trained with {', '.join(f'{k}={cfg[k]!r}' for k in unknown)}: options this version "
                         f"no longer has (not adopted: egs/sqa/RESULTS.md); retrain the model")
    if "tcn_dilations" in cfg:
        cfg["tcn_dilations"] = tuple(cfg["tcn_dilations"])
    return ModelConfig(**cfg)


class ModelFileError(ValueError):
    """A model file that is not a usable Chorus SQA checkpoint."""


def safe_torch_load(path: str, device: str = "cpu"):
    """``torch.load`` that never runs code from the file (``weights_only=True``:
    tensors and plain containers only), with a one-line error for anything else."""
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # pickle.UnpicklingError, RuntimeError, EOFError, zipfile errors ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelFileError(f"{path}: not a loadable checkpoint (only tensors and plain "
                             f"data are accepted): {first}") from None


def load_model(path: str, device: str = "cpu"):
    """-> (model in eval mode, mean, std, extra). Raises :class:`ModelFileError`."""
    blob = safe_torch_load(path, device)
    try:
        model = SQAModel(model_config_from_dict(blob["model_config"]))
        model.load_state_dict(blob["state_dict"])
        mean, std = blob["feat_mean"], blob["feat_std"]
        if not (isinstance(mean, torch.Tensor) and isinstance(std, torch.Tensor)):
            raise TypeError("feat_mean/feat_std are not tensors")
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelFileError(f"{path}: not a Chorus SQA model ({type(e).__name__}: {first})") from None
    model.eval()
    extra = blob.get("extra", {})
    return model, mean, std, extra if isinstance(extra, dict) else {}
