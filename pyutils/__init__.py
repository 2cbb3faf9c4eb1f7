"""Chorus: Kaldi/ESPnet-style recipes for NVV-aware ASR, NVV TTS, SQA and Vietnamese VC.

All real logic of the recipes lives in this package; shell scripts under
``utils/`` and ``local/`` are thin wrappers around it.
"""

from pathlib import Path

__version__ = "0.1.0"

#: Repository root (the folder holding ``conf/``, ``utils/``, ``egs/``).
REPO_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = REPO_ROOT / "conf"
