"""A recipe's run.sh hands over to its stage script with ``exec``, so that a signal
sent to run.sh's pid (kill, scancel, a batch system's time limit) reaches the stage
script, which then takes its jobs down with it; a plain child call would leave the
stage script running, and holding the exp-dir lock, after run.sh died."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGE_CALL = re.compile(r"^\s*(exec\s+)?\./local/\w+\.sh\b", re.M)


def recipe_run_scripts():
    return sorted(p for p in glob.glob(os.path.join(ROOT, "egs", "*", "run.sh")) if "TEMPLATE" not in p)


def test_every_recipe_execs_its_stage_script():
    scripts = recipe_run_scripts()
    assert len(scripts) >= 5
    for path in scripts:
        calls = STAGE_CALL.findall(open(path, encoding="utf-8").read())
        assert calls, f"{path}: no ./local/<stage script>.sh call"
        assert all(c.strip() == "exec" for c in calls), f"{path}: the stage script is not exec'd"


def test_forked_tts_recipe_execs_its_stage_script():
    text = open(os.path.join(ROOT, "utils", "fork_recipe.sh"), encoding="utf-8").read()
    assert re.search(r"^exec \./local/nvv_tts\.sh", text, re.M)
