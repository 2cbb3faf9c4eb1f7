"""Model files a user hands in are never unpickled with code execution
(torch.load(weights_only=True)); junk model files give a one-line error."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parents[1]


class _Payload:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def _chorus_sqa(args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pyutils.sqa.diagnose", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)


def _wav(tmp_path):
    wav = tmp_path / "a.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000, subtype="PCM_16")
    return wav


def test_crafted_model_does_not_run_code(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    pwned = tmp_path / "pwned"
    torch.save({"model_config": _Payload(pwned)}, model_dir / "model.pt")
    r = _chorus_sqa(["--model", str(model_dir), str(_wav(tmp_path))], tmp_path)
    assert not pwned.exists(), "code in model.pt was executed"
    assert r.returncode == 2
    assert f"{model_dir / 'model.pt'}: not a loadable checkpoint" in r.stderr
    assert "Traceback" not in r.stderr


def test_crafted_resume_checkpoint_does_not_run_code(tmp_path):
    from pyutils.sqa.model import ModelFileError, safe_torch_load
    pwned = tmp_path / "pwned"
    torch.save({"model": _Payload(pwned)}, tmp_path / "last.pt")
    try:
        safe_torch_load(str(tmp_path / "last.pt"))
        raise AssertionError("loaded a pickle with code")
    except ModelFileError as e:
        assert "last.pt" in str(e)
    assert not pwned.exists()


def test_junk_model_and_bad_threads_are_one_line_errors(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "model.pt").write_bytes(b"not a checkpoint at all\n")
    r = _chorus_sqa(["--model", str(model_dir), str(_wav(tmp_path))], tmp_path)
    assert r.returncode == 2 and "model.pt" in r.stderr and "Traceback" not in r.stderr
    torch.save({"model_config": {"nope": 1}}, model_dir / "model.pt")  # loadable, wrong content
    r = _chorus_sqa(["--model", str(model_dir), str(_wav(tmp_path))], tmp_path)
    assert r.returncode == 2 and "not a Chorus SQA model" in r.stderr
    assert "Traceback" not in r.stderr
    r = _chorus_sqa(["--model", str(model_dir), "--num-threads", "0", str(_wav(tmp_path))], tmp_path)
    assert r.returncode == 2 and "--num-threads" in r.stderr and "Traceback" not in r.stderr
