"""validate/fix of Kaldi data dirs, on well-formed and malformed inputs."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.datadir import load_data_dir, read_kv
from pyutils.datadir.fix import fix_data_dir
from pyutils.datadir.validate import validate_data_dir

ROOT = Path(__file__).resolve().parents[1]
SPEAKERS = ("spkA", "spkB", "spkC")


def make_data_dir(root: Path, n_per_spk: int = 2, pipe_utts=(), sr=16000) -> Path:
    """A small valid data dir with real wav files (optionally some as sox pipes)."""
    wav_dir = root / "wav"
    wav_dir.mkdir(parents=True, exist_ok=True)
    d = root / "data"
    d.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    wav, text, utt2spk = [], [], []
    for spk in SPEAKERS:
        for i in range(n_per_spk):
            utt = f"{spk}-{i:03d}"
            path = wav_dir / f"{utt}.wav"
            sf.write(path, (0.1 * rng.standard_normal(sr // 10 + 100 * i)).astype("float32"), sr,
                     subtype="PCM_16")
            entry = f"sox {path} -t wav - |" if utt in pipe_utts else str(path)
            wav.append(f"{utt} {entry}")
            text.append(f"{utt} hello world [laugh] number {i}")
            utt2spk.append(f"{utt} {spk}")
    (d / "wav.scp").write_text("\n".join(wav) + "\n")
    (d / "text").write_text("\n".join(text) + "\n")
    (d / "utt2spk").write_text("\n".join(utt2spk) + "\n")
    spk2utt = [f"{s} " + " ".join(f"{s}-{i:03d}" for i in range(n_per_spk)) for s in SPEAKERS]
    (d / "spk2utt").write_text("\n".join(spk2utt) + "\n")
    return d


def errors_of(d, **kw):
    return validate_data_dir(d, **kw).errors


def test_valid_dir_with_pipe_entry(tmp_path):
    d = make_data_dir(tmp_path, pipe_utts=("spkB-001",))
    rep = validate_data_dir(d)
    assert rep.ok, rep.errors
    assert (rep.num_utts, rep.num_spks, rep.num_recos) == (6, 3, 6)
    assert rep.audio_seconds == pytest.approx(6 * 0.1 + 3 * 0.00625, abs=1e-3)


def test_unsorted_file_names_line(tmp_path):
    d = make_data_dir(tmp_path)
    lines = (d / "text").read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]
    (d / "text").write_text("\n".join(lines) + "\n")
    errs = errors_of(d, audio_check=False)
    assert any(e.startswith(f"{d / 'text'}:3: not sorted") for e in errs), errs


def test_byte_order_not_locale_order(tmp_path):
    # In C order uppercase sorts before lowercase: 'Zed' < 'abc'.
    d = make_data_dir(tmp_path)
    (d / "utt2spk").write_text("spkA-000 spkA\nspkA-001 spkA\nspkB-000 spkB\nspkB-001 spkB\n"
                               "spkC-000 spkC\nspkC-001 spkC\n")
    assert validate_data_dir(d, audio_check=False).ok
    bad = d.parent / "bad"
    bad.mkdir()
    (bad / "utt2spk").write_text("abc s\nZed s\n")
    errs = errors_of(bad, audio_check=False)
    assert any("utt2spk:2: not sorted" in e for e in errs), errs


def test_duplicate_id(tmp_path):
    d = make_data_dir(tmp_path)
    with open(d / "utt2spk", "a") as f:
        f.write("spkC-001 spkC\n")
    errs = errors_of(d, audio_check=False)
    assert any(f"{d / 'utt2spk'}:7: duplicate id 'spkC-001' (first on line 6)" in e
               for e in errs), errs


def test_missing_spk2utt(tmp_path):
    d = make_data_dir(tmp_path)
    (d / "spk2utt").unlink()
    errs = errors_of(d, audio_check=False)
    assert any("spk2utt: required file is missing" in e and "fix_data_dir" in e for e in errs)


def test_bad_line_format_names_line(tmp_path):
    d = make_data_dir(tmp_path)
    lines = (d / "wav.scp").read_text().splitlines()
    lines[3] = lines[3].split()[0]  # id without a value
    (d / "wav.scp").write_text("\n".join(lines) + "\n")
    errs = errors_of(d, audio_check=False)
    assert any(e.startswith(f"{d / 'wav.scp'}:4: expected '<id> <value>'") for e in errs), errs


def test_empty_transcript_allowed_but_empty_line_not(tmp_path):
    d = make_data_dir(tmp_path)
    lines = (d / "text").read_text().splitlines()
    lines[0] = "spkA-000"
    (d / "text").write_text("\n".join(lines) + "\n")
    assert validate_data_dir(d, audio_check=False).ok
    (d / "text").write_text("\n".join(lines[:2] + [""] + lines[2:]) + "\n")
    assert any("text:3: empty line" in e for e in errors_of(d, audio_check=False))


def test_windows_line_endings(tmp_path):
    d = make_data_dir(tmp_path)
    (d / "utt2spk").write_bytes((d / "utt2spk").read_bytes().replace(b"\n", b"\r\n"))
    errs = errors_of(d, audio_check=False)
    assert any("utt2spk:1: line ends with a carriage return" in e for e in errs)


def test_inconsistent_ids_and_spk2utt(tmp_path):
    d = make_data_dir(tmp_path)
    text = (d / "text").read_text().splitlines()
    (d / "text").write_text("\n".join(text[:-1]) + "\n")  # spkC-001 missing
    (d / "spk2utt").write_text("spkA spkA-000 spkA-001\nspkB spkB-000 spkB-001 spkC-000\n"
                               "spkC spkC-001\n")
    errs = errors_of(d, audio_check=False)
    assert any("text: 1 utterance(s) of utt2spk missing: spkC-001" in e for e in errs), errs
    assert any("spk2utt:2: utterance 'spkC-000' is under speaker 'spkB' but utt2spk says "
               "'spkC'" in e for e in errs), errs


def test_unreadable_audio_and_failing_pipe(tmp_path):
    d = make_data_dir(tmp_path)
    lines = (d / "wav.scp").read_text().splitlines()
    lines[0] = "spkA-000 /nonexistent/a.wav"
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"not audio at all" * 10)
    lines[1] = f"spkA-001 {garbage}"
    lines[2] = "spkB-000 sox /nonexistent/b.wav -t wav - |"
    (d / "wav.scp").write_text("\n".join(lines) + "\n")
    errs = errors_of(d, nj=2)
    assert any(e.startswith(f"{d / 'wav.scp'}:1: recording 'spkA-000': no such file") for e in errs)
    assert any(e.startswith(f"{d / 'wav.scp'}:2: recording 'spkA-001': cannot read") for e in errs)
    assert any(e.startswith(f"{d / 'wav.scp'}:3: recording 'spkB-000': pipe exited") for e in errs)
    assert validate_data_dir(d, audio_check=False).ok


def test_segments_checks(tmp_path):
    d = make_data_dir(tmp_path)
    utts = list(read_kv(d / "utt2spk"))
    # Two utterances cut from one recording each; one has end < start.
    (d / "segments").write_text("".join(f"{u} {u} 0.00 0.05\n" for u in utts[:-1])
                                + f"{utts[-1]} {utts[-1]} 0.08 0.02\n")
    errs = errors_of(d, audio_check=False)
    assert any(f"segments:{len(utts)}: bad segment times" in e for e in errs), errs
    (d / "segments").write_text("".join(f"{u} {u} 0.00 0.05\n" for u in utts))
    (d / "reco2dur").write_text("".join(f"{u} 0.1\n" for u in utts))
    assert validate_data_dir(d).ok
    (d / "segments").write_text("".join(f"{u} {u} 0.00 {'9.0' if i == 0 else '0.05'}\n"
                                        for i, u in enumerate(utts)))
    assert any("segments:1: segment" in e and "after the end" in e
               for e in errors_of(d, audio_check=False))


def test_fix_drops_and_reports(tmp_path):
    d = make_data_dir(tmp_path)
    text = (d / "text").read_text().splitlines()
    (d / "text").write_text("\n".join(reversed(text[1:])) + "\n")  # unsorted, spkA-000 gone
    wav = (d / "wav.scp").read_text().splitlines()
    (d / "wav.scp").write_text("\n".join(wav[:-1]) + "\nbroken-line\n")  # spkC-001 gone
    (d / "spk2utt").unlink()
    (d / "utt2lang").write_text("".join(f"{t.split()[0]} en\n" for t in text))
    rep = fix_data_dir(d)
    msg = rep.message()
    assert msg.startswith("fix: kept 4 of 6 utterances; dropped 2 (missing in text: 1, "
                          "wav.scp: 1)"), msg
    assert "malformed lines removed: wav.scp: 1" in msg
    assert validate_data_dir(d).ok
    assert list(read_kv(d / "utt2lang")) == ["spkA-001", "spkB-000", "spkB-001", "spkC-000"]
    assert read_kv(d / "spk2utt")["spkC"] == "spkC-000"
    assert (d / ".backup" / "text").read_text().splitlines()[0] == text[-1]


def test_cli_exit_codes_and_messages(tmp_path):
    d = make_data_dir(tmp_path)
    ok = subprocess.run([str(ROOT / "utils/validate_data_dir.sh"), "--no-feats", str(d)],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "OK" in ok.stdout, ok.stderr
    with open(d / "utt2spk", "a") as f:
        f.write("zzz\n")
    bad = subprocess.run([sys.executable, "-m", "pyutils.datadir.cli", "validate", str(d)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert f"{d / 'utt2spk'}:7: expected '<id> <value>'" in bad.stderr
    fixed = subprocess.run([str(ROOT / "utils/fix_data_dir.sh"), str(d)],
                           capture_output=True, text=True)
    assert fixed.returncode == 0 and "kept 6 of 6" in fixed.stdout, fixed.stderr
    assert validate_data_dir(d).ok


def test_load_data_dir_model(tmp_path):
    d = make_data_dir(tmp_path, pipe_utts=("spkA-000",))
    data = load_data_dir(d)
    assert data.utts[0] == "spkA-000" and len(data.utts) == 6
    assert data.text["spkB-001"] == "hello world [laugh] number 1"
    audio, sr = data.load_audio("spkA-000")
    assert sr == 16000 and audio.shape == (1600,) and audio.dtype == np.float32
    assert os.path.isabs(data.wav_scp["spkA-001"])
