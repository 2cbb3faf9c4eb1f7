"""Every Python step of every stage script writes a log: it runs as
``${train_cmd} <exp>/log/<step>.log python -m ...`` (or ``${decode_cmd}``/``${cuda_cmd}``/
``${_cmd}``), so that a failure line of utils/stage_prelude.sh can name the log to read.

Checked on the text of local/*.sh: a ``python -m``/``python -c``/``chorus-*`` command at the
start of a shell command is an error unless it is a value query (``$(python ...)``, whose
output is the value) or ESPnet's launcher with its own ``--log``.
"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = re.compile(r"(\$\{python\}|\bpython3?)\s+-[mc]\b|\bchorus-(score|synth|prep)\b")
# what may stand before a command: start, ; & | { ( then do if else !, VAR=value, `timed KIND NAME`
COMMAND_START = re.compile(r"(^|[;&|{(]\s*|\b(then|do|if|else|!)\s+)((\w+=\S*)\s+)*$")


def logical_lines(text):
    """(first line number, the command with its continuation lines joined); here-documents skipped."""
    buf, start, heredoc = [], None, None
    for i, line in enumerate(text.split("\n"), 1):
        if heredoc:
            if line.strip() == heredoc:
                heredoc = None
            continue
        m = re.search(r"<<-?'?(\w+)'?", line)
        if m:
            heredoc = m.group(1)
        if start is None:
            start = i
        buf.append(line)
        if line.rstrip().endswith("\\"):
            continue
        yield start, " ".join(x.rstrip("\\").strip() for x in buf)
        buf, start = [], None


def steps_without_log(path):
    found = []
    for n, cmd in logical_lines(open(path, encoding="utf-8").read()):
        if cmd.startswith("#"):
            continue
        for m in TOKEN.finditer(cmd):
            before = cmd[:m.start()]
            if re.search(r"(^|\s)#", before):
                break                               # a comment
            if re.sub(r"\\.|'[^']*'", "", before).count('"') % 2:
                continue                            # words of a message ("... (chorus-prep ...)")
            if not COMMAND_START.search(before) or before.rstrip().endswith("$("):
                continue                            # an argument of a backend, or a value query
            if "espnet2.bin.launch" in cmd and '--log "' in cmd:
                continue                            # ESPnet's launcher writes its --log itself
            found.append(f"{os.path.basename(path)}:{n}: {cmd[:160]}")
    return found


def test_every_python_step_runs_through_a_job_backend_with_a_log():
    scripts = sorted(glob.glob(os.path.join(ROOT, "local", "*.sh")))
    assert len(scripts) >= 4
    found = [f for p in scripts for f in steps_without_log(p)]
    assert not found, "steps without a log:\n" + "\n".join(found)


def test_the_checker_finds_a_bare_step(tmp_path):
    p = tmp_path / "x.sh"
    p.write_text('n=$(python -m pyutils.count a)   # a query is fine\n'
                 '${train_cmd} "${expdir}/log/a.log" \\\n  python -m pyutils.a\n'
                 'python -m pyutils.b --out x\n'
                 'if [ -f x ]; then chorus-score sqa --ref r; fi\n')
    found = steps_without_log(str(p))
    assert [f.split(":")[1] for f in found] == ["4", "5"]
