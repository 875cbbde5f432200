"""The rows of a tenant's running canaries (the ``canaries`` table: skill name, version,
share or cohort, who started it and when), read for the canary router
(:mod:`skill_library.governance.canary`). They are written with the version's transition
and its audit event, in one transaction, by governance's lifecycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import utc_now
from skill_library.storage.governance_tables import canaries_table

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


def canary_rows(store: UnitOfWork) -> list[dict[str, Any]]:
    """Every running canary of ``store``'s tenant, as a row (name, version, share, cohort,
    actor, started_at), by name."""
    with store.transaction(write=False) as conn:
        rows = conn.execute(
            sa.select(canaries_table).where(canaries_table.c.tenant == store.tenant)
            .order_by(canaries_table.c.name)
        ).mappings().all()
    return [dict(r) for r in rows]


def running_version(conn: sa.Connection, tenant: str, name: str) -> int | None:
    """The version of ``name``'s running canary in ``tenant`` (None: none runs), on the
    caller's transaction."""
    found = conn.execute(sa.select(canaries_table.c.version).where(canaries_table.c.tenant == tenant)
                         .where(canaries_table.c.name == name)).scalar()
    return None if found is None else int(found)


def start(conn: sa.Connection, tenant: str, name: str, version: int, *, share: float | None,
          cohort: str | None, actor: str) -> None:
    """The row of a canary of ``name`` v``version`` starting now, on the caller's transaction
    (the one that moves the version to ``canary`` and writes its audit event)."""
    conn.execute(canaries_table.insert().values(
        tenant=tenant, name=name, version=version, share=share, cohort=cohort, actor=actor,
        started_at=utc_now()))


def has_row(conn: sa.Connection, tenant: str, name: str, version: int) -> bool:
    """Whether ``name`` v``version`` has a canary row (running, or suspended from one), on
    the caller's transaction."""
    return conn.execute(sa.select(canaries_table.c.version).where(canaries_table.c.tenant == tenant)
                        .where(canaries_table.c.name == name)
                        .where(canaries_table.c.version == version)).first() is not None


def stop(conn: sa.Connection, tenant: str, name: str, version: int) -> None:
    """Remove the canary row of ``name`` v``version``, on the caller's transaction (the one
    that moves the version out of ``canary`` and writes its audit event)."""
    conn.execute(canaries_table.delete().where(canaries_table.c.tenant == tenant)
                 .where(canaries_table.c.name == name).where(canaries_table.c.version == version))
