"""Schema migrations of the record store: a list, applied in order, recorded in a table.

The position of a step in :data:`MIGRATIONS` is the schema version it brings the store to
(``storage.layout.SCHEMA_VERSION == len(MIGRATIONS)``, checked on import). The steps already applied are rows of
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
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from skill_library.models import utc_now
from skill_library.storage import governance_tables
from skill_library.storage import sql_store as rs
from skill_library.storage.feature_tables import UPLIFT_TABLES as uplift_tables
from skill_library.storage.feature_tables import tool_bindings_table
from skill_library.storage.governance_tables import evaluations_table
from skill_library.storage.layout import SCHEMA_VERSION
from skill_library.storage.pattern_tables import TENANT_TABLES as pattern_tenant_tables
from skill_library.storage.privacy_tables import PRIVACY_TABLES
from skill_library.tenancy import DEFAULT_TENANT

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


#: what a table is renamed to while its rows are copied into its tenant form
BEFORE_TENANTS_SUFFIX = "_before_tenants"


def _add_tenants(conn: Connection) -> None:
    """Every record gets a ``tenant`` column (existing rows: the default tenant), first in
    the primary keys and foreign keys where names are keys.

    A table made without the column is rebuilt: renamed aside, created anew, its rows
    copied, the old one dropped (children before parents, so foreign keys stay valid
    throughout). The record tables are rebuilt together (their foreign keys tie them);
    each pattern/procedure table alone. Tables already in the tenant form (a store created
    by this code, whose earlier steps made the current tables) are left as they are.
    """
    inspector = sa.inspect(conn)
    present = set(inspector.get_table_names())
    groups = [list(rs.TENANT_TABLES), *([t] for t in pattern_tenant_tables)]
    for group in groups:
        found = [t for t in group if t.name in present]
        columns = {t.name: [c["name"] for c in inspector.get_columns(t.name)] for t in found}
        if found and any("tenant" not in columns[t.name] for t in found):
            _rebuild(conn, found, columns)


def _rebuild(conn: Connection, tables: list[sa.Table], columns: dict[str, list[str]]) -> None:
    """Rebuild ``tables`` (parents first) in their current form, keeping their rows."""
    inspector = sa.inspect(conn)
    quote = conn.dialect.identifier_preparer.quote
    postgres = conn.dialect.name == "postgresql"
    if conn.dialect.name == "sqlite":  # checked at commit: rows are copied before old parents go
        conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
    aside = {t.name: t.name + BEFORE_TENANTS_SUFFIX for t in tables}
    for table in tables:
        for index in inspector.get_indexes(table.name):  # index names are database-wide
            if index["name"]:
                conn.exec_driver_sql(f"DROP INDEX {quote(index['name'])}")
        primary = inspector.get_pk_constraint(table.name).get("name")
        conn.exec_driver_sql(f"ALTER TABLE {quote(table.name)} RENAME TO {quote(aside[table.name])}")
        if postgres and primary:  # its name (and index) would clash with the new table's
            conn.exec_driver_sql(
                f"ALTER TABLE {quote(aside[table.name])} DROP CONSTRAINT {quote(primary)} CASCADE"
            )
    for table in tables:
        table.create(conn)
        old = sa.table(aside[table.name], *(sa.column(c) for c in columns[table.name]))
        kept = [c for c in columns[table.name] if c in table.c and c != "tenant"]
        tenant: Any = old.c.tenant if "tenant" in columns[table.name] else sa.literal(DEFAULT_TENANT)
        conn.execute(table.insert().from_select(
            ["tenant", *kept], sa.select(tenant, *(old.c[c] for c in kept))
        ))
        serial = [c.name for c in table.primary_key.columns if c.autoincrement is True]
        if postgres and serial:  # copied ids: the new sequence continues after them
            column = serial[0]
            conn.exec_driver_sql(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', '{column}'), "
                f"COALESCE(MAX({quote(column)}), 0) + 1, false) FROM {quote(table.name)}"
            )
    for table in reversed(tables):
        conn.exec_driver_sql(f"DROP TABLE {quote(aside[table.name])}")


def _governance(conn: Connection) -> None:
    """The governance tables; and versions replaced by a newer one, which were marked
    ``retired`` before ``superseded`` existed, become ``superseded`` (``retire()`` only
    ever retired the version the pointer names, so every other retired one was replaced)."""
    _create(*governance_tables.ALL_TABLES)(conn)
    pointer = (
        sa.select(rs.skills_table.c.active_version)
        .where(rs.skills_table.c.tenant == rs.versions_table.c.tenant)
        .where(rs.skills_table.c.name == rs.versions_table.c.name)
        .scalar_subquery()
    )
    conn.execute(
        rs.versions_table.update()
        .where(rs.versions_table.c.status == "retired")
        .where(rs.versions_table.c.version != pointer)
        .values(status="superseded")
    )


def _outcome_kinds(conn: Connection) -> None:
    """Outcomes get their kind, reason and origin (issue 21: honest outcomes); the rows of
    an older store become ``success`` or ``failure`` by their ``success`` flag, origin
    unknown (NULL). A store whose outcomes table already has the columns (created by this
    code) only has its empty kinds filled."""
    table = rs.outcomes_table
    present = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
    quote = conn.dialect.identifier_preparer.quote
    for column in ("kind", "reason", "origin"):
        if column not in present:
            kind = table.c[column].type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column)} {kind}")
    conn.execute(table.update().where(table.c.kind.is_(None))
                 .values(kind=sa.case((table.c.success == sa.true(), "success"), else_="failure")))


def _tool_bindings(conn: Connection) -> None:
    """Versions get their tool bindings (skill_library.storage.tool_digests): the ones
    stored before are bound to the tenant's declared schemas, else the schemas seen in
    their traces (the best record of what they were verified against)."""
    from skill_library.storage import tool_digests

    tool_bindings_table.create(conn, checkfirst=True)
    if conn.execute(sa.select(tool_bindings_table.c.name).limit(1)).first() is not None:
        return
    rows = conn.execute(sa.select(rs.versions_table).where(rs.versions_table.c.kind == "code")).mappings().all()
    by_tenant: dict[str, list[Any]] = {}
    for row in rows:
        if row["tools"]:
            by_tenant.setdefault(row["tenant"], []).append(row)
    from skill_library.models import Provenance, Skill

    for tenant, found in by_tenant.items():
        declared = tool_digests.declared_schemas(conn, tenant)
        skills = [Skill.model_construct(name=r["name"], version=int(r["version"]), tools=list(r["tools"]),
                                        provenance=Provenance.model_validate(r["provenance"] or {}))
                  for r in found]
        tool_digests.record(conn, tenant, skills, declared)


#: the schema's history; append, never edit or reorder
MIGRATIONS: list[Migration] = [
    Migration("initial: skills, versions, outcomes, traces, meta", _initial),
    Migration("evidence: skill_examples, skill_profiles", _create(rs.examples_table, rs.profiles_table)),
    Migration("text_vectors: stored vectors of the index texts", _create(rs.vectors_table)),
    Migration("tenants: a tenant column in every record and its keys", _add_tenants),
    Migration("governance: audit_events, actors, tool_specs, policies, canaries; superseded", _governance),
    Migration("evaluations: candidate vs active on a suite", _create(evaluations_table)),
    Migration("task_vectors: the vectors of example traces' tasks, for prototypes", _create(rs.task_vectors_table)),
    Migration("outcome kinds: kind, reason and origin of every outcome", _outcome_kinds),
    Migration("uplift: uplift_settings, session_outcomes (the holdout arm)", _create(*uplift_tables)),
    Migration("tool bindings: the digest of every tool schema a version was verified against",
              _tool_bindings),
    Migration("memory and privacy: pattern, reliability and procedure tables; forgotten_traces, skill_aliases",
              _create(*pattern_tenant_tables, *PRIVACY_TABLES)),
]
if len(MIGRATIONS) != SCHEMA_VERSION:  # one number, kept in storage.layout (the light reads read it)
    raise RuntimeError(f"storage.layout.SCHEMA_VERSION is {SCHEMA_VERSION} but there are {len(MIGRATIONS)} "
                       "migrations: a new step raises SCHEMA_VERSION in skill_library/storage/layout.py")


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
