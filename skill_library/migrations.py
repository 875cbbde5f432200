"""Schema migrations of the record store: a list, applied in order, recorded in a table.

The position of a step in :data:`MIGRATIONS` is the schema version it brings the store to
(``SCHEMA_VERSION == len(MIGRATIONS)``). The steps already applied are rows of
``schema_migrations``; the version is also kept in ``library_meta`` (``schema_version``),
which stores made before this table existed have. Opening a store applies the missing
steps in one transaction: an existing SQLite folder upgrades in place, a new PostgreSQL
database is created on first open. On PostgreSQL the transaction holds an advisory lock
(:data:`MIGRATION_LOCK_KEY`), so hosts opening a new database at once apply each step once.
Each step is idempotent on tables (``checkfirst``): stores made while new tables were
still added by ``create_all`` upgrade without error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from skill_library import record_store as rs
from skill_library.governance import tables as governance_tables
from skill_library.governance.evaluation import evaluations_table
from skill_library.models import utc_now

#: key of the PostgreSQL advisory lock held while migrations run (any constant 64-bit int)
MIGRATION_LOCK_KEY = 0x534B494C4C4D4947  # "SKILLMIG"

migrations_table = sa.Table(
    "schema_migrations",
    rs.metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class Migration:
    """One schema step: ``apply(conn)`` brings the store from the previous version to this one."""

    name: str
    apply: Callable[[Connection], None]


def _create(*tables: sa.Table) -> Callable[[Connection], None]:
    def apply(conn: Connection) -> None:
        for table in tables:
            table.create(conn, checkfirst=True)

    return apply


def _initial(conn: Connection) -> None:
    _create(rs.skills_table, rs.versions_table, rs.outcomes_table, rs.traces_table, rs.meta_table)(conn)
    found = conn.execute(
        sa.select(rs.meta_table.c.key).where(rs.meta_table.c.key == "index_generation")
    ).scalar()
    if found is None:  # the row bump_index_generation locks (SELECT ... FOR UPDATE)
        conn.execute(rs.meta_table.insert().values(key="index_generation", value="0"))


def _governance(conn: Connection) -> None:
    """The governance tables; and versions replaced by a newer one, which were marked
    ``retired`` before ``superseded`` existed, become ``superseded`` (``retire()`` only
    ever retired the version the pointer names, so every other retired one was replaced)."""
    _create(*governance_tables.ALL_TABLES)(conn)
    pointer = (
        sa.select(rs.skills_table.c.active_version)
        .where(rs.skills_table.c.name == rs.versions_table.c.name)
        .scalar_subquery()
    )
    conn.execute(
        rs.versions_table.update()
        .where(rs.versions_table.c.status == "retired")
        .where(rs.versions_table.c.version != pointer)
        .values(status="superseded")
    )


#: the schema's history; append, never edit or reorder
MIGRATIONS: list[Migration] = [
    Migration("initial: skills, versions, outcomes, traces, meta", _initial),
    Migration("evidence: skill_examples, skill_profiles", _create(rs.examples_table, rs.profiles_table)),
    Migration("text_vectors: stored vectors of the index texts", _create(rs.vectors_table)),
    Migration("governance: audit_events, actors, tool_specs, policies, canaries; superseded", _governance),
    Migration("evaluations: candidate vs active on a suite", _create(evaluations_table)),
]


def applied_version(conn: Connection) -> int:
    """The schema version of the store on ``conn`` (0: empty database): the higher of the
    last recorded migration and ``library_meta``'s ``schema_version`` (a newer library may
    have raised either)."""
    tables = set(sa.inspect(conn).get_table_names())
    found = 0
    if migrations_table.name in tables:
        found = int(conn.execute(sa.select(sa.func.max(migrations_table.c.version))).scalar() or 0)
    if rs.meta_table.name in tables:
        value = conn.execute(
            sa.select(rs.meta_table.c.value).where(rs.meta_table.c.key == "schema_version")
        ).scalar()
        if value is not None:
            found = max(found, int(value))
    return found


def upgrade(conn: Connection) -> list[str]:
    """Apply the missing migrations on ``conn`` (inside its transaction); their names."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
    current = applied_version(conn)
    migrations_table.create(conn, checkfirst=True)
    done = []
    for version, step in enumerate(MIGRATIONS, start=1):
        if version <= current:
            continue
        step.apply(conn)
        conn.execute(migrations_table.insert().values(version=version, name=step.name, applied_at=utc_now()))
        done.append(step.name)
    if done:
        target = str(len(MIGRATIONS))
        updated = conn.execute(
            rs.meta_table.update().where(rs.meta_table.c.key == "schema_version").values(value=target)
        ).rowcount
        if not updated:
            conn.execute(rs.meta_table.insert().values(key="schema_version", value=target))
    return done
