"""The compiled Track 1 batch scorer (``track1_native.c``), when it was built.

``ffi``/``lib`` are None when ``python -m pyutils.scoring.native_build`` (make -C
tools) has not been run, or with ``CHORUS_SCORE_NATIVE=0`` (the tests use it to
compare the two paths); ``chorus-score track1`` then scores in Python.
A build of an older ``track1_native.c`` (the source changed since ``make -C tools
native``) is not used: the scorer warns and scores in Python.
"""

from __future__ import annotations

import os
import sys

ffi = lib = None
if os.environ.get("CHORUS_SCORE_NATIVE", "1") != "0":
    try:
        from pyutils.scoring._track1_native import ffi, lib  # noqa: F811
    except ImportError:
        pass
    else:
        from pyutils.scoring.native_build import source_digest

        built_from = ffi.string(lib.source_sha256()).decode("ascii") if hasattr(lib, "source_sha256") else ""
        if built_from != source_digest():
            sys.stderr.write("chorus-score: warning: the C scorer was built from another track1_native.c; "
                             "scoring in Python (rebuild: make -C tools native)\n")
            ffi = lib = None
