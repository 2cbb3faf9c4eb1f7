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
