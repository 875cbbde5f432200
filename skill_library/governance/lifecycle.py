"""The lifecycle of a version and the one primitive that moves it.

A version's content never changes; only its status moves, along :data:`TRANSITIONS`, and
every move is an audit event written in the same transaction as the status and, when the
move activates a version, the skill's active pointer. ``fetch`` serves only ``active``
versions (and E's canary routing the ``canary`` one), so a transition that commits is what
every reader sees next: a draft, a rejected or a rolled-back version is never returned
after the commit. The facade's propose/approve/promote/rollback/... (skill_library.
governance.workflow) are built on :func:`transition`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from skill_library.errors import LifecycleError, PermissionDenied
from skill_library.governance import audit
from skill_library.governance.actors import Actor, Permission, require
from skill_library.models import Skill, SkillStatus
from skill_library.storage import canary_rows
from skill_library.storage.interface import UnitOfWork, unit_of_work
from skill_library.storage.transactions import Connection

if TYPE_CHECKING:
    from skill_library.protocols import Governed, Ruled, Tenant
    from skill_library.storage.interface import RecordStore

T = TypeVar("T")

#: from status -> the statuses a version may move to (nothing leaves retired or rejected:
#: a new version is proposed instead). ``quarantined -> retired`` extends the shared table:
#: ``retire()`` of a quarantined skill.
TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"evaluated", "rejected"}),
    "evaluated": frozenset({"approved", "rejected"}),
    "approved": frozenset({"canary", "active"}),
    # a canary bound to a changed tool is suspended too (its canary row kept), and returns to canary
    "canary": frozenset({"active", "approved", "suspended"}),
    "active": frozenset({"superseded", "quarantined", "retired", "suspended"}),
    "superseded": frozenset({"active"}),
    "quarantined": frozenset({"active", "retired"}),
    # a tool schema change (governance.tool_schemas): re-verified back to active, or a person's call
    "suspended": frozenset({"active", "canary", "retired"}),
    "retired": frozenset(),
    "rejected": frozenset(),
}
#: the permission a move to each status needs
REQUIRED: dict[str, Permission] = {
    "evaluated": "skill.propose",
    "rejected": "skill.approve",
    "approved": "skill.approve",
    "canary": "skill.approve",
    "active": "skill.approve",
    "superseded": "skill.approve",
    "quarantined": "skill.approve",
    "suspended": "skill.approve",
    "retired": "skill.approve",
}
#: statuses of versions not yet released (never fetched)
UNRELEASED: frozenset[str] = frozenset({"draft", "evaluated", "approved", "rejected"})


def tenant_of(library: "Tenant") -> str:
    """The library's tenant (``"default"`` before tenancy)."""
    return library.context.tenant


def unit_of(library: "Tenant") -> UnitOfWork:
    """The library's record store as the unit of work governance composes its writes in
    (skill_library.storage.interface.UnitOfWork)."""
    return unit_of_work(library.context.store, "governance")


def sql_store(store: "RecordStore") -> UnitOfWork:
    """``store`` as the unit of work governance needs (its transactions), else a clear error."""
    return unit_of_work(store, "governance")


def transition_problem(skill: Skill, to_status: SkillStatus) -> str | None:
    """Why ``skill`` may not move to ``to_status`` (None: the table allows it)."""
    allowed = TRANSITIONS.get(skill.status, frozenset())
    if to_status in allowed:
        return None
    choices = ", ".join(sorted(allowed)) or "nothing"
    return (f"skill {skill.name!r} v{skill.version} is {skill.status}; it cannot become "
            f"{to_status} (from {skill.status} it may become: {choices})")


def apply(
    conn: Connection,
    library: "Ruled",
    name: str,
    version: int,
    to_status: SkillStatus,
    *,
    actor: Actor,
    reason: str = "",
    evidence: dict[str, Any] | None = None,
) -> Skill:
    """:func:`transition` on ``conn``, inside the caller's transaction (no index write)."""
    store = unit_of(library)
    skill = store.read_version(conn, name, version)
    problem = transition_problem(skill, to_status)
    if problem is not None:
        raise LifecycleError(problem)
    require(actor, REQUIRED[to_status], f"move {name!r} v{version} from {skill.status} to {to_status}")
    if to_status == "approved" and skill.status != "canary":  # a canary rolled back was approved already
        from skill_library.governance.rules import approval_problem

        refused = approval_problem(library, skill, actor, conn=conn)
        if refused is not None:
            raise PermissionDenied(refused)
    tenant = tenant_of(library)
    if skill.status == "suspended" and to_status == "canary" and not canary_rows.has_row(conn, tenant, name, version):
        raise LifecycleError(f"skill {name!r} v{version} was not a canary when it was suspended: "
                             "it can only return to active")
    if to_status == "active":
        for other in store.versions_with_status(conn, name, "active"):
            if other != version:
                store.write_status(conn, name, other, "superseded")
                audit.write(conn, tenant, name, other, "active", "superseded", actor=actor.id,
                            reason=f"superseded by v{version}")
        store.write_pointer(conn, name, version)
    if skill.status == "canary" or (skill.status == "suspended" and to_status != "canary"):
        canary_rows.stop(conn, tenant, name, version)
    store.write_status(conn, name, version, to_status)
    audit.write(conn, tenant, name, version, skill.status, to_status, actor=actor.id,
                reason=reason, evidence=evidence)
    return store.read_version(conn, name, version)


def transition(
    library: "Governed",
    name: str,
    version: int,
    to_status: SkillStatus,
    *,
    actor: "Actor | str",
    reason: str = "",
    evidence: dict[str, Any] | None = None,
) -> Skill:
    """Move version ``version`` of ``name`` to ``to_status`` as ``actor``: the status, the
    active pointer when the move activates it (the active version before it becomes
    ``superseded``) and the audit event, in one transaction; then the index follows.

    ``actor`` (an id, or an :class:`Actor`, which only names one) is resolved from the
    tenant's registry: its kind and permissions are the registry's, never the caller's;
    an unregistered actor, and the library's own actors (``system``, ``generalizer``: they
    act only inside the library), are refused with :class:`PermissionDenied`.
    :class:`LifecycleError` when :data:`TRANSITIONS` does not allow the move;
    :class:`PermissionDenied` when ``actor`` lacks the permission (:data:`REQUIRED`) or,
    for an approval, a rule refuses it (skill_library.governance.rules).
    """
    return library_transition(library, name, version, to_status, actor=library.actors.caller(actor),
                              reason=reason, evidence=evidence)


def library_transition(
    library: "Ruled",
    name: str,
    version: int,
    to_status: SkillStatus,
    *,
    actor: Actor,
    reason: str = "",
    evidence: dict[str, Any] | None = None,
) -> Skill:
    """:func:`transition` by an actor the library resolved itself (its own ``system``
    actor's automatic moves, or a caller already resolved): not for callers' actors."""
    return write(library, name, lambda conn: apply(
        conn, library, name, version, to_status, actor=actor, reason=reason, evidence=evidence,
    ))


def write(library: "Tenant", name: str | None, work: Callable[[Connection], T]) -> T:
    """``work(conn)`` in one write transaction under the library's write lock, then the
    index entries of ``name`` made to match its pointer's version: at once when this process
    has the index open, else left to the index's next open (SyncedIndex.deferring), so that
    a transition opens neither Chroma nor the embedding model."""
    synced = library.context.index
    if name is not None and synced.can_defer():
        with synced.deferring([name]):
            deferred: T = unit_of(library).retrying(work)
        return deferred
    with library.context.index.writing() as index:
        result: T = unit_of(library).retrying(work)
        if name is not None:
            try:
                current = library.context.store.get(name)
            except KeyError:
                index.delete(name)
            else:
                library.context.sync(index, [current])
    return result
