"""Every row of the hostile-input table (tests/hostile_cases.py) ends as it should:
the documented exit status, a message naming the file (and line), no Python
traceback, no silent accept, no hang. The whole table runs once per session
(several cases at a time); each row is reported as its own test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile_cases  # noqa: E402


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return hostile_cases.run_all(hostile_cases.CASES, tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", [c.name for c in hostile_cases.CASES])
def test_hostile_case(outcomes, name):
    outcome, detail = outcomes[name]
    assert outcome == "ok", f"{name}: {outcome}\n{detail}"


def test_the_table_covers_every_entry_point():
    names = [c.name for c in hostile_cases.CASES]
    for prefix in ["score-track1", "score-sqa", "score-nvbench", "score-vc-", "score-validate-track1",
                   "score-package", "score-validate-track2", "score-validate-vc", "synth-nvv", "synth-sqa",
                   "synth-vc", "sqa-", "datadir-", "decode_dir-", "cascade-", "utils-run.pl", "utils-slurm.pl",
                   "utils-fork_recipe"]:
        assert any(n.startswith(prefix) for n in names), prefix
    from pyutils.corpora.cli import CORPORA
    for corpus in CORPORA:
        assert any(n.startswith(f"prep-{corpus}-") for n in names), corpus
    shell_tools = {p.name for p in (hostile_cases.ROOT / "utils").iterdir()
                   if p.suffix in (".sh", ".pl") and p.name not in ("parse_options.sh", "stage_prelude.sh")}
    for tool in shell_tools:  # parse_options.sh / stage_prelude.sh: sourced by every stage script
        assert any(n.startswith(f"utils-{tool.rsplit('.', 1)[0]}") for n in names), tool
    for recipe in hostile_cases.RECIPES:
        assert sum(n.startswith(f"run.sh-{recipe}-") for n in names) >= 8, recipe
