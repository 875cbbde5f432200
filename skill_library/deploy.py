"""Moving a folder library into a shared deployment (``skills migrate --to URL``).

The records are copied row by row, table by table, in one transaction on the destination,
which must hold no skill yet; outcome ids are renumbered in their original order. The
index is not copied: it is rebuilt on the destination from the records, with the stored
vectors of the index texts (:mod:`skill_library.text_vectors`), so no model is loaded
unless a text has no stored vector. Every tenant's rows are copied, and each tenant's
index is built. The tables of procedures and usage patterns
(:mod:`skill_library.storage.pattern_tables`) are copied too, ids kept (a pattern's marks
name transition ids), and so are erasure's tombstones and redaction's aliases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from skill_library.errors import DestinationNotEmptyError
from skill_library.record_store import SQLRecordStore, meta_table, metadata, outcomes_table

#: rows read and inserted per batch while copying
COPY_BATCH = 1000
#: library_meta keys that describe the destination itself and are never copied
_OWN_META_KEYS = {"schema_version"}


@dataclass
class CopyReport:
    """What :func:`copy_folder_library` copied."""

    rows: dict[str, int] = field(default_factory=dict)
    indexed: int | None = None


def copy_records(source: SQLRecordStore, destination: SQLRecordStore) -> dict[str, int]:
    """Copy every row of ``source`` into ``destination`` (schema already current on both),
    every tenant's, procedures and usage patterns included; rows copied per table. Refuses
    a destination that holds skills (of any tenant), procedures or patterns."""
    if destination.tenants():
        raise DestinationNotEmptyError(
            f"the record store {destination.url} already holds skills: migrate copies only into an empty one"
        )
    from skill_library.governance.tables import ALL_TABLES, audit_table
    from skill_library.migrations import migrations_table
    from skill_library.storage.pattern_tables import TENANT_TABLES as memory_tables

    copied: dict[str, int] = {}
    with source._read() as src, destination._write() as dst:
        for table in memory_tables:
            if dst.execute(sa.select(sa.func.count()).select_from(table)).scalar():
                raise DestinationNotEmptyError(
                    f"the record store {destination.url} already holds {table.name} rows: migrate copies "
                    "only into an empty one"
                )
        for table in metadata.sorted_tables:
            if table is migrations_table:
                continue
            if table in ALL_TABLES:  # an empty destination's actors and policy are its defaults
                dst.execute(table.delete())
            query = sa.select(table)
            if table is outcomes_table:
                query = query.order_by(outcomes_table.c.id)
            if table is audit_table:
                query = query.order_by(audit_table.c.id)
            count = 0
            batch: list[dict[str, object]] = []
            for row in src.execute(query).mappings():
                values = dict(row)
                if table is outcomes_table or table is audit_table:
                    values.pop("id")  # the destination numbers them (its sequence stays right)
                if table is meta_table:
                    if values["key"] in _OWN_META_KEYS:
                        continue
                    dst.execute(meta_table.delete().where(meta_table.c.tenant == values["tenant"])
                                .where(meta_table.c.key == values["key"]))
                batch.append(values)
                if len(batch) >= COPY_BATCH:
                    dst.execute(table.insert(), batch)
                    count += len(batch)
                    batch = []
            if batch:
                dst.execute(table.insert(), batch)
                count += len(batch)
            copied[table.name] = count
            _advance_sequence(dst, table, count)
    return copied


def _advance_sequence(conn: Any, table: sa.Table, copied: int) -> None:
    """On PostgreSQL, move the id sequence of ``table`` past the ids copied into it (rows
    that keep their integer ids, such as evaluations and audit events, which others cite)."""
    column = table.c.get("id")
    if (conn.dialect.name != "postgresql" or not copied or column is None or table is outcomes_table
            or not isinstance(column.type, sa.Integer) or column.autoincrement is not True):
        return
    conn.exec_driver_sql(
        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), (SELECT MAX(id) FROM {table.name}))"
    )


def copy_folder_library(
    folder: Path, records: str, index: str | None = None, *, index_token: str | None = None
) -> CopyReport:
    """Copy the library in ``folder`` into the record store at ``records`` and, when
    ``index`` is given, build that server index (each tenant's collection) from the copied
    records; ``indexed`` counts the skills indexed over all tenants."""
    source = SQLRecordStore.in_folder(Path(folder), create=False)
    try:
        source.check_integrity()
        destination = SQLRecordStore(records, create=True)
        try:
            report = CopyReport(rows=copy_records(source, destination))
            tenants = destination.tenants()
        finally:
            destination.close()
    finally:
        source.close()
    if index is not None:
        from skill_library.library import SkillLibrary

        with SkillLibrary(records=records, index=index, index_token=index_token) as library:
            report.indexed = library.reindex()
            for tenant in tenants:
                if tenant != library.tenant:
                    report.indexed += library.for_tenant(tenant).reindex()
    return report
