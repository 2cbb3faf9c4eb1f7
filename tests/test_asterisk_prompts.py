"""Asterisk prompt reader: the fixed selection by length, G.722 decoding, clear errors."""

import subprocess

import numpy as np
import pytest

from pyutils.corpora import asterisk_prompts as ap


def _fake_root(tmp_path, sizes):
    for voice in ap.VOICES:
        d = tmp_path / voice
        d.mkdir()
        for i, n in enumerate(sizes):
            (d / f"p{i:02d}.g722").write_bytes(b"\0" * n)
        (d / "digits").mkdir()                                    # sub-directories are not prompts
        (d / "digits" / "x.g722").write_bytes(b"\0" * 30000)
    return tmp_path


def test_selection_by_length_spread_and_fixed(tmp_path):
    sizes = [8000, 16000, 24000, 40000, 56000, 64000] + [32000] * 10   # 1 s .. 8 s
    root = _fake_root(tmp_path, sizes)
    every = ap.prompts(root, max_per_voice=100)
    assert len(every) == 3 * 14                                   # 1 s and 8 s left out
    assert all("digits" not in path for _, path, _ in every)
    assert {t for _, _, t in every} == {"allison", "june"}
    few = ap.prompts(root, max_per_voice=4)
    assert few == ap.prompts(root, max_per_voice=4)
    per_voice = [r for r in few if r[0].startswith("fr_CA_f_June")]
    assert len(per_voice) == 4
    names = [r[0] for r in every if r[0].startswith("fr_CA_f_June")]
    assert per_voice[0][0] == names[0] and per_voice[-1][0] == names[-1]   # spread over the list
    assert ap.prompts(tmp_path / "absent") == []


def test_g722_roundtrip_and_errors(tmp_path):
    sr = 16000
    t = np.arange(2 * sr) / sr
    x = (0.3 * np.sin(2 * np.pi * 440 * t)).astype("<f4")
    g = tmp_path / "tone.g722"
    try:
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "f32le", "-ar", "16000", "-ac", "1",
                        "-i", "-", "-c:a", "g722", "-f", "g722", str(g)], input=x.tobytes(), check=True)
    except (FileNotFoundError, subprocess.CalledProcessError):
        pytest.skip("ffmpeg with a G.722 encoder not available")
    assert g.stat().st_size == pytest.approx(2 * ap.G722_BYTES_PER_S, rel=0.02)
    y, ysr = ap.read_g722(str(g))
    assert ysr == sr and abs(len(y) - len(x)) < 200
    seg = slice(2000, 30000)
    n = min(len(x), len(y))
    lag = int(np.argmax(np.correlate(y[2000:3000], x[2000:2100], mode="valid")))
    assert np.corrcoef(x[:n][seg], np.roll(y[:n], -lag)[seg])[0, 1] > 0.95
    empty = tmp_path / "empty.g722"
    empty.write_bytes(b"")
    with pytest.raises(ap.AsteriskPromptError, match="empty.g722"):
        ap.read_g722(str(empty))


def test_sqa_corpus_takes_prompts_only_when_asked_and_only_for_train(tmp_path):
    from pyutils.synth.sqa_corpus import PRESETS, plan, render

    assert not any("asterisk" in i["utt_id"] for i in plan("en", PRESETS["ci"], 16, 0))   # off by default
    rows = ap.prompts(max_per_voice=2)
    if not rows:
        pytest.skip("asterisk-core-sounds-*-g722 not installed")
    items = [i for i in plan("en", {**PRESETS["ci"], "real_prompts": 2}, 16, 0) if "asterisk" in i["utt_id"]]
    assert len(items) == len(rows) == 6                           # 2 prompts of each of the 3 voices
    assert all(i["split"] == "train" for i in items)
    (tmp_path / "wav").mkdir()
    meta = render(items[0], str(tmp_path))
    assert meta["voice_group"] == "real" and 1.5 < meta["dur"] < 12.0
