"""The rows ``forget(subject)`` reads, deletes and rewrites (skill_library.erasure), and the
compaction that makes deleted rows unrecoverable from the database's files.

:class:`ErasureRows` only finds, deletes and rewrites rows; what a subject is, how a value
is matched and replaced, and what is re-derived afterwards is the concept's. Each method is
one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa

from skill_library.models import Trace, utc_now
from skill_library.storage import privacy_rows, redaction_rows
from skill_library.storage.privacy_tables import aliases_table, tombstones_table
from skill_library.storage.tables import (
    examples_table,
    metadata,
    outcomes_table,
    profiles_table,
    task_vectors_table,
    traces_table,
    vectors_table,
    versions_table,
)

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork

#: Traces read per batch while looking for a subject's.
SCAN_BATCH = 500
#: Tries of the final WAL checkpoint (another reader may hold it back), and the pause between.
CHECKPOINT_TRIES = 50
CHECKPOINT_PAUSE_SECONDS = 0.1
#: governance records of who did what (accountability, not a subject's data): never scrubbed
#: (an actor is removed with ``skills actors remove``)
UNSWEPT_TABLES = frozenset({"actors", "tool_specs", "policies", "library_meta", "schema_migrations"})
#: columns never rewritten: keys and names other rows refer to, and who acted
UNSWEPT_COLUMNS = frozenset({"tenant", "name", "actor"})


class Scrubbing(Protocol):
    """What the sweep asks of a subject's matcher (skill_library.erasure.Matcher)."""

    def any(self, value: Any) -> bool:
        """Whether a text or JSON value names the subject."""

    def scrub(self, value: Any) -> Any:
        """``value`` with the subject replaced."""


@dataclass
class Erased:
    """What :meth:`ErasureRows.erase` removed and rewrote."""

    examples: int = 0
    outcome_links: int = 0
    traces: int = 0
    #: skills whose examples, outcomes or provenance named an erased trace
    affected: set[str] = field(default_factory=set)
    #: table -> rows the value was replaced in
    scrubbed: dict[str, int] = field(default_factory=dict)
    #: table -> rows that still name the subject in a key, a name or an actor column
    left: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0


def record_tables() -> list[sa.Table]:
    """Every table with a tenant column the library writes (records, governance, patterns,
    procedures, features), for the sweep that scrubs what the specific steps left."""
    from skill_library.storage import feature_tables, governance_tables, pattern_tables  # noqa: F401 (their tables)

    # the tombstones and the aliases of renamed skills are the erasure's own rows
    own = {traces_table.name, tombstones_table.name, aliases_table.name}
    return [t for t in metadata.sorted_tables if "tenant" in t.c and t.name not in own]


def _in(column: Any, values: Sequence[str]) -> Iterator[Any]:
    from skill_library import settings

    ordered = sorted(values)
    for start in range(0, len(ordered), settings.IN_QUERY_BATCH):
        yield column.in_(ordered[start : start + settings.IN_QUERY_BATCH])


class ErasureRows:
    """The rows of ``store``'s tenant that an erasure touches."""

    def __init__(self, store: "UnitOfWork") -> None:
        self.store = store
        self.tenant = store.tenant
        self._t = store.tenant_filter

    def tombstoned(self, identities: dict[int, set[str]]) -> set[int]:
        """Which of the traces (position -> its identities) have a tombstone."""
        if not identities:
            return set()
        with self.store.transaction(write=False) as conn:
            salt = privacy_rows.salt(conn, self.tenant, create=False)
            if salt is None:
                return set()
            wanted = {n: {privacy_rows.digest(salt, i) for i in ids} for n, ids in identities.items()}
            every = sorted(set().union(*wanted.values()))
            dead = set(conn.execute(sa.select(tombstones_table.c.digest)
                                    .where(tombstones_table.c.tenant == self.tenant)
                                    .where(tombstones_table.c.digest.in_(every))).scalars())
        return {n for n, digests in wanted.items() if digests & dead}

    def matching_traces(self, matches: Callable[[str, Any], bool]) -> dict[str, Trace]:
        """The stored traces for which ``matches(task, body)`` holds, by id (read in batches
        of :data:`SCAN_BATCH`)."""
        found: dict[str, Trace] = {}
        last = ""
        with self.store.transaction(write=False) as conn:
            while True:
                rows = conn.execute(sa.select(traces_table.c.id, traces_table.c.task, traces_table.c.body)
                                    .where(self._t(traces_table)).where(traces_table.c.id > last)
                                    .order_by(traces_table.c.id).limit(SCAN_BATCH)).all()
                if not rows:
                    return found
                for trace_id, task, body in rows:
                    if matches(task, body):
                        found[trace_id] = Trace.model_validate(body)
                last = rows[-1][0]

    def erase(
        self,
        ids: Sequence[str],
        identities: set[str],
        match: Scrubbing,
        vector_digests: Callable[[set[str]], set[str]],
    ) -> Erased:
        """In one transaction: delete the traces ``ids`` with their examples and task
        vectors, unlink the outcomes of them (the outcome rows stay), drop them from the
        versions' provenance and the affected skills' derived ``when``; replace the value in
        every other row of the tenant that names it (:meth:`_sweep`), dropping the tenant's
        cached vectors of the changed versions' old texts (their digests: ``vector_digests``,
        under the tenant's key and the unsalted one); and,
        when traces were erased, keep a tombstone of each of ``identities``."""
        erased = Erased()
        t = self._t
        with self.store.transaction(write=True) as conn:
            for cond in _in(examples_table.c.trace_id, ids):
                erased.affected.update(conn.execute(sa.select(examples_table.c.name).where(t(examples_table))
                                                    .where(cond)).scalars())
                erased.examples += conn.execute(examples_table.delete().where(t(examples_table))
                                                .where(cond)).rowcount or 0
            for cond in _in(outcomes_table.c.trace_id, ids):
                erased.affected.update(conn.execute(sa.select(outcomes_table.c.name).where(t(outcomes_table))
                                                    .where(cond)).scalars())
                erased.outcome_links += conn.execute(outcomes_table.update().where(t(outcomes_table))
                                                     .where(cond).values(trace_id=None)).rowcount or 0
            for cond in _in(task_vectors_table.c.trace_id, ids):
                conn.execute(task_vectors_table.delete().where(t(task_vectors_table)).where(cond))
            for cond in _in(traces_table.c.id, ids):
                erased.traces += conn.execute(traces_table.delete().where(t(traces_table))
                                              .where(cond)).rowcount or 0
            # the versions' provenance keeps no link to an erased trace
            gone = set(ids)
            for name, version, provenance in conn.execute(
                    sa.select(versions_table.c.name, versions_table.c.version, versions_table.c.provenance)
                    .where(t(versions_table))).all():
                kept = [i for i in provenance.get("trace_ids", []) if i not in gone]
                if len(kept) != len(provenance.get("trace_ids", [])):
                    erased.affected.add(name)
                    conn.execute(versions_table.update().where(t(versions_table))
                                 .where(versions_table.c.name == name).where(versions_table.c.version == version)
                                 .values(provenance={**provenance, "trace_ids": kept}))
            # a derived when recomputed from examples that named the subject
            conn.execute(profiles_table.delete().where(t(profiles_table))
                         .where(profiles_table.c.name.in_(sorted(erased.affected) or [""])))
            old_texts = self._sweep(conn, match, erased)
            if old_texts:
                keys = redaction_rows.stored_keys(self.tenant, vector_digests(old_texts))
                conn.execute(vectors_table.delete().where(vectors_table.c.digest.in_(keys)))
            if ids:
                salt = privacy_rows.salt(conn, self.tenant, create=True)
                assert salt is not None
                dead = sorted({privacy_rows.digest(salt, i) for i in identities})
                known = set(conn.execute(sa.select(tombstones_table.c.digest)
                                         .where(tombstones_table.c.tenant == self.tenant)).scalars())
                fresh = [d for d in dead if d not in known]
                if fresh:
                    conn.execute(tombstones_table.insert(),
                                 [{"tenant": self.tenant, "digest": d, "at": utc_now()} for d in fresh])
                erased.tombstones = len(fresh)
        return erased

    def _sweep(self, conn: sa.Connection, match: Scrubbing, erased: Erased) -> set[str]:
        """Replace the value in every remaining row of the tenant that names it (text and
        JSON columns other than keys, names and actors); rows still naming it in such a
        column are counted in ``erased.left``. Returns the old texts of versions changed."""
        old_texts: set[str] = set()
        inspector_tables = set(sa.inspect(conn).get_table_names())
        for table in record_tables():
            if table.name not in inspector_tables or table.name in UNSWEPT_TABLES:
                continue
            keys = list(table.primary_key.columns)
            texty = [c for c in table.c if isinstance(c.type, (sa.String, sa.Text, sa.JSON))]
            writable = [c for c in texty if c.name not in UNSWEPT_COLUMNS and not c.primary_key]
            if not texty:
                continue
            columns = list(dict.fromkeys([*keys, *texty]))
            for row in conn.execute(sa.select(*columns).where(table.c.tenant == self.tenant)).mappings():
                changed = {c.name: match.scrub(row[c.name]) for c in writable
                           if row[c.name] is not None and match.any(row[c.name])}
                if changed:
                    if table.name == versions_table.name and "when_text" in changed:
                        old_texts.add(row["when_text"])
                    condition = sa.and_(*(k == row[k.name] for k in keys))
                    conn.execute(table.update().where(condition).values(**changed))
                    erased.scrubbed[table.name] = erased.scrubbed.get(table.name, 0) + 1
                if any(row[c.name] is not None and match.any(row[c.name]) for c in texty if c not in writable):
                    erased.left[table.name] = erased.left.get(table.name, 0) + 1
        return old_texts


def compact_records(engine: sa.Engine) -> None:
    """Make deleted rows unrecoverable from the files of the database ``engine`` opens
    (``UnitOfWork.compact``): on SQLite a WAL checkpoint and ``VACUUM`` (the checkpoint
    retried while a reader holds it back), on PostgreSQL a ``VACUUM`` of every record table."""
    if engine.dialect.name == "sqlite":
        engine.dispose()  # no pooled connection keeps a snapshot that stops the checkpoint
        raw = engine.raw_connection()  # the driver's connection: VACUUM runs outside any BEGIN
        try:
            cursor = raw.driver_connection.cursor()  # type: ignore[union-attr]
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cursor.execute("VACUUM")
            for _ in range(CHECKPOINT_TRIES):  # a reader in flight makes the checkpoint busy
                busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy:
                    break
                time.sleep(CHECKPOINT_PAUSE_SECONDS)
            cursor.close()
        finally:
            raw.close()
    elif engine.dialect.name == "postgresql":
        names = [t.name for t in record_tables()] + [traces_table.name, tombstones_table.name]
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            present = set(sa.inspect(conn).get_table_names())
            for name in names:
                if name in present:
                    conn.exec_driver_sql(f'VACUUM "{name}"')
