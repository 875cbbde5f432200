"""Length-prefixed JSON frames over a pipe (never pickle): 4-byte big-endian length, then
UTF-8 JSON. Both sides treat what they read as untrusted and cap its size. Strings are
sent and read as valid UTF-8 only (lone surrogates and invalid bytes are replaced)."""

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
    # Lone surrogates ("\ud800", legal in a Python str, not in UTF-8) become "?": no
    # string that crosses the pipe breaks the receiver's later .encode() or file write.
    data = text.encode("utf-8", "replace")
    return HEADER.pack(len(data)) + data


def encode(obj: Any) -> bytes:
    return frame(_dumps(obj))


class ProtocolError(Exception):
    pass


class FrameReader:
    """Buffered, blocking frame reader (worker side): usually one ``read`` per frame."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()

    def _fill(self, need: int) -> None:
        while len(self.buf) < need:
            chunk = os.read(self.fd, max(need - len(self.buf), 1 << 16))
            if not chunk:
                raise EOFError
            self.buf += chunk

    def read(self, max_bytes: int) -> Any:
        self._fill(HEADER.size)
        (size,) = HEADER.unpack_from(self.buf)
        if size > max_bytes:
            raise ProtocolError(f"frame of {size} bytes exceeds {max_bytes}")
        self._fill(HEADER.size + size)
        payload = bytes(self.buf[HEADER.size : HEADER.size + size])
        del self.buf[: HEADER.size + size]
        return json.loads(payload.decode("utf-8", "replace"))


def utf8_len(text: str) -> int:
    """The size of ``text`` on the wire (what every byte cap counts)."""
    return len(text.encode("utf-8", "replace"))


def utf8_head(text: str, size: int) -> str:
    """A prefix of ``text`` of whole characters whose UTF-8 encoding is at least ``size``
    bytes (at most ``size`` + 3) when ``text`` is that long, else ``text`` itself."""
    data = text.encode("utf-8", "replace")
    if len(data) <= size:
        return data.decode("utf-8")
    return data[: size + 3].decode("utf-8", "ignore")


def utf8_cut(text: str, size: int) -> str:
    """The longest prefix of ``text`` of at most ``size`` UTF-8 bytes (whole characters)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= size:
        return text
    return data[:size].decode("utf-8", "ignore")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
