"""The rows of the uplift holdout (skill_library.uplift): the tenant's settings, changed with
their audit event in one transaction, and the session outcomes of its two arms.

:class:`UpliftRows` only stores and reads; what a share means, which session is held back
and what the counts say is the concept's. Each method is one transaction, except
:func:`delete_outcomes`, which runs on the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import utc_now
from skill_library.storage import audit
from skill_library.storage.feature_tables import session_outcomes_table, uplift_settings_table

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


def delete_outcomes(conn: sa.Connection, tenant: str, name: str) -> None:
    """Remove ``name``'s session outcomes, on the caller's transaction (a skill's delete)."""
    table = session_outcomes_table
    conn.execute(table.delete().where(table.c.tenant == tenant).where(table.c.name == name))


def _settings(conn: sa.Connection, tenant: str) -> dict[str, Any] | None:
    row = conn.execute(sa.select(uplift_settings_table)
                       .where(uplift_settings_table.c.tenant == tenant)).mappings().first()
    return None if row is None else dict(row)


class UpliftRows:
    """The uplift rows of ``store``'s tenant."""

    def __init__(self, store: "UnitOfWork") -> None:
        self.store = store
        self.tenant = store.tenant

    def settings(self) -> dict[str, Any] | None:
        """The tenant's settings row (``share``, ``side_effects``, ``skills``, ``actor``,
        ``updated_at``), or None when it never set one."""
        with self.store.transaction(write=False) as conn:
            return _settings(conn, self.tenant)

    def set_settings(
        self, *, share: float, side_effects: bool, skills: Sequence[str] | None, actor: str,
        event: Callable[[Mapping[str, Any] | None], dict[str, Any]],
    ) -> None:
        """Replace the tenant's settings and append their audit event, in one transaction
        (retried on a lost race): ``event(old row or None)`` gives the event's ``name``,
        ``version``, ``from_status``, ``to_status``, ``reason`` and ``evidence``."""
        tenant = self.tenant

        def work(conn: sa.Connection) -> None:
            old = _settings(conn, tenant)
            conn.execute(uplift_settings_table.delete().where(uplift_settings_table.c.tenant == tenant))
            conn.execute(uplift_settings_table.insert().values(
                tenant=tenant, share=share, side_effects=side_effects,
                skills=list(skills) if skills is not None else None, actor=actor, updated_at=utc_now()))
            described = event(old)
            audit.write(conn, tenant, described["name"], described.get("version"), described.get("from_status"),
                        described["to_status"], actor=actor, reason=described.get("reason", ""),
                        evidence=described.get("evidence"))

        self.store.retrying(work)

    def add_session_outcomes(self, session: str, outcomes: Sequence[Mapping[str, Any]]) -> list[str]:
        """Store one outcome per skill of ``session`` (a digest): each of ``outcomes`` has
        ``name``, ``version``, ``arm``, ``kind``, ``success``, ``reason``, ``origin``,
        ``cost``. When any of those skills has an outcome of the session already, nothing is
        written and their names are returned (else [])."""
        tenant = self.tenant
        table = session_outcomes_table
        names = [o["name"] for o in outcomes]

        def work(conn: sa.Connection) -> list[str]:
            already = list(conn.execute(sa.select(table.c.name).where(table.c.tenant == tenant)
                                        .where(table.c.session == session)
                                        .where(table.c.name.in_(names))).scalars().all())
            if already:
                return already
            now = utc_now()
            conn.execute(table.insert(), [{"tenant": tenant, "session": session, **o, "recorded_at": now}
                                          for o in outcomes])
            return []

        found: list[str] = self.store.retrying(work)
        return found

    def session_outcomes(self, name: str, version: int | None = None) -> list[dict[str, Any]]:
        """The session outcomes of ``name`` (of ``version`` when given), oldest first: each
        ``arm``, ``kind``, ``cost``, ``recorded_at``."""
        table = session_outcomes_table
        query = sa.select(table.c.arm, table.c.kind, table.c.cost, table.c.recorded_at) \
            .where(table.c.tenant == self.tenant).where(table.c.name == name)
        if version is not None:
            query = query.where(table.c.version == version)
        with self.store.transaction(write=False) as conn:
            return [dict(r) for r in conn.execute(query.order_by(table.c.id)).mappings()]

    def measured_names(self) -> list[str]:
        """The names with session outcomes, sorted."""
        table = session_outcomes_table
        with self.store.transaction(write=False) as conn:
            return sorted(conn.execute(sa.select(table.c.name).where(table.c.tenant == self.tenant)
                                       .distinct()).scalars())
