"""Reads of a library folder's SQLite records with the standard library alone (``sqlite3``,
``json``): what the CLI's read commands (``skills list``, ``history``, ``outcomes``,
``traces``) need, without importing SQLAlchemy, pydantic, governance or the facade.

A :class:`FolderReader` opens ``records.db`` read-only, and only a store this code would
open without changing it: its schema version is exactly :data:`layout.SCHEMA_VERSION`
(recorded in both ``schema_migrations`` and ``library_meta``, as ``migrations.upgrade``
leaves them) and the tenant was opened before (it has its policy row, so opening the library
would seed nothing). Anything else (no file, an older or newer schema, a damaged file, an
unknown name) makes :func:`open_reader` or the read answer ``None``, and the caller opens the
library the usual way, which migrates, seeds or reports the problem as it always does.

The queries are the SQL store's (``sql_store.SQLRecordStore.list``, ``history``,
``outcome_log``, ``traces_for``), and the rows are the stored columns, JSON columns decoded,
so the two paths print the same thing (tests/test_cli_light.py compares them).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from skill_library.storage.layout import RECORDS_FILE, SCHEMA_VERSION

__all__ = ["FolderReader", "current_when", "open_reader", "outcome_row"]

#: how long a read waits for a writer's lock (milliseconds), as the SQL store does
BUSY_TIMEOUT_SECONDS = 5.0
#: the version rows' JSON columns (SQLAlchemy's ``sa.JSON`` stores them as text)
JSON_COLUMNS = ("parameters", "tools", "depends_on", "provenance")

_VERSIONS = (
    "SELECT v.*, p.when_text AS derived_when, p.version AS derived_version "
    "FROM skill_versions AS v LEFT OUTER JOIN skill_profiles AS p "
    "ON p.tenant = v.tenant AND p.name = v.name"
)


def current_when(row: Any) -> str:
    """A version row's ``when``: the skill's derived ``when`` (its profile) when it was
    derived for this version, else the version's own text (``storage.rows.row_to_skill``)."""
    derived = row.get("derived_when")
    return str(derived if derived and row.get("derived_version") == row["version"] else row["when_text"])


def outcome_row(r: Any) -> dict[str, Any]:
    """One entry of an outcome log from its stored row (``SQLRecordStore.outcome_log``)."""
    return {
        "version": r["version"],
        "success": bool(r["success"]),
        "kind": r["kind"] or ("success" if r["success"] else "failure"),
        "reason": r["reason"],
        "origin": r["origin"],
        "trace_id": r["trace_id"],
        "recorded_at": r["recorded_at"],
    }


def _version_row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    for column in JSON_COLUMNS:
        if data.get(column) is not None:
            data[column] = json.loads(data[column])
    return data


class FolderReader:
    """Read-only queries of one tenant's records on an open SQLite connection, inside one
    read transaction (one snapshot for every query). Made by :func:`open_reader`."""

    def __init__(self, conn: sqlite3.Connection, tenant: str) -> None:
        self._conn = conn
        self.tenant = tenant

    def _rows(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        return list(self._conn.execute(sql, params))

    def current_versions(self, status: str | None = None) -> list[dict[str, Any]]:
        """Every skill's active version row, by name (``SQLRecordStore.list``)."""
        sql = (_VERSIONS + " JOIN skills AS s ON s.tenant = v.tenant AND s.name = v.name "
               "AND s.active_version = v.version WHERE v.tenant = ?")
        params: list[Any] = [self.tenant]
        if status is not None:
            sql += " AND v.status = ?"
            params.append(status)
        return [_version_row(r) for r in self._rows(sql + " ORDER BY v.name", *params)]

    def versions(self, name: str) -> list[dict[str, Any]] | None:
        """Every version row of ``name``, oldest first (None: no such skill)."""
        rows = self._rows(_VERSIONS + " WHERE v.tenant = ? AND v.name = ? ORDER BY v.version", self.tenant, name)
        return [_version_row(r) for r in rows] or None

    def _known(self, name: str) -> bool:
        return bool(self._rows("SELECT 1 FROM skills WHERE tenant = ? AND name = ?", self.tenant, name))

    def outcomes(self, name: str) -> list[dict[str, Any]] | None:
        """The outcome log of ``name``, oldest first, ``recorded_at`` as the naive datetime
        SQLAlchemy reads from SQLite (None: no such skill)."""
        if not self._known(name):
            return None
        rows = self._rows("SELECT * FROM outcomes WHERE tenant = ? AND name = ? ORDER BY id", self.tenant, name)
        log = []
        for r in rows:
            entry = outcome_row(r)
            entry["recorded_at"] = datetime.fromisoformat(entry["recorded_at"])
            log.append(entry)
        return log

    def trace_bodies(self, name: str) -> list[dict[str, Any]] | None:
        """The stored bodies of ``name``'s traces (``SQLRecordStore.traces_for``: learned
        from, named by an outcome, or made by its runs), unordered (None: no such skill)."""
        versions = self.versions(name)
        if versions is None:
            return None
        ids: set[str] = set()
        for version in versions:
            ids.update((version.get("provenance") or {}).get("trace_ids") or [])
        ids.update(r[0] for r in self._rows(
            "SELECT trace_id FROM outcomes WHERE tenant = ? AND name = ? AND trace_id IS NOT NULL",
            self.tenant, name))
        # SQLAlchemy's startswith(autoescape=True): LIKE, '/' escaping '%', '_' and itself
        prefix = f"skill:{name}@".replace("/", "//").replace("%", "/%").replace("_", "/_")
        bodies = {r[0]: r[1] for r in self._rows(
            "SELECT id, body FROM traces WHERE tenant = ? AND source LIKE ? ESCAPE '/'", self.tenant, prefix + "%")}
        chosen = sorted(ids)
        batch = 500
        for start in range(0, len(chosen), batch):
            part = chosen[start:start + batch]
            bodies.update((r[0], r[1]) for r in self._rows(
                f"SELECT id, body FROM traces WHERE tenant = ? AND id IN ({', '.join('?' * len(part))})",
                self.tenant, *part))
        return [json.loads(b) for b in bodies.values()]


    def trace_body(self, trace_id: str) -> dict[str, Any] | None:
        """The stored body of one trace of this tenant (None: no such trace)."""
        rows = self._rows("SELECT body FROM traces WHERE tenant = ? AND id = ?", self.tenant, trace_id)
        return json.loads(rows[0][0]) if rows else None


def _version_of(conn: sqlite3.Connection) -> set[int]:
    found = {int(r[0] or 0) for r in conn.execute("SELECT MAX(version) FROM schema_migrations")}
    found.update(int(r[0]) for r in conn.execute("SELECT value FROM library_meta WHERE key = 'schema_version'"))
    return found


@contextmanager
def open_reader(folder: Path, tenant: str) -> Iterator[FolderReader | None]:
    """A :class:`FolderReader` of ``folder``'s records for ``tenant``, or None when the
    library must be opened the usual way (see the module's docstring)."""
    records = folder / RECORDS_FILE
    if not records.is_file():
        yield None
        return
    try:
        conn = sqlite3.connect(f"{records.resolve().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except sqlite3.Error:
        yield None
        return
    try:
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN")  # one snapshot for every query
            usable = _version_of(conn) == {SCHEMA_VERSION} and bool(list(
                conn.execute("SELECT 1 FROM policies WHERE tenant = ?", (tenant,))))
        except sqlite3.Error:
            usable = False
        yield FolderReader(conn, tenant) if usable else None
    finally:
        conn.close()
