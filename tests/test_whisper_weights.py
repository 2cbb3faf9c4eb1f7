"""Whisper weights: CTranslate2 reader, conversions to openai-whisper, installed-dir checks."""

import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
whisper_model = pytest.importorskip("whisper.model")

from pyutils.whisper import convert, weights  # noqa: E402
from pyutils.whisper.ct2_reader import CT2FormatError, read_ct2_model  # noqa: E402

TINY = dict(n_mels=80, n_audio_ctx=24, n_audio_state=16, n_audio_head=2, n_audio_layer=2,
            n_vocab=51865, n_text_ctx=12, n_text_state=16, n_text_head=2, n_text_layer=2)


def tiny_whisper(seed=0):
    torch.manual_seed(seed)
    m = whisper_model.Whisper(whisper_model.ModelDimensions(**TINY))
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.1)
    return m


def _write_ct2(path: Path, variables: dict, aliases: dict, version=6, spec="WhisperSpec"):
    """Test-side writer of the CTranslate2 binary layout (see pyutils/whisper/ct2_reader.py)."""
    ids = {np.dtype("float32"): 0, np.dtype("int8"): 1, np.dtype("int16"): 2,
           np.dtype("int32"): 3, np.dtype("float16"): 4}

    def s(x):
        b = x.encode()
        return struct.pack("<H", len(b) + 1) + b + b"\0"

    out = [struct.pack("<I", version), s(spec), struct.pack("<I", 3), struct.pack("<I", len(variables))]
    for name, a in variables.items():
        a = np.asarray(a)
        out += [s(name), struct.pack("<B", a.ndim), *(struct.pack("<I", d) for d in a.shape),
                struct.pack("<B", ids[a.dtype]), struct.pack("<I", a.nbytes), a.tobytes()]
    out.append(struct.pack("<I", len(aliases)))
    for k, v in aliases.items():
        out += [s(k), s(v)]
    path.write_bytes(b"".join(out))


def ct2_variables(m) -> dict:
    """openai-whisper state dict -> CTranslate2 WhisperSpec variable names (fused QKV/KV)."""
    sd = {k: v.detach().numpy().astype(np.float16) for k, v in m.state_dict().items()}
    v = {"encoder/num_heads": np.array(TINY["n_audio_head"], np.int16),
         "decoder/num_heads": np.array(TINY["n_text_head"], np.int16)}

    def ln(dst, src):
        v[f"{dst}/gamma"], v[f"{dst}/beta"] = sd[f"{src}.weight"], sd[f"{src}.bias"]

    def lin(dst, src, bias=True):
        v[f"{dst}/weight"] = sd[f"{src}.weight"]
        if bias:
            v[f"{dst}/bias"] = sd[f"{src}.bias"]

    def attn(dst, src, fused_qkv):
        zero = np.zeros_like(sd[f"{src}.query.bias"])
        if fused_qkv:
            v[f"{dst}/linear_0/weight"] = np.concatenate([sd[f"{src}.{x}.weight"] for x in ("query", "key", "value")])
            v[f"{dst}/linear_0/bias"] = np.concatenate([sd[f"{src}.query.bias"], zero, sd[f"{src}.value.bias"]])
            lin(f"{dst}/linear_1", f"{src}.out")
        else:
            lin(f"{dst}/linear_0", f"{src}.query")
            v[f"{dst}/linear_1/weight"] = np.concatenate([sd[f"{src}.key.weight"], sd[f"{src}.value.weight"]])
            v[f"{dst}/linear_1/bias"] = np.concatenate([zero, sd[f"{src}.value.bias"]])
            lin(f"{dst}/linear_2", f"{src}.out")

    lin("encoder/conv1", "encoder.conv1")
    lin("encoder/conv2", "encoder.conv2")
    v["encoder/position_encodings/encodings"] = sd["encoder.positional_embedding"]
    for i in range(TINY["n_audio_layer"]):
        s, d = f"encoder.blocks.{i}", f"encoder/layer_{i}"
        attn(f"{d}/self_attention", f"{s}.attn", True)
        ln(f"{d}/self_attention/layer_norm", f"{s}.attn_ln")
        lin(f"{d}/ffn/linear_0", f"{s}.mlp.0")
        lin(f"{d}/ffn/linear_1", f"{s}.mlp.2")
        ln(f"{d}/ffn/layer_norm", f"{s}.mlp_ln")
    ln("encoder/layer_norm", "encoder.ln_post")
    v["decoder/embeddings/weight"] = sd["decoder.token_embedding.weight"]
    v["decoder/position_encodings/encodings"] = sd["decoder.positional_embedding"]
    for i in range(TINY["n_text_layer"]):
        s, d = f"decoder.blocks.{i}", f"decoder/layer_{i}"
        attn(f"{d}/self_attention", f"{s}.attn", True)
        ln(f"{d}/self_attention/layer_norm", f"{s}.attn_ln")
        attn(f"{d}/attention", f"{s}.cross_attn", False)
        ln(f"{d}/attention/layer_norm", f"{s}.cross_attn_ln")
        lin(f"{d}/ffn/linear_0", f"{s}.mlp.0")
        lin(f"{d}/ffn/linear_1", f"{s}.mlp.2")
        ln(f"{d}/ffn/layer_norm", f"{s}.mlp_ln")
    ln("decoder/layer_norm", "decoder.ln")
    return v


def _assert_same_weights(ckpt, m):
    assert ckpt["dims"] == TINY
    ref = m.state_dict()
    assert set(ckpt["model_state_dict"]) == set(ref)
    for k, t in ref.items():
        np.testing.assert_allclose(ckpt["model_state_dict"][k].float().numpy(),
                                   t.half().float().numpy(), atol=1e-3, err_msg=k)


def test_ct2_roundtrip(tmp_path):
    m = tiny_whisper()
    _write_ct2(tmp_path / "model.bin", ct2_variables(m), {"decoder/projection/weight": "decoder/embeddings/weight"})
    (tmp_path / "config.json").write_text("{}")
    r = read_ct2_model(tmp_path / "model.bin")
    assert r.spec == "WhisperSpec" and r.get("decoder/projection/weight").shape == (51865, 16)
    ckpt = convert.load_any(tmp_path)
    _assert_same_weights(ckpt, m)
    out = tmp_path / "openai.pt"
    convert.save_checkpoint(ckpt, out)
    again = convert.load_any(out)  # tensors-only, loads with weights_only=True
    _assert_same_weights(again, m)


def test_ct2_nonzero_key_bias_is_rejected(tmp_path):
    v = ct2_variables(tiny_whisper())
    v["encoder/layer_0/self_attention/linear_0/bias"][16:32] = 1.0
    _write_ct2(tmp_path / "model.bin", v, {})
    with pytest.raises(convert.WeightsError, match="key bias"):
        convert.from_ct2_dir(tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "version", "trailing"])
def test_ct2_reader_rejects_damaged_files(tmp_path, damage):
    p = tmp_path / "model.bin"
    _write_ct2(p, {"a/b": np.ones((2, 3), np.float32)}, {}, version=2 if damage == "version" else 6)
    data = p.read_bytes()
    p.write_bytes(data[:-5] if damage == "truncate" else data + (b"xx" if damage == "trailing" else b""))
    with pytest.raises(CT2FormatError, match=str(p)):
        read_ct2_model(p)


def test_hf_transformers_dir(tmp_path):
    m = tiny_whisper(1)
    inv = {v: k for k, v in convert._HF_LAYER.items()}
    top = {v: k for k, v in convert._HF_TOP.items()}
    hf = {}
    for k, t in m.state_dict().items():
        if ".blocks." in k:
            side, _, i, rest = k.split(".", 3)
            mod, param = rest.rsplit(".", 1)
            hf[f"model.{side}.layers.{i}.{inv[mod]}.{param}"] = t
        elif k.endswith("positional_embedding"):
            hf[f"model.{top[k]}.weight"] = t
        else:
            mod, param = k.rsplit(".", 1)
            hf[f"model.{top[mod]}.{param}"] = t
    hf["proj_out.weight"] = m.state_dict()["decoder.token_embedding.weight"]
    torch.save(hf, tmp_path / "pytorch_model.bin")
    cfg = dict(model_type="whisper", num_mel_bins=80, max_source_positions=24, d_model=16,
               encoder_attention_heads=2, encoder_layers=2, vocab_size=51865, max_target_positions=12,
               decoder_attention_heads=2, decoder_layers=2)
    import json
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    _assert_same_weights(convert.load_any(tmp_path), m)


def test_openai_file_with_code_is_refused(tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    p = tmp_path / "evil.pt"
    with open(p, "wb") as f:
        pickle.dump({"dims": {}, "model_state_dict": Evil()}, f)
    with pytest.raises(convert.WeightsError, match="evil.pt"):
        convert.load_any(p)
    assert not (tmp_path / "pwned").exists()


def test_not_a_model(tmp_path):
    with pytest.raises(convert.WeightsError, match="make -C tools"):
        convert.load_any(tmp_path / "nothing")
    assert convert.main(["--src", str(tmp_path / "nothing"), "--out", str(tmp_path / "x.pt")]) == 2


def test_installed_dir_checks(tmp_path, monkeypatch):
    d = tmp_path / "whisper-base"
    monkeypatch.setenv("CHORUS_WHISPER_DIR", str(d))
    with pytest.raises(weights.WhisperWeightsError, match="make -C tools whisper"):
        weights.resolve("base")
    d.mkdir()
    for name in ("model.bin", "openai.pt"):
        (d / name).write_bytes(b"x" * 10)
    (d / "SHA256SUMS").write_text("".join(f"{weights.sha256_file(d / n)}  {n}\n" for n in ("model.bin", "openai.pt")))
    assert weights.resolve("base", verify=True).source == d / "openai.pt"
    (d / "model.bin").write_bytes(b"y" * 10)
    with pytest.raises(weights.WhisperWeightsError, match="checksum mismatch"):
        weights.resolve("base", verify=True)
    (d / "openai.pt").unlink()
    with pytest.raises(weights.WhisperWeightsError, match="openai.pt is missing"):
        weights.resolve("base")
    with pytest.raises(weights.WhisperWeightsError, match="no such file"):
        weights.resolve(str(tmp_path / "missing-model"))
