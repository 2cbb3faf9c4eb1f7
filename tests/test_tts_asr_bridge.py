"""The NVV-ASR model that nvv_tts stage 7 picks by default."""

import os
import pathlib
import time

from pyutils.tts import asr_bridge


def _model(root: pathlib.Path, name: str, mtime: float) -> str:
    d = root / "egs" / "nvv_asr_en" / "exp" / name
    d.mkdir(parents=True)
    for f in ("config.yaml", "recipe_options.sh", "valid.acc.ave.pth"):
        (d / f).write_text("x")
    os.utime(d / "valid.acc.ave.pth", (mtime, mtime))
    return str(d)


def test_a_full_model_wins_over_a_newer_ci_model(tmp_path, monkeypatch):
    monkeypatch.setattr(asr_bridge, "REPO_ROOT", tmp_path)
    now = time.time()
    full = _model(tmp_path, "asr_train_asr_whisper_frozen_en_whisper", now - 3600)
    _model(tmp_path, "asr_train_asr_whisper_ci_en_whisper", now)
    assert asr_bridge.find_default("en") == full


def test_the_newest_full_model_wins_and_ci_is_the_last_resort(tmp_path, monkeypatch):
    monkeypatch.setattr(asr_bridge, "REPO_ROOT", tmp_path)
    now = time.time()
    ci = _model(tmp_path, "asr_train_asr_ci_en_bpe300", now)
    assert asr_bridge.find_default("en") == ci
    _model(tmp_path, "asr_train_asr_default_en_bpe300", now - 7200)
    newer = _model(tmp_path, "asr_train_asr_whisper_frozen_en_whisper", now - 3600)
    assert asr_bridge.find_default("en") == newer
    assert asr_bridge.find_default("zh") == ""
