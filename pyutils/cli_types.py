"""argparse value types shared by the chorus-* commands."""

from __future__ import annotations

import argparse


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}")
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1 (counts of jobs, voices, utterances, threads)."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number >= 0 (counts where 0 means "none")."""
    return _int_at_least(text, 0)


def str2bool(text: str) -> bool:
    """``true/1/yes`` or ``false/0/no`` (any case), as Kaldi/ESPnet shell options pass booleans."""
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (durations, thresholds; 0 often means "off")."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def tolerant_output() -> None:
    """Let stdout/stderr print any file name.

    A name that is not valid UTF-8 (``caf\\xe9.wav`` from a latin-1 system)
    reaches Python as a lone surrogate, which a strict UTF-8 stream (path.sh
    sets PYTHONIOENCODING=UTF-8) refuses with a traceback; it is shown
    escaped instead (``caf\\udce9.wav``).
    """
    import sys
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a closed or odd stream
                pass
