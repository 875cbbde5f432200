"""Copying every record of one store into another, empty one (``skills migrate --to URL``,
:mod:`skill_library.deploy`): row by row, table by table, in one transaction on the
destination; every table on the records' metadata, every tenant's rows. Outcome and audit
ids are renumbered in their original order; other integer ids are kept (a pattern's marks
name transition ids) and, on PostgreSQL, the sequences moved past them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.errors import DestinationNotEmptyError
from skill_library.storage.governance_tables import ALL_TABLES, audit_table
from skill_library.storage.pattern_tables import TENANT_TABLES as memory_tables
from skill_library.storage.tables import meta_table, metadata, outcomes_table

if TYPE_CHECKING:
    from skill_library.storage.sql_store import SQLRecordStore

#: rows read and inserted per batch while copying
COPY_BATCH = 1000
#: library_meta keys that describe the destination itself and are never copied
_OWN_META_KEYS = {"schema_version"}


def copy_records(source: "SQLRecordStore", destination: "SQLRecordStore") -> dict[str, int]:
    """Copy every row of ``source`` into ``destination`` (schema already current on both),
    every tenant's, procedures and usage patterns included; rows copied per table. Refuses
    a destination that holds skills (of any tenant), procedures or patterns."""
    if destination.tenants():
        raise DestinationNotEmptyError(
            f"the record store {destination.url} already holds skills: migrate copies only into an empty one"
        )
    from skill_library.storage.migrations import migrations_table  # and every table the steps create

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
