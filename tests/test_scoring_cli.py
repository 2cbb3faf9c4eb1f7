"""``chorus-score`` end to end: exit codes, one-line errors, JSON, validators, packager."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

FIX = Path(__file__).parent / "fixtures" / "scoring"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_track1_cli_fixture(tmp_path):
    out = tmp_path / "res" / "track1.json"
    rep = tmp_path / "per_utt.txt"
    p = run("track1", "--ref", str(FIX / "track1_ref.jsonl"), "--hyp", str(FIX / "track1_hyp.jsonl"),
            "--output-json", str(out), "--per-utt-report", str(rep))
    assert p.returncode == 0, p.stderr
    assert "FinalTrack1Score" in p.stdout
    res = json.loads(out.read_text())
    for key in ("Track1Score_EN", "Track1Score_ZH", "FinalTrack1Score", "en", "zh"):
        assert key in res
    # hand-worked fixture values (see tests/fixtures/scoring/README.md)
    assert res["en"]["event_counts"] == {"tp": 2, "fp": 0, "fn": 0, "reference": 2, "prediction": 2}
    assert res["en"]["mNTD"] == pytest.approx(0.125)
    assert res["en"]["tagged_transcript_error"] == pytest.approx(3 / 11)
    assert res["zh"]["event_counts"]["tp"] == 1 and res["zh"]["event_counts"]["fn"] == 2
    assert res["FinalTrack1Score"] == pytest.approx((res["Track1Score_EN"] + res["Track1Score_ZH"]) / 2)
    text = rep.read_text(encoding="utf-8")
    assert "== zh_002" in text and "MISS [throat clearing] ref@7" in text


def test_track1_cli_error_is_one_line(tmp_path):
    hyp = tmp_path / "hyp.jsonl"
    lines = (FIX / "track1_hyp.jsonl").read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({"utt_id": "zh_001", "text_with_nvvs": "你好 [giggle]"}, ensure_ascii=False)
    hyp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "o.json"
    p = run("track1", "--ref", str(FIX / "track1_ref.jsonl"), "--hyp", str(hyp), "--output-json", str(out))
    assert p.returncode == 2
    assert p.stderr == f"{hyp}:3: UNSUPPORTED_NVV_TAG: tag [giggle] is not one of the 16 challenge tags\n"
    assert not out.exists()
    hyp.write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    p = run("track1", "--ref", str(FIX / "track1_ref.jsonl"), "--hyp", str(hyp), "--output-json", str(out))
    assert p.returncode == 2 and "MISSING_SAMPLES" in p.stderr and p.stderr.count("\n") == 1


def test_text_scorers_do_not_import_heavy_modules():
    code = ("import sys; from pyutils.scoring import cli, track1, sqa, nvbench, vc, package; "
            "bad = [m for m in ('torch', 'espnet', 'librosa', 'numpy', 'soundfile', 'scipy') if m in sys.modules]; "
            "print(','.join(bad))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "", p.stdout + p.stderr


def test_sqa_cli(tmp_path):
    ref = tmp_path / "ref.jsonl"
    hyp = tmp_path / "hyp.jsonl"
    ref.write_text('{"utt_id": "a", "score": 1.0, "faults": {"noise": [[0, 0.1]]}}\n{"utt_id": "b", "score": 4.0}\n')
    hyp.write_text('{"utt_id": "a", "score": 2.0, "faults": {"noise": [[0.04, 0.2]]}}\n{"utt_id": "b", "score": 3.5}\n')
    out = tmp_path / "o.json"
    p = run("sqa", "--ref", str(ref), "--hyp", str(hyp), "--output-json", str(out))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["PCC"] == pytest.approx(1.0) and r["F1_macro"] == pytest.approx(1 / 3)
    assert r["IoU_noise"] == pytest.approx(0.3) and r["IoU_macro"] == pytest.approx(0.3)
    assert r["Final"] == pytest.approx(0.4 + 0.1 + 0.09)
    hyp.write_text('{"utt_id": "a", "score": 2.0}\n{"utt_id": "b", "score": 3.5, "faults": {"noise": [[0.5, 0.2]]}}\n')
    p = run("sqa", "--ref", str(ref), "--hyp", str(hyp), "--output-json", str(out))
    assert p.returncode == 2 and p.stderr.startswith(f"{hyp}:2: INVALID_INTERVAL:")


def test_package_and_validate_track1(tmp_path):
    dec = tmp_path / "text"
    dec.write_text("en_001 That was [Laugh] really [throat_clearing] surprising [giggle] ]\n"
                   "en_003 not in the reference\n"
                   "zh_001 你好[cough]世界\n"
                   "zh_002\n", encoding="utf-8")
    sub = tmp_path / "sub" / "submission.jsonl"
    zpath = tmp_path / "sub" / "submission.zip"
    p = run("package-track1", "--text", str(dec), "--out", str(sub), "--ref-ids", str(FIX / "track1_ref.jsonl"),
            "--zip", str(zpath))
    assert p.returncode == 0, p.stderr
    assert "missing filled empty: 1" in p.stdout and "unsupported tags removed: 1" in p.stdout
    rows = [json.loads(x) for x in sub.read_text(encoding="utf-8").splitlines()]
    assert [r["utt_id"] for r in rows] == ["en_001", "en_002", "zh_001", "zh_002"]
    assert rows[0]["text_with_nvvs"] == "That was [laugh] really [throat clearing] surprising"
    assert rows[1]["text_with_nvvs"] == "" and rows[3]["text_with_nvvs"] == ""
    with zipfile.ZipFile(zpath) as zf:
        assert zf.namelist() == ["submission.jsonl"]
    p = run("validate-track1", "--hyp", str(sub), "--ref", str(FIX / "track1_ref.jsonl"))
    assert p.returncode == 0 and "OK" in p.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"utt_id": "en_001", "text_with_nvvs": "[laugh] ] x"}\n')
    p = run("validate-track1", "--hyp", str(bad))
    assert p.returncode == 2 and p.stderr.startswith(f"{bad}:1: MALFORMED_NVV_TAG")


def _wav(path, sr=16000, channels=1, subtype="PCM_16", seconds=0.2, amp=0.3):
    t = np.arange(int(sr * seconds)) / sr
    x = amp * np.sin(2 * np.pi * 220 * t)
    if channels > 1:
        x = np.stack([x] * channels, axis=1)
    sf.write(str(path), x, sr, subtype=subtype)


def test_validate_track2_and_fix(tmp_path):
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps({"utt_id": u, "text": "x"}) + "\n" for u in ("a", "b", "c", "d")))
    _wav(wavs / "a.wav")
    _wav(wavs / "b.wav", sr=22050, channels=2, subtype="FLOAT")
    _wav(wavs / "c.wav", amp=0.0)                 # silent: a warning only
    _wav(wavs / "d.wav", amp=1.5)                 # clipped: a warning only
    p = run("validate-track2", "--dir", str(wavs), "--ref", str(ref))
    assert p.returncode == 2
    assert p.stderr.startswith(f"{wavs / 'b.wav'}: INVALID_AUDIO: sample rate 22050 Hz")
    assert "silent" in p.stdout and "clipped" in p.stdout
    fixed = tmp_path / "fixed"
    p = run("validate-track2", "--dir", str(wavs), "--ref", str(ref), "--fix-to", str(fixed))
    assert p.returncode == 0, p.stdout + p.stderr
    info = sf.info(str(fixed / "b.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    assert abs(info.duration - 0.2) < 0.01
    os.remove(wavs / "a.wav")
    p = run("validate-track2", "--dir", str(wavs), "--ref", str(ref))
    assert p.returncode == 2 and "missing file" in p.stderr


def test_validate_vc(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _wav(out / "x.wav")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("src1.wav\ttgt1.wav\tx.wav\n")
    assert run("validate-vc", "--pairs", str(pairs), "--dir", str(out)).returncode == 0
    pairs.write_text("src1.wav\ttgt1.wav\tx.wav\nsrc2.wav\ttgt2.wav\ty.wav\n")
    p = run("validate-vc", "--pairs", str(pairs), "--dir", str(out))
    assert p.returncode == 2 and "y.wav: INVALID_AUDIO: missing file" in p.stderr
    pairs.write_text("src1.wav\tx.wav\n")
    p = run("validate-vc", "--pairs", str(pairs), "--dir", str(out))
    assert p.returncode == 2 and p.stderr.startswith(f"{pairs}:1: INVALID_PAIRS_ROW")


def test_nvbench_and_vc_cli(tmp_path):
    ref = tmp_path / "ref.txt"
    hyp = tmp_path / "hyp.txt"
    ref.write_text("u1 你好[Laughter]世界\nu2 今天[Question-en]\n", encoding="utf-8")
    hyp.write_text("u1 你好世界[Laughter]\nu2 今天\n", encoding="utf-8")
    out = tmp_path / "nv.json"
    p = run("nvbench", "--ref", str(ref), "--hyp", str(hyp), "--output-json", str(out), "--format", "kaldi",
            "--lang", "zh", "--inventory", "nvbench")
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())["zh"]
    assert r["CER"] == 0.0 and r["PCER_micro"] == pytest.approx(1 / 2) and r["PCER_macro"] == pytest.approx(0.5)
    p = run("nvbench", "--ref", str(ref), "--hyp", str(hyp), "--output-json", str(out), "--format", "kaldi",
            "--lang", "zh", "--map-nvbench-to-challenge")
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["zh"]["PCER_micro"] == 0.0  # [Question-en] dropped, laugh kept
    p = run("nvbench", "--ref", str(ref), "--hyp", str(hyp), "--output-json", str(out), "--format", "kaldi",
            "--lang", "zh")
    assert p.returncode == 2 and p.stderr.startswith(f"{ref}:1: UNSUPPORTED_NVV_TAG")
    comp = tmp_path / "comp.jsonl"
    comp.write_text('{"utt": "a.wav", "sim_ref_out": 80, "sim_src_out": 30, "mos": 70, "wer": 10}\n')
    p = run("vc", "--hyp", str(comp), "--output-json", str(out))
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["Score"] == pytest.approx(0.4 * 50 + 0.3 * 70 + 0.3 * 90)


def test_help_lists_every_subcommand():
    p = run("--help")
    assert p.returncode == 0
    for sub in ("track1", "nvbench", "sqa", "vc", "validate-track1", "package-track1", "validate-track2",
                "validate-vc"):
        assert sub in p.stdout
