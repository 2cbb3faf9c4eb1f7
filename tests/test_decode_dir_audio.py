"""decode_dir --audio-dir: a folder of mixed audio files becomes a wav.scp."""

import numpy as np
import pytest
import soundfile as sf

from pyutils.asr.decode_dir import DecodeDirError, write_audio_dir_scp
from pyutils.datadir.io import read_kv, read_wav_scp_entry


def test_audio_dir_scp(tmp_path):
    d = tmp_path / "clips"
    (d / "sub").mkdir(parents=True)
    x = (0.1 * np.sin(np.arange(8000) / 10)).astype(np.float32)
    sf.write(d / "a.wav", x, 8000)
    sf.write(d / "sub" / "b.flac", np.stack([x, x], 1), 44100)
    (d / "notes.txt").write_text("not audio")
    scp = tmp_path / "wav.scp"
    assert write_audio_dir_scp(str(d), str(scp)) == 2
    entries = read_kv(scp)
    assert sorted(entries) == ["a", "b"]
    y, sr = read_wav_scp_entry(entries["b"])
    assert sr == 44100 and y.shape[1] == 2


def test_audio_dir_duplicate_and_empty(tmp_path):
    d = tmp_path / "clips"
    (d / "x").mkdir(parents=True)
    sf.write(d / "a.wav", np.zeros(100, np.float32), 16000)
    sf.write(d / "x" / "a.flac", np.zeros(100, np.float32), 16000)
    with pytest.raises(DecodeDirError, match="same id 'a'"):
        write_audio_dir_scp(str(d), str(tmp_path / "s"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DecodeDirError, match="no audio"):
        write_audio_dir_scp(str(tmp_path / "empty"), str(tmp_path / "s"))


def test_recipe_command_uses_declared_options(tmp_path):
    """Every option decode_dir hands to local/nvv_asr.sh (its own and the ones stage 5 records
    in recipe_options.sh) is one the stage script declares: a renamed option fails here, not in
    a TTS evaluation that decodes with a trained ASR."""
    import re
    from pathlib import Path

    from pyutils.asr.decode_dir import recipe_command

    local = Path(__file__).resolve().parents[1] / "local"
    script = (local / "nvv_asr.sh").read_text()
    options = (local / "nvv_asr_options.sh").read_text()   # the options block
    declared = set(re.findall(r"^([a-z][a-z0-9_]*)=", options, re.M))
    recorded = re.search(r"printf '((?:[a-z_]+=%s\\n)+)'[^\n]*recipe_options", script.replace("\\\n", ""))
    assert recorded, "stage 5's recipe_options.sh line not found"
    keys = [k.split("=")[0] for k in recorded.group(1).split("\\n") if k]
    cmd = recipe_command({k: "x" for k in keys}, "/e", str(tmp_path), "set_x", "valid.acc.ave.pth",
                         nj=2, inference_config="c.yaml")
    opts = [c[2:] for c in cmd if c.startswith("--")]
    assert "lang" in opts and "asr_exp" in opts
    assert [o for o in opts if o not in declared] == []
