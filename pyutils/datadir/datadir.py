"""The Kaldi data directory model.

A data dir is a folder of ``<key> <value>`` files:

=================  ===============  =========================================
file               keyed by         value
=================  ===============  =========================================
wav.scp            recording        path, ``cmd |`` pipe or ``x.ark:offset``
segments           utterance        ``<recording> <start> <end>`` (seconds)
text               utterance        transcript (may be empty)
utt2spk            utterance        speaker
spk2utt            speaker          utterances of the speaker
utt2dur            utterance        duration (seconds)
reco2dur           recording        duration (seconds)
utt2*, text*,      utterance        anything (utt2lang, utt2sid, ...):
feats.scp, ...                      passed through, filtered like text
spk2gender, ...    speaker          anything
=================  ===============  =========================================

Without ``segments`` recordings and utterances are the same ids. ESPnet's
one-line metadata files (``feats_type``, ``audio_format``) are carried along
verbatim; other files (``ref.jsonl``, notes, ...) are not keyed by id, so
split/subset/combine/copy do not carry them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pyutils.io import atomic_write

from .io import DataDirError, byte_key, read_kv, write_kv

RECO_FILES = ("wav.scp", "reco2dur", "reco2file_and_channel", "reco2num_samples")
SPK_FILES = ("spk2gender", "cmvn.scp", "spk2age")
#: utterance-keyed files known by name; any ``utt2*`` / ``text*`` file is too
UTT_FILES = ("segments", "text", "utt2spk", "feats.scp", "vad.scp")
#: unkeyed metadata files copied verbatim (ESPnet writes them)
META_FILES = ("feats_type", "audio_format")
#: files whose value may be empty (Kaldi allows an empty transcript)
EMPTY_OK_PREFIXES = ("text",)


def file_kind(name: str) -> str | None:
    """'utt', 'reco', 'spk', 'spk2utt' or None for a file name in a data dir."""
    if name == "spk2utt":
        return "spk2utt"
    if name in RECO_FILES:
        return "reco"
    if name in SPK_FILES:
        return "spk"
    if name in UTT_FILES or name.startswith(("utt2", "text")):
        if name.endswith((".tmp", ".bak", "~")):
            return None
        return "utt"
    return None


def sorted_ids(ids) -> list[str]:
    return sorted(ids, key=byte_key)


def spk2utt_from_utt2spk(utt2spk: dict[str, str]) -> dict[str, str]:
    """Invert utt2spk; utterances of a speaker in byte order."""
    groups: dict[str, list[str]] = {}
    for utt in sorted_ids(utt2spk):
        groups.setdefault(utt2spk[utt], []).append(utt)
    return {spk: " ".join(utts) for spk, utts in groups.items()}


@dataclass
class DataDir:
    """All keyed files of a data dir, loaded into ordered dicts.

    ``files`` maps file name (``"text"``, ``"utt2dur"`` ...) to its contents;
    convenience properties give the common ones (empty dict if absent).
    """

    path: Path
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def utt2spk(self) -> dict[str, str]:
        return self.files.get("utt2spk", {})

    @property
    def wav_scp(self) -> dict[str, str]:
        return self.files.get("wav.scp", {})

    @property
    def text(self) -> dict[str, str]:
        return self.files.get("text", {})

    @property
    def segments(self) -> dict[str, tuple[str, float, float]] | None:
        """utt -> (recording, start, end), or None without a segments file."""
        if "segments" not in self.files:
            return None
        out = {}
        for utt, value in self.files["segments"].items():
            f = value.split()
            out[utt] = (f[0], float(f[1]), float(f[2]))
        return out

    @property
    def utts(self) -> list[str]:
        """Utterance ids (of utt2spk, else text, else wav.scp) in byte order."""
        for name in ("utt2spk", "text", "segments", "wav.scp"):
            if name in self.files:
                return sorted_ids(self.files[name])
        return []

    def utt2dur(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.files.get("utt2dur", {}).items()}

    def utt_to_reco(self) -> dict[str, str]:
        seg = self.files.get("segments")
        if seg is None:
            return {u: u for u in self.utts}
        return {u: v.split()[0] for u, v in seg.items()}

    def spk2utt(self) -> dict[str, list[str]]:
        return {s: v.split() for s, v in self.files.get("spk2utt", {}).items()}

    def load_audio(self, utt: str, dtype: str = "float32"):
        """``(samples, sr)`` of one utterance (cut to its segment if any)."""
        from .io import read_wav_scp_entry

        seg = self.segments
        if seg is None:
            return read_wav_scp_entry(self.wav_scp[utt], dtype)
        reco, start, end = seg[utt]
        data, sr = read_wav_scp_entry(self.wav_scp[reco], dtype)
        return data[int(round(start * sr)):int(round(end * sr))], sr

    def subset(self, utts, path: str | os.PathLike | None = None) -> "DataDir":
        """A new DataDir restricted to ``utts`` (speakers/recordings follow)."""
        keep = set(utts)
        files: dict[str, dict[str, str]] = {}
        for name, content in self.files.items():
            if file_kind(name) == "utt":
                files[name] = {k: v for k, v in content.items() if k in keep}
        utt2spk = files.get("utt2spk", {})
        spks = set(utt2spk.values())
        u2r = self.utt_to_reco()
        recos = {u2r.get(u, u) for u in keep}
        for name, content in self.files.items():
            kind = file_kind(name)
            if kind == "reco":
                files[name] = {k: v for k, v in content.items() if k in recos}
            elif kind == "spk":
                files[name] = {k: v for k, v in content.items() if k in spks}
        if "utt2spk" in files:
            files["spk2utt"] = spk2utt_from_utt2spk(utt2spk)
        return DataDir(Path(path) if path else self.path, files, dict(self.meta))

    def write(self, path: str | os.PathLike | None = None) -> Path:
        """Write every file (sorted, atomically) to ``path`` (default: own)."""
        out = Path(path) if path is not None else self.path
        out.mkdir(parents=True, exist_ok=True)
        for name, content in self.files.items():
            write_kv(out / name, content)
        for name, content in self.meta.items():
            with atomic_write(out / name) as f:
                f.write(content)
        return out


def check_destination(dest: str | os.PathLike, sources, tool: str) -> Path:
    """The folder a tool may write to: not an existing file, not one of ``sources``.

    Writing a data dir over its own source would read and replace the same
    files (a subset would shrink its source for good); a destination that is
    a file cannot become a folder. Both raise :class:`DataDirError` naming the paths.
    """
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise DataDirError(f"{tool}: destination {dest} is an existing file, not a folder")
    for src in sources:
        if Path(src).exists() and dest.resolve() == Path(src).resolve():
            raise DataDirError(f"{tool}: destination {dest} is the source {src}; give a new folder")
    return dest


def load_data_dir(path: str | os.PathLike, *, strict: bool = True) -> DataDir:
    """Load every keyed file of a data dir (see module doc for which).

    Raises :class:`~pyutils.datadir.io.DataDirError` (FILE:LINE) on malformed
    lines or duplicate keys, FileNotFoundError if ``path`` is not a folder.
    ``strict=False`` keeps the last value of a duplicated key instead.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"data dir {path} does not exist")
    files, meta = {}, {}
    for entry in sorted(path.iterdir(), key=lambda p: byte_key(p.name)):
        if entry.is_file() and file_kind(entry.name) is not None:
            files[entry.name] = read_kv(
                entry, allow_empty_value=entry.name.startswith(EMPTY_OK_PREFIXES),
                allow_duplicates=not strict)
        elif entry.is_file() and entry.name in META_FILES:
            meta[entry.name] = entry.read_text()
    return DataDir(path, files, meta)
