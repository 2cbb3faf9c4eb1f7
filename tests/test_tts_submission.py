"""Synthesis post-processing: any wav -> Track 2 format (16 kHz, mono, PCM16)."""

import numpy as np
import soundfile as sf

from pyutils.tts.audio import (active_rms, convert_to_submission, normalise_loudness, postprocess_scp,
                               to_submission_audio)


def _tone(sr, dur=0.5, f=440.0, amp=0.5):
    t = np.arange(int(sr * dur)) / sr
    return (amp * np.sin(2 * np.pi * f * t)).astype(np.float32)


def test_resample_mixdown_pcm16():
    x = _tone(22050)
    stereo = np.stack([x, x], axis=1)
    y = to_submission_audio(stereo, 22050)
    assert y.dtype == np.int16 and y.ndim == 1
    assert abs(len(y) - 8000) <= 1
    # a 440 Hz tone stays a 440 Hz tone
    spec = np.abs(np.fft.rfft(y.astype(np.float64)))
    assert abs(np.argmax(spec) * 16000 / len(y) - 440) < 5
    assert abs(np.abs(y).max() / 32768 - 0.5) < 0.02


def test_int16_input_and_clipping():
    y = to_submission_audio(np.array([0, 16384, -32768, 32767], dtype=np.int16), 16000)
    assert list(y) == [0, 16384, -32768, 32767]
    y = to_submission_audio(np.array([2.0, -2.0, np.nan]), 16000)
    assert list(y) == [32767, -32768, 0]


def test_convert_dir(tmp_path):
    paths = []
    for uid, (sr, ch) in {"u1": (24000, 2), "u2": (16000, 1), "u3": (8000, 1)}.items():
        x = _tone(sr)
        if ch == 2:
            x = np.stack([x, -x * 0.5], axis=1)
        p = tmp_path / f"{uid}_src.wav"
        sf.write(p, x, sr, subtype="FLOAT")
        paths.append(f"{uid} {p}\n")
    scp = tmp_path / "wav.scp"
    scp.write_text("".join(paths))
    out = tmp_path / "sub"
    assert convert_to_submission(str(scp), str(out)) == 3
    for uid in ("u1", "u2", "u3"):
        info = sf.info(out / f"{uid}.wav")
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert abs(info.duration - 0.5) < 0.01


def test_rerun_with_fewer_utterances_leaves_only_this_set(tmp_path, capsys):
    src = tmp_path / "a.wav"
    sf.write(src, _tone(16000), 16000)
    out = tmp_path / "sub"
    big, small = tmp_path / "big.scp", tmp_path / "small.scp"
    big.write_text("".join(f"u{i} {src}\n" for i in range(4)))
    small.write_text(f"u0 {src}\nu2 {src}\n")
    assert convert_to_submission(str(big), str(out)) == 4
    (out / "notes.txt").write_text("kept")
    assert convert_to_submission(str(small), str(out)) == 2
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "u0.wav", "u2.wav"]
    assert "removed 2 wav file(s)" in capsys.readouterr().err


def test_loudness_normalisation(tmp_path):
    quiet = _tone(16000, amp=1e-4)
    y = normalise_loudness(quiet, 16000, target_db=-23.0)
    assert abs(20 * np.log10(active_rms(y, 16000)) + 23.0) < 0.5
    assert np.abs(y).max() <= 10 ** (-1 / 20) + 1e-9
    assert not np.any(normalise_loudness(np.zeros(100), 16000))
    p = tmp_path / "q.wav"
    sf.write(p, quiet, 22050)
    (tmp_path / "in.scp").write_text(f"q {p}\n")
    assert postprocess_scp(str(tmp_path / "in.scp"), str(tmp_path / "o"), str(tmp_path / "o.scp")) == 1
    x, sr = sf.read(str(tmp_path / "o" / "q.wav"))
    assert sr == 16000 and np.abs(x).max() > 0.05


def test_check_scp_materialises_pipes_and_resamples(tmp_path):
    from pyutils.tts.audio import check_scp

    src = tmp_path / "a.wav"
    sf.write(src, _tone(22050), 22050)
    ok = tmp_path / "b.wav"
    sf.write(ok, _tone(16000), 16000)
    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {src}\nb {ok}\nc cat {src} |\n")
    assert check_scp(str(scp), 16000, str(tmp_path / "fix")) == 2
    rows = dict(line.split(maxsplit=1) for line in scp.read_text().splitlines())
    assert rows["b"] == str(ok)
    for k in ("a", "c"):
        info = sf.info(rows[k])
        assert info.samplerate == 16000 and info.channels == 1
    scp.write_text(f"d {tmp_path}/missing.wav\n")
    import pytest

    with pytest.raises(ValueError, match=r"wav.scp:1: d: cannot read"):
        check_scp(str(scp), 16000, str(tmp_path / "fix"))


def test_postprocess_refuses_silent_or_missing_synthesis(tmp_path, capsys):
    from pyutils.tts.audio import main as audio_main
    good, silent = tmp_path / "g.wav", tmp_path / "s.wav"
    sf.write(good, _tone(16000, amp=0.1), 16000)
    sf.write(silent, np.zeros(1600), 16000)
    (tmp_path / "text").write_text("g hello\nm world\n")
    (tmp_path / "in.scp").write_text(f"g {good}\n")
    args = ["postprocess", str(tmp_path / "in.scp"), str(tmp_path / "o"), str(tmp_path / "o.scp")]
    assert audio_main(args + ["--expect-keys", str(tmp_path / "text")]) == 2
    assert "m" in capsys.readouterr().err.split("utterance(s): ")[1]
    assert not (tmp_path / "o.scp").exists()
    (tmp_path / "in.scp").write_text(f"g {good}\ns {silent}\n")
    assert audio_main(args) == 2
    assert "utterance s:" in capsys.readouterr().err
    assert not (tmp_path / "o.scp").exists()
