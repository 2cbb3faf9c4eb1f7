"""Utterance embeddings of the SQA score head (pyutils.sqa.embed)."""

import numpy as np
import pytest
import torch

TINY_DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=16, n_audio_head=2, n_audio_layer=2,
                 n_vocab=51865, n_text_ctx=64, n_text_state=16, n_text_head=2, n_text_layer=1)


def test_whisper_block_is_chosen_and_checked(monkeypatch):
    """A tiny random Whisper (no weights needed): each block gives its own pooled mean and std;
    a block the encoder lacks is refused."""
    pytest.importorskip("whisper")
    import whisper.model as wm

    import pyutils.whisper.espnet_models as em
    from pyutils.sqa.embed import UttEmbedder

    monkeypatch.setattr(em, "build_whisper", lambda name, dims: wm.Whisper(wm.ModelDimensions(**TINY_DIMS)))
    x = (np.random.default_rng(2).standard_normal(16000) * 0.1).astype(np.float32)
    vecs = {}
    for layer in (1, 2):
        torch.manual_seed(0)                                     # the same random weights each time
        e = UttEmbedder({"whisper": "tiny-test", "whisper_layer": layer, "p808": False})
        vecs[layer] = e(x)
        assert vecs[layer].shape == (e.dim,) == (2 * 16,)
    assert not np.allclose(vecs[1], vecs[2], atol=1e-3)
    with pytest.raises(ValueError, match="blocks 1..2"):
        UttEmbedder({"whisper": "tiny-test", "whisper_layer": 3, "p808": False})


def test_embed_cli_embeds_several_sets_with_one_model_load(tmp_path, monkeypatch):
    """``embed dump`` with two --wav-scp/--outdir pairs writes each set's own embed.JOB.scp;
    --missing-ok skips a pair whose piece does not exist; unpaired options are an error."""
    pytest.importorskip("speechmos")
    sf = pytest.importorskip("soundfile")
    kaldiio = pytest.importorskip("kaldiio")
    from pyutils.sqa import embed

    built = []
    real = embed.UttEmbedder

    class Counting(real):
        def __init__(self, cfg=None):
            built.append(1)
            super().__init__(cfg)

    monkeypatch.setattr(embed, "UttEmbedder", Counting)
    rng = np.random.default_rng(0)
    args = []
    for name, n in (("a", 2), ("b", 1)):
        d = tmp_path / name
        d.mkdir()
        lines = []
        for i in range(n):
            wav = d / f"{name}{i}.wav"
            sf.write(str(wav), (0.1 * rng.standard_normal(8000)).astype(np.float32), 16000)
            lines.append(f"{name}{i} {wav}\n")
        (d / "wav.1.scp").write_text("".join(lines))
        args += ["--wav-scp", str(d / "wav.1.scp"), "--outdir", str(d)]
    missing = ["--wav-scp", str(tmp_path / "c" / "wav.1.scp"), "--outdir", str(tmp_path / "c")]
    common = ["--whisper", "none", "--p808", "true", "--job", "1"]
    with pytest.raises(SystemExit):
        embed.main(["dump"] + args + missing + common)             # missing piece, no --missing-ok
    with pytest.raises(SystemExit):
        embed.main(["dump"] + args + ["--wav-scp", "x.scp"] + common)   # unpaired
    assert embed.main(["dump"] + args + missing + common + ["--missing-ok"]) == 0
    assert len(built) == 1
    for name, n in (("a", 2), ("b", 1)):
        vecs = dict(kaldiio.load_scp_sequential(str(tmp_path / name / "embed.1.scp")))
        assert sorted(vecs) == [f"{name}{i}" for i in range(n)] and vecs[f"{name}0"].shape == (1, 1)
    assert not (tmp_path / "c").exists()
