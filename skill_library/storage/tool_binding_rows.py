"""The rows behind tool-schema re-verification (skill_library.governance.tool_schemas): each
version's bindings (the digest and text of the schema of each tool it was verified
against), and the version, pointer, canary, example and trace rows a schema change reads
and moves.

Every function runs on the caller's transaction: a schema change stores the new specs,
suspends or re-activates versions and writes their audit events in one. Reads of many keys
go in batches of :data:`BATCH`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from skill_library.storage.feature_tables import tool_bindings_table
from skill_library.storage.governance_tables import canaries_table
from skill_library.storage.tables import examples_table, skills_table, traces_table, versions_table

#: keys per ``IN`` list
BATCH = 500


def trace_bodies(conn: sa.Connection, tenant: str, trace_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored traces ``trace_ids`` (raw dicts: ``params``, ``calls``, ...), by trace id."""
    ids = sorted(set(trace_ids))
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), BATCH):
        rows = conn.execute(sa.select(traces_table.c.id, traces_table.c.body)
                            .where(traces_table.c.tenant == tenant)
                            .where(traces_table.c.id.in_(ids[start:start + BATCH])))
        for trace_id, body in rows:
            data = json.loads(body) if isinstance(body, str) else body
            found[trace_id] = dict(data or {})
    return found


def example_trace_ids(conn: sa.Connection, tenant: str, names: Iterable[str]) -> dict[str, list[str]]:
    """The trace ids of the examples of each of ``names`` (oldest first; names without any absent)."""
    found: dict[str, list[str]] = {}
    ordered = sorted(set(names))
    for start in range(0, len(ordered), BATCH):
        for name, trace_id in conn.execute(
            sa.select(examples_table.c.name, examples_table.c.trace_id)
            .where(examples_table.c.tenant == tenant)
            .where(examples_table.c.name.in_(ordered[start:start + BATCH]))
            .order_by(examples_table.c.created_at)
        ):
            found.setdefault(name, []).append(trace_id)
    return found


# -- bindings -----------------------------------------------------------------------------
def add_bindings(conn: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Store binding rows (``tenant``, ``name``, ``version``, ``tool``, ``digest``,
    ``source``, ``schema``, ``bound_at``)."""
    if rows:
        conn.execute(tool_bindings_table.insert(), [dict(r) for r in rows])


def binding_rows(conn: sa.Connection, tenant: str, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The binding rows of the tenant (of the skills ``names`` only, when given)."""
    query = sa.select(tool_bindings_table).where(tool_bindings_table.c.tenant == tenant)
    if names is not None:
        query = query.where(tool_bindings_table.c.name.in_(list(names)))
    return [dict(r) for r in conn.execute(query).mappings()]


def replace_binding(conn: sa.Connection, tenant: str, name: str, version: int, *, tool: str, digest: str,
                    source: str, schema: Mapping[str, Any], now: datetime) -> None:
    """Replace ``name`` v``version``'s binding of ``tool``."""
    conn.execute(tool_bindings_table.delete().where(tool_bindings_table.c.tenant == tenant)
                 .where(tool_bindings_table.c.name == name)
                 .where(tool_bindings_table.c.version == version)
                 .where(tool_bindings_table.c.tool == tool))
    conn.execute(tool_bindings_table.insert().values(
        tenant=tenant, name=name, version=version, tool=tool, digest=digest, source=source,
        schema=dict(schema), bound_at=now))


def delete_bindings(conn: sa.Connection, tenant: str, name: str) -> None:
    """Delete every binding of ``name`` (the skill is deleted)."""
    conn.execute(tool_bindings_table.delete().where(tool_bindings_table.c.tenant == tenant)
                 .where(tool_bindings_table.c.name == name))


# -- versions a schema change reads and moves -----------------------------------------------
def code_versions_with_status(conn: sa.Connection, tenant: str, statuses: Sequence[str],
                              *, code_only: bool = True) -> list[tuple[str, int, list[str]]]:
    """``(name, version, tools)`` of the tenant's versions whose status is one of
    ``statuses`` (code versions only, unless ``code_only`` is False)."""
    query = (sa.select(versions_table.c.name, versions_table.c.version, versions_table.c.tools)
             .where(versions_table.c.tenant == tenant).where(versions_table.c.status.in_(list(statuses))))
    if code_only:
        query = query.where(versions_table.c.kind == "code")
    return [(r[0], int(r[1]), list(r[2] or [])) for r in conn.execute(query)]


def version_statuses(conn: sa.Connection, tenant: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The status of each version of ``keys`` that exists."""
    wanted = sorted(set(keys))
    found: dict[tuple[str, int], str] = {}
    for start in range(0, len(wanted), BATCH):
        part = wanted[start:start + BATCH]
        found.update({(r[0], int(r[1])): r[2] for r in conn.execute(
            sa.select(versions_table.c.name, versions_table.c.version, versions_table.c.status)
            .where(versions_table.c.tenant == tenant)
            .where(sa.tuple_(versions_table.c.name, versions_table.c.version).in_(part)))})
    return found


def canary_keys(conn: sa.Connection, tenant: str, names: Iterable[str]) -> set[tuple[str, int]]:
    """The (name, version) of each canary row of ``names``."""
    ordered = sorted(set(names))
    found: set[tuple[str, int]] = set()
    for start in range(0, len(ordered), BATCH):
        found.update((r[0], int(r[1])) for r in conn.execute(
            sa.select(canaries_table.c.name, canaries_table.c.version).where(canaries_table.c.tenant == tenant)
            .where(canaries_table.c.name.in_(ordered[start:start + BATCH]))))
    return found


def pointers(conn: sa.Connection, tenant: str, names: Iterable[str]) -> dict[str, int]:
    """The active pointer of each of ``names`` that exists."""
    return {str(n): int(v) for n, v in conn.execute(
        sa.select(skills_table.c.name, skills_table.c.active_version)
        .where(skills_table.c.tenant == tenant).where(skills_table.c.name.in_(sorted(set(names))))).all()}


def write_statuses(conn: sa.Connection, tenant: str, keys: Sequence[tuple[str, int]], status: str,
                   now: datetime) -> None:
    """Set the status of the versions ``keys`` (at most :data:`BATCH`) and touch their skills'
    ``updated_at``, in two statements (no audit: the caller writes it)."""
    conn.execute(versions_table.update().where(sa.and_(
        versions_table.c.tenant == tenant,
        sa.tuple_(versions_table.c.name, versions_table.c.version).in_(list(keys)))).values(status=status))
    conn.execute(skills_table.update().where(skills_table.c.tenant == tenant)
                 .where(skills_table.c.name.in_(sorted({n for n, _ in keys}))).values(updated_at=now))
