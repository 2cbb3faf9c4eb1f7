"""The NVV-ASR model that nvv_tts stage 7 picks by default."""

import os
import pathlib
import time

from pyutils.tts import asr_bridge


def _model(root: pathlib.Path, name: str, mtime: float) -> str:
    d = root / "egs" / "nvv_asr_en" / "exp" / name
    d.mkdir(parents=True)
    for f in ("config.yaml", "valid.acc.ave.pth"):
        (d / f).write_text("x")
    (d / "recipe_options.sh").write_text("lang=en\n")
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


def _cascade(root: pathlib.Path, name: str, mtime: float, fitted: bool = True) -> str:
    d = root / "egs" / "nvv_asr_en" / "exp" / name
    d.mkdir(parents=True)
    (d / "recipe_options.sh").write_text("lang=en\nasr_method=cascade\n")
    if fitted:
        (d / "nvv_detector.npz").write_text("x")
        os.utime(d / "nvv_detector.npz", (mtime, mtime))
    return str(d)


def test_a_cascade_exp_counts_once_its_detector_is_fitted(tmp_path, monkeypatch):
    monkeypatch.setattr(asr_bridge, "REPO_ROOT", tmp_path)
    now = time.time()
    _cascade(tmp_path, "asr_cascade_default_en", now, fitted=False)
    assert asr_bridge.find_default("en") == ""
    ci = _cascade(tmp_path, "asr_cascade_ci_en", now)
    assert asr_bridge.find_default("en") == ci
    full = _cascade(tmp_path, "asr_cascade_large_en", now - 60)
    assert asr_bridge.find_default("en") == full


def test_an_exp_dir_with_a_foreign_recipe_options_file_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(asr_bridge, "REPO_ROOT", tmp_path)
    d = pathlib.Path(_model(tmp_path, "asr_train_asr_default_en_bpe300", time.time()))
    (d / "recipe_options.sh").write_text("rm -rf /\n")
    assert asr_bridge.find_default("en") == ""
