"""The per-stage clock of a recipe run (<expdir>/stage_times.tsv, stage_begin/stage_end of
utils/stage_prelude.sh) as a Markdown section.

The TSV has a header and one row per stage: label, wall seconds, CPU seconds, load (the
1-minute value first). CPU seconds are what the stage's processes used together, so a run
on a busy machine still tells what it would take on an idle one.
"""
import os


def read_rows(path) -> list:
    """[(label, wall_s, cpu_s, load)] of a stage_times.tsv; [] if the file is missing."""
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [(r[0], float(r[1]), float(r[2]), r[3]) for r in rows if len(r) == 4]


def markdown(path, title="## Time per stage") -> list:
    """Lines of a Markdown table of the stage rows with their sum; [] without rows."""
    rows = read_rows(path)
    if not rows:
        return []
    out = [title, "",
           "Wall and CPU seconds per stage (CPU: the stage's processes together, "
           "utils/stage_prelude.sh); load = 1/5/15-minute load average when the stage ended. On 2 idle "
           "cores a stage's wall time lies between about CPU/2 (both cores busy) and CPU (one): "
           "an estimate, not a measurement.", "",
           "| stage | wall (s) | CPU (s) | load |", "|---|---|---|---|"]
    out += [f"| {label} | {wall:.0f} | {cpu:.0f} | {load} |" for label, wall, cpu, load in rows]
    out += [f"| all | {sum(r[1] for r in rows):.0f} | {sum(r[2] for r in rows):.0f} | |", ""]
    return out
