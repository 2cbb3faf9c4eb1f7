"""Weak labels: tag windows from tagged transcripts (pyutils.nvv_detect.weak_labels) and stage 4-5
of the cascade recipe on a real-corpus layout."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.nvv_detect.arrays import DetectorError
from pyutils.nvv_detect.weak_labels import (MAX_TAG_ONLY_S, SkipUtt, WeakLabelError, derive, parse_tagged,
                                            tag_windows, utterance_windows)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import recipe_copy  # noqa: E402
from mini_corpus_fixture import tiny_mini_corpus  # noqa: E402

WHISPER = ROOT / "tools" / "models" / "whisper-base"
SR = 16000


# ---------------------------------------------------------------- transcripts and the gap rule
def test_parse_tagged_splits_at_the_tags():
    tg = parse_tagged("That was  really surprising. [laugh] Sorry [throat clearing][cough]")
    assert tg.tags == ["laugh", "throat clearing", "cough"]
    assert tg.pieces == ["That was really surprising.", "Sorry", "", ""]
    assert parse_tagged("[Laugh] hi").tags == ["laugh"]          # any spelling of a challenge label
    with pytest.raises(SkipUtt, match=r"\[clap\] is not one of the 16 challenge tags"):
        parse_tagged("well [clap] done")
    with pytest.raises(SkipUtt, match="stray bracket"):
        parse_tagged("well [laugh done")


def test_tag_window_is_the_gap_between_the_words():
    words = [(0.2, 0.5), (0.6, 1.0), (2.0, 2.4)]
    assert tag_windows(words, [2], 3.0) == [(1.0, 2.0, False)]            # gap of 1 s: kept as is


def test_short_gap_is_widened_to_the_neighbouring_words():
    words = [(0.2, 0.5), (0.6, 1.0), (2.0, 2.4)]
    assert tag_windows(words, [1], 3.0) == [(0.2, 1.0, True)]             # gap 0.1 s < 0.3 s
    assert tag_windows(words, [1], 3.0, min_gap=0.05) == [(0.5, 0.6, False)]


def test_windows_at_the_edges_use_the_utterance_bounds():
    words = [(0.8, 1.0), (1.1, 1.5)]
    assert tag_windows(words, [0, 2], 3.0) == [(0.0, 0.8, False), (1.5, 3.0, False)]
    # a word right at the start leaves no gap: widened to [0, end of that word]
    assert tag_windows([(0.0, 0.4), (0.5, 1.0)], [0], 1.1) == [(0.0, 0.4, True)]
    # tags standing together share their gap
    assert tag_windows(words, [1, 1], 3.0) == [(0.8, 1.5, True)] * 2
    with pytest.raises(ValueError, match="outside"):
        tag_windows(words, [3], 3.0)


def test_utterance_without_alignment_cases():
    one_s = np.zeros(SR, np.float32) + 0.01
    assert utterance_windows("u", None, "no tags here", None) == ([], "untagged")
    wins, how = utterance_windows("u", one_s, "[cough] [laugh]", None)
    assert how == "tag-only" and wins == [{"utt_id": "u", "tag": "cough", "start": 0.0, "end": 1.0},
                                          {"utt_id": "u", "tag": "laugh", "start": 0.0, "end": 1.0}]
    long = np.zeros(int((MAX_TAG_ONLY_S + 1) * SR), np.float32) + 0.01
    with pytest.raises(SkipUtt, match="tags only"):
        utterance_windows("u", long, "[cough]", None)
    with pytest.raises(SkipUtt, match="empty transcript"):
        utterance_windows("u", one_s, "  ", None)
    with pytest.raises(SkipUtt, match="longer than one Whisper window"):
        utterance_windows("u", np.zeros(31 * SR, np.float32) + 0.01, "hi [cough]", None)


def _data_dir(d: Path, rows):
    """rows: (utt, text, seconds or None for a missing audio file)."""
    d.mkdir(parents=True)
    scp, txt = [], []
    for u, text, sec in rows:
        wav = d / f"{u}.wav"
        if sec is not None:
            sf.write(wav, np.full(int(sec * SR), 0.01, np.float32), SR)
        scp.append(f"{u} {wav}\n")
        txt.append(f"{u} {text}\n")
    (d / "wav.scp").write_text("".join(scp))
    (d / "text").write_text("".join(txt))


def test_derive_counts_every_skipped_row_and_keeps_the_others(tmp_path):
    _data_dir(tmp_path / "data", [("a", "plain words", 1.0), ("b", "[cough]", 1.0), ("c", "[sigh]", 7.0),
                                  ("d", "so [clap] good", 1.0), ("e", "", 1.0), ("f", "[yawn]", None)])
    logs = []
    rep = derive(tmp_path / "data", tmp_path / "weak", log=logs.append)
    assert rep["utterances"] == 6 and rep["kept"] == 2 and rep["untagged"] == 1 and rep["tag-only"] == 1
    assert sum(rep["skipped"].values()) == 4 and rep["skipped"]["cannot read audio"] == 1
    assert sorted(sum(rep["skipped_examples"].values(), [])) == ["c", "d", "e", "f"]
    assert len(logs) == 4 and all(": skipped: " in m for m in logs)
    assert any(m.startswith("weak_labels: d: skipped: unknown tag: [clap] is not one of") for m in logs)
    rows = [json.loads(x) for x in (tmp_path / "weak" / "windows.jsonl").read_text().splitlines()]
    assert rows == [{"utt_id": "b", "tag": "cough", "start": 0.0, "end": 1.0}]
    assert [x.split()[0] for x in (tmp_path / "weak" / "wav.scp").read_text().splitlines()] == ["a", "b"]
    assert json.loads((tmp_path / "weak" / "report.json").read_text())["windows"] == 1
    from pyutils.nvv_detect.utt_sources import weak_dir_utts      # the --weak-dir source reads it back
    got = [(u, sr, wins) for u, _, sr, wins in weak_dir_utts(tmp_path / "weak")]
    assert got == [("a", SR, []), ("b", SR, [{"tag": "cough", "start": 0.0, "end": 1.0}])]
    (tmp_path / "weak" / "windows.jsonl").write_text('{"utt_id": "b", "tag": "cough", "start": 1, "end": 1}\n')
    with pytest.raises(DetectorError, match="windows.jsonl:1: window end must be after its start"):
        list(weak_dir_utts(tmp_path / "weak"))


def test_derive_without_any_window_is_an_error(tmp_path):
    _data_dir(tmp_path / "data", [("a", "plain words", 1.0), ("b", "[sigh]", 7.0)])
    with pytest.raises(WeakLabelError, match="no tag of 2 utterances got a time window"):
        derive(tmp_path / "data", tmp_path / "weak", log=lambda m: None)
    assert not (tmp_path / "weak" / "windows.jsonl").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeakLabelError, match="wav.scp not found"):
        derive(tmp_path / "empty", tmp_path / "weak2")


# ---------------------------------------------------------------- real audio: alignment and the recipe
def _speech_with(tag, text_a, text_b, seed, voice):
    from pyutils.synth.nvv_sounds import synthesize
    from pyutils.synth.speech import speak

    rng = np.random.default_rng(seed)
    a, b = speak(text_a, "en", voice, seed), speak(text_b, "en", voice + 1, seed)
    ev = synthesize(tag, rng, SR) * 0.5
    gap = np.zeros(int(0.15 * SR), np.float32)
    x = np.concatenate([gap, a, gap, ev, gap, b, gap]).astype(np.float32)
    start = (2 * len(gap) + len(a)) / SR
    return x, (start, start + len(ev) / SR)


SENTENCES = [("That was really surprising.", "Let me tell you about it."),
             ("I did not expect this at all.", "Please say that again."),
             ("The weather is lovely today.", "We should go for a walk."),
             ("She opened the old wooden door.", "Nobody was inside the room."),
             ("He finished the report on time.", "Then he went home early.")]
EMOJI = {"laugh": "\U0001F923", "cough": "\U0001F637"}


def _nonverbaltts(root: Path):
    """NonverbalTTS's exported layout (ROOT/<split>.csv, emoji in Result) with speech + a sound."""
    truth = {}
    for split, n in (("train", 6), ("dev", 3)):
        rows = []
        for i in range(n):
            tag = ("laugh", "cough")[i % 2]
            a, b = SENTENCES[i % len(SENTENCES)]
            x, span = _speech_with(tag, a, b, 10 * i + len(split), i % 3)
            rel = f"audio/{split}_{i:02d}.wav"
            (root / "audio").mkdir(parents=True, exist_ok=True)
            sf.write(root / rel, x, SR, subtype="PCM_16")
            rows.append({"index": f"{split}{i}", "audio": rel, "Result": f"{a} {EMOJI[tag]} {b}",
                         "speaker_id": f"spk{i % 2}", "Emotion": "neutral", "duration": round(len(x) / SR, 2)})
            truth[f"{split}{i}"] = (tag, span)
        with open(root / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return truth


@pytest.mark.parametrize("args, text", [
    (["--detector_labels", "maybe"], "--detector_labels must be auto, times or transcript, got 'maybe'"),
])
def test_bad_detector_labels_stop_with_one_message(tmp_path, args, text):
    rdir = recipe_copy(tmp_path, "nvv_asr_en")
    r = subprocess.run(["./run.sh", "--stop-stage", "0", *args], cwd=rdir, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and text in r.stderr and "Traceback" not in r.stderr, r.stderr[-1000:]


@pytest.mark.skipif(not WHISPER.is_dir(), reason="make -C tools (whisper-base)")
def test_recipe_fits_the_detector_on_a_tagged_transcript_corpus(tmp_path):
    src = tmp_path / "NonverbalTTS"
    truth = _nonverbaltts(src)
    rdir = recipe_copy(tmp_path, "nvv_asr_en")
    # db.sh points at the corpus, as a user's would (its own file, not the link to the shared one)
    db = (ROOT / "egs" / "nvv_asr_en" / "db.sh").read_text()
    (rdir / "db.sh").unlink()
    (rdir / "db.sh").write_text(db.replace("\nNONVERBALTTS=\n", f"\nNONVERBALTTS={src}\n"))
    # the generated corpus's exact event times beside the windows (--detector_mini true): a tiny one given
    mini = tmp_path / "mini"
    tiny_mini_corpus(mini)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["./run.sh", "--corpus", "nonverbaltts", "--mini_dir", str(mini), "--stop-stage", "5", "--nj", "1",
                        "--detector_real", "false", "--detector_heads", "1", "--detector_args", "--epochs 30"],
                       cwd=rdir, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exp = rdir / "exp" / "asr_cascade_default_en"
    assert "data=NONVERBALTTS" in r.stdout and "have no NVV event times" not in r.stdout
    assert "chorus-synth" not in r.stdout and f"stage 0: using {mini}" in r.stdout
    # stage 4: windows from the transcripts, Whisper-aligned; each holds the sound that was put there
    for split, n in (("train", 6), ("dev", 3)):
        weak = exp / "feats" / f"weak_corpus_{split}"
        rep = json.loads((weak / "report.json").read_text())
        assert rep["utterances"] == n and rep["aligned"] == n and rep["windows"] == n
        for row in map(json.loads, (weak / "windows.jsonl").read_text().splitlines()):
            tag, (s, e) = truth[row["utt_id"].split("-")[-1]]
            assert row["tag"] == tag
            # the window holds most of the sound and is not much longer than the pause it stands for
            overlap = min(e, row["end"]) - max(s, row["start"])
            assert overlap >= 0.5 * (e - s) and row["end"] - row["start"] < (e - s) + 1.5, (row, s, e)
    # stage 5: a Whisper-frame detector fitted on those windows
    from pyutils.nvv_detect.frame_heads import FrameDetector

    assert len(FrameDetector.load(exp / "nvv_detector.npz").heads) == 1
    report = json.loads((exp / "detector_report.json").read_text())
    # ... and on the mini corpus's exact times (3 train, 3 dev utterances, kind corpus)
    assert (exp / "feats" / "wf_mini_train.1.npz").is_file() and (exp / "feats" / "wf_mini_dev.1.npz").is_file()
    assert report["labels"] == "spans" and report["train_utts"] == 6 + 3 and report["train_windows"] == 6
    assert report["train_kinds"] == ["corpus", "weak"] and report["dev_utts"] == 3 + 3
    log = (exp / "log" / "train_detector.log").read_text()
    assert "--labels spans" in log
    # and the event namer of stage 6 on the same windows' crops (a real corpus's tagged sounds)
    namer_log = (exp / "log" / "fit_namer.log").read_text()
    assert "--windows" in namer_log and "naming: fitted on 9 clips" in namer_log, namer_log[-2000:]
    assert (exp / "nvv_namer.npz").is_file() and (exp / ".namer.done").is_file()
