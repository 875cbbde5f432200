"""The rows of a tenant's registered actors (the ``actors`` table), read and written for
:class:`skill_library.governance.actors.ActorRegistry`: each write and its audit event in
one transaction (:mod:`skill_library.storage.audit`), so no change of who may do what goes
unrecorded. Governance decides who may change an actor; this module only stores it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import utc_now
from skill_library.storage import audit
from skill_library.storage.governance_tables import actors_table

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


@dataclass(frozen=True)
class ActorRow:
    """One registered actor as stored: id, kind, permissions."""

    id: str
    kind: str
    permissions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AuditNote:
    """The audit event written with an actor change (under :data:`audit.ACTORS`)."""

    to_status: str
    actor: str
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)


class ActorRows:
    """The ``actors`` rows of ``store``'s tenant."""

    def __init__(self, store: UnitOfWork) -> None:
        self.store = store
        self.tenant = store.tenant

    def _mine(self) -> Any:
        return actors_table.c.tenant == self.tenant

    def _insert(self, conn: sa.Connection, row: ActorRow) -> None:
        conn.execute(actors_table.insert().values(
            tenant=self.tenant, id=row.id, kind=row.kind,
            permissions=sorted(row.permissions), created_at=utc_now(),
        ))

    def _audit(self, conn: sa.Connection, note: AuditNote) -> None:
        audit.write(conn, self.tenant, audit.ACTORS, None, None, note.to_status, actor=note.actor,
                    reason=note.reason, evidence=note.evidence)

    def seed(self, rows: Sequence[tuple[ActorRow, AuditNote]]) -> bool:
        """Insert ``rows`` with their audit events when the tenant has no actor yet; True
        when it did (False: the tenant had actors, nothing was written)."""
        with self.store.transaction(write=True) as conn:
            found = conn.execute(sa.select(sa.func.count()).select_from(actors_table).where(self._mine())).scalar()
            if found:
                return False
            for row, note in rows:
                self._insert(conn, row)
                self._audit(conn, note)
            return True

    def get(self, actor_id: str) -> ActorRow | None:
        """The row of ``actor_id`` (None: not registered in the tenant)."""
        with self.store.transaction(write=False) as conn:
            found = conn.execute(
                sa.select(actors_table).where(self._mine()).where(actors_table.c.id == actor_id)
            ).mappings().first()
        return _row(found) if found is not None else None

    def list(self) -> list[ActorRow]:
        """Every row of the tenant, by id."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute(
                sa.select(actors_table).where(self._mine()).order_by(actors_table.c.id)
            ).mappings().all()
        return [_row(r) for r in rows]

    def put(self, row: ActorRow, note: AuditNote) -> None:
        """Register ``row`` (replacing the actor of that id) and its audit event."""
        with self.store.transaction(write=True) as conn:
            conn.execute(actors_table.delete().where(self._mine()).where(actors_table.c.id == row.id))
            self._insert(conn, row)
            self._audit(conn, note)

    def remove(self, actor_id: str, note: AuditNote) -> bool:
        """Delete ``actor_id`` and write its audit event; False (nothing written) when the
        tenant has no such actor."""
        with self.store.transaction(write=True) as conn:
            gone = conn.execute(
                actors_table.delete().where(self._mine()).where(actors_table.c.id == actor_id)
            ).rowcount
            if not gone:
                return False
            self._audit(conn, note)
            return True


def _row(found: Any) -> ActorRow:
    return ActorRow(id=found["id"], kind=found["kind"], permissions=frozenset(found["permissions"]))
