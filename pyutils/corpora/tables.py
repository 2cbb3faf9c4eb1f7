"""Columnar and sharded corpus releases: parquet, Hugging Face ``save_to_disk``
folders, WebDataset tar shards.

* :func:`iter_table_rows` -- rows of a parquet file (read one row group at a
  time with pyarrow) or of an Arrow IPC file as written by ``datasets``'
  ``save_to_disk`` (``data-00000-of-00001.arrow``), as :class:`Row` objects
  whose "line" is the 1-based row number in that file.
* :func:`find_table_files` -- the parquet shards / arrow files under a root,
  with the split each belongs to (``train-00000-of-00002.parquet``,
  ``data/test/*.parquet``, ``<root>/<split>/data-*.arrow`` next to a
  ``dataset_dict.json``).
* :func:`materialize_audio` -- an HF ``Audio`` cell (``{"bytes", "path"}``)
  becomes a file under a per-corpus folder (written once, atomically).
* :func:`iter_webdataset` -- samples of a WebDataset shard, streamed member by
  member with :mod:`tarfile` (``r|*``: no seeking, nothing unpacked but the
  audio of each sample).

``datasets`` itself is not needed: a save-to-disk folder is Arrow IPC stream
files plus JSON metadata, which pyarrow reads directly.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from .common import AUDIO_EXTS, PrepError, Row, safe_name

SPLIT_NAMES = ("train", "dev", "validation", "valid", "val", "test", "other", "eval")


def _pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.ipc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:  # pragma: no cover -- pyarrow is pinned in tools/requirements.txt
        raise PrepError("reading parquet/arrow needs pyarrow (pip install pyarrow)") from None
    import pyarrow

    return pyarrow


def split_of(path: Path, root: Path) -> str:
    """Split of a shard: a folder named like a split (``data/test/x.parquet``),
    else the file-name prefix (``train-00000-of-00001.parquet``), else the stem."""
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    for part in reversed(rel.parts[:-1]):
        if part.lower() in SPLIT_NAMES:
            return part
    head = path.name.split("-")[0].split(".")[0]
    if head.lower() in SPLIT_NAMES:
        return head
    return path.stem.split("-")[0]


def find_table_files(root: Path) -> List[Tuple[str, Path]]:
    """(split, file) for every ``*.parquet`` and save-to-disk ``*.arrow`` file
    under ``root``, sorted. Arrow files are only taken from folders holding a
    ``state.json`` (the save-to-disk marker), so caches are not picked up."""
    root = Path(root)
    out = [(split_of(p, root), p) for p in sorted(root.rglob("*.parquet")) if p.is_file()]
    for state in sorted(root.rglob("state.json")):
        for p in sorted(state.parent.glob("*.arrow")):
            split = state.parent.name if state.parent != root else split_of(p, root)
            out.append((split, p))
    return out


def iter_table_rows(path: Path, columns: Optional[Sequence[str]] = None) -> Iterator[Row]:
    """Rows of one parquet or save-to-disk arrow file, one batch at a time."""
    pa = _pyarrow()
    path = Path(path)
    n = 0
    try:
        if path.suffix == ".parquet":
            pf = pa.parquet.ParquetFile(str(path))
            batches = pf.iter_batches(batch_size=256, columns=list(columns) if columns else None)
        else:
            batches = _arrow_batches(path)
        for batch in batches:
            for rec in batch.to_pylist():
                n += 1
                yield Row(rec, str(path), n)
    except PrepError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise PrepError(f"cannot read table: {exc}", path, n + 1 if n else None) from None


def _arrow_batches(path: Path):
    import pyarrow as pa

    with open(path, "rb") as f:
        head = f.read(6)
    source = pa.memory_map(str(path), "r")
    # save_to_disk writes the IPC *stream* format; plain IPC files start "ARROW1"
    reader = pa.ipc.open_file(source) if head == b"ARROW1" else pa.ipc.open_stream(source)
    if hasattr(reader, "num_record_batches") and head == b"ARROW1":
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
    else:
        yield from reader


def sniff_audio_ext(data: bytes, name: str = "") -> str:
    """File extension for audio bytes: the name's, else from the magic number."""
    suffix = Path(name).suffix.lower() if name else ""
    if suffix in AUDIO_EXTS:
        return suffix
    if data[:4] == b"RIFF":
        return ".wav"
    if data[:4] == b"fLaC":
        return ".flac"
    if data[:4] == b"OggS":
        return ".ogg"
    if data[4:8] == b"ftyp":
        return ".m4a"
    return ".mp3"


def write_once(dest: Path, data: bytes) -> Path:
    """Write ``data`` to ``dest`` unless an identical-size file is there already
    (re-runs reuse what was extracted); temp file + rename."""
    if dest.is_file() and dest.stat().st_size == len(data):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    return dest


def materialize_audio(cell, outdir: Path, stem: str, base: Optional[Path], row: Row) -> Path:
    """Absolute path of the audio of an HF ``Audio`` cell.

    Embedded bytes are written to ``outdir/<stem><ext>``; a cell holding only a
    path is resolved against ``base``. Anything else is an error naming the row.
    """
    if isinstance(cell, str) and cell:
        return Path(os.path.abspath(Path(base or ".") / cell))
    if not isinstance(cell, dict):
        raise row.error("no audio in row (expected an Audio cell with 'bytes' or 'path')")
    data = cell.get("bytes")
    name = cell.get("path") or ""
    if data:
        if not isinstance(data, (bytes, bytearray)):
            raise row.error("audio 'bytes' is not binary")
        dest = Path(outdir) / f"{safe_name(stem)}{sniff_audio_ext(bytes(data), name)}"
        return Path(os.path.abspath(write_once(dest, bytes(data))))
    if name:
        return Path(os.path.abspath(Path(base or ".") / name))
    raise row.error("no audio in row (Audio cell has neither 'bytes' nor 'path')")


def audio_column(rec: dict, preferred: Sequence[str] = ("audio",)) -> Optional[str]:
    """Name of the column holding audio: the first of ``preferred`` present,
    else the first column whose value is a dict with 'bytes'/'path'."""
    for name in preferred:
        if name in rec:
            return name
    for name, value in rec.items():
        if isinstance(value, dict) and ("bytes" in value or "path" in value):
            return name
    return None


# --------------------------------------------------------------------------
# WebDataset
# --------------------------------------------------------------------------

def _wds_key(member_name: str) -> Tuple[str, str]:
    """WebDataset convention: the key is the path up to the first dot of the
    base name; the rest is the field (``a/b.c.json`` -> ``a/b``, ``c.json``)."""
    d, _, base = member_name.rpartition("/")
    stem, dot, ext = base.partition(".")
    return (f"{d}/{stem}" if d else stem), ext.lower()


def iter_webdataset(shard: Path, audio_dir: Path) -> Iterator[Tuple[str, Optional[dict], Optional[Path], int]]:
    """(key, json metadata or None, extracted audio path or None, sample number)
    per sample of a WebDataset shard.

    The tar is read as a stream; a sample's members are consecutive (the
    WebDataset rule), so each sample is yielded as soon as its key changes.
    Audio members are written to ``audio_dir/<key><ext>`` (once; a re-run
    reuses them). Only regular files are read (links and devices are skipped),
    and keys are flattened with :func:`safe_name`, so nothing escapes
    ``audio_dir``. A malformed JSON member is an error naming shard and member.
    """
    shard = Path(shard)
    cur_key: Optional[str] = None
    meta: Optional[dict] = None
    audio: Optional[Path] = None
    n = 0
    try:
        tf = tarfile.open(str(shard), mode="r|*")
    except (tarfile.TarError, OSError) as exc:
        raise PrepError(f"not a readable tar shard: {exc}", shard) from None
    with tf:
        try:
            for member in tf:
                if not member.isfile():
                    continue
                key, field = _wds_key(member.name)
                if key != cur_key:
                    if cur_key is not None:
                        n += 1
                        yield cur_key, meta, audio, n
                    cur_key, meta, audio = key, None, None
                if field == "json":
                    raw = tf.extractfile(member).read()
                    try:
                        obj = json.loads(raw.decode("utf-8-sig"))
                    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                        raise PrepError(f"member {member.name}: malformed JSON ({exc})",
                                        shard, n + 1) from None
                    if not isinstance(obj, dict):
                        raise PrepError(f"member {member.name}: expected a JSON object",
                                        shard, n + 1)
                    meta = obj
                elif "." + field.rsplit(".", 1)[-1] in AUDIO_EXTS:
                    dest = Path(audio_dir) / f"{safe_name(key)}.{field.rsplit('.', 1)[-1]}"
                    if dest.is_file() and dest.stat().st_size == member.size:
                        audio = Path(os.path.abspath(dest))
                    else:
                        audio = Path(os.path.abspath(
                            write_once(dest, tf.extractfile(member).read())))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise PrepError(f"truncated or damaged tar shard after {n} samples: {exc}",
                            shard) from None
    if cur_key is not None:
        n += 1
        yield cur_key, meta, audio, n


def shard_files(root: Path) -> List[Path]:
    return sorted(p for p in Path(root).rglob("*.tar") if p.is_file())

