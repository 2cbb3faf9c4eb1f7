"""Read a CTranslate2 model file (``model.bin``) into named numpy arrays.

CTranslate2 only writes this format (``ctranslate2.specs.ModelSpec._serialize``) and
loads it in C++; no library reads it back into Python, so this module does, following
the writer's layout (binary version 6):

    u32 version | str spec_name | u32 revision | u32 n_vars
    n_vars x [ str name | u8 rank | rank x u32 dim | u8 dtype | u32 nbytes | bytes ]
    u32 n_aliases | n_aliases x [ str alias | str target ]

``str`` is ``u16 length (incl. NUL) | utf-8 bytes | NUL``; integers little-endian.
dtype ids follow ``ctranslate2/types.h``: float32, int8, int16, int32, float16, bfloat16.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
_BFLOAT16 = 5
SUPPORTED_VERSIONS = (5, 6)
_MAX_RANK = 8


class CT2FormatError(ValueError):
    """A ``model.bin`` that is not a CTranslate2 model this reader understands."""


@dataclass
class CT2Model:
    spec: str
    revision: int
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> np.ndarray:
        """Variable ``name``, following an alias (e.g. a projection tied to embeddings)."""
        name = self.aliases.get(name, name)
        return self.variables[name]


class _Reader:
    def __init__(self, path: str, data: bytes):
        self.path, self.data, self.pos = path, data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CT2FormatError(f"{self.path}: truncated at byte {self.pos} "
                                 f"(wanted {n} more of {len(self.data)})")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u(self, fmt: str) -> int:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.u("H")
        raw = self.take(n)
        if not raw or raw[-1] != 0:
            raise CT2FormatError(f"{self.path}: bad string at byte {self.pos - n}")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as e:
            raise CT2FormatError(f"{self.path}: non-UTF-8 name at byte {self.pos - n}") from e


def read_ct2_model(path: str | os.PathLike) -> CT2Model:
    """Parse ``path`` (a CTranslate2 ``model.bin``); bfloat16 is widened to float32."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        r = _Reader(path, f.read())
    version = r.u("I")
    if version not in SUPPORTED_VERSIONS:
        raise CT2FormatError(f"{path}: CTranslate2 binary version {version} is not supported "
                             f"({SUPPORTED_VERSIONS}); is this a CTranslate2 model.bin?")
    model = CT2Model(spec=r.string(), revision=r.u("I"))
    for _ in range(r.u("I")):
        name = r.string()
        rank = r.u("B")
        if rank > _MAX_RANK:
            raise CT2FormatError(f"{path}: variable {name!r} has rank {rank}")
        shape = tuple(r.u("I") for _ in range(rank))
        dtype_id = r.u("B")
        nbytes = r.u("I")
        raw = r.take(nbytes)
        if dtype_id == _BFLOAT16:
            arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif dtype_id in _DTYPES:
            arr = np.frombuffer(raw, dtype=_DTYPES[dtype_id])
        else:
            raise CT2FormatError(f"{path}: variable {name!r} has unknown dtype id {dtype_id}")
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise CT2FormatError(f"{path}: variable {name!r}: {arr.size} values for shape {shape}")
        model.variables[name] = arr.reshape(shape)
    for _ in range(r.u("I")):
        alias = r.string()
        model.aliases[alias] = r.string()
    if r.pos != len(r.data):
        raise CT2FormatError(f"{path}: {len(r.data) - r.pos} trailing bytes")
    return model
