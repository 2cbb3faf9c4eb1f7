"""Stage completion markers that record what they vouch for.

A plain ``.done`` file says "this stage finished" even after its outputs were
deleted or damaged; a rerun then skips the stage and a later one crashes. A
marker written here lists the stage's output files with their sizes and
SHA-256 checksums (plus an optional signature of the inputs/settings); a rerun
checks them and redoes the stage when anything is missing, changed or was made
from other inputs::

    python -m pyutils.jobs.stage_marker write MARKER [--sig TEXT] (FILE | --dir DIR)...
    python -m pyutils.jobs.stage_marker check MARKER [--sig TEXT] [--adopt (FILE | --dir DIR)...]
        # exit 0: every recorded file is there, same size and checksum;
        # exit 1: not valid, the first reason on stdout (e.g. "missing model.pt")

``--adopt``: a marker of the old kind (an empty ``touch``ed file) whose listed
outputs all exist is replaced by one that vouches for them (once, when a run
made before verified markers is resumed), instead of redoing the stage.
The shell side of this (``stage_done``/``stage_mark``) is in utils/stage_prelude.sh.

Paths are stored relative to the marker's folder. ``--dir DIR`` records every
file under DIR except log folders, temporary files and markers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from pyutils.io import atomic_write, sha256_file

FORMAT = "chorus-stage-marker-1"
_SKIP_DIRS = {"log", "logdir", "q", "__pycache__"}


def _files_under(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith((".tmp", ".partial")):
                continue
            out.append(Path(dirpath) / name)
    return out


def write_marker(marker: str | os.PathLike, files=(), dirs=(), sig: str = "") -> dict:
    """Record ``files`` and every file under ``dirs`` (atomically) in ``marker``."""
    marker = Path(marker)
    base = marker.parent
    paths = [Path(f) for f in files]
    for d in dirs:
        paths += _files_under(Path(d))
    entries = {}
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"{p}: cannot vouch for a file that does not exist")
        rel = os.path.relpath(p, base)
        entries[rel] = {"size": p.stat().st_size, "sha256": sha256_file(p)}
    data = {"format": FORMAT, "sig": sig, "files": entries}
    with atomic_write(marker) as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    return data


def check_marker(marker: str | os.PathLike, sig: str | None = None) -> str | None:
    """None when ``marker`` is valid, else why not (one line)."""
    marker = Path(marker)
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"no marker {marker}"
    except (OSError, ValueError):
        return f"{marker} is not a stage marker (an older or damaged one)"
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        return f"{marker} is not a stage marker (an older or damaged one)"
    if sig is not None and data.get("sig") != sig:
        return f"{marker} was written for other inputs or settings"
    if not data["files"]:
        return f"{marker} vouches for no file"
    for rel, meta in sorted(data["files"].items()):
        p = marker.parent / rel
        if not p.is_file():
            return f"missing {p}"
        if p.stat().st_size != meta.get("size"):
            return f"{p} changed size ({p.stat().st_size} bytes, {meta.get('size')} when the stage finished)"
        if sha256_file(p) != meta.get("sha256"):
            return f"{p} changed since the stage finished (checksum)"
    return None


def _is_legacy(marker) -> bool:
    """An old-style marker: an empty file made by ``touch``."""
    p = Path(marker)
    return p.is_file() and p.stat().st_size == 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyutils.jobs.stage_marker", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("marker")
    w.add_argument("files", nargs="*")
    w.add_argument("--dir", action="append", default=[])
    w.add_argument("--sig", default="")
    c = sub.add_parser("check")
    c.add_argument("marker")
    c.add_argument("files", nargs="*")
    c.add_argument("--sig", default=None)
    c.add_argument("--dir", action="append", default=[])
    c.add_argument("--adopt", action="store_true")
    args = sys.argv[1:] if argv is None else list(argv)
    # options may come between the marker and the files (``write M --sig S FILE...``):
    # move them before the positionals (argparse stops filling nargs="*" at an option)
    opts, rest, i = [], [], 1
    while i < len(args):
        if args[i] == "--adopt":
            opts.append(args[i])
            i += 1
        elif args[i] in ("--sig", "--dir") and i + 1 < len(args):
            opts += args[i:i + 2]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    a = ap.parse_args(args[:1] + opts + rest)
    if a.cmd == "write":
        try:
            data = write_marker(a.marker, a.files, a.dir, a.sig)
        except OSError as e:
            print(f"stage_marker: {e}", file=sys.stderr)
            return 2
        if not data["files"]:
            print(f"stage_marker: nothing to vouch for in {a.marker}", file=sys.stderr)
            return 2
        return 0
    if a.adopt and (a.files or a.dir) and _is_legacy(a.marker):
        outputs = [Path(f) for f in a.files] + [Path(d) for d in a.dir]
        if all(p.exists() for p in outputs) and not any(p.is_dir() and not _files_under(p) for p in outputs):
            write_marker(a.marker, a.files, a.dir, a.sig or "")
            print(f"{a.marker}: an older marker; now vouches for the outputs it finds")
            return 0
    why = check_marker(a.marker, a.sig)
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
