"""Model-file I/O of the NVV detectors: one ``.npz`` of plain arrays beside ``<file>.sha256``.

:func:`save_arrays` writes both (each to a temp file, then renamed); :func:`load_arrays` checks
the SHA-256 first and reads with ``allow_pickle=False`` (nothing is ever unpickled). The model
files and cached feature files of :mod:`pyutils.nvv_detect` all go through these two.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

from pyutils.io import sha256_file


class DetectorError(RuntimeError):
    """Missing, damaged or inconsistent model file; the message names it."""


def save_arrays(arrays: Dict[str, np.ndarray], path: Path) -> None:
    """npz + ``.sha256``, each written to a temp file and renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez(tmp, **arrays)
    digest = sha256_file(tmp)
    os.replace(tmp, path)
    stmp = path.with_name(f".{path.name}.sha256.tmp")
    stmp.write_text(f"{digest}  {path.name}\n")
    os.replace(stmp, Path(str(path) + ".sha256"))


def load_arrays(path: Path, missing: str, mismatch: str = "", need: Sequence[str] = ()) -> Dict[str, np.ndarray]:
    """The arrays of an npz written by :func:`save_arrays`, after checking its ``.sha256``
    (no pickles). ``missing``/``mismatch``: what the error adds when the file or its sum is
    absent / when the sum differs; ``need``: arrays the file must hold."""
    sums = Path(str(path) + ".sha256")
    if not path.is_file() or not sums.is_file():
        raise DetectorError(f"{path} or {sums} is missing{missing}")
    want = (sums.read_text().split() or [""])[0]
    got = sha256_file(path)
    if got != want:
        raise DetectorError(f"{path}: SHA-256 {got} differs from {sums} ({want}){mismatch}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError) as e:
        raise DetectorError(f"{path}: not a plain-array npz: {e}") from e
    if any(k not in arrays for k in need):
        raise DetectorError(f"{path}: arrays {[k for k in need if k not in arrays]} missing")
    return arrays
