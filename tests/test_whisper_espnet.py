"""The chorus_whisper ESPnet classes on a tiny randomly initialised Whisper."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("espnet2")
pytest.importorskip("whisper")

from pyutils.whisper.espnet_models import ChorusWhisperDecoder, ChorusWhisperEncoder  # noqa: E402
from pyutils.whisper.espnet_task import NAME, register  # noqa: E402

DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=16, n_audio_head=2, n_audio_layer=1,
            n_vocab=51865, n_text_ctx=64, n_text_state=16, n_text_head=2, n_text_layer=1)
VOCAB = 1 + 51865 + 16 + 1


def test_encoder_runs_on_raw_audio_of_any_length():
    enc = ChorusWhisperEncoder(whisper_model=None, whisper_dims=DIMS)
    speech = torch.randn(2, 16000) * 0.1
    out, olens, _ = enc(speech, torch.tensor([16000, 8000]))
    assert out.shape == (2, 50, 16)  # 100 mel frames per s, conv stride 2
    assert olens.tolist() == [50, 25]


def test_decoder_keeps_pretrained_rows_at_offset_and_caches_for_inference():
    torch.manual_seed(0)
    dec = ChorusWhisperDecoder(VOCAB, 16, whisper_model=None, whisper_dims=DIMS)
    emb = dec.decoders.token_embedding
    assert emb.weight.shape == (VOCAB, 16)
    assert emb.before.shape == (1, 16) and emb.after.shape == (17, 16)
    assert torch.equal(emb.weight[1:1 + 51865], emb.pretrained)
    dec.eval()
    with torch.no_grad():
        w1 = emb.weight
        assert emb.weight is w1  # cached while parameters are unchanged
        emb.after.add_(1.0)
        assert emb.weight is not w1 and torch.equal(emb.weight[-17:], emb.after)
        memory = torch.randn(1, 10, 16)
        logp, _ = dec.batch_score(torch.tensor([[1 + 50258, 1 + 50259]]), [None], memory)
    assert logp.shape == (1, VOCAB)
    dec.train()
    with torch.enable_grad():
        assert emb.weight.requires_grad


def test_decoder_rejects_a_short_token_list():
    with pytest.raises(ValueError, match="token-list"):
        ChorusWhisperDecoder(100, 16, whisper_model=None, whisper_dims=DIMS)


def test_registered_as_espnet_choices():
    register()
    from espnet2.tasks.asr import decoder_choices, encoder_choices

    assert encoder_choices.get_class(NAME) is ChorusWhisperEncoder
    assert decoder_choices.get_class(NAME) is ChorusWhisperDecoder
