"""Small I/O helpers for Kaldi data directories.

* :func:`read_kv` / :func:`write_kv` -- ``<key> <value...>`` files (text,
  utt2spk, wav.scp, utt2dur, ...). Reading keeps file order and reports
  malformed lines as ``FILE:LINE: message``; writing sorts keys in byte order
  (what ``LC_ALL=C sort`` gives) and is atomic.
* :func:`read_wav_scp_entry` -- load the audio of one wav.scp value, which may
  be a path, a Kaldi ark offset (``foo.ark:123``) or a pipe (``sox a.flac -t
  wav - |``), as Kaldi allows.
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from pyutils.wav_header import wav_truncation
from pyutils.io import atomic_write


class DataDirError(ValueError):
    """A malformed data-dir file; the message names the file and line."""


class AudioReadError(OSError):
    """A wav.scp entry whose audio cannot be read."""


def byte_key(s: str) -> bytes:
    """Sort key giving ``LC_ALL=C`` (byte) order."""
    return s.encode("utf-8", "surrogateescape")


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` without the newline; rejects CR and bad UTF-8."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            raw = raw.rstrip(b"\n")
            if raw.endswith(b"\r"):
                raise DataDirError(f"{path}:{lineno}: line ends with a carriage return "
                                   "(Windows line endings); convert with dos2unix")
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataDirError(f"{path}:{lineno}: not valid UTF-8 ({e.reason} at byte "
                                   f"{e.start})") from None


def read_kv(path: str | os.PathLike, *, allow_empty_value: bool = False,
            allow_duplicates: bool = False) -> dict[str, str]:
    """Read a ``<key> <value>`` file into an ordered dict (file order).

    The value is the rest of the line after the first run of whitespace
    (so ``text`` transcripts and ``wav.scp`` pipes keep their spaces).
    Raises :class:`DataDirError` naming FILE:LINE for an empty line, a line
    without a value (unless ``allow_empty_value``, as Kaldi allows for
    ``text``) or a repeated key (unless ``allow_duplicates``: last wins).
    """
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, line in iter_lines(path):
        if not line.strip():
            raise DataDirError(f"{path}:{lineno}: empty line")
        if line[0].isspace():
            raise DataDirError(f"{path}:{lineno}: line starts with whitespace: {line[:60]!r}")
        parts = line.split(None, 1)
        key = parts[0]
        value = parts[1].strip() if len(parts) > 1 else ""
        if not value and not allow_empty_value:
            raise DataDirError(f"{path}:{lineno}: expected '<key> <value>', got {line[:60]!r}")
        if key in out and not allow_duplicates:
            raise DataDirError(f"{path}:{lineno}: duplicate key {key!r} "
                               f"(first on line {first_line[key]})")
        first_line.setdefault(key, lineno)
        out[key] = value
    return out


def read_list(path: str | os.PathLike) -> list[str]:
    """First field of each non-empty line (an id list, e.g. for --utt-list)."""
    ids = []
    for _lineno, line in iter_lines(path):
        if line.strip():
            ids.append(line.split()[0])
    return ids


def write_kv(path: str | os.PathLike, mapping: Mapping[str, str] | Iterable[tuple[str, str]],
             *, sort: bool = True) -> None:
    """Atomically write ``<key> <value>`` lines, keys in byte (LC_ALL=C) order."""
    items = list(mapping.items()) if isinstance(mapping, Mapping) else list(mapping)
    if sort:
        items.sort(key=lambda kv: byte_key(kv[0]))
    with atomic_write(path) as f:
        for key, value in items:
            if not key or any(c.isspace() for c in key):
                raise DataDirError(f"{path}: invalid key {key!r} (empty or with whitespace)")
            value = str(value)
            if "\n" in value:
                raise DataDirError(f"{path}: value for {key!r} contains a newline")
            f.write(f"{key} {value}\n" if value != "" else f"{key}\n")


def is_pipe(entry: str) -> bool:
    return entry.rstrip().endswith("|")


def _ark_offset(entry: str) -> bool:
    """``foo.ark:1234`` (a Kaldi ark with byte offset)?"""
    head, sep, tail = entry.rpartition(":")
    return bool(sep) and tail.isdigit() and Path(head).is_file() and not Path(entry).exists()


def run_pipe(entry: str, timeout: float | None = 600) -> bytes:
    """Run a wav.scp pipe (``cmd ... |``) and return its stdout."""
    cmd = entry.rstrip()[:-1]
    try:
        proc = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AudioReadError(f"pipe timed out after {timeout} s: {entry}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise AudioReadError(f"pipe exited with code {proc.returncode}: {entry}"
                             + (f" ({err[-1]})" if err else ""))
    if not proc.stdout:
        raise AudioReadError(f"pipe produced no output: {entry}")
    return proc.stdout


def _parse_wav_bytes(data: bytes, entry: str, dtype: str):
    import soundfile as sf

    try:
        return sf.read(io.BytesIO(data), dtype=dtype, always_2d=False)
    except Exception as first:  # noqa: BLE001 - fall back below
        # Programs writing WAV to a pipe cannot seek back to fill in the data
        # size (sox, ffmpeg write 0 or 0xFFFFFFFF); libsndfile may refuse such
        # a header, so patch the RIFF/data sizes to the real length and retry.
        if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
            fixed = bytearray(data)
            fixed[4:8] = (len(data) - 8).to_bytes(4, "little")
            pos = 12
            while pos + 8 <= len(fixed):
                cid = bytes(fixed[pos:pos + 4])
                size = int.from_bytes(fixed[pos + 4:pos + 8], "little")
                if cid == b"data":
                    fixed[pos + 4:pos + 8] = (len(fixed) - pos - 8).to_bytes(4, "little")
                    break
                pos += 8 + size + (size & 1)
            try:
                return sf.read(io.BytesIO(bytes(fixed)), dtype=dtype, always_2d=False)
            except Exception:  # noqa: BLE001
                pass
        raise AudioReadError(f"cannot decode audio from {entry}: {first}") from None


def read_wav_scp_entry(entry: str, dtype: str = "float32") -> tuple[np.ndarray, int]:
    """Load the audio of one wav.scp value; return ``(samples, sample_rate)``.

    ``entry`` is a path (any format libsndfile reads: wav, flac, ogg, ...), a
    command ending in ``|`` whose stdout is audio (``sox x.mp3 -t wav - |``),
    or ``foo.ark:OFFSET``. Mono audio gives a 1-D array, multi-channel
    ``(frames, channels)``. ``dtype='float32'`` scales to [-1, 1];
    ``'int16'`` keeps PCM values. Raises :class:`AudioReadError`.
    """
    import soundfile as sf

    entry = entry.strip()
    if is_pipe(entry):
        return _parse_wav_bytes(run_pipe(entry), entry, dtype)
    if _ark_offset(entry):
        import kaldiio

        try:
            sr, data = kaldiio.load_mat(entry)
        except Exception as e:  # noqa: BLE001
            raise AudioReadError(f"cannot read ark entry {entry}: {e}") from None
        data = np.asarray(data)
        if dtype.startswith("float") and np.issubdtype(data.dtype, np.integer):
            data = data.astype(dtype) / 32768.0
        return data.astype(dtype, copy=False), int(sr)
    if not os.path.exists(entry):
        raise AudioReadError(f"no such file: {entry}")
    try:
        return sf.read(entry, dtype=dtype, always_2d=False)
    except Exception as e:  # noqa: BLE001
        raise AudioReadError(f"cannot read audio file {entry}: {e}") from None


def wav_scp_entry_duration(entry: str) -> float:
    """Duration in seconds of one wav.scp value (header only for plain files)."""
    import soundfile as sf

    entry = entry.strip()
    if not is_pipe(entry) and not _ark_offset(entry):
        if not os.path.exists(entry):
            raise AudioReadError(f"no such file: {entry}")
        try:
            info = sf.info(entry)
        except Exception as e:  # noqa: BLE001
            raise AudioReadError(f"cannot read audio file {entry}: {e}") from None
        if info.frames <= 0:
            raise AudioReadError(f"audio file has no samples: {entry}")
        truncated = wav_truncation(entry)
        if truncated:
            raise AudioReadError(f"{truncated}: {entry}")
        return info.frames / info.samplerate
    data, sr = read_wav_scp_entry(entry)
    return len(data) / sr
