"""Key/value file I/O for the VC helpers (Kaldi ``wav.scp``/``text``/``utt2spk``).

Thin adapter over :mod:`pyutils.datadir` (``read_kv``/``write_kv``) so the VC
code has one place that knows the call signature; ``sep`` is only used for
the tab-separated pair table, which Kaldi tools never read.
"""

from __future__ import annotations

from typing import Dict, Mapping

from pyutils.io import atomic_write
from pyutils.datadir import read_kv as _read_kv
from pyutils.datadir import write_kv as _write_kv


def read_kv(path: str, allow_empty_value: bool = False) -> Dict[str, str]:
    """``key value...`` lines -> dict (value is the rest of the line)."""
    return dict(_read_kv(path, allow_empty_value=allow_empty_value))


def write_kv(path: str, mapping: Mapping[str, str], sep: str = " ") -> None:
    """Write sorted ``key<sep>value`` lines atomically."""
    if sep == " ":
        _write_kv(path, mapping)
        return
    with atomic_write(path) as handle:
        for key in sorted(mapping):
            handle.write(f"{key}{sep}{mapping[key]}\n")
