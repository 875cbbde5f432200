"""Rows of one tenant's skills that governance reads and removes across the record,
governance and pattern tables (skill_library.governance.workflow): the versions waiting
for a person, and every record of a deleted skill. Governance decides what may be
removed and writes the audit event; this module only reads and deletes, on the caller's
transaction where a change must commit with its event."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import sqlalchemy as sa

from skill_library import settings
from skill_library.storage.governance_tables import audit_table, canaries_table, evaluations_table
from skill_library.storage.pattern_tables import reliability_events_table
from skill_library.storage.tables import (
    examples_table,
    outcomes_table,
    profiles_table,
    skills_table,
    task_vectors_table,
    traces_table,
    versions_table,
)

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


class SkillRows:
    """Cross-table rows of ``store``'s tenant's skills."""

    def __init__(self, store: "UnitOfWork") -> None:
        self.store = store
        self.tenant = store.tenant
        self._t = store.tenant_filter

    def with_status(self, statuses: Collection[str]) -> list[tuple[str, int]]:
        """``(name, version)`` of every version whose status is one of ``statuses``, oldest first."""
        with self.store.transaction(write=False) as conn:
            return [(r[0], int(r[1])) for r in conn.execute(
                sa.select(versions_table.c.name, versions_table.c.version)
                .where(self._t(versions_table))
                .where(versions_table.c.status.in_(tuple(statuses)))
                .order_by(versions_table.c.created_at, versions_table.c.name, versions_table.c.version)
            )]

    def delete_skill(self, conn: sa.Connection, name: str, traces: Collection[str]) -> list[str]:
        """On the caller's transaction, every row of ``name``: the ``traces`` no other skill
        cites (by an example or an outcome) and their task vectors, its canary, evaluations,
        audit events and reliability events, its outcomes, examples, profile, versions and
        skill row, and the stored vectors of its texts. Returns the traces deleted."""
        from skill_library.storage.sql_store import delete_text_vectors

        shared = set(conn.execute(sa.select(examples_table.c.trace_id)
                                  .where(self._t(examples_table))
                                  .where(examples_table.c.name != name)).scalars())
        shared.update(conn.execute(sa.select(outcomes_table.c.trace_id)
                                   .where(self._t(outcomes_table))
                                   .where(outcomes_table.c.name != name)
                                   .where(outcomes_table.c.trace_id.is_not(None))).scalars())
        gone = sorted(set(traces) - shared)
        batch = settings.IN_QUERY_BATCH
        for start in range(0, len(gone), batch):
            part: Sequence[str] = gone[start:start + batch]
            conn.execute(traces_table.delete().where(self._t(traces_table)).where(traces_table.c.id.in_(part)))
            conn.execute(task_vectors_table.delete().where(self._t(task_vectors_table))
                         .where(task_vectors_table.c.trace_id.in_(part)))
        for table in (canaries_table, evaluations_table, audit_table):
            conn.execute(table.delete().where(table.c.tenant == self.tenant).where(table.c.name == name))
        conn.execute(reliability_events_table.delete().where(self._t(reliability_events_table))
                     .where(reliability_events_table.c.name == name))
        delete_text_vectors(conn, self.store, name)
        for table in (outcomes_table, examples_table, profiles_table, versions_table, skills_table):
            conn.execute(table.delete().where(self._t(table)).where(table.c.name == name))
        return gone
