"""The record store: the source of truth for skills, outcomes and traces.

Skill versions are immutable rows (only their lifecycle ``status`` and outcome counters
change); each skill has a pointer to its active version; outcomes are an append-only log
whose per-version counters are updated in the same transaction, so counts stay exact with
several processes writing at once. SQLAlchemy 2 Core over SQLite (WAL mode) by default;
the :class:`RecordStore` interface is what the library uses, so another SQL backend can be
added behind it. Every row belongs to a tenant (``skill_library.tenancy``): a store object
is bound to one (``tenant``; :meth:`SQLRecordStore.for_tenant` gives a view for another on
the same engine and write lock) and filters every query with :meth:`~SQLRecordStore.tenant_filter`.

This module is :class:`SQLRecordStore`; its parts are its neighbours in
``skill_library.storage`` (the tables, the interface, the SQLite/PostgreSQL specifics,
integrity checks, transactions, bulk inserts). ``skill_library.record_store`` re-exports
it, with the names callers import from there (``__all__``).
"""

from __future__ import annotations

import builtins
import copy
import importlib
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from skill_library import settings
from skill_library.errors import (
    LibraryNotFoundError,
    RecordStoreCorruptError,
    SkillLibraryError,
    SkillNotFoundError,
    TraceNotFoundError,
)
from skill_library.models import COUNTED_KINDS, Example, OutcomeKind, Skill, SkillStatus, Trace, utc_now
from skill_library.storage import layout
from skill_library.storage.advisory_lock import AdvisoryWriteLock
from skill_library.storage.bulk import insert_distinct_versions
from skill_library.storage.dialects import (
    EMPTY_FILE_CHECKS,
    EMPTY_FILE_WAIT_SECONDS,
    PG_CONFLICT_RETRIES,
    create_engine,
    named_error,
    retrying,
    stays_empty,
)
from skill_library.storage.integrity import open_records, records_problem
from skill_library.storage.interface import RecordStore, UnitOfWork
from skill_library.storage.light_reads import outcome_row as _outcome_row
from skill_library.storage.rows import row_to_skill, versions_query
from skill_library.storage.tables import (
    SCHEMA_VERSION,
    TENANT_TABLES,
    examples_table,
    meta_table,
    metadata,
    outcomes_table,
    profiles_table,
    skills_table,
    task_vectors_table,
    traces_table,
    vectors_table,
    versions_table,
)
from skill_library.storage.transactions import Transaction
from skill_library.tenancy import DEFAULT_TENANT, check_tenant
from skill_library.write_lock import FileWriteLock, WriteLock, advisory_key

__all__ = [
    "EMPTY_FILE_CHECKS",
    "EMPTY_FILE_WAIT_SECONDS",
    "PG_CONFLICT_RETRIES",
    "RECORDS_FILE",
    "SCHEMA_VERSION",
    "TENANT_TABLES",
    "WRITE_LOCK_FILE",
    "RecordStore",
    "SQLRecordStore",
    "counted_outcome",
    "delete_text_vectors",
    "examples_table",
    "meta_table",
    "metadata",
    "outcomes_table",
    "profiles_table",
    "skills_table",
    "task_vectors_table",
    "traces_table",
    "vectors_table",
    "versions_table",
]

#: the file name of the SQLite records inside a library folder (its one home: storage.layout)
RECORDS_FILE = layout.RECORDS_FILE
#: the file a folder library's writers lock (skill_library.write_lock.FileWriteLock)
WRITE_LOCK_FILE = "write.lock"


class SQLRecordStore(UnitOfWork):
    """:class:`RecordStore` on SQLAlchemy Core; ``url`` like ``sqlite:///path/records.db``.

    A SQLite file that is not a database, is empty (0 bytes) or lacks the library's tables
    raises :class:`RecordStoreCorruptError` (never opens as an empty library); a missing
    file is created only with ``create=True`` (else :class:`LibraryNotFoundError`).
    """

    def __init__(self, url: str, *, create: bool = True, tenant: str = DEFAULT_TENANT) -> None:
        self.tenant = check_tenant(tenant)
        #: True for the store that opened the engine (a tenant view only borrows it)
        self._owner = True
        self._engine = create_engine(url)
        #: the URL with any password masked: what errors and messages show
        self.url = self._engine.url.render_as_string(hide_password=True)
        self._sqlite = self._engine.dialect.name == "sqlite"
        self._postgres = self._engine.dialect.name == "postgresql"
        database = self._engine.url.database
        self.path: Path | None = (
            Path(database) if self._sqlite and database and database != ":memory:" else None
        )
        if self.path is not None:
            if self.path.exists():
                if stays_empty(self.path):
                    raise RecordStoreCorruptError(self.path, "is empty (0 bytes)")
            elif not create:
                raise LibraryNotFoundError(self.path.parent, f"no {self.path.name}")
        with self._write() as conn:
            open_records(conn, create=create, sqlite=self._sqlite, url=self.url, path=self.path)

    def for_tenant(self, tenant: str) -> "SQLRecordStore":
        """A view of this store bound to ``tenant``: the same engine and write lock (on
        PostgreSQL, the tenant's own advisory lock key), every query filtered by the new
        tenant. Closing the view leaves the engine open; the view is usable while this store is."""
        if check_tenant(tenant) == self.tenant:
            return self
        self.write_lock()  # materialize a per-object lock so that the view shares it
        view = copy.copy(self)
        view.tenant = tenant
        view._owner = False
        return view

    def tenants(self) -> builtins.list[str]:
        """Every tenant with at least one skill, sorted (read across tenants)."""
        with self._read() as conn:
            return sorted(set(conn.execute(sa.select(skills_table.c.tenant).distinct()).scalars()))

    def tenant_filter(self, table: sa.Table) -> Any:
        """The condition selecting this store's tenant's rows of ``table`` (any table with a
        ``tenant`` column: the modules with tables of their own filter with it too)."""
        return table.c.tenant == self.tenant

    _t = tenant_filter

    def write_lock(self) -> WriteLock:
        """``write.lock`` beside a SQLite file; the tenant's advisory lock on PostgreSQL."""
        if self._postgres:
            return AdvisoryWriteLock(self._engine, key=advisory_key(self.tenant))
        if self.path is not None:
            return FileWriteLock(self.path.parent / WRITE_LOCK_FILE)
        return super().write_lock()

    @property
    def shared(self) -> bool:
        """True when the records live on a database server (not in a library folder)."""
        return not self._sqlite

    @classmethod
    def in_folder(cls, folder: Path, *, create: bool = True) -> "SQLRecordStore":
        """The SQLite store ``records.db`` inside a library folder."""
        return cls(f"sqlite:///{Path(folder) / RECORDS_FILE}", create=create)

    def integrity_problem(self) -> str | None:
        """SQLite's ``quick_check`` and the library's tables and schema version."""
        try:
            with self._read() as conn:
                return records_problem(conn, sqlite=self._sqlite)
        except RecordStoreCorruptError as exc:
            return exc.problem

    # -- for the modules that keep their own tables on this engine (procedures, patterns) --
    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (modules with tables of their own create them on it)."""
        return self._engine

    def transaction(self, *, write: bool) -> Any:
        """A context manager yielding a connection in one transaction (a writer locks up front)."""
        return Transaction(self._connect, self._corrupt, write=write)

    def compact(self) -> None:
        from skill_library.storage.erasure_rows import compact_records

        compact_records(self._engine)

    def purge(self, names: Sequence[str]) -> int:
        """Delete every row of the skills ``names`` (versions, outcomes, examples, derived
        texts) of this tenant and the vectors of every form of their texts that was embedded
        (:func:`~skill_library.text_vectors.embedded_keys`); returns how many skills were
        deleted. Traces stay."""
        deleted = 0
        with self._write() as conn:
            for name in names:
                delete_text_vectors(conn, self, name)
                for table in (outcomes_table, examples_table, profiles_table, versions_table):
                    conn.execute(table.delete().where(self._t(table)).where(table.c.name == name))
                deleted += conn.execute(
                    skills_table.delete().where(self._t(skills_table)).where(skills_table.c.name == name)
                ).rowcount
        return deleted

    # -- transactions -------------------------------------------------------------------
    def _write(self) -> Any:
        return Transaction(self._connect, self._corrupt, write=True)

    def _read(self) -> Any:
        return Transaction(self._connect, self._corrupt, write=False)

    def _connect(self, write: bool) -> Connection:
        try:
            conn = self._engine.connect()
        except sa.exc.DatabaseError as exc:
            corrupt = self._corrupt(exc)
            if corrupt is None:
                raise
            raise corrupt from exc
        conn.info["write"] = write
        return conn

    def _corrupt(self, exc: BaseException) -> SkillLibraryError | None:
        """The named error for a damaged file, an unreachable server or a lock held past
        its timeout (:class:`LockTimeoutError`), or None for any other database error."""
        return named_error(exc, postgres=self._postgres, url=self.url, path=self.path)

    # -- skills -------------------------------------------------------------------------
    def add_version(
        self, skill: Skill, *, initial_success: bool = False, status: SkillStatus = "active"
    ) -> Skill:
        if status not in ("active", "draft"):
            raise ValueError(f"status: a new version is active or draft, not {status!r}")
        stored: Skill = self._retrying(lambda conn: self._add_version(conn, skill, initial_success, status))
        return stored

    def insert_version(
        self, conn: Connection, skill: Skill, *, status: SkillStatus = "active",
        initial_success: bool = False,
    ) -> tuple[Skill, builtins.list[int]]:
        """:meth:`add_version` on ``conn`` (inside the caller's transaction): the stored
        version and the versions it superseded (for the caller's audit events)."""
        if status not in ("active", "draft"):
            raise ValueError(f"status: a new version is active or draft, not {status!r}")
        superseded: builtins.list[int] = []
        stored = self._add_version(conn, skill, initial_success, status, superseded)
        return stored, superseded

    def retrying(self, work: Any) -> Any:
        """``work(conn)`` in one write transaction (retried on PostgreSQL when it lost a
        race with another writer): for modules composing several writes atomically."""
        return self._retrying(work)

    def read_version(self, conn: Connection, name: str, version: int | None = None) -> Skill:
        """One version (default: the pointer's) read on ``conn``."""
        return self._get(conn, name, version)

    def pointer(self, conn: Connection, name: str) -> int:
        """The version ``name``'s active pointer names, read on ``conn``."""
        return self._active_version(conn, name)

    def write_status(self, conn: Connection, name: str, version: int, status: SkillStatus) -> None:
        """Set one version's status on ``conn`` (inside the caller's transaction)."""
        conn.execute(
            versions_table.update()
            .where(self._t(versions_table))
            .where(versions_table.c.name == name)
            .where(versions_table.c.version == version)
            .values(status=status)
        )
        conn.execute(
            skills_table.update()
            .where(self._t(skills_table))
            .where(skills_table.c.name == name)
            .values(updated_at=utc_now())
        )

    def write_pointer(self, conn: Connection, name: str, version: int) -> None:
        """Point ``name`` at ``version`` on ``conn`` (inside the caller's transaction)."""
        self._point_to(conn, name, version, utc_now())

    def set_version_status(self, name: str, version: int, status: SkillStatus) -> Skill:
        with self._write() as conn:
            self._get(conn, name, version)  # raises when unknown
            self.write_status(conn, name, version, status)
            return self._get(conn, name, version)

    def set_active_version(self, name: str, version: int) -> Skill:
        with self._write() as conn:
            self._get(conn, name, version)  # raises when unknown
            self.write_pointer(conn, name, version)
            return self._get(conn, name, version)

    def versions_with_status(self, conn: Connection, name: str, status: SkillStatus) -> builtins.list[int]:
        """The versions of ``name`` that have ``status``, oldest first (on ``conn``)."""
        return [int(v) for v in conn.execute(
            sa.select(versions_table.c.version)
            .where(self._t(versions_table))
            .where(versions_table.c.name == name)
            .where(versions_table.c.status == status)
            .order_by(versions_table.c.version)
        ).scalars()]

    def add_versions(self, skills: Sequence[Skill], *, initial_success: bool = False) -> list[Skill]:
        stored: list[Skill] = self._retrying(
            lambda conn: self.insert_versions(conn, skills, initial_success=initial_success)[0]
        )
        return stored

    def insert_versions(
        self, conn: Connection, skills: Sequence[Skill], *, initial_success: bool = False
    ) -> tuple[builtins.list[Skill], builtins.list[builtins.list[int]]]:
        """:meth:`add_versions` on ``conn`` (inside the caller's transaction): the stored
        versions and, for each, the versions it superseded (for the caller's audit)."""
        if len({s.name for s in skills}) < len(skills):  # a name twice: one after another
            superseded: builtins.list[builtins.list[int]] = []
            stored = []
            for skill in skills:
                replaced: builtins.list[int] = []
                stored.append(self._add_version(conn, skill, initial_success, "active", replaced))
                superseded.append(replaced)
            return stored, superseded
        return insert_distinct_versions(conn, skills, initial_success, tenant=self.tenant)

    def _retrying(self, work: Any) -> Any:
        """``work(conn)`` in one write transaction; on PostgreSQL, retried when it lost a
        race with another writer (two first versions of one new name: unique violation;
        a deadlock) up to :data:`PG_CONFLICT_RETRIES` times."""
        return retrying(self._write, work, postgres=self._postgres)

    def _add_version(
        self, conn: Connection, skill: Skill, initial_success: bool, status: SkillStatus = "active",
        superseded: builtins.list[int] | None = None,
    ) -> Skill:
        now = utc_now()
        # the skill's row lock serializes new versions of one name on PostgreSQL (a first
        # version of a new name races on the primary key instead: _retrying)
        conn.execute(
            sa.select(skills_table.c.name).where(self._t(skills_table))
            .where(skills_table.c.name == skill.name).with_for_update()
        ).first()
        current = conn.execute(
            sa.select(sa.func.max(versions_table.c.version)).where(self._t(versions_table)).where(
                versions_table.c.name == skill.name
            )
        ).scalar()
        version = (current or 0) + 1
        if current is None:
            conn.execute(
                skills_table.insert().values(
                    tenant=self.tenant, name=skill.name, active_version=version, created_at=now, updated_at=now
                )
            )
        elif status == "active":
            replaced = self.versions_with_status(conn, skill.name, "active")
            if superseded is not None:
                superseded.extend(replaced)
            conn.execute(
                versions_table.update()
                .where(self._t(versions_table))
                .where(versions_table.c.name == skill.name)
                .where(versions_table.c.status == "active")
                .values(status="superseded")
            )
            self._point_to(conn, skill.name, version, now)
        elif not conn.execute(  # a draft leaves an active version current and untouched
            sa.select(sa.func.count())
            .select_from(versions_table)
            .where(self._t(versions_table))
            .where(versions_table.c.name == skill.name)
            .where(versions_table.c.status == "active")
        ).scalar():
            self._point_to(conn, skill.name, version, now)
        conn.execute(
            versions_table.insert().values(
                tenant=self.tenant,
                name=skill.name,
                version=version,
                kind=skill.kind,
                when_text=skill.when,
                description=skill.description,
                code=skill.code,
                parameters=skill.parameters,
                tools=list(skill.tools),
                depends_on=list(skill.depends_on),
                provenance=skill.provenance.model_dump(mode="json"),
                status=status,
                successes=0,
                failures=0,
                created_at=now,
            )
        )
        if initial_success:
            trace_id = skill.provenance.trace_ids[0] if skill.provenance.trace_ids else None
            self._append_outcome(conn, skill.name, version, True, trace_id, now)
        return self._get(conn, skill.name, version)

    def get(self, name: str, version: int | None = None) -> Skill:
        with self._read() as conn:
            return self._get(conn, name, version)

    def get_many(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Skill]:
        if not keys:
            return {}
        with self._read() as conn:
            return self._get_many(conn, keys)

    def get_many_and_generation(
        self, keys: Sequence[tuple[str, int]]
    ) -> tuple[dict[tuple[str, int], Skill], int]:
        with self._read() as conn:
            found = self._get_many(conn, keys) if keys else {}
            return found, self._index_generation(conn)

    def _get_many(self, conn: Connection, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Skill]:
        wanted = set(keys)
        names = sorted({n for n, _ in wanted})
        found = {}
        for start in range(0, len(names), settings.IN_QUERY_BATCH):
            rows = conn.execute(
                versions_query().where(self._t(versions_table)).where(
                    versions_table.c.name.in_(names[start : start + settings.IN_QUERY_BATCH])
                )
            ).mappings()
            for row in rows:
                key = (row["name"], row["version"])
                if key in wanted:
                    found[key] = row_to_skill(row)
        return found

    def list(self, *, status: SkillStatus | None = None) -> list[Skill]:
        query = (
            versions_query()
            .join(
                skills_table,
                sa.and_(
                    skills_table.c.tenant == versions_table.c.tenant,
                    skills_table.c.name == versions_table.c.name,
                    skills_table.c.active_version == versions_table.c.version,
                ),
            )
            .where(self._t(versions_table))
            .order_by(versions_table.c.name)
        )
        if status is not None:
            query = query.where(versions_table.c.status == status)
        with self._read() as conn:
            return [row_to_skill(row) for row in conn.execute(query).mappings()]

    def history(self, name: str) -> builtins.list[Skill]:
        with self._read() as conn:
            rows = conn.execute(
                versions_query()
                .where(self._t(versions_table))
                .where(versions_table.c.name == name)
                .order_by(versions_table.c.version)
            ).mappings().all()
        if not rows:
            raise SkillNotFoundError(name)
        return [row_to_skill(row) for row in rows]

    def record_outcome(
        self, name: str, success: bool, *, version: int | None = None, trace_id: str | None = None,
        kind: OutcomeKind | str | None = None, reason: str | None = None, origin: str | None = "feedback",
    ) -> Skill:
        with self._write() as conn:
            skill = self._get(conn, name, version)  # raises when unknown
            # the counter update comes last, so on PostgreSQL the version's row lock is
            # held only from it to the commit; its RETURNING gives the exact new counts
            successes, failures = self._append_outcome(
                conn, name, skill.version, success, trace_id, utc_now(), kind=kind, reason=reason, origin=origin
            )
            return skill.model_copy(update={"successes": successes, "failures": failures})

    def outcome_counts(self, name: str, version: int | None = None) -> dict[str, int]:
        with self._read() as conn:
            skill = self._get(conn, name, version)
            rows = conn.execute(
                sa.select(outcomes_table.c.kind, outcomes_table.c.success, sa.func.count())
                .where(self._t(outcomes_table))
                .where(outcomes_table.c.name == name)
                .where(outcomes_table.c.version == skill.version)
                .group_by(outcomes_table.c.kind, outcomes_table.c.success)
            ).all()
        counts = {k.value: 0 for k in OutcomeKind}
        for kind, success, n in rows:
            counts[kind or ("success" if success else "failure")] += int(n)
        return counts

    def trace_outcome(self, trace_id: str) -> dict[str, Any] | None:
        with self._read() as conn:
            row = conn.execute(
                sa.select(outcomes_table).where(self._t(outcomes_table))
                .where(outcomes_table.c.trace_id == trace_id)
                .order_by(outcomes_table.c.id.desc()).limit(1)
            ).mappings().first()
        return None if row is None else {"name": row["name"], **_outcome_row(row)}

    def known_traces(self, trace_ids: Sequence[str]) -> set[str]:
        wanted = sorted(set(trace_ids))
        found: set[str] = set()
        with self._read() as conn:
            for start in range(0, len(wanted), settings.IN_QUERY_BATCH):
                found.update(conn.execute(
                    sa.select(traces_table.c.id).where(self._t(traces_table))
                    .where(traces_table.c.id.in_(wanted[start : start + settings.IN_QUERY_BATCH]))
                ).scalars())
        return found

    def reclassify_outcome(self, trace_id: str, name: str, kind: OutcomeKind | str, reason: str | None) -> Skill:
        new = OutcomeKind.of(kind)
        with self._write() as conn:
            row = conn.execute(
                sa.select(outcomes_table).where(self._t(outcomes_table))
                .where(outcomes_table.c.trace_id == trace_id).where(outcomes_table.c.name == name)
                .order_by(outcomes_table.c.id.desc()).limit(1).with_for_update()
            ).mappings().first()
            if row is None:
                raise SkillLibraryError(f"trace {trace_id!r} has no outcome of {name!r} to change")
            old = row["kind"] or ("success" if row["success"] else "failure")
            conn.execute(outcomes_table.update().where(outcomes_table.c.id == row["id"])
                         .values(kind=new.value, success=new is OutcomeKind.SUCCESS, reason=reason))
            changes: dict[str, Any] = {}
            for counted, column in (("success", versions_table.c.successes), ("failure", versions_table.c.failures)):
                delta = (new.value == counted) - (old == counted)
                if delta:
                    changes[column.name] = column + delta
            if changes:
                conn.execute(versions_table.update().where(self._t(versions_table))
                             .where(versions_table.c.name == name)
                             .where(versions_table.c.version == row["version"]).values(changes))
            return self._get(conn, name, row["version"])

    def set_status(self, name: str, status: SkillStatus) -> Skill:
        with self._write() as conn:
            version = self._active_version(conn, name)
            self.write_status(conn, name, version, status)
            return self._get(conn, name, version)

    def recent_outcomes(self, name: str, version: int, limit: int) -> builtins.list[bool]:
        with self._read() as conn:
            rows = conn.execute(
                sa.select(outcomes_table.c.success)
                .where(self._t(outcomes_table))
                .where(outcomes_table.c.name == name)
                .where(outcomes_table.c.version == version)
                .where(counted_outcome())
                # a quarantine counts only outcomes of recorded runs (or of trusted in-process
                # callers): an outside report naming a session but no run is left out
                .where(sa.or_(outcomes_table.c.origin.is_(None), outcomes_table.c.origin != "external_session"))
                .order_by(outcomes_table.c.id.desc())
                .limit(limit)
            ).scalars()
            return [bool(s) for s in rows][::-1]

    def outcome_log(self, name: str) -> builtins.list[dict[str, Any]]:
        with self._read() as conn:
            self._active_version(conn, name)
            rows = conn.execute(
                sa.select(outcomes_table)
                .where(self._t(outcomes_table))
                .where(outcomes_table.c.name == name)
                .order_by(outcomes_table.c.id)
            ).mappings()
            return [_outcome_row(r) for r in rows]

    # -- traces -------------------------------------------------------------------------
    def save_trace(self, trace: Trace) -> None:
        with self._write() as conn:
            self._insert_trace(conn, trace)

    def _insert_trace(self, conn: Connection, trace: Trace) -> None:
        trace = trace.capped()  # arguments and results beyond the size cap become markers
        exists = conn.execute(
            sa.select(traces_table.c.id).where(self._t(traces_table)).where(traces_table.c.id == trace.id)
        ).scalar()
        if exists is None:
            conn.execute(
                traces_table.insert().values(
                    tenant=self.tenant,
                    id=trace.id,
                    task=trace.task,
                    source=trace.source,
                    body=trace.model_dump(mode="json"),
                    created_at=trace.created_at,
                )
            )

    def get_trace(self, trace_id: str) -> Trace:
        with self._read() as conn:
            body = conn.execute(
                sa.select(traces_table.c.body).where(self._t(traces_table)).where(traces_table.c.id == trace_id)
            ).scalar()
        if body is None:
            raise TraceNotFoundError(trace_id)
        return Trace.model_validate(body)

    def load_vectors(self, model: str, digests: Sequence[str]) -> dict[str, bytes]:
        # the tenant's own rows only: each digest is looked up under its tenant key
        from skill_library.text_vectors import tenant_key

        keyed = {tenant_key(self.tenant, d): d for d in digests}
        keys = list(keyed)
        found: dict[str, bytes] = {}
        with self._read() as conn:
            for start in range(0, len(keys), settings.IN_QUERY_BATCH):
                rows = conn.execute(
                    sa.select(vectors_table.c.digest, vectors_table.c.vector)
                    .where(vectors_table.c.model == model)
                    .where(vectors_table.c.digest.in_(keys[start : start + settings.IN_QUERY_BATCH]))
                )
                found.update((keyed[r[0]], bytes(r[1])) for r in rows)
        return found

    def save_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        if not vectors:
            return
        from skill_library.text_vectors import tenant_key

        vectors = {tenant_key(self.tenant, d): v for d, v in vectors.items()}
        with self._write() as conn:
            have = set()
            keys = list(vectors)
            for start in range(0, len(keys), settings.IN_QUERY_BATCH):
                have.update(conn.execute(
                    sa.select(vectors_table.c.digest)
                    .where(vectors_table.c.model == model)
                    .where(vectors_table.c.digest.in_(keys[start : start + settings.IN_QUERY_BATCH]))
                ).scalars())
            rows = [{"model": model, "digest": d, "vector": v} for d, v in vectors.items() if d not in have]
            if rows:
                conn.execute(vectors_table.insert(), rows)

    def _task_vector_rows(self, model: str, trace_ids: Sequence[str], *columns: Any) -> builtins.list[Any]:
        unique = sorted(set(trace_ids))
        rows: builtins.list[Any] = []
        with self._read() as conn:
            for start in range(0, len(unique), settings.IN_QUERY_BATCH):
                rows.extend(conn.execute(
                    sa.select(*columns).where(self._t(task_vectors_table))
                    .where(task_vectors_table.c.model == model)
                    .where(task_vectors_table.c.trace_id.in_(unique[start : start + settings.IN_QUERY_BATCH]))
                ))
        return rows

    def load_task_vectors(self, model: str, trace_ids: Sequence[str]) -> dict[str, bytes]:
        rows = self._task_vector_rows(model, trace_ids, task_vectors_table.c.trace_id, task_vectors_table.c.vector)
        return {r[0]: bytes(r[1]) for r in rows}

    def task_vector_ids(self, model: str, trace_ids: Sequence[str]) -> set[str]:
        return {r[0] for r in self._task_vector_rows(model, trace_ids, task_vectors_table.c.trace_id)}

    def save_task_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        if not vectors:
            return
        with self._write() as conn:
            have: set[str] = set()
            keys = sorted(vectors)
            for start in range(0, len(keys), settings.IN_QUERY_BATCH):
                have.update(conn.execute(
                    sa.select(task_vectors_table.c.trace_id).where(self._t(task_vectors_table))
                    .where(task_vectors_table.c.model == model)
                    .where(task_vectors_table.c.trace_id.in_(keys[start : start + settings.IN_QUERY_BATCH]))
                ).scalars())
            rows = [{"tenant": self.tenant, "trace_id": t, "model": model, "vector": v}
                    for t, v in vectors.items() if t not in have]
            if rows:
                conn.execute(task_vectors_table.insert(), rows)

    def names(self, *, prefix: str | None = None) -> builtins.list[str]:
        query = sa.select(skills_table.c.name).where(self._t(skills_table)).order_by(skills_table.c.name)
        if prefix is not None:
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            query = query.where(skills_table.c.name.like(escaped + "%", escape="\\"))
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def get_many_active(self, names: Sequence[str]) -> dict[str, Skill]:
        unique = sorted(set(names))
        found: dict[str, Skill] = {}
        with self._read() as conn:
            for start in range(0, len(unique), settings.IN_QUERY_BATCH):
                rows = conn.execute(
                    versions_query()
                    .join(skills_table, sa.and_(
                        skills_table.c.tenant == versions_table.c.tenant,
                        skills_table.c.name == versions_table.c.name,
                        skills_table.c.active_version == versions_table.c.version,
                    ))
                    .where(self._t(versions_table))
                    .where(versions_table.c.name.in_(unique[start : start + settings.IN_QUERY_BATCH]))
                ).mappings()
                for row in rows:
                    found[row["name"]] = row_to_skill(row)
        return found

    # -- examples and derived texts ------------------------------------------------------
    def examples(self, names: Sequence[str]) -> dict[str, builtins.list[Example]]:
        found: dict[str, builtins.list[Example]] = {n: [] for n in names}
        unique = sorted(set(names))
        with self._read() as conn:
            for start in range(0, len(unique), settings.IN_QUERY_BATCH):
                rows = conn.execute(
                    sa.select(examples_table)
                    .where(self._t(examples_table))
                    .where(examples_table.c.name.in_(unique[start : start + settings.IN_QUERY_BATCH]))
                    .order_by(examples_table.c.created_at, examples_table.c.trace_id)
                ).mappings()
                for row in rows:
                    found[row["name"]].append(
                        Example(
                            trace_id=row["trace_id"],
                            text=row["text"],
                            params=row["params"],
                            indexed=row["indexed"],
                            created_at=row["created_at"],
                        )
                    )
        return found

    def save_evidence(
        self,
        name: str,
        *,
        version: int | None = None,
        trace: Trace | None = None,
        success: bool = False,
        examples: Sequence[Example] | None = None,
        when: str | None = None,
    ) -> Skill:
        now = utc_now()
        with self._write() as conn:
            # the skill's row lock: evidence of one skill is replaced by one writer at a time
            conn.execute(sa.select(skills_table.c.name).where(self._t(skills_table))
                         .where(skills_table.c.name == name).with_for_update()).first()
            if version is None:
                version = self._active_version(conn, name)
            else:
                self._get(conn, name, version)  # raises when unknown
            if trace is not None:
                self._insert_trace(conn, trace)
                if success:
                    self._append_outcome(conn, name, version, True, trace.id, now)
            if examples is not None:
                conn.execute(examples_table.delete().where(self._t(examples_table))
                             .where(examples_table.c.name == name))
                if examples:
                    conn.execute(
                        examples_table.insert(),
                        [
                            dict(tenant=self.tenant, name=name, trace_id=e.trace_id, text=e.text, params=e.params,
                                 indexed=e.indexed, created_at=e.created_at)
                            for e in examples
                        ],
                    )
            if when is not None:
                conn.execute(profiles_table.delete().where(self._t(profiles_table))
                             .where(profiles_table.c.name == name))
                conn.execute(
                    profiles_table.insert().values(
                        tenant=self.tenant, name=name, version=version, when_text=when, updated_at=now
                    )
                )
            return self._get(conn, name, version)

    def set_preconditions(self, name: str, version: int, conditions: Sequence[Any], when: str | None) -> Skill:
        with self._write() as conn:
            skill = self._get(conn, name, version)  # raises when unknown
            provenance = skill.provenance.model_copy(update={"preconditions": list(conditions)})
            conn.execute(versions_table.update().where(self._t(versions_table))
                         .where(versions_table.c.name == name).where(versions_table.c.version == version)
                         .values(provenance=provenance.model_dump(mode="json")))
            if when is not None:
                conn.execute(profiles_table.delete().where(self._t(profiles_table))
                             .where(profiles_table.c.name == name))
                conn.execute(profiles_table.insert().values(
                    tenant=self.tenant, name=name, version=version, when_text=when, updated_at=utc_now()))
            return self._get(conn, name, version)

    def traces_for(self, name: str) -> builtins.list[Trace]:
        ids: set[str] = set()
        for version in self.history(name):  # raises for an unknown name
            ids.update(version.provenance.trace_ids)
        with self._read() as conn:
            ids.update(
                r[0]
                for r in conn.execute(
                    sa.select(outcomes_table.c.trace_id)
                    .where(self._t(outcomes_table))
                    .where(outcomes_table.c.name == name)
                    .where(outcomes_table.c.trace_id.is_not(None))
                )
            )
            ran = traces_table.c.source.startswith(f"skill:{name}@", autoescape=True)
            chosen = sorted(ids)
            bodies: dict[str, Any] = {}
            for row in conn.execute(
                sa.select(traces_table.c.id, traces_table.c.body).where(self._t(traces_table)).where(ran)
            ):
                bodies[row[0]] = row[1]
            for start in range(0, len(chosen), settings.IN_QUERY_BATCH):
                for row in conn.execute(
                    sa.select(traces_table.c.id, traces_table.c.body).where(self._t(traces_table)).where(
                        traces_table.c.id.in_(chosen[start : start + settings.IN_QUERY_BATCH])
                    )
                ):
                    bodies[row[0]] = row[1]
        traces = [Trace.model_validate(b) for b in bodies.values()]
        return sorted(traces, key=lambda t: (t.created_at, t.id))

    def index_generation(self) -> int:
        with self._read() as conn:
            return self._index_generation(conn)

    def _index_generation(self, conn: Connection) -> int:
        value = conn.execute(
            sa.select(meta_table.c.value).where(self._t(meta_table))
            .where(meta_table.c.key == "index_generation")
        ).scalar()
        return int(value) if value is not None else 0

    def bump_index_generation(self) -> int:
        with self._write() as conn:
            # a tenant's first bump makes its row (the insert is a no-op when it exists, so two
            # writers of a new tenant do not race on the key); the row lock orders concurrent
            # bumps on PostgreSQL
            # the engine's dialect module, imported by the engine already (not PostgreSQL's
            # on SQLite: importing it costs a CLI call ~60 ms)
            insert = importlib.import_module(f"sqlalchemy.dialects.{self._engine.dialect.name}").insert
            conn.execute(
                insert(meta_table).values(tenant=self.tenant, key="index_generation", value="0")
                .on_conflict_do_nothing(index_elements=["tenant", "key"])
            )
            value = conn.execute(
                sa.select(meta_table.c.value).where(self._t(meta_table))
                .where(meta_table.c.key == "index_generation").with_for_update()
            ).scalar()
            new = int(value) + 1
            conn.execute(
                meta_table.update()
                .where(self._t(meta_table))
                .where(meta_table.c.key == "index_generation")
                .values(value=str(new))
            )
            return new

    def close(self) -> None:
        """Release connections (a tenant view leaves them to the store it came from)."""
        if self._owner:
            self._engine.dispose()

    # -- helpers ------------------------------------------------------------------------
    def _point_to(self, conn: Connection, name: str, version: int, now: datetime) -> None:
        conn.execute(
            skills_table.update()
            .where(self._t(skills_table))
            .where(skills_table.c.name == name)
            .values(active_version=version, updated_at=now)
        )

    def _active_version(self, conn: Connection, name: str) -> int:
        version = conn.execute(
            sa.select(skills_table.c.active_version).where(self._t(skills_table))
            .where(skills_table.c.name == name)
        ).scalar()
        if version is None:
            raise SkillNotFoundError(name)
        return int(version)

    def _get(self, conn: Connection, name: str, version: int | None) -> Skill:
        if version is None:
            version = self._active_version(conn, name)
        row = conn.execute(
            versions_query()
            .where(self._t(versions_table))
            .where(versions_table.c.name == name)
            .where(versions_table.c.version == version)
        ).mappings().first()
        if row is None:
            self._active_version(conn, name)  # unknown name -> plain "no skill named"
            raise SkillNotFoundError(name, version)
        return row_to_skill(row)

    def _append_outcome(
        self,
        conn: Connection,
        name: str,
        version: int,
        success: bool,
        trace_id: str | None,
        when: datetime,
        *,
        kind: OutcomeKind | str | None = None,
        reason: str | None = None,
        origin: str | None = "learned",
    ) -> tuple[int, int]:
        """Append one outcome and, for a counted kind (success, failure), bump its version's
        counter (an atomic ``x = x + 1``: exact under concurrent writers); the version's new
        (successes, failures). ``kind`` None: success or failure by ``success``."""
        found = OutcomeKind.of(success if kind is None else kind)
        conn.execute(
            outcomes_table.insert().values(
                tenant=self.tenant, name=name, version=version, success=found is OutcomeKind.SUCCESS,
                trace_id=trace_id, recorded_at=when, kind=found.value, reason=reason, origin=origin,
            )
        )
        this = (self._t(versions_table), versions_table.c.name == name, versions_table.c.version == version)
        if not found.counted:
            row = conn.execute(
                sa.select(versions_table.c.successes, versions_table.c.failures).where(*this)
            ).one()
            return int(row[0]), int(row[1])
        column = versions_table.c.successes if found is OutcomeKind.SUCCESS else versions_table.c.failures
        row = conn.execute(
            versions_table.update()
            .where(*this)
            .values({column.name: column + 1})
            .returning(versions_table.c.successes, versions_table.c.failures)
        ).one()
        return int(row[0]), int(row[1])


def counted_outcome() -> Any:
    """The outcome rows that are the skill's own record: success or failure (a row no
    migration gave a kind counts by its flag)."""
    return sa.or_(outcomes_table.c.kind.is_(None), outcomes_table.c.kind.in_(sorted(COUNTED_KINDS)))


def delete_text_vectors(conn: sa.Connection, store: UnitOfWork, name: str) -> None:
    """On ``conn``, the stored vectors of every embedded form of ``name``'s texts in
    ``store``'s tenant: its ``when`` texts (versions, profiles) and its examples with their
    params. Run before the rows that name the texts are deleted."""
    from skill_library.text_vectors import embedded_keys

    mine = store.tenant_filter
    texts: set[tuple[str, Any]] = set()
    for table in (versions_table, profiles_table):
        texts.update((t, None) for t in conn.execute(
            sa.select(table.c.when_text).where(mine(table)).where(table.c.name == name)).scalars())
    examples = [(r[0], r[1]) for r in conn.execute(
        sa.select(examples_table.c.text, examples_table.c.params).where(mine(examples_table))
        .where(examples_table.c.name == name))]
    keys = embedded_keys(store.tenant, [*texts, *examples])
    batch = settings.IN_QUERY_BATCH
    for start in range(0, len(keys), batch):
        conn.execute(vectors_table.delete().where(vectors_table.c.digest.in_(keys[start:start + batch])))
