"""Verified markers of local/nvv_tts.sh (chain_done/chain_mark of utils/stage_prelude.sh).

The chained markers are checked on a small three-step script (fast), the TTS
script's stage 1 on the real recipe with a tiny fake corpus, and every stage
1-7 of local/nvv_tts.sh is checked to be guarded by one.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Three steps a -> b -> c; each output holds the run count (so a redone step changes
# its outputs) unless FIXED is set; step b fails halfway when FAIL_B is set.
CHAIN = r'''
set -euo pipefail
stage=0; stop_stage=0
. "$ROOT/utils/stage_prelude.sh" "$EXP"
n=$(( $(cat "$EXP/count" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$EXP/count"
out() { if [ -n "${FIXED:-}" ]; then echo "$1"; else echo "$1 run $n"; fi; }
if chain_done "$EXP/a/.done" "${SETTING_A:-1}"; then echo "skip a"; else
  echo "run a"; mkdir -p "$EXP/a"; out a > "$EXP/a/out"; chain_mark "$EXP/a/.done" --dir "$EXP/a"; fi
if chain_done "$EXP/b/.done" --after "$EXP/a/.done"; then echo "skip b"; else
  echo "run b stale=${chain_stale}"; mkdir -p "$EXP/b"; out b > "$EXP/b/out"
  [ -z "${FAIL_B:-}" ] || { echo "b failed" >&2; exit 1; }
  out b2 > "$EXP/b/out2"; chain_mark "$EXP/b/.done" "$EXP/b/out" "$EXP/b/out2"; fi
if chain_done "$EXP/c/.done" --after "$EXP/b/.done"; then echo "skip c"; else
  echo "run c"; mkdir -p "$EXP/c"; out c > "$EXP/c/out"; chain_mark "$EXP/c/.done" "$EXP/c/out"; fi
'''


def _chain(tmp_path, ok=True, **env):
    full = {**os.environ, "ROOT": str(ROOT), "EXP": str(tmp_path / "exp"), **env}
    r = subprocess.run(["bash", "-c", CHAIN], capture_output=True, text=True, env=full, timeout=60)
    assert (r.returncode == 0) == ok, r.stderr
    return [line for line in r.stdout.splitlines() if line.startswith(("run", "skip"))], r.stderr


def test_chain_skips_finished_steps_and_redoes_from_a_damaged_one(tmp_path):
    exp = tmp_path / "exp"
    assert _chain(tmp_path)[0] == ["run a", "run b stale=false", "run c"]
    assert _chain(tmp_path)[0] == ["skip a", "skip b", "skip c"]
    (exp / "b" / "out2").write_text("")                      # truncated: b and what reads it redone
    steps, err = _chain(tmp_path)
    assert steps == ["skip a", "run b stale=true", "run c"] and "changed size" in err
    (exp / "c" / "out").unlink()                             # deleted: only the last step
    assert _chain(tmp_path)[0] == ["skip a", "skip b", "run c"]
    steps, err = _chain(tmp_path, SETTING_A="2")             # other settings
    assert steps == ["run a", "run b stale=true", "run c"] and "other inputs" in err
    assert _chain(tmp_path, SETTING_A="2")[0] == ["skip a", "skip b", "skip c"]


def test_a_step_redone_with_the_same_outputs_leaves_later_steps_alone(tmp_path):
    assert _chain(tmp_path, FIXED="1")[0] == ["run a", "run b stale=false", "run c"]
    (tmp_path / "exp" / "a" / "out").write_text("damaged\n")
    assert _chain(tmp_path, FIXED="1")[0] == ["run a", "skip b", "skip c"]


def test_a_step_killed_halfway_is_redone_not_trusted(tmp_path):
    assert _chain(tmp_path)[0] == ["run a", "run b stale=false", "run c"]
    (tmp_path / "exp" / "a" / "out").write_text("damaged\n")
    steps, _ = _chain(tmp_path, ok=False, FAIL_B="1")        # a redone, b dies halfway
    assert steps == ["run a", "run b stale=true"]
    assert not (tmp_path / "exp" / "b" / ".done").exists()   # its old marker went when it started
    steps, _ = _chain(tmp_path)
    assert steps == ["skip a", "run b stale=false", "run c"]
    assert _chain(tmp_path)[0] == ["skip a", "skip b", "skip c"]


# --------------------------------------------------------------- local/nvv_tts.sh itself
def test_every_tts_stage_1_to_7_is_guarded_by_a_marker():
    text = (ROOT / "local" / "nvv_tts.sh").read_text()
    blocks = re.split(r"\n# -+ stage (\d)\n", text)
    stages = {int(blocks[k]): blocks[k + 1] for k in range(1, len(blocks) - 1, 2)}
    for n in range(1, 8):
        body = stages[n]
        done = re.findall(r'chain_done "([^"]+)"', body)
        marks = re.findall(r'chain_mark "([^"]+)"', body)
        assert done and sorted(set(done)) == sorted(set(marks)), (n, done, marks)
    assert "chain_done" not in stages[8]


def _fake_corpus(root: Path, text_suffix=""):
    for split in ("train", "dev", "test"):
        d = root / "data" / split
        d.mkdir(parents=True, exist_ok=True)
        utts = [f"s{k}-{split}-{i}" for k in range(2) for i in range(2)]
        (d / "wav.scp").write_text("".join(f"{u} /nonexistent/{u}.wav\n" for u in utts))
        (d / "text").write_text("".join(f"{u} hello [laugh] world{text_suffix}\n" for u in utts))
        (d / "utt2spk").write_text("".join(f"{u} {u.split('-')[0]}\n" for u in utts))
        (d / "spk2utt").write_text("".join(f"s{k} " + " ".join(u for u in utts if u.startswith(f"s{k}-")) + "\n"
                                           for k in range(2)))


def _tts_stage1(tmp_path):
    r = subprocess.run(["./run.sh", "--preset", "ci", "--stage", "1", "--stop-stage", "1",
                        "--corpus_dir", str(tmp_path / "corpus"), "--datadir", str(tmp_path / "data"),
                        "--expdir", str(tmp_path / "exp")],
                       cwd=ROOT / "egs" / "nvv_tts", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def test_tts_data_prep_stage_is_skipped_then_redone_when_damaged(tmp_path):
    _fake_corpus(tmp_path / "corpus")
    dev_text = tmp_path / "data" / "dev_en_ci" / "text"
    out = _tts_stage1(tmp_path)
    assert "stage 1: data prep" in out and "skipping" not in out
    assert (tmp_path / "data" / "train_en_ci" / ".data.done").is_file()
    for s in ("train_en_ci", "dev_en_ci", "test_en_ci"):          # the step's log
        assert (tmp_path / "exp" / "log" / f"check_text_{s}.log").is_file(), s
    assert "skipping (" in _tts_stage1(tmp_path)
    good = dev_text.read_text()
    dev_text.write_text(good[:10])                            # truncated output
    out = _tts_stage1(tmp_path)
    assert "changed size" in out and "doing that step again" in out
    assert dev_text.read_text() == good
    _fake_corpus(tmp_path / "corpus", text_suffix=" again")    # other inputs
    out = _tts_stage1(tmp_path)
    assert "other inputs" in out and "world again" in dev_text.read_text()
