"""egs/vivc front door: syntax, --help, refused option combinations (no training)."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(ROOT, "egs", "vivc")


def _run(*args):
    return subprocess.run(["./run.sh", *args], cwd=RECIPE, capture_output=True, text=True, timeout=60)


def test_stage_script_parses():
    for name in ("vc.sh", "vc_options.sh"):
        subprocess.run(["bash", "-n", os.path.join(ROOT, "local", name)], check=True)


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

    out = _run("--task", "2", "--vc_method", "knn")   # pretrained Whisper features: Task 1 only
    assert out.returncode == 2 and "--task 1" in out.stderr
    out = _run("--vc_method", "knn", "--oracle_text", "true")   # a diagnosis of the cascade only
    assert out.returncode == 2 and "cascade" in out.stderr
    out = _run("--vc_method", "magic")
    assert out.returncode == 2 and "--vc_method" in out.stderr


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
    with open(os.path.join(ROOT, "local", "vc_options.sh"), encoding="utf-8") as f:   # derive_settings of vc.sh
        script = f.read()
    assert ": \"${tts_config:=conf/train_fastspeech_vi_${preset}.yaml}\"" in script


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "tools", "venv", "bin", "python")),
                    reason="tools/venv not built")
def test_convert_stage_refuses_bad_pairs_by_line(tmp_path):
    """./run.sh --stage 6 --pairs LIST (inference on trained models): an empty source and a
    missing reference clip are both named by list line, exit 2, no traceback, nothing written."""
    import numpy as np
    import soundfile as sf
    kaldiio = pytest.importorskip("kaldiio")

    dump = tmp_path / "dump"
    emb = dump / "xvector_xvector_ci" / "tr_text"   # stage 3's embeddings (the ci speaker model)
    emb.mkdir(parents=True)
    with kaldiio.WriteHelper(f"ark,scp:{emb}/xvector.ark,{emb}/xvector.scp") as writer:
        writer("u1", np.zeros(8, np.float32))
    good, empty = tmp_path / "good.wav", tmp_path / "empty.wav"
    sf.write(str(good), np.full(8000, 0.1, np.float32), 16000, subtype="PCM_16")
    sf.write(str(empty), np.zeros(0, np.float32), 16000, subtype="PCM_16")
    pairs = tmp_path / "mine.tsv"
    pairs.write_text(f"empty.wav\tgood.wav\tout1.wav\ngood.wav\tgone.wav\tout2.wav\n", encoding="utf-8")
    out = _run("--preset", "ci", "--stage", "6", "--stop_stage", "6", "--pairs", str(pairs),
               "--expdir", str(tmp_path / "exp"), "--dumpdir", str(dump), "--datadir", str(tmp_path / "data"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{pairs}:1: SOURCE_UNREADABLE: empty.wav: audio has no samples" in out.stderr
    assert f"{pairs}:2: TARGET_MISSING: gone.wav: file not found" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert not (tmp_path / "exp" / "vc_ci" / "convert_mine").exists()


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "tools", "venv", "bin", "python")),
                    reason="tools/venv not built")
def test_default_method_is_knn_and_task2_is_the_cascade(tmp_path):
    """./run.sh converts with kNN (Task 1) into exp/vc_knn_<preset>; --task 2 keeps the cascade."""
    for args, method, exp in (((), "knn", "vc_knn_default"), (("--task", "2"), "cascade", "vc_default")):
        out = _run(*args, "--stage", "8", "--stop_stage", "8", "--test_sets", "",
                   "--expdir", str(tmp_path / method), "--submission_dir", str(tmp_path / "sub"))
        assert out.returncode == 0, out.stderr
        assert f"vc_method={method}" in out.stdout + out.stderr
        assert (tmp_path / method / exp).is_dir()


def test_vc_method_option_is_checked():
    out = _run("--task", "2", "--vc_method", "knn")   # kNN uses a pretrained encoder: Task 1 only
    assert out.returncode == 2 and "--task 1" in out.stderr
    out = _run("--vc_method", "vocos")
    assert out.returncode == 2 and "--vc_method" in out.stderr
