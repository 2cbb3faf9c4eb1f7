"""The per-stage clock of utils/stage_prelude.sh (stage_begin/stage_end -> <expdir>/stage_times.tsv)
and its Markdown table (pyutils.jobs.stage_times)."""
import os
import subprocess

from pyutils.jobs.stage_times import markdown, read_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSY = 'python3 -c "import time; t = time.process_time()\nwhile time.process_time() - t < 0.6: pass"'


def _run(exp, stage, body, env=None):
    script = "\n".join(["set -euo pipefail", f"stage={stage}", "stop_stage=8",
                        f'. "{ROOT}/utils/stage_prelude.sh" "{exp}"'] + body)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_counts_the_cpu_of_waited_children(tmp_path):
    exp = tmp_path / "exp"
    log = _run(exp, 0, ["stage_begin 1 busy", BUSY, "stage_end", "stage_begin 2 idle", "sleep 0.3", "stage_end"])
    assert "timing: stage 1 busy: wall" in log
    rows = read_rows(str(exp / "stage_times.tsv"))
    assert [r[0] for r in rows] == ["1 busy", "2 idle"]
    assert rows[0][2] in (1, 2) and rows[1][2] == 0
    assert len(rows[0][3].split()) == 3   # the 1/5/15-minute load


def test_begin_ends_the_open_stage_and_end_is_idempotent(tmp_path):
    exp = tmp_path / "exp"
    _run(exp, 0, ["stage_begin 0 corpus", "stage_begin 1 data", "stage_end", "stage_end"])
    assert [r[0] for r in read_rows(str(exp / "stage_times.tsv"))] == ["0 corpus", "1 data"]


def test_a_resumed_run_keeps_only_the_earlier_stages(tmp_path):
    exp = tmp_path / "exp"
    tsv = str(exp / "stage_times.tsv")
    _run(exp, 0, ["stage_begin 0 corpus", "stage_begin 1 data", "stage_begin 2 train", "stage_end"])
    _run(exp, 1, ["stage_begin 1 data", "stage_end"])
    assert [r[0] for r in read_rows(tsv)] == ["0 corpus", "1 data"]
    _run(exp, 0, ["stage_begin 0 corpus", "stage_end"])
    assert [r[0] for r in read_rows(tsv)] == ["0 corpus"]


def test_a_nested_stage_script_leaves_the_callers_file_alone(tmp_path):
    exp = tmp_path / "exp"
    tsv = str(exp / "stage_times.tsv")
    inner = f'bash -c \'set -eu; stage=2; stop_stage=2; . "{ROOT}/utils/stage_prelude.sh" "{exp}"; ' \
            f'stage_begin 2 inner; stage_end\''
    _run(exp, 0, ["stage_begin 0 corpus", "stage_end", "stage_begin 4 outer", inner, "stage_end"])
    assert [r[0] for r in read_rows(tsv)] == ["0 corpus", "4 outer"]


def test_markdown_sums_wall_and_cpu(tmp_path):
    tsv = tmp_path / "stage_times.tsv"
    tsv.write_text("stage\twall_s\tcpu_s\tload\n0 corpus\t90\t150\t7.10 6.00 5.00\n5 train\t600\t700\t8.02 7 6\n"
                   "broken line\n")
    text = "\n".join(markdown(str(tsv)))
    assert "| 0 corpus | 90 | 150 | 7.10 6.00 5.00 |" in text
    assert "| all | 690 | 850 | |" in text
    assert markdown(str(tmp_path / "none")) == []
