"""The installed NVV sound bank at run time: its index (every clip checked), extra banks, and
the sound of one corpus event.

The bank (``tools/models/nvv_bank``: ``<clip_id>.wav`` + ``index.jsonl`` + ``MANIFEST_DIGEST``)
is written by ``make -C tools nvv_bank`` from ``conf/nvv_bank.tsv`` (:mod:`pyutils.synth.nvv_bank`,
which says how the clips are chosen and split). It counts as installed when its digest is the
manifest's; every clip's SHA-256 is checked when the index is loaded (:func:`load_index`).

Use in the corpus (:func:`event_sound`): an event of a tag the bank has in the
utterance's split is a clip drawn uniformly from that split, peak-normalised like
the generated sounds (``nvv_sounds.PEAK_DB`` +-4 dB) and, in train only, resampled
by a random speed factor in [0.92, 1.08] (pitch and tempo together); any other tag
keeps the generated sound (``source: generated``).

Extra banks (``chorus-synth nvv --nvv-bank-extra DIR``, built by
:func:`pyutils.synth.nvv_bank.build_from_prep`): ``index.jsonl`` in the installed bank's
columns and ``BANK_DIGEST`` (its SHA-256); their clips join the bank's clips of the same tag
and split (:func:`load_extra`, :func:`event_sound`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyutils.synth import SAMPLE_RATE

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "conf" / "nvv_bank.tsv"
INSTALL_TARGET = "make -C tools nvv_bank"
EXTRA_DIGEST = "BANK_DIGEST"


class BankError(RuntimeError):
    """Missing package, changed file or missing bank; the message names the package and make target."""


def default_dir() -> Path:
    return Path(os.environ.get("CHORUS_NVV_BANK_DIR") or REPO / "tools" / "models" / "nvv_bank")


def manifest_digest(path: Path = MANIFEST) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def is_installed(d: Optional[Path] = None, manifest: Path = MANIFEST) -> bool:
    d = d or default_dir()
    f = d / "MANIFEST_DIGEST"
    return f.is_file() and f.read_text().strip() == manifest_digest(manifest) and (d / "index.jsonl").is_file()


def load_index(d: Optional[str] = None) -> Dict[Tuple[str, str], List[dict]]:
    """(tag, split) -> clips of the installed bank; BankError naming the make target if absent/stale."""
    return _load_index(str(Path(d) if d else default_dir()))


@lru_cache(maxsize=4)
def _load_index(d: str) -> Dict[Tuple[str, str], List[dict]]:
    path = Path(d)
    if not is_installed(path):
        raise BankError(f"the NVV sound bank in {path} is missing or was made from another "
                        f"conf/nvv_bank.tsv; run `{INSTALL_TARGET}` (or use --nvv-sounds generated)")
    return _verified_rows(path, (path / "index.jsonl").read_text(encoding="utf-8"), f"rerun `{INSTALL_TARGET}`")


def _verified_rows(path: Path, index_text: str, remedy: str) -> Dict[Tuple[str, str], List[dict]]:
    """``{(tag, split): [row]}`` of a bank's index.jsonl text, every clip's SHA-256 checked."""
    out: Dict[Tuple[str, str], List[dict]] = defaultdict(list)
    for line in index_text.splitlines():
        row = json.loads(line)
        row["wav"] = str(path / f"{row['clip_id']}.wav")
        try:
            ok = hashlib.sha256(Path(row["wav"]).read_bytes()).hexdigest() == row["wav_sha256"]
        except OSError:
            ok = False
        if not ok:
            raise BankError(f"{row['wav']} is missing or changed (SHA-256 differs from {path / 'index.jsonl'}); "
                            f"{remedy}")
        out[(row["tag"], row["split"])].append(row)
    return dict(out)


@lru_cache(maxsize=512)
def _clip_audio(wav: str) -> np.ndarray:
    from pyutils.synth.audio import read_wav

    x, sr = read_wav(wav)
    if sr != SAMPLE_RATE:
        raise BankError(f"{wav}: {sr} Hz, expected {SAMPLE_RATE}; rerun `{INSTALL_TARGET}`")
    return x


def event_sound(tag: str, split: str, rng: np.random.Generator, sr: int = SAMPLE_RATE,
                bank_dir: Optional[str] = None, extra: Sequence[str] = ()) -> Tuple[np.ndarray, dict]:
    """Audio of one event and its provenance (``source: recorded|generated``).

    A recorded clip of ``tag`` from ``split`` when the bank (or an ``extra`` bank,
    :func:`load_extra`) has one, drawn uniformly from all of them, else the generated
    sound of :func:`pyutils.synth.nvv_sounds.synthesize`.
    """
    from pyutils.synth.nvv_sounds import PEAK_DB, synthesize

    clips = list(load_index(bank_dir).get((tag, split), []))
    for d in extra:
        clips += load_extra(d).get((tag, split), [])
    if not clips:
        return synthesize(tag, rng, sr), {"source": "generated"}
    clip = clips[int(rng.integers(len(clips)))]
    x = _clip_audio(clip["wav"]).astype(np.float64)
    if split == "train":
        from scipy.signal import resample

        factor = rng.uniform(0.92, 1.08)
        x = resample(x, max(16, int(round(len(x) / factor))))
    x = x - x.mean()
    gain = 10 ** ((PEAK_DB[tag] + rng.uniform(-4, 4)) / 20) / (np.abs(x).max() + 1e-12)
    y = (x * gain).astype(np.float32)
    n = min(int(0.005 * sr), len(y) // 2)
    if n > 0:
        w = np.linspace(0, 1, n, dtype=np.float32)
        y[:n] *= w
        y[-n:] *= w[::-1]
    prov = {"source": "recorded", "clip": clip["clip_id"], "talker": clip["talker"],
            "package": clip["package"], "version": clip["version"], "licence": clip["licence"],
            "file": clip["path"]}
    return y, prov


def bank_tags(split: str = "test", bank_dir: Optional[str] = None, extra: Sequence[str] = ()) -> List[str]:
    tags = {t for (t, s) in load_index(bank_dir) if s == split}
    for d in extra:
        tags |= {t for (t, s) in load_extra(d) if s == split}
    return sorted(tags)


# ------------------------------------------------------------------ extra banks (a user's corpus)
def extra_digest(d: str) -> str:
    f = Path(d) / EXTRA_DIGEST
    if not f.is_file():
        raise BankError(f"{d}: not an extra NVV bank (no {EXTRA_DIGEST}); build one with "
                        f"`python -m pyutils.synth.nvv_bank from-prep`")
    return f.read_text().strip()[:16]


def load_extra(d: str) -> Dict[Tuple[str, str], List[dict]]:
    """(tag, split) -> clips of an extra bank (:func:`pyutils.synth.nvv_bank.build_from_prep`), every file checked."""
    return _load_extra(str(Path(d).resolve()))


@lru_cache(maxsize=4)
def _load_extra(d: str) -> Dict[Tuple[str, str], List[dict]]:
    path = Path(d)
    want = extra_digest(d)
    text = (path / "index.jsonl").read_text(encoding="utf-8") if (path / "index.jsonl").is_file() else ""
    if hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] != want:
        raise BankError(f"{path / 'index.jsonl'} is missing or changed ({EXTRA_DIGEST} differs); build the bank again")
    return _verified_rows(path, text, "build the bank again")
