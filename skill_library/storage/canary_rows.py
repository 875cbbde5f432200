"""The rows of a tenant's running canaries (the ``canaries`` table: skill name, version,
share or cohort, who started it and when), read for the canary router
(:mod:`skill_library.governance.canary`). They are written with the version's transition
and its audit event, in one transaction, by governance's lifecycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.storage.governance_tables import canaries_table

if TYPE_CHECKING:
    from skill_library.record_store import SQLRecordStore


def canary_rows(store: SQLRecordStore) -> list[dict[str, Any]]:
    """Every running canary of ``store``'s tenant, as a row (name, version, share, cohort,
    actor, started_at), by name."""
    with store.transaction(write=False) as conn:
        rows = conn.execute(
            sa.select(canaries_table).where(canaries_table.c.tenant == store.tenant)
            .order_by(canaries_table.c.name)
        ).mappings().all()
    return [dict(r) for r in rows]
