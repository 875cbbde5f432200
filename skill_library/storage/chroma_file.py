"""Maintenance of a folder index's Chroma file (``chroma.sqlite3``) that Chroma's API does
not offer: scrubbing an erased subject from its log, merging its full-text index and
vacuuming it (skill_library.erasure; the caller holds the folder's client closed), and
reading which HNSW segment folders are a collection's (skill_library.vector_index)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Protocol


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
