"""The installed pretrained Whisper on real human speech (Debian's pocketsphinx-testdata).

* conversion equivalence: the converted PyTorch model (openai-whisper, what ESPnet
  fine-tunes) decodes real clips greedily to exactly the tokens that CTranslate2
  (faster-whisper's engine) gives with the original weights, on the same features;
* the judge transcribes a real clip correctly.
`make -C tools` installs both the weights and the clips; in CI (CI=true) their absence
is a failure, elsewhere a skip.
"""

import os
from pathlib import Path

import pytest

from pyutils.whisper.weights import WhisperWeightsError, default_dir, resolve

CLIPS = Path("/usr/share/pocketsphinx/test/data")
CASES = ["librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
         "librivox/sense_and_sensibility_01_austen_64kb-0930.wav",
         "cards/005.wav"]


def _need(what: str, ok: bool):
    if not ok:
        msg = f"{what} not installed (make -C tools)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def spec():
    try:
        s = resolve("base")
    except WhisperWeightsError:
        s = None
    _need(f"Whisper base in {default_dir()}", s is not None)
    _need(f"real clips in {CLIPS}", (CLIPS / CASES[0]).is_file())
    return s


def test_converted_pytorch_model_decodes_like_ctranslate2(spec):
    import ctranslate2
    import soundfile as sf
    import torch
    import whisper
    from faster_whisper import WhisperModel
    from faster_whisper.audio import pad_or_trim

    torch.set_num_threads(2)
    pt = whisper.load_model(str(spec.source), device="cpu").float()
    fw = WhisperModel(str(spec.ct2_dir), device="cpu", compute_type="float32", cpu_threads=2)
    tok = whisper.tokenizer.get_tokenizer(True, language="en", task="transcribe")
    texts = []
    for case in CASES:
        audio, sr = sf.read(CLIPS / case, dtype="float32")
        assert sr == 16000
        feats = pad_or_trim(fw.feature_extractor(audio))
        ours = whisper.decode(pt, torch.from_numpy(feats), whisper.DecodingOptions(
            language="en", temperature=0.0, without_timestamps=True, fp16=False))
        ref = fw.model.generate(ctranslate2.StorageView.from_array(feats[None]),
                                [list(tok.sot_sequence_including_notimestamps)], beam_size=1,
                                suppress_blank=True, suppress_tokens=[-1], max_length=448)
        ref_ids = [i for i in ref[0].sequences_ids[0] if i < tok.eot]
        assert ours.tokens == ref_ids, (case, ours.text, tok.decode(ref_ids))
        texts.append(ours.text.lower())
    assert "ill-disposed young man" in texts[0]  # and it is real speech, recognised


def test_judge_transcribes_real_speech(spec, tmp_path):
    from pyutils.whisper import judge

    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {CLIPS / CASES[1]}\nbad {tmp_path / 'missing.wav'}\n")
    out = tmp_path / "text"
    assert judge.main(["--lang", "en", "--wav-scp", str(scp), "--out", str(out), "--threads", "2"]) == 0
    lines = dict(ln.rstrip("\n").partition(" ")[::2] for ln in out.read_text().splitlines())
    assert "amiable himself" in lines["a"].lower()
    assert lines["bad"] == ""
