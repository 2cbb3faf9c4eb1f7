"""Build the C part of the Track 1 scorer (``track1_native.c``) with cffi.

    python -m pyutils.scoring.native_build      # (make -C tools native) -> pyutils/scoring/_track1_native*.so

The extension is optional: without it ``chorus-score track1`` uses its Python
path (same numbers, ~2x the CPU time); :mod:`pyutils.scoring.native` says which.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "track1_native.c"
CDEF = """
const char *source_sha256(void);
int score_batch(const uint32_t *ref_lex, const uint64_t *ref_lex_starts, const uint64_t *ref_ev,
                const uint64_t *ref_ev_starts, const uint64_t *rows, int64_t k, const uint32_t *hyp_lex,
                const uint64_t *hyp_lex_starts, const uint64_t *hyp_ev, const uint64_t *hyp_ev_starts,
                int64_t ntags, int64_t collar, int64_t *out_edits, int64_t *out_tp, double *out_mntd,
                int64_t *tag_tp, int64_t *tag_ref, int64_t *tag_pred, int64_t *confusion);
"""


def source_digest() -> str:
    """sha256 of track1_native.c: built into the extension, checked on import (a stale build is not used)."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()


def builder():
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    source = SOURCE.read_text(encoding="utf-8")
    source += f'\nconst char *source_sha256(void) {{ return "{source_digest()}"; }}\n'
    # -ffp-contract=off: no fused multiply-add, so the mNTD floats equal Python's
    ffi.set_source("pyutils.scoring._track1_native", source,
                   extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math"])
    return ffi


def main() -> int:
    import tempfile

    ffi = builder()
    with tempfile.TemporaryDirectory(prefix="track1_native.") as tmp:
        built = Path(ffi.compile(tmpdir=tmp, verbose=False))
        target = HERE / built.name
        os.replace(built, target)  # atomic: a running scorer keeps the old file
    print(f"built {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
