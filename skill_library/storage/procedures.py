"""The rows of instruction procedures of one tenant (skill_library.procedures): per
procedure version its title, confidence and who added it (the ``procedures`` table); the
version itself is a skill version of kind ``instruction`` in the record tables.

:class:`ProcedureRows` only stores and reads; how an outcome moves a confidence is the
concept's (passed in as a function). A state change and its audit event are written in one
transaction: :meth:`ProcedureRows.insert` runs on the caller's (the one that inserts the
version and writes its event), :meth:`ProcedureRows.delete` writes its own event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import OutcomeKind, utc_now
from skill_library.storage import audit
from skill_library.storage.actor_rows import AuditNote
from skill_library.storage.governance_tables import audit_table
from skill_library.storage.pattern_tables import procedures_table
from skill_library.storage.tables import outcomes_table, versions_table

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


class ProcedureRows:
    """The ``procedures`` rows of ``store``'s tenant."""

    def __init__(self, store: "UnitOfWork") -> None:
        self.store = store
        self.tenant = store.tenant
        self._t = store.tenant_filter

    def insert(self, conn: sa.Connection, name: str, version: int, *, title: str, confidence: float,
               actor: str | None, subject: str | None, source: str,
               initial_confidence: float | None = None) -> None:
        """The row of procedure ``name`` v``version``, on the caller's transaction."""
        conn.execute(procedures_table.insert().values(
            tenant=self.tenant, name=name, version=version, title=title,
            initial_confidence=confidence if initial_confidence is None else initial_confidence,
            confidence=confidence, actor=actor, subject=subject, source=source, created_at=utc_now(),
        ))

    def rows(self, keys: Sequence[tuple[str, int]] | None = None) -> dict[tuple[str, int], Any]:
        """``(name, version)`` -> row mapping, of every procedure row (or only ``keys``)."""
        with self.store.transaction(write=False) as conn:
            found = {(r["name"], r["version"]): r for r in conn.execute(
                sa.select(procedures_table).where(self._t(procedures_table))).mappings().all()}
        return found if keys is None else {k: found[k] for k in keys if k in found}

    def record_outcome(self, name: str, version: int, kind: OutcomeKind, reason: str | None, *,
                       confidence_after: Callable[[float], float], default: dict[str, Any]) -> None:
        """One counted outcome (``success`` or ``failure``) of procedure ``name`` v``version``
        in one transaction: the outcome row, the version's counter and the confidence
        (``confidence_after(current)``). A version without a row gets ``default`` (``title``,
        ``confidence``, ``actor``, ``source``) first."""
        if not kind.counted:
            raise ValueError(f"only success and failure move a procedure's confidence, not {kind.value}")
        success = kind is OutcomeKind.SUCCESS
        counter = versions_table.c.successes if success else versions_table.c.failures
        this_version = sa.and_(self._t(versions_table), versions_table.c.name == name,
                               versions_table.c.version == version)
        mine = sa.and_(self._t(procedures_table), procedures_table.c.name == name,
                       procedures_table.c.version == version)
        with self.store.transaction(write=True) as conn:
            current = conn.execute(sa.select(procedures_table.c.confidence).where(mine)).scalar()
            if current is None:
                self.insert(conn, name, version, title=default["title"], confidence=default["confidence"],
                            actor=default.get("actor"), subject=None, source=default.get("source", "admin"))
                current = default["confidence"]
            conn.execute(outcomes_table.insert().values(
                tenant=self.tenant, name=name, version=version, success=success, trace_id=None,
                recorded_at=utc_now(), kind=kind.value, reason=reason, origin="feedback"))
            conn.execute(versions_table.update().where(this_version).values({counter.name: counter + 1}))
            conn.execute(procedures_table.update().where(mine)
                         .values(confidence=confidence_after(float(current))))

    def names_for_subject(self, subject: str) -> list[str]:
        """The procedures added for ``subject``, sorted."""
        with self.store.transaction(write=False) as conn:
            return sorted(set(conn.execute(
                sa.select(procedures_table.c.name).where(self._t(procedures_table))
                .where(procedures_table.c.subject == subject)
            ).scalars()))

    def matching(self, subject: str, names: Callable[[Any], bool]) -> list[str]:
        """The procedures added for ``subject``, or whose subject, title, trigger or
        directive ``names`` (skill_library.erasure's matcher), sorted."""
        with self.store.transaction(write=False) as conn:
            found = {r[0] for r in conn.execute(
                sa.select(procedures_table.c.name, procedures_table.c.subject, procedures_table.c.title)
                .where(self._t(procedures_table))
            ) if r[1] == subject or names(r[1]) or names(r[2])}
            found |= {r[0] for r in conn.execute(
                sa.select(versions_table.c.name, versions_table.c.when_text, versions_table.c.description)
                .where(self._t(versions_table)).where(versions_table.c.kind == "instruction")
            ) if names(r[1]) or names(r[2])}
        return sorted(found)

    def delete(self, names: Sequence[str], note: AuditNote) -> None:
        """In one transaction: the procedure rows of ``names`` and their audit events, and
        one event (``note``, under :data:`audit.SUBJECTS`) that says something was
        forgotten, never whose or what. The record tables' rows are the store's
        (``store.purge``)."""
        with self.store.transaction(write=True) as conn:
            conn.execute(procedures_table.delete().where(self._t(procedures_table))
                         .where(procedures_table.c.name.in_(list(names))))
            conn.execute(audit_table.delete().where(audit_table.c.tenant == self.tenant)
                         .where(audit_table.c.name.in_(list(names))))
            audit.write(conn, self.tenant, audit.SUBJECTS, None, None, note.to_status, actor=note.actor,
                        reason=note.reason, evidence=note.evidence)
