"""Whether a database holds sound skill-library records.

Checked when a store opens (a foreign, empty-schema or newer database is refused, then
the missing migrations are applied) and on demand (SQLite's ``quick_check``, the tables,
the schema version).
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from skill_library.errors import LibraryNotFoundError, RecordStoreCorruptError, SchemaVersionError
from skill_library.storage.tables import SCHEMA_VERSION, meta_table, metadata, skills_table


def open_records(conn: Connection, *, create: bool, sqlite: bool, url: str, path: Path | None) -> None:
    """Refuse a database that is not one this code reads, then upgrade it on ``conn``.

    :class:`RecordStoreCorruptError` when it lacks the library's tables or its schema
    version, :class:`SchemaVersionError` when it is newer than :data:`SCHEMA_VERSION`,
    :class:`LibraryNotFoundError` for an empty server database without ``create``.
    """
    from skill_library.storage import migrations

    present = set(sa.inspect(conn).get_table_names())
    # no table at all: a database another process is creating right now (or a new one)
    if present - {migrations.migrations_table.name}:
        missing = {skills_table.name, meta_table.name} - present
        if missing:
            where = path if path is not None else url
            raise RecordStoreCorruptError(
                where, f"is not a skill-library records file (no {', '.join(sorted(missing))} table)"
            )
        found = migrations.applied_version(conn)
        if found == 0:
            raise RecordStoreCorruptError(path or url, "has no schema version")
        if found > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"record store {url} has schema version {found}; this library reads "
                f"up to {SCHEMA_VERSION}: upgrade skill-library"
            )
    elif not create and not sqlite:
        raise LibraryNotFoundError(url, "the database holds no skill library")
    migrations.upgrade(conn)


def records_problem(conn: Connection, *, sqlite: bool) -> str | None:
    """What is wrong with the records on ``conn``: SQLite's ``quick_check``, then the
    library's tables and schema version (``None`` when they look sound)."""
    if sqlite:
        verdict = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check")]
        if verdict != ["ok"]:
            return f"fails SQLite's integrity check ({'; '.join(verdict[:3])})"
    missing = {t.name for t in metadata.sorted_tables} - set(
        sa.inspect(conn).get_table_names()
    )
    if missing:
        return f"lacks the table(s) {', '.join(sorted(missing))}"
    found = conn.execute(
        sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
    ).scalar()
    if found is None:
        return "has no schema version"
    return None
