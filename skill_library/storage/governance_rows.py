"""Rows governance reads and writes besides the audit log, actors, policies and canaries
(their own modules): the declared tool specs, the approvals a person gave, the stored
evaluations, and the counts of versions by status.

Functions taking ``conn`` run on the caller's transaction (governance composes a state
change and its audit event in one); the others open their own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.storage.governance_tables import audit_table, evaluations_table, tool_specs_table
from skill_library.storage.tables import skills_table, versions_table

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


# -- tool specs -------------------------------------------------------------------------
def tool_spec_rows(conn: sa.Connection, tenant: str) -> list[dict[str, Any]]:
    """The tenant's declared tools (``name``, ``schema``, ``side_effects``), by name."""
    rows = conn.execute(sa.select(tool_specs_table).where(tool_specs_table.c.tenant == tenant)
                        .order_by(tool_specs_table.c.name)).mappings()
    return [dict(r) for r in rows]


def save_tool_specs(conn: sa.Connection, tenant: str, specs: Mapping[str, tuple[bool, dict[str, Any]]],
                    now: datetime) -> None:
    """Declare (or redeclare) each tool of ``specs`` (name -> side_effects, schema)."""
    for name, (side_effects, schema) in specs.items():
        conn.execute(tool_specs_table.delete().where(tool_specs_table.c.tenant == tenant)
                     .where(tool_specs_table.c.name == name))
        conn.execute(tool_specs_table.insert().values(
            tenant=tenant, name=name, side_effects=side_effects, schema=schema, updated_at=now))


def remove_tool_specs(conn: sa.Connection, tenant: str, names: list[str]) -> None:
    """Remove the declarations of ``names``."""
    if names:
        conn.execute(tool_specs_table.delete().where(tool_specs_table.c.tenant == tenant)
                     .where(tool_specs_table.c.name.in_(names)))


# -- skills and approvals ---------------------------------------------------------------
def skill_exists(conn: sa.Connection, tenant: str, name: str) -> bool:
    """Whether the tenant has a skill ``name`` (any version, any status)."""
    return conn.execute(sa.select(skills_table.c.name).where(skills_table.c.tenant == tenant)
                        .where(skills_table.c.name == name)).first() is not None


def approved_versions(conn: sa.Connection, tenant: str, name: str, *, not_by: Collection[str]) -> set[int]:
    """The versions of ``name`` whose audit log has an approval by an actor not in ``not_by``."""
    return {r[0] for r in conn.execute(
        sa.select(audit_table.c.version).where(audit_table.c.tenant == tenant)
        .where(audit_table.c.name == name).where(audit_table.c.to_status == "approved")
        .where(audit_table.c.actor.not_in(sorted(not_by))))}


def version_tools(conn: sa.Connection, tenant: str, name: str, versions: Collection[int]) -> list[list[str]]:
    """The tools of each of ``versions`` of ``name`` (as stored)."""
    rows = conn.execute(sa.select(versions_table.c.tools).where(versions_table.c.tenant == tenant)
                        .where(versions_table.c.name == name)
                        .where(versions_table.c.version.in_(sorted(versions))))
    return [list(found or []) for (found,) in rows]


def status_counts(store: "UnitOfWork", statuses: Collection[str]) -> dict[str, int]:
    """How many versions of the tenant have each of ``statuses`` (absent ones: not listed)."""
    with store.transaction(write=False) as conn:
        rows = conn.execute(sa.select(versions_table.c.status, sa.func.count())
                            .where(store.tenant_filter(versions_table))
                            .where(versions_table.c.status.in_(tuple(statuses)))
                            .group_by(versions_table.c.status)).all()
    return {str(status): int(n) for status, n in rows}


# -- evaluations ------------------------------------------------------------------------
def add_evaluation(store: "UnitOfWork", *, name: str, version: int, active_version: int | None,
                   suite_id: str, suite_hash: str, passed: bool, actor: str, body: dict[str, Any],
                   created_at: datetime) -> int:
    """Store one evaluation of ``name`` v``version`` (its whole ``body`` kept as JSON); its id."""
    with store.transaction(write=True) as conn:
        key = conn.execute(evaluations_table.insert().values(
            tenant=store.tenant, name=name, version=version, active_version=active_version,
            suite_id=suite_id, suite_hash=suite_hash, passed=passed, actor=actor, body=body,
            created_at=created_at)).inserted_primary_key
    if key is None:  # every backend here returns the new id of an insert
        raise RuntimeError("the database returned no id for the stored evaluation")
    return int(key[0])


def evaluation_rows(store: "UnitOfWork", name: str, version: int | None = None) -> list[dict[str, Any]]:
    """The stored evaluations of ``name`` (of ``version`` when given), oldest first: each
    ``id``, ``created_at`` and ``body``."""
    query = (sa.select(evaluations_table.c.id, evaluations_table.c.created_at, evaluations_table.c.body)
             .where(evaluations_table.c.tenant == store.tenant).where(evaluations_table.c.name == name))
    if version is not None:
        query = query.where(evaluations_table.c.version == version)
    with store.transaction(write=False) as conn:
        return [dict(r) for r in conn.execute(query.order_by(evaluations_table.c.id)).mappings()]
