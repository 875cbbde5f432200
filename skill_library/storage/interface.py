"""The :class:`RecordStore` interface: what the library needs from a record store.

Skill versions are immutable (only their lifecycle ``status`` and outcome counters
change), each skill has an active pointer, outcomes are an append-only log; a store
object reads and writes the records of one tenant. ``skill_library.storage.sql_store``
implements it on SQLAlchemy Core.

:class:`UnitOfWork` is the rest of the contract: a :class:`RecordStore` whose writes a caller
can compose in one transaction (a version's status and its audit event, a canary row and the
transition that starts it). Governance, procedures, usage patterns, erasure and uplift take
it with :func:`unit_of_work` and use nothing else of the implementation; the storage
modules' row classes (``storage/*_rows.py``) write their tables on the connections it hands
out. The conformance suite (tests/test_storage_contract.py) runs every method of both
classes over SQLite and PostgreSQL.
"""

from __future__ import annotations

import abc
import builtins
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Sequence, TypeVar

from skill_library.errors import RecordStoreCorruptError, SkillLibraryError, TraceNotFoundError
from skill_library.models import Example, OutcomeKind, Skill, SkillStatus, Trace
from skill_library.tenancy import DEFAULT_TENANT, check_tenant
from skill_library.write_lock import ThreadWriteLock, WriteLock

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

T = TypeVar("T")


class RecordStore(abc.ABC):
    """What the library needs from a record store: the records of one tenant (``tenant``).

    Every method reads and writes only that tenant's rows; :meth:`for_tenant` gives a view
    on the same store for another tenant.
    """

    #: the tenant whose records this store object reads and writes
    tenant: str = DEFAULT_TENANT

    def for_tenant(self, tenant: str) -> "RecordStore":
        """This store bound to ``tenant`` (the same connections and write lock)."""
        if check_tenant(tenant) == self.tenant:
            return self
        raise NotImplementedError(f"{type(self).__name__} holds one tenant only")

    @abc.abstractmethod
    def add_version(
        self, skill: Skill, *, initial_success: bool = False, status: SkillStatus = "active"
    ) -> Skill:
        """Store ``skill`` as the next version of its name and make it active (the
        version active before it becomes ``superseded``).

        ``status="draft"`` stores an unverified version instead: it supersedes nothing, and
        it becomes the name's current version only when the name has no active version.
        """

    def add_versions(self, skills: Sequence[Skill], *, initial_success: bool = False) -> list[Skill]:
        """:meth:`add_version` for several skills (one transaction where supported)."""
        return [self.add_version(s, initial_success=initial_success) for s in skills]

    @abc.abstractmethod
    def get(self, name: str, version: int | None = None) -> Skill:
        """One version (default: the active one) with its counts."""

    @abc.abstractmethod
    def get_many(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Skill]:
        """The given (name, version) records that exist, in one round trip."""

    def get_many_and_generation(
        self, keys: Sequence[tuple[str, int]]
    ) -> tuple[dict[tuple[str, int], Skill], int]:
        """:meth:`get_many` and :meth:`index_generation` read together (fetch's one read)."""
        return self.get_many(keys), self.index_generation()

    @abc.abstractmethod
    def list(self, *, status: SkillStatus | None = None) -> list[Skill]:
        """The active-pointer version of every skill, by name."""

    @abc.abstractmethod
    def history(self, name: str) -> builtins.list[Skill]:
        """Every version of ``name``, oldest first."""

    @abc.abstractmethod
    def record_outcome(
        self, name: str, success: bool, *, version: int | None = None, trace_id: str | None = None,
        kind: OutcomeKind | str | None = None, reason: str | None = None, origin: str | None = "feedback",
    ) -> Skill:
        """Append an outcome and return the version with updated counts. ``kind`` (default:
        success or failure by ``success``) is stored with ``reason`` and ``origin`` (run,
        feedback, external, learned); only success and failure move the counters."""

    @abc.abstractmethod
    def outcome_counts(self, name: str, version: int | None = None) -> dict[str, int]:
        """How many outcomes of each :class:`OutcomeKind` the version (default: the active
        one) has, every kind present (zeros included)."""

    @abc.abstractmethod
    def trace_outcome(self, trace_id: str) -> dict[str, Any] | None:
        """The latest outcome recorded for trace ``trace_id`` (an :meth:`outcome_log` row
        with the skill's ``name``), if any."""

    @abc.abstractmethod
    def reclassify_outcome(self, trace_id: str, name: str, kind: OutcomeKind | str, reason: str | None) -> Skill:
        """Change the kind of the latest outcome of ``name`` for ``trace_id`` (the counters
        follow); the version it belongs to."""

    @abc.abstractmethod
    def set_status(self, name: str, status: SkillStatus) -> Skill:
        """Change the lifecycle status of the active version of ``name``."""

    @abc.abstractmethod
    def set_version_status(self, name: str, version: int, status: SkillStatus) -> Skill:
        """Change the lifecycle status of one version of ``name`` (its content never
        changes); the governed path is skill_library.governance.lifecycle.transition."""

    @abc.abstractmethod
    def set_active_version(self, name: str, version: int) -> Skill:
        """Point ``name``'s active pointer (what ``get(name)`` returns) at ``version``."""

    @abc.abstractmethod
    def recent_outcomes(self, name: str, version: int, limit: int) -> builtins.list[bool]:
        """The last ``limit`` counted outcomes (success or failure: the skill's own record)
        of ``name`` v``version``, oldest first (True: a success); reads at most ``limit`` rows, whatever the history."""

    @abc.abstractmethod
    def outcome_log(self, name: str) -> builtins.list[dict[str, Any]]:
        """Every outcome recorded for ``name``, oldest first: version, success, kind, reason,
        origin, trace_id, recorded_at."""

    @abc.abstractmethod
    def save_trace(self, trace: Trace) -> None:
        """Store a trace (idempotent on its id)."""

    def known_traces(self, trace_ids: Sequence[str]) -> set[str]:
        """Which of ``trace_ids`` are stored."""
        found = set()
        for trace_id in trace_ids:
            try:
                self.get_trace(trace_id)
            except TraceNotFoundError:
                continue
            found.add(trace_id)
        return found

    @abc.abstractmethod
    def get_trace(self, trace_id: str) -> Trace:
        """A stored trace; :class:`TraceNotFoundError` (a ``KeyError``) if unknown."""

    def traces_for(self, name: str) -> builtins.list[Trace]:
        """Traces of ``name``: those its versions were learned from and those of its
        recorded outcomes, oldest first. Unknown name: :class:`SkillNotFoundError`."""
        ids: list[str] = []
        for version in self.history(name):
            ids.extend(i for i in version.provenance.trace_ids if i not in ids)
        for outcome in self.outcome_log(name):
            if outcome["trace_id"] and outcome["trace_id"] not in ids:
                ids.append(outcome["trace_id"])
        found = []
        for trace_id in ids:
            try:
                found.append(self.get_trace(trace_id))
            except TraceNotFoundError:
                pass  # an outcome may name a trace that was never stored
        return sorted(found, key=lambda t: t.created_at)

    def integrity_problem(self) -> str | None:
        """What is wrong with the stored records (``None`` when they look sound)."""
        return None

    def check_integrity(self) -> None:
        """Raise :class:`RecordStoreCorruptError` when :meth:`integrity_problem` finds one."""
        problem = self.integrity_problem()
        if problem is not None:
            raise RecordStoreCorruptError(getattr(self, "url", type(self).__name__), problem)

    @abc.abstractmethod
    def load_vectors(self, model: str, digests: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of ``model`` for the text ``digests`` it has."""

    @abc.abstractmethod
    def save_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        """Store text vectors of ``model`` (digest -> packed vector; existing ones kept)."""

    @abc.abstractmethod
    def load_task_vectors(self, model: str, trace_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored task vectors of ``model`` for the traces ``trace_ids`` that have one."""

    @abc.abstractmethod
    def task_vector_ids(self, model: str, trace_ids: Sequence[str]) -> set[str]:
        """Which of ``trace_ids`` have a task vector of ``model`` (no vectors read)."""

    @abc.abstractmethod
    def save_task_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        """Store task vectors of ``model`` (trace id -> packed vector; existing ones kept)."""

    @abc.abstractmethod
    def names(self, *, prefix: str | None = None) -> builtins.list[str]:
        """Every skill name (starting with ``prefix`` when given), sorted."""

    @abc.abstractmethod
    def get_many_active(self, names: Sequence[str]) -> dict[str, Skill]:
        """The current version of each of ``names`` that exists."""

    @abc.abstractmethod
    def examples(self, names: Sequence[str]) -> dict[str, builtins.list[Example]]:
        """The stored examples of each of ``names`` (oldest first); absent names map to []."""

    @abc.abstractmethod
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
        """In one transaction: store ``trace``, append a success for it when ``success``,
        replace the examples of ``name`` with ``examples`` and its derived ``when``
        (for ``version``, default the active one), each when given."""

    def set_preconditions(self, name: str, version: int, conditions: Sequence[Any], when: str | None) -> Skill:
        """Replace the mined preconditions of one version (kept in its provenance) and, when
        ``when`` is given, its derived ``when``, in one transaction (preconditions are
        re-mined as look-alikes gain traces: derived data, not a new version)."""
        raise NotImplementedError(f"{type(self).__name__} does not store preconditions")

    @abc.abstractmethod
    def index_generation(self) -> int:
        """A counter bumped before every change of the vector index (0 for a new store)."""

    @abc.abstractmethod
    def bump_index_generation(self) -> int:
        """Increment the index generation and return the new value."""

    def write_lock(self) -> "WriteLock":
        """A handle on the lock writers of records-plus-index take (the default, one lock
        per store object, only serializes the threads of this process)."""
        lock: WriteLock | None = self.__dict__.get("_default_write_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_default_write_lock", ThreadWriteLock())
        return lock

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""


class UnitOfWork(RecordStore):
    """A :class:`RecordStore` whose writes a caller composes in one transaction (module doc).

    A connection comes from :meth:`transaction` (or :meth:`retrying`, which retries the
    whole of ``work`` when it lost a race with another writer); the methods taking ``conn``
    read or write on it, inside the caller's transaction, and only this store's tenant's
    rows. Nothing here writes an audit event: the caller writes it on the same connection.
    """

    @abc.abstractmethod
    def transaction(self, *, write: bool) -> ContextManager["Connection"]:
        """A context manager yielding a connection in one transaction, committed when the
        block ends without an error and rolled back otherwise (``write``: a writer takes the
        database's write lock up front, so it never deadlocks on an upgrade)."""

    @abc.abstractmethod
    def retrying(self, work: Callable[["Connection"], T]) -> T:
        """``work(conn)`` in one write transaction; run again from the start when the
        database aborted it for a concurrent writer (PostgreSQL serialization or deadlock)."""

    @abc.abstractmethod
    def tenant_filter(self, table: Any) -> Any:
        """The condition selecting this store's tenant's rows of ``table`` (a table with a
        ``tenant`` column): what the row classes of other tables filter with."""

    @abc.abstractmethod
    def tenants(self) -> builtins.list[str]:
        """Every tenant with at least one skill, sorted (the one read across tenants)."""

    @abc.abstractmethod
    def read_version(self, conn: "Connection", name: str, version: int | None = None) -> Skill:
        """One version (default: the active pointer's) read on ``conn``;
        :class:`~skill_library.errors.SkillNotFoundError` when there is none."""

    @abc.abstractmethod
    def pointer(self, conn: "Connection", name: str) -> int:
        """The version ``name``'s active pointer names, read on ``conn``."""

    @abc.abstractmethod
    def versions_with_status(self, conn: "Connection", name: str, status: SkillStatus) -> builtins.list[int]:
        """The versions of ``name`` that have ``status``, oldest first, read on ``conn``."""

    @abc.abstractmethod
    def write_status(self, conn: "Connection", name: str, version: int, status: SkillStatus) -> None:
        """Set one version's status on ``conn`` (the caller checked the transition)."""

    @abc.abstractmethod
    def write_pointer(self, conn: "Connection", name: str, version: int) -> None:
        """Point ``name``'s active pointer at ``version`` on ``conn``."""

    @abc.abstractmethod
    def insert_version(self, conn: "Connection", skill: Skill, *, status: SkillStatus = "active",
                       initial_success: bool = False) -> tuple[Skill, builtins.list[int]]:
        """:meth:`RecordStore.add_version` on ``conn``: the stored version and the versions
        it superseded (for the caller's audit events)."""

    @abc.abstractmethod
    def insert_versions(self, conn: "Connection", skills: Sequence[Skill], *, initial_success: bool = False
                        ) -> tuple[builtins.list[Skill], builtins.list[builtins.list[int]]]:
        """:meth:`RecordStore.add_versions` on ``conn``: the stored versions and, for each,
        the versions it superseded."""

    @abc.abstractmethod
    def compact(self) -> None:
        """Make deleted rows unrecoverable from the database's files (what ``forget`` needs:
        on SQLite a WAL checkpoint and ``VACUUM``, on PostgreSQL a ``VACUUM`` of the record
        tables); the rows themselves are unchanged."""

    @abc.abstractmethod
    def purge(self, names: Sequence[str]) -> int:
        """Delete every row of the skills ``names`` of this tenant (versions, outcomes,
        examples, derived texts and their vectors) in one transaction; traces stay. Returns
        how many skills were deleted."""


def unit_of_work(store: RecordStore, need: str = "this") -> UnitOfWork:
    """``store`` as a :class:`UnitOfWork`, or a :class:`SkillLibraryError` naming ``need``
    (what needs transactions: governance, procedures, ...) and the store's class."""
    if not isinstance(store, UnitOfWork):
        raise SkillLibraryError(f"{need} needs a record store with transactions (a UnitOfWork), "
                                f"not {type(store).__name__}")
    return store
