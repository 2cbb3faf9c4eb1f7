"""The compiled Track 1 batch scorer (``track1_native.c``), when it was built.

``ffi``/``lib`` are None when ``python -m pyutils.scoring.native_build`` (make -C
tools) has not been run, or with ``CHORUS_SCORE_NATIVE=0`` (the tests use it to
compare the two paths); ``chorus-score track1`` then scores in Python.
"""

from __future__ import annotations

import os

ffi = lib = None
if os.environ.get("CHORUS_SCORE_NATIVE", "1") != "0":
    try:
        from pyutils.scoring._track1_native import ffi, lib  # noqa: F811
    except ImportError:
        pass
