"""utils/stage_timer.sh (the per-stage clock of the stage scripts) and its Markdown table."""
import os
import subprocess

from pyutils.jobs.stage_times import markdown, read_rows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSY = 'python3 -c "import time; t = time.process_time()\nwhile time.process_time() - t < 0.6: pass"'


def _run(tsv, stage, body):
    script = "\n".join(["set -euo pipefail", f"stage={stage}", f'. "{ROOT}/utils/stage_timer.sh" "{tsv}"'] + body)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_counts_the_cpu_of_waited_children(tmp_path):
    tsv = tmp_path / "log" / "stage_times.tsv"
    log = _run(tsv, 0, [BUSY, 'stage_timer "1 busy"', "sleep 0.3", 'stage_timer "2 idle"'])
    assert "timing: stage 1 busy: wall" in log
    rows = read_rows(str(tsv))
    assert [r[0] for r in rows] == ["1 busy", "2 idle"]
    assert rows[0][2] in (1, 2) and rows[1][2] == 0
    assert len(rows[0][3].split()) == 3   # the 1/5/15-minute load


def test_a_resumed_run_keeps_only_the_earlier_stages(tmp_path):
    tsv = tmp_path / "stage_times.tsv"
    _run(tsv, 0, ['stage_timer "0 corpus"', 'stage_timer "1 data"', 'stage_timer "2 train"'])
    _run(tsv, 1, ['stage_timer "1 data"'])
    assert [r[0] for r in read_rows(str(tsv))] == ["0 corpus", "1 data"]
    _run(tsv, 0, ['stage_timer "0 corpus"'])
    assert [r[0] for r in read_rows(str(tsv))] == ["0 corpus"]


def test_markdown_sums_wall_and_cpu(tmp_path):
    tsv = tmp_path / "stage_times.tsv"
    tsv.write_text("stage\twall_s\tcpu_s\tload\n0 corpus\t90\t150\t7.10 6.00 5.00\n5 train\t600\t700\t8.02 7 6\n"
                   "broken line\n")
    text = "\n".join(markdown(str(tsv)))
    assert "| 0 corpus | 90 | 150 | 7.10 6.00 5.00 |" in text
    assert "| all | 690 | 850 | |" in text
    assert markdown(str(tmp_path / "none")) == []
