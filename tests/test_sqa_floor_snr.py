"""benchmarks/sqa_floor_snr.py: a recording's floor under its speech, per talker."""

import importlib.util
import json
import os

import numpy as np
import pytest
import soundfile as sf

from pyutils.synth.audio import active_rms

_PATH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sqa_floor_snr.py")
_spec = importlib.util.spec_from_file_location("sqa_floor_snr", _PATH)
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)

SR = 16000


def _speech_over_floor(floor_db, seconds=3.0, seed=0):
    """Tone bursts at RMS 0.1 (half the time; one 0.2 s burst 12 dB louder, as speech peaks)
    over white noise ``floor_db`` under the 0.1 level."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    t = np.arange(n) / SR
    gate = (np.sin(2 * np.pi * 1.5 * t) > 0).astype(np.float64)
    gate[(t >= 0.05) & (t < 0.25)] *= 4.0
    speech = 0.1 * np.sqrt(2) * np.sin(2 * np.pi * 220 * t) * gate
    floor = rng.standard_normal(n) * 0.1 * 10 ** (-floor_db / 20)
    return (speech + floor).astype(np.float32)


@pytest.mark.parametrize("floor_db", [20.0, 25.0, 40.0])
def test_floor_snr_recovers_the_floor_level(floor_db):
    # the speech level is active_rms of the clean bursts (their peak lifts it over 0.1); the
    # 5th percentile of 20 ms noise-only frames sits within ~1 dB of the noise RMS
    clean = _speech_over_floor(200.0)
    speech_db = 20 * np.log10(active_rms(clean) / 0.1)
    est = M.floor_snr_db(_speech_over_floor(floor_db))
    assert -0.5 <= est - (floor_db + speech_db) <= 1.5


def test_skipped_intervals_leave_an_inserted_silence_out():
    x = _speech_over_floor(25.0)
    x[SR:SR + SR // 2] = 0.0  # an inserted digital-silence pause
    assert M.floor_snr_db(x) == float("inf")
    assert M.floor_snr_db(x, skip=[[1.0, 1.5]]) == pytest.approx(M.floor_snr_db(_speech_over_floor(25.0)), abs=1.0)
    with pytest.raises(ValueError, match="skipped"):
        M.floor_snr_db(x, skip=[[0.0, 10.0]])


def test_cli_groups_by_talker_and_keeps_noise_free_recordings(tmp_path, capsys):
    d = tmp_path / "data"
    d.mkdir()
    rows, scp, spk = [], [], []
    for i, (talker, floor_db, noise) in enumerate([("a", 14.0, []), ("a", 17.0, []),
                                                   ("b", 40.0, []), ("b", 10.0, [[0.0, 3.0]])]):
        path = tmp_path / f"u{i}.wav"
        sf.write(path, _speech_over_floor(floor_db, seed=i), SR, subtype="PCM_16")
        scp.append(f"u{i} {path}")
        spk.append(f"u{i} {talker}")
        rows.append({"utt_id": f"u{i}", "score": 4.0, "faults": {"noise": noise, "distortion": [], "pause": []}})
    (d / "wav.scp").write_text("\n".join(scp) + "\n")
    (d / "utt2spk").write_text("\n".join(spk) + "\n")
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert M.main([str(d), "--ref", str(ref), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "| a | 2 |" in out and "100% |" in out  # both of a's floors under 25 dB
    assert "| b | 1 |" in out and "| b | 1 | 4" in out  # the noisy recording of b is left out
