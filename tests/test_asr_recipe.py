"""The NVV-ASR recipes' shell side: run.sh options, fork_recipe.sh, audio dump, timing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pyutils.asr import dump_audio, timing

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ["nvv_asr_en", "nvv_asr_zh"]


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, **kw)


@pytest.mark.parametrize("recipe", RECIPES)
def test_run_sh_help(recipe):
    r = run(["./run.sh", "--help"], ROOT / "egs" / recipe)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    for opt in ("--stage", "--stop_stage", "--preset", "--nj", "--ngpu", "--init_param", "--test_sets",
                "--asr_exp", "--nvv_tags", "--token_type", "--inference_config"):
        assert opt in out, opt


@pytest.mark.parametrize("args,exp", [((), "asr_cascade_ci_en"), (("--asr_tag", "mytry"), "asr_mytry"),
                                      (("--asr_method", "espnet", "--asr_tag", "conf2"), "asr_conf2")])
def test_asr_tag_names_the_exp_dir_of_either_method(tmp_path, args, exp):
    """--asr_tag gives the cascade its own exp dir too (never the default run's)."""
    r = run(["./run.sh", "--preset", "ci", "--stage", "3", "--stop_stage", "3", "--expdir", str(tmp_path),
             "--skip_train", "true", *args], ROOT / "egs" / "nvv_asr_en")
    assert r.returncode == 0, r.stderr
    assert f"asr_exp={tmp_path}/{exp}\n" in r.stdout


@pytest.mark.parametrize("recipe", RECIPES)
def test_run_sh_unknown_option_fails(recipe):
    r = run(["./run.sh", "--no-such-option", "1"], ROOT / "egs" / recipe)
    assert r.returncode != 0
    assert "no-such-option" in r.stderr + r.stdout


def test_run_sh_bad_preset_fails():
    r = run(["./run.sh", "--preset", "huge", "--stage", "9"], ROOT / "egs" / "nvv_asr_en")
    assert r.returncode != 0
    assert "preset" in r.stderr


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_layout(recipe):
    d = ROOT / "egs" / recipe
    for link, target in (("cmd.sh", "../TEMPLATE/cmd.sh"), ("path.sh", "../TEMPLATE/path.sh"),
                         ("db.sh", "../TEMPLATE/db.sh"), ("utils", "../../utils"), ("local", "../../local")):
        assert os.readlink(d / link) == target
    for preset in ("ci", "default", "large"):
        cfg = (d / "conf" / f"train_asr_{preset}.yaml").read_text()
        assert "\nnormalize:" not in "\n" + cfg, "normalize must not be in the YAML (collect-stats)"
        assert "use_tensorboard: false" in cfg


def test_fork_recipe(tmp_path):
    dst = tmp_path / "egs" / "nvv_asr_vi"
    r = run([str(ROOT / "utils" / "fork_recipe.sh"), str(ROOT / "egs" / "nvv_asr_en"), str(dst), "--lang", "vi"],
            ROOT)
    assert r.returncode == 0, r.stderr
    for link in ("cmd.sh", "path.sh", "db.sh", "utils", "local"):
        assert (dst / link).is_symlink() and (dst / link).exists(), link
    assert (dst / "local" / "nvv_asr.sh").resolve() == (ROOT / "local" / "nvv_asr.sh").resolve()
    assert (dst / "conf" / "train_asr_ci.yaml").exists()
    runsh = (dst / "run.sh").read_text()
    assert "\nlang=vi" in runsh and "token_type=bpe" in runsh and "--nbpe" in runsh
    assert os.access(dst / "run.sh", os.X_OK)
    assert "FORK HOOK" in (dst / "README.md").read_text()
    # refuses to overwrite; a CJK language defaults to characters
    r = run([str(ROOT / "utils" / "fork_recipe.sh"), str(ROOT / "egs" / "nvv_asr_en"), str(dst), "--lang", "vi"], ROOT)
    assert r.returncode != 0 and "exists" in r.stderr
    ja = tmp_path / "egs" / "nvv_asr_ja"
    r = run([str(ROOT / "utils" / "fork_recipe.sh"), str(ROOT / "egs" / "nvv_asr_en"), str(ja), "--lang", "ja"], ROOT)
    assert r.returncode == 0 and "token_type=char" in (ja / "run.sh").read_text()
    assert "--nbpe" not in (ja / "run.sh").read_text()


def test_fork_recipe_needs_lang(tmp_path):
    r = run([str(ROOT / "utils" / "fork_recipe.sh"), str(ROOT / "egs" / "nvv_asr_en"), str(tmp_path / "x")], ROOT)
    assert r.returncode != 0 and "Usage" in r.stderr


def _tone(sr, sec=0.5, ch=1):
    t = np.arange(int(sr * sec)) / sr
    x = 0.3 * np.sin(2 * np.pi * 440 * t)
    return np.stack([x] * ch, axis=1) if ch > 1 else x


def test_dump_audio_any_input(tmp_path):
    sf.write(tmp_path / "a.wav", _tone(44100, ch=2), 44100)           # stereo 44.1 kHz
    sf.write(tmp_path / "b.flac", _tone(8000), 8000)                  # flac 8 kHz
    sf.write(tmp_path / "c.wav", _tone(16000, sec=0.05), 16000)       # very short
    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {tmp_path}/a.wav\nb {tmp_path}/b.flac\n"
                   f"c cat {tmp_path}/c.wav |\nd {tmp_path}/missing.wav\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="missing.wav"):
        dump_audio.dump(str(scp), str(out), 16000)
    n, bad = dump_audio.dump(str(scp), str(out), 16000, on_error="silence", min_dur=0.3)
    assert (n, bad) == (4, 1)
    durs = dict(line.split() for line in (out / "utt2dur").read_text().splitlines())
    assert abs(float(durs["a"]) - 0.5) < 0.01 and abs(float(durs["b"]) - 0.5) < 0.01
    assert float(durs["c"]) == pytest.approx(0.3, abs=0.01)   # padded
    assert float(durs["d"]) == pytest.approx(1.0)             # unreadable -> silence
    for line in (out / "wav.scp").read_text().splitlines():
        info = sf.info(line.split(maxsplit=1)[1])
        assert info.samplerate == 16000 and info.channels == 1 and info.subtype == "PCM_16"


def test_rtf_from_logs(tmp_path):
    (tmp_path / "asr_inference.1.log").write_text(
        "# python -m espnet2.bin.asr_inference\n"
        "2026-01-01 00:00:00,000 (asr_inference:1) INFO: config file\n"
        "2026-01-01 00:00:01,000 (asr_inference:571) INFO: speech length: 16000\n"
        "2026-01-01 00:00:03,000 (batch_beam_search:1) INFO: best hypo: x\n"
        "# Accounting: time=5 threads=1\n")
    (tmp_path / "utt2dur").write_text("u1 4.0\nu2 6.0\n")
    res = timing.rtf(str(tmp_path), str(tmp_path / "utt2dur"))
    assert res["rtf_jobs"] == pytest.approx(0.5)
    assert res["rtf_decode"] == pytest.approx(0.2)


def test_results_md_track1score_lines(tmp_path):
    from pyutils.asr import results

    exp = tmp_path / "exp" / "asr_x"
    for name, hyp in (("dev", "hello [laugh] world"), ("test", "hello world")):
        sc = exp / "decode" / name / "score"
        sc.mkdir(parents=True)
        (sc / "ref.jsonl").write_text(json.dumps({"utt_id": "u1", "language": "en",
                                                  "text_with_nvvs": "hello [laugh] world"}) + "\n")
        (sc / "hyp.jsonl").write_text(json.dumps({"utt_id": "u1", "text_with_nvvs": hyp}) + "\n")
        r = subprocess.run([sys.executable, "-m", "pyutils.scoring.cli", "track1", "--single-language", "--ref", str(sc / "ref.jsonl"),
                            "--hyp", str(sc / "hyp.jsonl"), "--output-json", str(sc / "track1.json")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    text = results.build(str(exp), str(exp / "decode"), "decode", ["dev", "test", "missing"], "en", "ci",
                         "conf/x.yaml", "conf/y.yaml", "unit test")
    scores = [float(line.split(":", 1)[1]) for line in text.splitlines() if line.startswith("Track1Score:")]
    assert scores[0] == pytest.approx(100.0)
    assert scores[1] < 50.0          # the tag was missed: F1 = 0
    assert len(scores) == 2
    assert "| laugh | 1 | 1 | 1 |" in text


def test_decode_dir_rejects_untrained_exp(tmp_path):
    scp = tmp_path / "wav.scp"
    scp.write_text("u1 /nonexistent.wav\n")
    r = subprocess.run([sys.executable, "-m", "pyutils.asr.decode_dir", "--asr-exp", str(tmp_path / "exp" / "asr_x"),
                        "--wav-scp", str(scp), "--out", str(tmp_path / "text")], capture_output=True, text=True)
    assert r.returncode != 0 and "config.yaml not found" in r.stderr


def _tiny_mini_corpus(d):
    """A mini corpus of 2 utterances per split, in the layout chorus-synth nvv writes."""
    for s in ("train", "dev", "test"):
        dd = d / "data" / s
        dd.mkdir(parents=True)
        ids = [f"spk1-{s}{i}" for i in range(2)]
        for u in ids:
            sf.write(d / f"{u}.wav", _tone(16000, sec=0.6), 16000, subtype="PCM_16")
        (dd / "wav.scp").write_text("".join(f"{u} {d / (u + '.wav')}\n" for u in ids))
        (dd / "text").write_text("".join(f"{u} hello there [laugh]\n" for u in ids))
        (dd / "utt2spk").write_text("".join(f"{u} spk1\n" for u in ids))
        (dd / "spk2utt").write_text("spk1 " + " ".join(ids) + "\n")
        (dd / "utt2dur").write_text("".join(f"{u} 0.6\n" for u in ids))
    (d / ".done").write_text("")


def test_stage2_redoes_a_dump_whose_output_was_deleted(tmp_path):
    """finding 2 for local/nvv_asr.sh: a deleted or damaged dump is detected and redone."""
    mini = tmp_path / "mini"
    _tiny_mini_corpus(mini)
    rdir = tmp_path / "egs" / "nvv_asr_en"
    rdir.mkdir(parents=True)
    for p in (ROOT / "egs" / "nvv_asr_en").iterdir():
        if p.name in ("cmd.sh", "conf", "db.sh", "local", "path.sh", "run.sh", "utils"):
            (rdir / p.name).symlink_to(p.resolve())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = ["./run.sh", "--asr_method", "espnet", "--mini_dir", str(mini), "--stage", "1", "--stop-stage", "2", "--nj", "1"]
    r = subprocess.run(cmd, cwd=rdir, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    dump = rdir / "dump" / "raw" / "test"
    wavs = sorted((dump / "data").rglob("*.wav"))
    assert len(wavs) == 2
    # every step of stage 2 left its log; the clock has a row per stage run
    for s in ("train", "dev", "test"):
        org = "org/" if s != "test" else ""
        assert (rdir / "dump" / "raw" / f"{org}{s}" / "log" / "dump.1.log").is_file(), s
        assert (rdir / "dump" / "raw" / f"{org}{s}" / "log" / "prepare_text.log").is_file(), s
    stages = [l.split("\t")[0] for l in (rdir / "exp" / "stage_times.tsv").read_text().splitlines()[1:]]
    assert stages == ["1 data prep", "2 format"]
    r = subprocess.run(cmd, cwd=rdir, capture_output=True, text=True, timeout=300, env=env)
    assert "dump/raw/test done, skipping" in r.stdout, r.stdout[-2000:]
    wavs[0].unlink()
    r = subprocess.run(cmd, cwd=rdir, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"missing {wavs[0].relative_to(rdir)}" in r.stderr and "doing that step again" in r.stderr
    assert "dump/raw/test done, skipping" not in r.stdout and wavs[0].is_file()
    with open(dump / "utt2dur", "a") as f:                       # damaged
        f.write("junk 1.0\n")
    r = subprocess.run(cmd, cwd=rdir, capture_output=True, text=True, timeout=300, env=env)
    assert "changed size" in r.stderr and "junk" not in (dump / "utt2dur").read_text()
