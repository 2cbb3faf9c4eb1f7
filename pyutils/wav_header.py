"""Truncated WAV files: the RIFF header against the bytes actually present.

libsndfile (soundfile) reads a WAV whose ``data`` chunk claims more bytes
than the file holds without complaint: it just returns fewer frames. A file
cut short by a full disk or a killed writer then passes every check. This
module reads only the RIFF chunk headers (standard library only, so the text
scorers can use it without numpy).
"""

from __future__ import annotations

import os
import struct


def wav_truncation(path: str | os.PathLike) -> str | None:
    """A message if ``path`` is a RIFF/WAVE file whose ``data`` chunk is cut
    short (header size > bytes present), else None (also for non-WAV files and
    for streaming headers that leave the size open: 0 or 0xFFFFFFFF)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(12)
            if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
                return None
            if head[:4] == b"RF64":
                return None  # sizes live in a ds64 chunk; libsndfile checks those
            pos = 12
            while pos + 8 <= size:
                f.seek(pos)
                chunk = f.read(8)
                if len(chunk) < 8:
                    return None
                cid, csize = chunk[:4], struct.unpack("<I", chunk[4:])[0]
                if cid == b"data":
                    if csize in (0, 0xFFFFFFFF):
                        return None
                    present = size - (pos + 8)
                    if present < csize:
                        return (f"truncated WAV: the header promises {csize} data bytes, "
                                f"only {present} are present")
                    return None
                pos += 8 + csize + (csize & 1)  # chunks are word aligned
            return None
    except OSError:
        return None
