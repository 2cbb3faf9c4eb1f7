"""local/nvv_asr.sh --asr_method cascade: option checks, stages 4-6 on a tiny corpus, decode_dir."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import recipe_copy  # noqa: E402
from mini_corpus_fixture import noise, tiny_mini_corpus  # noqa: E402

WHISPER = ROOT / "tools" / "models" / "whisper-base"
YAMNET = ROOT / "tools" / "models" / "yamnet"


def run(cmd, cwd, timeout=60):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("args, text", [
    (["--asr_method", "kaldi"], "--asr_method must be espnet or cascade, got 'kaldi'"),
    (["--asr_method", "cascade", "--whisper", "true"], "give --asr_method espnet with it"),
    (["--asr_method", "cascade", "--lang", "de"], "--asr_method cascade supports --lang en and zh"),
    (["--detector_real", "maybe"], "--detector_real must be auto, true or false"),
    (["--detector_train_utts", "many"], "--detector_train_utts must be a whole number"),
    (["--detector_mini", "maybe"], "--detector_mini expects true or false"),   # utils/parse_options.sh
    # the YAMNet-patch detector and its options were removed (not adopted): refused with the reason
    (["--detector", "yamnet"], "option --detector was removed: the YAMNet-patch detector was not adopted"),
    (["--detector_embed", "true"], "option --detector_embed was removed: an option of the removed YAMNet"),
    (["--detector_l2", "0.1"], "option --detector_l2 was removed: an option of the removed YAMNet"),
    (["--detector_heads_x", "1"], "unknown option --detector_heads_x (try --help)"),
    # real corpora have no event times: with nothing else to fit the detector on, refused before any stage
    (["--corpus", "nonverbaltts", "--detector_labels", "times", "--detector_mini", "false", "--detector_real",
      "false"], "the NVV detector has nothing to fit on: give --detector_labels transcript"),
    (["--detector_layers", "4,7"], "--detector_layers must be encoder blocks 1-6"),
    (["--detector_heads", "0"], "--detector_heads must be a whole number >= 1, got '0'"),
    (["--detector_heads", "three"], "--detector_heads must be a whole number >= 1, got 'three'"),
    (["--decode_pack", "yes"], "--decode_pack expects true or false"),
])
def test_bad_cascade_options_stop_with_one_message(tmp_path, args, text):
    r = run(["./run.sh", "--stop-stage", "0", *args], recipe_copy(tmp_path, "nvv_asr_en"))
    assert r.returncode in (1, 2), r.stdout[-1000:] + r.stderr[-1000:]
    assert text in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("recipe", ["nvv_asr_en", "nvv_asr_zh"])
def test_run_sh_defaults_to_the_cascade(recipe):
    runsh = (ROOT / "egs" / recipe / "run.sh").read_text()
    assert "\nasr_method=cascade " in runsh and '--asr_method "${asr_method}"' in runsh
    r = run(["./run.sh", "--help"], ROOT / "egs" / recipe)
    assert "--asr_method" in r.stdout + r.stderr


@pytest.mark.skipif(not (WHISPER.is_dir() and YAMNET.is_dir()), reason="make -C tools (whisper-base, yamnet)")
def test_cascade_stages_4_to_8_and_decode_dir(tmp_path):
    mini = tmp_path / "mini"
    tiny_mini_corpus(mini)
    rdir = recipe_copy(tmp_path, "nvv_asr_en")
    cmd = ["./run.sh", "--mini_dir", str(mini), "--stage", "1", "--nj", "1", "--detector_real", "false",
           "--real_speech", "false", "--detector_heads", "2", "--decode_pack", "true"]
    r = run(cmd, rdir, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exp = rdir / "exp" / "asr_cascade_default_en"
    assert "stage 3: not used by --asr_method cascade" in r.stdout
    # stage 4: cached Whisper-encoder frames with verified markers
    assert (exp / "feats" / "wf_corpus_train.1.npz").is_file() and (exp / "feats" / ".wf_corpus_train.done").is_file()
    from pyutils.nvv_detect.whisper_frames import load

    kind, layers, rows = load(exp / "feats" / "wf_corpus_dev.1.npz")
    assert kind == "corpus" and layers == (5,) and len(rows) == 3 and rows[0].frames.shape == (50, 512)
    assert rows[0].events == [{"tag": "laugh", "start": 1.0, "end": 1.5}]
    # stage 5: the detector with its checksum, the report, the options a decode needs
    from pyutils.io import sha256_file
    from pyutils.nvv_detect.frame_heads import FrameDetector

    det = exp / "nvv_detector.npz"
    assert (exp / "nvv_detector.npz.sha256").read_text().split()[0] == sha256_file(det)
    fd = FrameDetector.load(det)
    assert fd.tags[0] == "breath" and fd.layers == (5,)
    assert len(fd.heads) == 2                                            # --detector_heads 2: an ensemble
    report = json.loads((exp / "detector_report.json").read_text())
    assert report["detector"] == "whisper_frames" and report["train_utts"] == 3 and report["dev_utts"] == 3
    assert report["train_frames"] == 150 and report["tune_on"] == "all"
    assert report["heads"] == 2 and report["epochs"] == 100              # 3 utterances: 1 batch, >= 100 steps
    assert "asr_method=cascade" in (exp / "recipe_options.sh").read_text().split()
    assert (exp / "log" / "train_detector.log").is_file()
    # stage 6: events, the Track 1 JSONL and the Kaldi text stage 7 scores
    dec = exp / "decode_cascade" / "test"
    for f in ("events.jsonl", "track1.jsonl", "details.jsonl", "text", "rtf.json",
              "logdir/asr_inference.detect.log", "logdir/asr_inference.cascade.log"):
        assert (dec / f).is_file(), f
    hyp = [json.loads(line) for line in (dec / "track1.jsonl").read_text().splitlines()]
    assert [h["utt_id"] for h in hyp] == ["spk1-test0", "spk1-test1", "spk1-test2"]
    assert len((dec / "text").read_text().splitlines()) == 3
    details = [json.loads(line) for line in (dec / "details.jsonl").read_text().splitlines()]
    assert all("decoded packed with 2 other clips" in d["notes"] for d in details)   # --decode_pack true
    # stages 7-8 as for ESPnet
    assert (dec / "score" / "track1.json").is_file()
    assert (rdir / "submission" / "asr_cascade_default_en" / "track1_test.jsonl").is_file()
    assert "Whisper base encoder frames" in (exp / "decode_cascade" / "RESULTS.md").read_text()
    # a rerun of stages 4-6 skips the features and the fit; unpacked, Whisper's words are cached
    r = run([*cmd[:3], "--stage", "4", "--stop-stage", "6", *cmd[5:], "--decode_pack", "false"], rdir, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "wf_corpus_train: done, skipping" in r.stdout and "is fitted, skipping" in r.stdout
    assert "0 of 3 transcripts reused" in (dec / "logdir" / "asr_inference.cascade.log").read_text()
    r = run([*cmd[:3], "--stage", "6", "--stop-stage", "6", *cmd[5:], "--decode_pack", "false"], rdir, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "3 of 3 transcripts reused" in (dec / "logdir" / "asr_inference.cascade.log").read_text()
    # decode_dir with the cascade exp: any format/rate/channels; a broken file gets an empty row
    clips = tmp_path / "clips"
    clips.mkdir()
    sf.write(clips / "a.flac", noise(1.0, 1), 16000)
    sf.write(clips / "b.wav", np.stack([noise(1.0, 2, 8000)] * 2, axis=1), 8000)
    sf.write(clips / "c.wav", noise(0.05, 3), 48000)
    (clips / "d.ogg").write_bytes(b"not audio")
    out = tmp_path / "out" / "text"
    r = run([sys.executable, "-m", "pyutils.asr.decode_dir", "--asr-exp", str(exp), "--audio-dir", str(clips),
             "--out", str(out), "--jsonl", str(tmp_path / "out" / "t1.jsonl")], ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "out" / "t1.jsonl").read_text().splitlines()]
    assert [x["utt_id"] for x in rows] == ["a", "b", "c", "d"]
    assert "d: " in r.stderr and "empty transcript" in r.stderr
    assert len(out.read_text().splitlines()) == 4


def test_stage_5_without_detector_sets_stops_with_one_message(tmp_path):
    """Nothing to fit on (stage 4 not run here): an error saying what to run, no detector written."""
    mini = tmp_path / "mini"
    tiny_mini_corpus(mini)
    rdir = recipe_copy(tmp_path, "nvv_asr_en")
    r = run(["./run.sh", "--mini_dir", str(mini), "--stage", "5", "--stop-stage", "5", "--nj", "1",
             "--detector_real", "false"], rdir, timeout=120)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "stage 5: the NVV detector needs at least one train and one dev set, found 0 train / 0 dev" in r.stderr
    assert "run stage 4 first" in r.stderr and "Traceback" not in r.stderr
    assert not (rdir / "exp" / "asr_cascade_default_en" / "nvv_detector.npz").exists()


def test_fork_outside_en_zh_uses_the_espnet_path(tmp_path):
    dst = tmp_path / "egs" / "nvv_asr_de"
    r = run([str(ROOT / "utils" / "fork_recipe.sh"), str(ROOT / "egs" / "nvv_asr_en"), str(dst), "--lang", "de"],
            ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    runsh = (dst / "run.sh").read_text()
    assert "\nasr_method=espnet " in runsh and "\nasr_method=cascade" not in runsh
