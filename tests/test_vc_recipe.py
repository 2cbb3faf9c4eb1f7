"""egs/vivc front door: syntax, --help, refused option combinations (no training)."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(ROOT, "egs", "vivc")


def _run(*args):
    return subprocess.run(["./run.sh", *args], cwd=RECIPE, capture_output=True, text=True, timeout=60)


def test_stage_script_parses():
    subprocess.run(["bash", "-n", os.path.join(ROOT, "local", "vc.sh")], check=True)


def test_recipe_layout():
    for link in ("cmd.sh", "path.sh", "db.sh", "utils", "local"):
        assert os.path.islink(os.path.join(RECIPE, link)), link
    for preset in ("ci", "default", "large"):
        for kind in ("train_spk_xvector", "train_asr_vi", "train_fastspeech_vi"):
            assert os.path.isfile(os.path.join(RECIPE, "conf", f"{kind}_{preset}.yaml")), (kind, preset)


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "tools", "venv", "bin", "python")),
                    reason="tools/venv not built")
def test_help_and_refusals(tmp_path):
    out = _run("--help")
    assert out.returncode == 0
    assert "--pretrained_asr" in out.stdout + out.stderr or "--pretrained-asr" in out.stdout + out.stderr

    out = _run("--task", "2", "--pretrained_asr", str(tmp_path))
    assert out.returncode == 2 and "Task 2" in out.stderr.replace("task 2", "Task 2")

    out = _run("--preset", "huge")
    assert out.returncode == 2 and "--preset" in out.stderr

    out = _run("--task", "1", "--pretrained_tts", str(tmp_path))   # no config.yaml there
    assert out.returncode == 2 and "config.yaml" in out.stderr


@pytest.mark.parametrize("preset", ["ci", "default", "large"])
def test_tts_configs_are_aligned_duration_models_with_speaker_embeddings(preset):
    """local/nvv_tts.sh aligns durations only for tts: fastspeech*, and the aligner needs
    fbank features; the x-vector is added to the encoder output (zero-shot voices)."""
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(RECIPE, "conf", f"train_fastspeech_vi_{preset}.yaml"), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    assert cfg["tts"] in ("fastspeech", "fastspeech2")
    assert cfg["feats_extract"] == "fbank" and cfg["feats_extract_conf"]["fs"] == 16000
    assert cfg["tts_conf"]["spk_embed_integration_type"] == "add"
    with open(os.path.join(ROOT, "local", "vc.sh"), encoding="utf-8") as f:
        script = f.read()
    assert ": \"${tts_config:=conf/train_fastspeech_vi_${preset}.yaml}\"" in script
