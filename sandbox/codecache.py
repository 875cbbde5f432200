"""Compiled code one Sandbox keeps for its own later runs (host side, opt-in).

A run's child compiles the sources the host has no code for and, before any skill code
runs, sends the marshalled code objects back in its first frame (``compiled``). The host
keeps them here, per Sandbox, least recently used first out, capped in bytes; a later run
of the same source gets the code with its request and loads it (``marshal.loads``, a few
microseconds) instead of compiling it again.

Nothing of this lives in the zygote: no run can grow it, make it spend CPU, or plant
interned strings that later children inherit. The cache is off by default because runs
that share it can time each other's sources (a cached source skips its compile): turn it
on only for a Sandbox that serves one trust domain (the library: one Sandbox per tenant).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

#: What a Sandbox with ``code_cache=True`` keeps at most (base64 text of marshalled code
#: objects plus their name lists).
CODE_CACHE_BYTES = 16 * 1024 * 1024
#: The largest ``compiled`` frame a child sends (it leaves out what does not fit); below
#: the smallest reply frame the host accepts (``host.REPLY_FRAME_SLACK_BYTES``).
MAX_CODE_FRAME_CHARS = 960 * 1024
#: Names a cached entry may list as called or defined (a 512 KiB source has fewer).
MAX_ENTRY_NAMES = 65536
_MAX_NAME_CHARS = 1024


def entry_size(entry: dict[str, Any]) -> int:
    """What an entry counts against the caps (characters of its code and names)."""
    return len(entry["code"]) + sum(len(n) + 3 for n in entry["called"]) + sum(
        len(n) + 3 for n in entry["defined"]
    )


def valid_entry(entry: Any) -> dict[str, Any] | None:
    """``entry`` as the cache keeps it when it has the shape a child sends, else None:
    ``{"code": base64 text, "called": [names], "defined": [names]}``."""
    if not isinstance(entry, dict) or set(entry) != {"code", "called", "defined"}:
        return None
    code, called, defined = entry["code"], entry["called"], entry["defined"]
    if not isinstance(code, str) or not code or len(code) > MAX_CODE_FRAME_CHARS:
        return None
    if not code.isascii():
        return None
    for names in (called, defined):
        if not isinstance(names, list) or len(names) > MAX_ENTRY_NAMES:
            return None
        if not all(isinstance(n, str) and 0 < len(n) <= _MAX_NAME_CHARS for n in names):
            return None
    return {"code": code, "called": list(called), "defined": list(defined)}


class CodeCache:
    """Source digest -> compiled entry, least recently used first out, at most
    ``max_bytes`` of entries (:func:`entry_size`). Thread-safe."""

    def __init__(self, max_bytes: int = CODE_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, digest: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._entries.get(digest)
            if found is None:
                return None
            self._entries.move_to_end(digest)
            return found[0]

    def put(self, digest: str, entry: dict[str, Any]) -> None:
        size = entry_size(entry)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(digest, None)
            if old is not None:
                self.size -= old[1]
            self._entries[digest] = (entry, size)
            self.size += size
            while self.size > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.size -= dropped
