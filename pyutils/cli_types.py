"""argparse value types shared by the chorus-* commands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number >= 1 (counts of jobs, voices, utterances, threads)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value
