"""Maintenance of a folder index's Chroma file (``chroma.sqlite3``) that Chroma's API does
not offer: scrubbing an erased subject from its log, merging its full-text index and
vacuuming it (skill_library.erasure; the caller holds the folder's client closed), and
reading which HNSW segment folders are a collection's and zeroing their unused slots
(skill_library.vector_index)."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path
from typing import Any, Protocol

#: the head of hnswlib's ``header.bin`` as Chroma's local HNSW segment writes it (format 1):
#: format, level-0 offset, capacity, element count, bytes per element, label offset
HNSW_HEADER = struct.Struct("<i5Q")
HNSW_HEADER_FORMAT = 1


class Matching(Protocol):
    """What the purge asks of a subject's matcher (skill_library.erasure.Matcher)."""

    def text(self, text: str) -> bool:
        """Whether ``text`` names the subject."""

    def scrub(self, value: Any) -> Any:
        """``value`` with the subject replaced."""


def purge(path: Path, match: Matching | None, collection: str | None) -> None:
    """Scrub the subject (``match``) from the log entries of ``collection`` in the Chroma
    file ``path``, merge its full-text index's segments and ``VACUUM`` it."""
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        if match is not None and collection is not None:
            # Chroma's log keeps every upsert's document; an entry of a document that names the
            # subject (deleted from the collection above: a later log entry deletes it) keeps
            # its place in the log, with the value scrubbed from its text. Only this tenant's
            # collection's entries: another tenant's are not this forget's to change.
            found = conn.execute("SELECT id FROM collections WHERE name = ?", (collection,)).fetchone()
            topic = f"%/{found[0]}" if found else None
            rows = conn.execute("SELECT seq_id, metadata FROM embeddings_queue WHERE topic LIKE ?",
                                (topic,)).fetchall() if topic else []
            for seq_id, meta in rows:
                if meta and match.text(meta):
                    conn.execute("UPDATE embeddings_queue SET metadata = ? WHERE seq_id = ?",
                                 (json.dumps(match.scrub(json.loads(meta))), seq_id))
        try:  # the full-text index keeps deleted documents' terms until its segments are merged
            conn.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
        except sqlite3.OperationalError:  # a Chroma without that table: nothing to merge
            pass
        conn.execute("VACUUM")
    finally:
        conn.close()


def vector_segments(path: Path, collection_id: str) -> list[str]:
    """The vector segment ids (= folder names beside ``path``) of a collection, read from
    Chroma's catalog in ``path`` (read-only; [] when there is no file yet)."""
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'",
                            (collection_id,)).fetchall()
    finally:
        conn.close()
    return [str(row[0]) for row in rows]


def zero_unused_hnsw_slots(segment: Path) -> int:
    """Zero the slots past the element count of one HNSW segment folder (``data_level0.bin``
    and ``length.bin``); the bytes zeroed. A folder with no header, a header of another
    format, or files whose sizes do not match the header's capacity are left as they are
    (0): nothing is written that the format does not say is unused."""
    header = Path(segment) / "header.bin"
    try:
        head = header.read_bytes()[:HNSW_HEADER.size]
    except OSError:
        return 0
    if len(head) < HNSW_HEADER.size:
        return 0
    fmt, _offset, capacity, count, per_element, _label = HNSW_HEADER.unpack(head)
    if fmt != HNSW_HEADER_FORMAT or count > capacity:
        return 0
    zeroed = 0
    for name, width in (("data_level0.bin", per_element), ("length.bin", 4)):
        path = Path(segment) / name
        try:
            if path.stat().st_size != capacity * width:
                continue
            with open(path, "r+b") as handle:
                handle.seek(count * width)
                tail = handle.read()
                if tail.count(0) == len(tail):
                    continue
                handle.seek(count * width)
                handle.write(bytes(len(tail)))
                zeroed += len(tail)
        except OSError:
            continue
    return zeroed
