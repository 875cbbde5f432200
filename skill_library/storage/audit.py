"""The audit log: one :class:`AuditEvent` per transition of a version, written in the
same transaction as the change it records; also the changes of a tenant's policy, actors
and tools (under the names :data:`POLICY`, :data:`ACTORS`, :data:`TOOLS`, which no skill
can have). Append-only; ``library.audit(name)`` lists them oldest first. The rows are storage's (this
module); :mod:`skill_library.governance.audit` re-exports it for governance."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel

from skill_library import telemetry
from skill_library.models import utc_now
from skill_library.storage.governance_tables import audit_table

#: the audit "names" of changes that are not a skill's (not snake_case: no skill has them)
POLICY = "@policy"
ACTORS = "@actors"
TOOLS = "@tools"
#: events about subjects (forget): they never name the subject or what was forgotten
SUBJECTS = "@subjects"


class AuditEvent(BaseModel, frozen=True):
    """One recorded change: a version's transition from one status to another, by whom,
    when, why and on what evidence."""

    id: int
    tenant: str
    name: str
    version: int | None
    from_status: str | None
    to_status: str
    actor: str
    at: datetime
    reason: str
    evidence: dict[str, Any]


def write(
    conn: sa.Connection,
    tenant: str,
    name: str,
    version: int | None,
    from_status: str | None,
    to_status: str,
    *,
    actor: str,
    reason: str = "",
    evidence: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event on ``conn`` (inside the caller's transaction)."""
    at = utc_now()
    body = jsonable(evidence or {})
    event_id = conn.execute(
        audit_table.insert().values(
            tenant=tenant, name=name, version=version, from_status=from_status,
            to_status=to_status, actor=actor, at=at, reason=reason, evidence=body,
        ).returning(audit_table.c.id)
    ).scalar_one()
    telemetry.transitions(tenant, [{"name": name, "version": version, "from_status": from_status,
                                    "to_status": to_status}], actor)
    return AuditEvent(id=int(event_id), tenant=tenant, name=name, version=version,
                      from_status=from_status, to_status=to_status, actor=actor, at=at,
                      reason=reason, evidence=body)


def write_many(conn: sa.Connection, tenant: str, events: list[dict[str, Any]], *, actor: str) -> None:
    """Append several events by ``actor`` on ``conn`` in one statement (bulk adds); each
    dict holds name, version, from_status, to_status, reason and optionally evidence."""
    if not events:
        return
    at = utc_now()
    conn.execute(audit_table.insert(), [
        {"tenant": tenant, "name": e["name"], "version": e["version"], "from_status": e["from_status"],
         "to_status": e["to_status"], "actor": actor, "at": at, "reason": e.get("reason", ""),
         "evidence": jsonable(e.get("evidence") or {})}
        for e in events
    ])
    telemetry.transitions(tenant, events, actor)


def read(conn: sa.Connection, tenant: str, name: str | None = None,
         version: int | None = None) -> list[AuditEvent]:
    """The events of ``tenant`` (of ``name``, of its ``version``), oldest first."""
    query = sa.select(audit_table).where(audit_table.c.tenant == tenant)
    if name is not None:
        query = query.where(audit_table.c.name == name)
    if version is not None:
        query = query.where(audit_table.c.version == version)
    rows = conn.execute(query.order_by(audit_table.c.id)).mappings().all()
    events = []
    for row in rows:
        data = dict(row)
        if data["at"].tzinfo is None:  # SQLite keeps no zone; every time here is UTC
            data["at"] = data["at"].replace(tzinfo=timezone.utc)
        events.append(AuditEvent.model_validate(data))
    return events


def jsonable(value: Any) -> dict[str, Any]:
    import json

    result: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return result
