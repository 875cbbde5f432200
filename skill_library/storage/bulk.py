"""New versions of many skills in a few statements (``SQLRecordStore.insert_versions``).

What ``skill_library.ingest`` uses to load large batches: per :data:`IN_QUERY_BATCH`
names, one lock, one read of the current versions and one update of the superseded
ones, then one insert of all the new versions (and their first outcomes).
"""

from __future__ import annotations

from typing import Any, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from skill_library import settings
from skill_library.models import Skill, utc_now
from skill_library.storage.rows import row_to_skill, versions_query
from skill_library.storage.tables import outcomes_table, skills_table, versions_table


def insert_distinct_versions(
    conn: Connection, skills: Sequence[Skill], initial_success: bool, *, tenant: str
) -> tuple[list[Skill], list[list[int]]]:
    """A new active version of each of ``skills`` (distinct names) for ``tenant`` on
    ``conn``, as ``SQLRecordStore._add_version`` stores one: the stored versions and,
    for each, the versions it superseded."""

    def mine(table: sa.Table) -> Any:
        return table.c.tenant == tenant

    if not skills:
        return [], []
    now = utc_now()
    names = [s.name for s in skills]
    current: dict[str, int] = {}
    superseded: dict[str, list[int]] = {}
    for start in range(0, len(names), settings.IN_QUERY_BATCH):
        chunk = names[start : start + settings.IN_QUERY_BATCH]
        # the row locks serialize new versions of these names on PostgreSQL (first
        # versions race on the primary key instead: dialects.retrying)
        conn.execute(
            sa.select(skills_table.c.name).where(mine(skills_table))
            .where(skills_table.c.name.in_(chunk)).with_for_update()
        ).all()
        current.update((str(n), int(v)) for n, v in conn.execute(
            sa.select(versions_table.c.name, sa.func.max(versions_table.c.version))
            .where(mine(versions_table))
            .where(versions_table.c.name.in_(chunk))
            .group_by(versions_table.c.name)
        ))
        for n, v in conn.execute(
            sa.select(versions_table.c.name, versions_table.c.version)
            .where(mine(versions_table))
            .where(versions_table.c.name.in_(chunk))
            .where(versions_table.c.status == "active")
            .order_by(versions_table.c.version)
        ):
            superseded.setdefault(str(n), []).append(int(v))
    versions = {n: current.get(n, 0) + 1 for n in names}
    new = [n for n in names if n not in current]
    if new:
        conn.execute(skills_table.insert(), [
            {"tenant": tenant, "name": n, "active_version": 1, "created_at": now,
             "updated_at": now} for n in new
        ])
    old = [n for n in names if n in current]
    for start in range(0, len(old), settings.IN_QUERY_BATCH):
        conn.execute(
            versions_table.update()
            .where(mine(versions_table))
            .where(versions_table.c.name.in_(old[start : start + settings.IN_QUERY_BATCH]))
            .where(versions_table.c.status == "active")
            .values(status="superseded")
        )
    if old:
        conn.execute(
            skills_table.update()
            .where(mine(skills_table))
            .where(skills_table.c.name == sa.bindparam("b_name"))
            .values(active_version=sa.bindparam("b_version"), updated_at=now),
            [{"b_name": n, "b_version": versions[n]} for n in old],
        )
    conn.execute(versions_table.insert(), [
        {
            "tenant": tenant,
            "name": s.name,
            "version": versions[s.name],
            "kind": s.kind,
            "when_text": s.when,
            "description": s.description,
            "code": s.code,
            "parameters": s.parameters,
            "tools": list(s.tools),
            "depends_on": list(s.depends_on),
            "provenance": s.provenance.model_dump(mode="json"),
            "status": "active",
            # the one outcome below, counted as _append_outcome counts it
            "successes": 1 if initial_success else 0,
            "failures": 0,
            "created_at": now,
        }
        for s in skills
    ])
    if initial_success:
        conn.execute(outcomes_table.insert(), [
            {
                "tenant": tenant,
                "name": s.name,
                "version": versions[s.name],
                "success": True,
                "kind": "success",
                "origin": "learned",
                "trace_id": s.provenance.trace_ids[0] if s.provenance.trace_ids else None,
                "recorded_at": now,
            }
            for s in skills
        ])
    found: dict[tuple[str, int], Skill] = {}
    for start in range(0, len(names), settings.IN_QUERY_BATCH):
        chunk = names[start : start + settings.IN_QUERY_BATCH]
        rows = conn.execute(
            versions_query().where(mine(versions_table))
            .where(versions_table.c.name.in_(chunk))
            .where(versions_table.c.status == "active")
        ).mappings()
        for row in rows:
            found[(row["name"], row["version"])] = row_to_skill(row)
    return [found[(n, versions[n])] for n in names], [superseded.get(n, []) for n in names]


settings.forward(__name__, "IN_QUERY_BATCH")
