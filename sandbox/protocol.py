"""Length-prefixed JSON frames over a pipe (never pickle): 4-byte big-endian length, then
UTF-8 JSON. Both sides treat what they read as untrusted and cap its size."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def dumps(obj: Any) -> str:
    return _dumps(obj)


def frame(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    return HEADER.pack(len(data)) + data


def encode(obj: Any) -> bytes:
    return frame(_dumps(obj))


class ProtocolError(Exception):
    pass


def read_exact(fd: int, n: int) -> bytes:
    """Blocking read of exactly ``n`` bytes (worker side). EOF raises EOFError."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_bytes: int) -> Any:
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size))
    if size > max_bytes:
        raise ProtocolError(f"frame of {size} bytes exceeds {max_bytes}")
    return json.loads(read_exact(fd, size).decode("utf-8", "surrogatepass"))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
