"""The Track 1 cascade CLI (pyutils.asr.cascade): any audio in, a valid Track 1 JSONL out."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.asr import cascade
from pyutils.asr.longform import SR, Transcript, Word
from pyutils.asr.nvv_words import Event
from pyutils.scoring.validate import validate_track1

CLIP = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav")


class FakeTranscriber:
    """Says "hello world (laughs)" for any audio of >= 0.1 s louder than 0.01 RMS, nothing otherwise."""

    def __init__(self, *args, **kwargs):
        self.seen = []

    def transcribe(self, audio):
        self.seen.append(len(audio))
        loud = audio.size >= SR // 10 and float(np.sqrt(np.mean(audio ** 2))) > 0.01
        words = [Word(" Hello", 0.1, 0.4), Word(" world.", 0.5, 0.9), Word(" (laughs)", 1.0, 1.3)] if loud else []
        return Transcript(words, len(audio) / SR)

    def transcribe_packed(self, audios):
        PACKED.append(len(audios))
        return [self.transcribe(x) for x in audios]


PACKED = []


def _clips(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    t = np.arange(2 * 48000) / 48000
    tone = (0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    sf.write(d / "b_stereo48k.flac", np.stack([tone, tone], 1), 48000)
    sf.write(d / "a_8k.wav", tone[::6], 8000)
    sf.write(d / "c_silence.ogg", np.zeros(SR, np.float32), SR)
    sf.write(d / "d_tiny.wav", tone[:2400], 48000)   # 0.05 s
    (d / "e_broken.mp3").write_bytes(b"ID3 this is not an mp3")
    return d


def _rows(path: Path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_cli_any_audio_and_events(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cascade, "LongformTranscriber", FakeTranscriber)
    clips = _clips(tmp_path / "clips")
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(r) for r in [
        {"utt_id": "a_8k", "tag": "[Cough]", "start": 0.42, "end": 0.46, "score": 0.8},
        {"utt_id": "a_8k", "tag": "laugh", "start": 1.1, "end": 1.2, "score": 0.9},   # = the text's laugh
        {"utt_id": "b_stereo48k", "tag": "sigh", "start": 0.0, "end": 0.05, "score": 0.1},  # under --min-score
        {"utt_id": "zz_other", "tag": "sigh", "start": 0.0, "end": 0.05}]) + "\n")
    out, det = tmp_path / "out" / "sub.jsonl", tmp_path / "det.jsonl"
    rc = cascade.main(["--audio-dir", str(clips), "--lang", "en", "--jsonl", str(out), "--events", str(events),
                       "--min-score", "0.5", "--details", str(det), "--no-progress"])
    assert rc == 0
    rows = _rows(out)
    assert [r["utt_id"] for r in rows] == ["a_8k", "b_stereo48k", "c_silence", "d_tiny", "e_broken"]
    got = {r["utt_id"]: r["text_with_nvvs"] for r in rows}
    assert got["a_8k"] == "Hello [cough] world. [laugh]"
    assert got["b_stereo48k"] == "Hello world. [laugh]"
    assert got["c_silence"] == got["d_tiny"] == got["e_broken"] == ""
    assert validate_track1(str(out))[0].startswith(f"{out}: OK: 5 utterances, 3 NVV events")
    err = capsys.readouterr().err
    assert "e_broken" in err and "zz_other" in err
    details = {d["utt_id"]: d for d in _rows(det)}
    assert [(e["tag"], e["position"], e["source"]) for e in details["a_8k"]["events"]] == [
        ("cough", 1, "detector"), ("laugh", 2, "text")]
    assert "error" in details["e_broken"]
    assert details["b_stereo48k"]["duration"] == pytest.approx(2.0, abs=1e-3)   # resampled to 16 kHz


def test_cli_wav_scp_order_and_nvv_text_off(tmp_path, monkeypatch):
    monkeypatch.setattr(cascade, "LongformTranscriber", FakeTranscriber)
    clips = _clips(tmp_path / "clips")
    scp = tmp_path / "wav.scp"
    scp.write_text(f"z {clips / 'a_8k.wav'}\ny {clips / 'c_silence.ogg'}\n")
    out = tmp_path / "o.jsonl"
    assert cascade.main(["--wav-scp", str(scp), "--lang", "en", "--jsonl", str(out), "--nvv-text", "off",
                         "--no-progress"]) == 0
    # "(laughs)" left alone is text for the scorer ("laughs"), never a bracket tag
    assert _rows(out) == [{"utt_id": "z", "text_with_nvvs": "Hello world. (laughs)"},
                          {"utt_id": "y", "text_with_nvvs": ""}]


def test_cli_pack_keeps_order_and_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(cascade, "LongformTranscriber", FakeTranscriber)
    clips = _clips(tmp_path / "clips")
    one, packed = tmp_path / "one.jsonl", tmp_path / "packed.jsonl"
    assert cascade.main(["--audio-dir", str(clips), "--lang", "zh", "--jsonl", str(one), "--no-progress"]) == 0
    PACKED.clear()
    assert cascade.main(["--audio-dir", str(clips), "--lang", "zh", "--jsonl", str(packed), "--pack",
                         "--no-progress"]) == 0
    assert PACKED == [4]                            # the four readable clips in one batch; the broken one apart
    assert _rows(packed) == _rows(one)
    assert _rows(one)[0] == {"utt_id": "a_8k", "text_with_nvvs": "Hello world.[laugh]"}


def test_read_events_errors_name_file_and_line(tmp_path):
    p = tmp_path / "ev.jsonl"
    p.write_text('{"utt_id": "u", "tag": "throat_clearing", "start": 1, "end": 2}\n'
                 '{"utt_id": "u", "tag": "burp", "start": 1, "end": NaN}\n')
    with pytest.raises(cascade.CascadeError, match=f"{p}:2: 'end' must be a finite number"):
        cascade.read_events(str(p))
    p.write_text('{"utt_id": "u", "tag": "Throat Clearing", "start": 1, "end": 2, "score": 0.5}\n')
    assert cascade.read_events(str(p)) == {"u": [Event("throat clearing", 1.0, 2.0, 0.5, "detector")]}
    assert cascade.read_events(str(p), min_score=0.6) == {}


@pytest.mark.skipif(not CLIP.is_file(), reason="pocketsphinx-testdata not installed")
def test_real_whisper_text_and_long_input(tmp_path):
    """Frozen Whisper base on a real clip, and on all ten real clips end to end (~39 s: never cut)."""
    from pyutils.whisper.weights import WhisperWeightsError, resolve
    try:
        resolve("base")
    except WhisperWeightsError:
        if os.environ.get("CI"):
            raise
        pytest.skip("Whisper base not installed (make -C tools)")
    x, sr = sf.read(CLIP, dtype="float32")
    clips = tmp_path / "clips"
    clips.mkdir()
    sf.write(clips / "one.wav", x, sr)
    sf.write(clips / "tiny.wav", x[:800], sr)                          # 0.05 s
    parts = []
    for wav in sorted(CLIP.parent.glob("*.wav")) + sorted((CLIP.parent.parent / "cards").glob("*.wav")):
        parts += [sf.read(wav, dtype="float32")[0], np.zeros(sr // 2, np.float32)]
    sf.write(clips / "long.wav", np.concatenate(parts), sr)
    out, det = tmp_path / "o.jsonl", tmp_path / "d.jsonl"
    assert cascade.main(["--audio-dir", str(clips), "--lang", "en", "--jsonl", str(out), "--threads", "2",
                         "--details", str(det), "--no-progress"]) == 0
    got = {r["utt_id"]: r["text_with_nvvs"].lower() for r in _rows(out)}
    assert got["tiny"] == ""
    assert "not an ill" in got["one"] and "young man" in got["one"]
    details = {d["utt_id"]: d for d in _rows(det)}
    duration, last_word_end = details["long"]["duration"], details["long"]["words"][-1][2]
    assert duration > 35 and last_word_end > duration - 4                # decoded to the end
    assert got["long"].startswith("and mr. john dashwood") and "hearts" in got["long"][-20:]
    # --pack: two short clips in one window, each keeps its own words
    pack_dir = tmp_path / "pack"
    pack_dir.mkdir()
    sf.write(pack_dir / "a_one.wav", x, sr)
    sf.write(pack_dir / "b_cards.wav", sf.read(CLIP.parent.parent / "cards" / "005.wav", dtype="float32")[0], sr)
    assert cascade.main(["--audio-dir", str(pack_dir), "--lang", "en", "--jsonl", str(out), "--threads", "2",
                         "--details", str(det), "--pack", "--no-progress"]) == 0
    got = {r["utt_id"]: r["text_with_nvvs"].lower() for r in _rows(out)}
    assert "young man" in got["a_one"] and "hearts" not in got["a_one"]
    assert "hearts" in got["b_cards"] and "young" not in got["b_cards"]
    assert all("packed" in d["notes"][0] for d in _rows(det))


def test_whisper_cache_reuses_words_for_a_rerun_with_other_events(tmp_path, monkeypatch, capsys):
    seen = []

    class Counting(FakeTranscriber):
        def transcribe(self, audio):
            seen.append(len(audio))
            return super().transcribe(audio)

    monkeypatch.setattr(cascade, "LongformTranscriber", Counting)
    clips = _clips(tmp_path / "clips")
    cache, out = tmp_path / "cache.jsonl", tmp_path / "o.jsonl"
    args = ["--audio-dir", str(clips), "--lang", "en", "--jsonl", str(out), "--whisper-cache", str(cache),
            "--no-progress"]
    assert cascade.main(args) == 0
    first, n_first = _rows(out), len(seen)
    assert n_first == 4 and len(_rows(cache)) == 4          # the readable clips
    events = tmp_path / "ev.jsonl"
    events.write_text(json.dumps({"utt_id": "a_8k", "tag": "cough", "start": 0.42, "end": 0.46}) + "\n")
    capsys.readouterr()
    assert cascade.main(args + ["--events", str(events)]) == 0
    assert len(seen) == n_first                              # nothing decoded again
    assert "4 of 5 transcripts reused" in capsys.readouterr().err
    again = {r["utt_id"]: r["text_with_nvvs"] for r in _rows(out)}
    assert again["a_8k"] == "Hello [cough] world. [laugh]"
    assert {k: v for k, v in again.items() if k != "a_8k"} == {r["utt_id"]: r["text_with_nvvs"] for r in first
                                                             if r["utt_id"] != "a_8k"}
    assert cascade.main(args[:-1] + ["--beam-size", "2", "--no-progress"]) == 0    # other settings: decoded again
    assert len(seen) == 2 * n_first
    cache.write_text("not json\n")
    assert cascade.main(args) == 0 and "damaged cache row skipped" in capsys.readouterr().err
