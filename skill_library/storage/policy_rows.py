"""The row of a tenant's policy (the ``policies`` table): its JSON body, read and written on
the caller's connection, so the change and its audit event share one transaction.
:mod:`skill_library.governance.policy` validates the body as a ``Policy``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from skill_library.models import utc_now
from skill_library.storage.governance_tables import policies_table


def load_body(conn: sa.Connection, tenant: str) -> dict[str, Any] | None:
    """The stored policy body of ``tenant`` (None: none stored)."""
    body = conn.execute(sa.select(policies_table.c.body).where(policies_table.c.tenant == tenant)).scalar()
    return None if body is None else dict(body)


def save_body(conn: sa.Connection, tenant: str, body: dict[str, Any]) -> None:
    """Store ``body`` as ``tenant``'s policy (replacing any)."""
    conn.execute(policies_table.delete().where(policies_table.c.tenant == tenant))
    conn.execute(policies_table.insert().values(tenant=tenant, body=body, updated_at=utc_now()))
