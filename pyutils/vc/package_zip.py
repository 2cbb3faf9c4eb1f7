"""Zip the converted WAV files of a VC submission folder (local/vc.sh stage 8).

    python -m pyutils.vc.package_zip --dir submission/test --out submission/test.zip

Every ``*.wav`` directly in ``--dir`` is stored under its own name (no folder), in sorted
order, deflated; the archive is written to a temporary file first and then renamed, so a
killed run never leaves a half-written zip.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile


def package(folder: str, out: str) -> int:
    """Write ``out`` with the WAV files of ``folder``; returns how many."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".wav"))
    if not names:
        raise FileNotFoundError(f"{folder}: no .wav files to package")
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name in names:
            z.write(os.path.join(folder, name), arcname=name)
    os.replace(tmp, out)
    return len(names)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyutils.vc.package_zip", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="folder holding the converted <name>.wav files")
    ap.add_argument("--out", required=True, help="zip file to write")
    a = ap.parse_args(argv)
    try:
        n = package(a.dir, a.out)
    except OSError as e:
        print(f"package_zip: {e}", file=sys.stderr)
        return 1
    print(f"package_zip: {n} files -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
