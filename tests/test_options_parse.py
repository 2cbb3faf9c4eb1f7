"""utils/parse_options.sh (Kaldi convention), driven through bash."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = f"""#!/usr/bin/env bash
nj=4              # number of parallel jobs
use_gpu=false     # true|false
foo_bar=abc
empty=
help_message="Usage: $0 [options] <data-dir>\\n  e.g.: $0 data/train"
. {ROOT}/utils/parse_options.sh
echo "nj=$nj use_gpu=$use_gpu foo_bar=$foo_bar empty=$empty"
echo "nargs=$# args=$*"
"""


@pytest.fixture()
def script(tmp_path):
    path = tmp_path / "s.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return path


def sh(script, *args):
    return subprocess.run([str(script), *args], capture_output=True, text=True,
                          cwd=script.parent)


def test_defaults_and_positional(script):
    p = sh(script, "a", "b c")
    assert p.returncode == 0
    assert p.stdout.splitlines() == ["nj=4 use_gpu=false foo_bar=abc empty=",
                                     "nargs=2 args=a b c"]


@pytest.mark.parametrize("args", [["--foo-bar", "x y"], ["--foo-bar=x y"], ["--foo_bar", "x y"]])
def test_dash_and_equals_forms(script, args):
    p = sh(script, *args, "--nj", "8", "pos")
    assert p.returncode == 0, p.stderr
    assert "nj=8 use_gpu=false foo_bar=x y" in p.stdout
    assert "nargs=1 args=pos" in p.stdout


def test_empty_default_is_still_an_option(script):
    p = sh(script, "--empty", "set")
    assert "empty=set" in p.stdout


def test_unknown_option_is_an_error(script):
    p = sh(script, "--no-such-thing", "1")
    assert p.returncode == 1
    assert "unknown option --no-such-thing" in p.stderr


def test_boolean_checked(script):
    assert "use_gpu=true" in sh(script, "--use-gpu", "true").stdout
    p = sh(script, "--use-gpu", "yes")
    assert p.returncode == 1 and "true or false" in p.stderr


def test_missing_value(script):
    p = sh(script, "--nj")
    assert p.returncode == 1 and "needs a value" in p.stderr


def test_help_lists_options_with_current_values(script):
    p = sh(script, "--nj", "3", "--help")
    assert p.returncode == 0
    assert "Usage:" in p.stdout and "e.g.: " in p.stdout
    assert '--nj "3"' in p.stdout and "number of parallel jobs" in p.stdout
    assert '--use_gpu "false"' in p.stdout          # the docs' spelling (ESPnet's); --use-gpu works too
    assert "help_message" not in p.stdout
    assert sh(script, "-h").returncode == 0


def test_config_file_then_command_line_wins(script, tmp_path):
    conf = tmp_path / "opts.conf"
    conf.write_text("nj=16\nfoo_bar=fromconf\n")
    p = sh(script, "--config", str(conf), "--nj", "2")
    assert "nj=2 use_gpu=false foo_bar=fromconf" in p.stdout
    p = sh(script, "--nj", "2", f"--config={conf}")
    assert "nj=2 " in p.stdout  # order does not matter: the command line wins
    p = sh(script, "--config", str(tmp_path / "missing.conf"))
    assert p.returncode == 1 and "missing.conf" in p.stderr


def test_double_dash_stops_parsing(script):
    p = sh(script, "--", "--nj", "5")
    assert "nj=4 " in p.stdout and "args=--nj 5" in p.stdout
