"""Actors and permissions: who may write what.

An :class:`Actor` is a user, a service, a generalizer (proposes learned skills) or the
system (automatic transitions: replay verification, policy auto-approval, a canary's
rollback). Permissions: ``skill.propose``, ``skill.approve``, ``skill.admin`` (implies the
other two). Content from tool results is never an actor. Actors are stored per tenant
(:class:`ActorRegistry`, ``library.actors``).
"""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, field_validator

from skill_library.errors import PermissionDenied, SkillLibraryError

if TYPE_CHECKING:
    from skill_library.storage.actor_rows import ActorRow, ActorRows
    from skill_library.storage.interface import RecordStore

Permission = Literal["skill.propose", "skill.approve", "skill.admin"]
ActorKind = Literal["user", "service", "generalizer", "system"]

#: what each permission lets an actor do, and why it exists
PERMISSIONS: dict[str, str] = {
    "skill.propose": "store a draft version (propose, learn); nothing it writes is fetched",
    "skill.approve": "approve an evaluated version of someone else, promote, canary, roll "
                     "back, reject, lift a quarantine; approving also needs a user actor",
    "skill.admin": "everything above, plus delete, the tenant's policy, actors and tools",
}
#: the id of the actor learning proposes as
GENERALIZER_ID = "generalizer"
#: the id of the actor of automatic transitions
SYSTEM_ID = "system"
#: environment setting naming the actor of the CLI (also --actor)
ACTOR_ENV = "SKILLS_ACTOR"
#: the library's own actors: registered by the library, never by a caller, and never
#: claimed by a person (the CLI's and the console's ``--actor`` refuse them)
RESERVED_IDS = frozenset({GENERALIZER_ID, SYSTEM_ID})


def check_claimable(actor_id: str | None) -> str | None:
    """``actor_id`` when a person may act as it; :class:`PermissionDenied` for the
    library's own actors (:data:`RESERVED_IDS`)."""
    if actor_id is not None and actor_id in RESERVED_IDS:
        raise PermissionDenied(
            f"actor {actor_id!r} is the library's own ({', '.join(sorted(RESERVED_IDS))} act only "
            "inside the library): name a registered user or service actor"
        )
    return actor_id


class Actor(BaseModel, frozen=True):
    """Someone or something that writes to the library, with its permissions."""

    id: str
    kind: ActorKind
    permissions: frozenset[Permission] = frozenset()

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("id must not be blank")
        return value

    def can(self, permission: Permission) -> bool:
        """True when the actor holds ``permission`` (``skill.admin`` implies the others)."""
        return permission in self.permissions or "skill.admin" in self.permissions


def os_user() -> str:
    """The name of the operating-system user running this process."""
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (some containers)
        return os.environ.get("USER") or "admin"


def local_admin() -> Actor:
    """The library's local administrator: the OS user, an admin ``user`` actor."""
    return Actor(id=os_user(), kind="user", permissions=frozenset({"skill.admin"}))


def generalizer_actor() -> Actor:
    """The actor learning proposes as: it may propose, never approve."""
    return Actor(id=GENERALIZER_ID, kind="generalizer", permissions=frozenset({"skill.propose"}))


def system_actor() -> Actor:
    """The actor of automatic transitions (replay verification, policy auto-approval,
    automatic rollback)."""
    return Actor(id=SYSTEM_ID, kind="system",
                 permissions=frozenset({"skill.propose", "skill.approve"}))


def permission_problem(actor: Actor, permission: Permission, action: str) -> str | None:
    """Why ``actor`` may not do ``action`` for want of ``permission`` (None: it may)."""
    if actor.can(permission):
        return None
    return f"actor {actor.id!r} ({actor.kind}) may not {action}: it lacks the permission {permission!r}"


def require(actor: Actor, permission: Permission, action: str) -> None:
    """Raise :class:`PermissionDenied` unless ``actor`` holds ``permission``."""
    problem = permission_problem(actor, permission, action)
    if problem is not None:
        raise PermissionDenied(problem)


class ActorRegistry:
    """The actors of one library tenant (``library.actors``), on the tenant's record store.

    ``default`` is the actor a call made without ``actor=`` acts as (the library's
    ``actor=``; None: the local administrator, the OS user)."""

    def __init__(self, store: "RecordStore", *, default: str | None = None) -> None:
        self._store = store
        self.default = check_claimable(default)

    @property
    def _tenant(self) -> str:
        return self._store.tenant

    def _rows(self) -> "ActorRows":
        from skill_library.governance.lifecycle import sql_store
        from skill_library.storage.actor_rows import ActorRows

        return ActorRows(sql_store(self._store))

    def resolve(self, actor: "Actor | str | None") -> Actor:
        """The registered actor for ``actor`` (None: :attr:`default`, else the local
        administrator): an id, or an :class:`Actor` whose id is looked up (permissions come
        from the registry, never from the caller). :class:`PermissionDenied` when unknown."""
        if actor is None:
            return self.get(self.default or os_user())
        if isinstance(actor, Actor):
            registered = self.get(actor.id)
            if registered.kind != actor.kind:
                raise PermissionDenied(
                    f"actor {actor.id!r} is registered as a {registered.kind}, not a {actor.kind}")
            return registered
        if isinstance(actor, str):
            return self.get(actor)
        raise TypeError(f"actor must be an Actor, an actor id or None, got {type(actor).__name__}")

    def caller(self, actor: "Actor | str | None") -> Actor:
        """:meth:`resolve` for a caller's per-call ``actor=``: the library's own actors
        (``system``, ``generalizer``) are refused, whether named by id or by an Actor."""
        actor_id = actor.id if isinstance(actor, Actor) else actor
        if isinstance(actor_id, str):
            check_claimable(actor_id)
        return self.resolve(actor)

    def seed(self) -> bool:
        """Register the local administrator, the generalizer and the system actor when the
        tenant has no actors yet (a new library); True when it did."""
        from skill_library.storage.actor_rows import AuditNote

        admin = local_admin()
        return self._rows().seed([
            (_actor_row(actor), AuditNote(
                "registered", actor=admin.id if actor is not admin else SYSTEM_ID,
                reason=f"{actor.id} ({actor.kind}) registered when the library was created",
                evidence={"actor": actor.id, "kind": actor.kind, "permissions": sorted(actor.permissions)}))
            for actor in (admin, generalizer_actor(), system_actor())
        ])

    def get(self, actor_id: str) -> Actor:
        """The registered actor ``actor_id``; :class:`PermissionDenied` when unknown (an
        unknown actor may write nothing)."""
        row = self._rows().get(actor_id)
        if row is None:
            raise PermissionDenied(
                f"actor {actor_id!r} is not registered in tenant {self._tenant!r}: it holds no "
                "permission (an admin adds it: library.actors.add(...) / `skills actors add`)"
            )
        return _row_actor(row)

    def list(self) -> list[Actor]:
        """Every registered actor of the tenant, by id."""
        return [_row_actor(r) for r in self._rows().list()]

    def add(self, actor: Actor, *, by: Actor | str | None = None) -> Actor:
        """Register (or update) ``actor``; ``by`` (default: the local administrator) needs
        ``skill.admin``. Audited."""
        from skill_library.storage.actor_rows import AuditNote

        admin = self.caller(by)
        require(admin, "skill.admin", f"register the actor {actor.id!r}")
        if actor.id in RESERVED_IDS or actor.kind == "system":
            raise PermissionDenied(
                f"actor {actor.id!r} ({actor.kind}): the {' and '.join(sorted(RESERVED_IDS))} actors "
                "and the system kind are the library's own; nobody registers or replaces them"
            )
        self._rows().put(_actor_row(actor), AuditNote(
            "registered", actor=admin.id, reason=f"{actor.id} ({actor.kind}) registered",
            evidence={"actor": actor.id, "kind": actor.kind, "permissions": sorted(actor.permissions)}))
        return actor

    def remove(self, actor_id: str, *, by: Actor | str | None) -> None:
        """Remove the actor ``actor_id``; ``by`` needs ``skill.admin``. Audited."""
        from skill_library.storage.actor_rows import AuditNote

        admin = self.caller(by)
        require(admin, "skill.admin", f"remove the actor {actor_id!r}")
        if actor_id in RESERVED_IDS:
            raise PermissionDenied(f"actor {actor_id!r} is the library's own: it cannot be removed")
        note = AuditNote("removed", actor=admin.id, reason=f"{actor_id} removed", evidence={"actor": actor_id})
        if not self._rows().remove(actor_id, note):
            raise SkillLibraryError(f"no actor {actor_id!r} in tenant {self._tenant!r}")


def _actor_row(actor: Actor) -> "ActorRow":
    from skill_library.storage.actor_rows import ActorRow

    return ActorRow(id=actor.id, kind=actor.kind, permissions=frozenset(actor.permissions))


def _row_actor(row: "ActorRow") -> Actor:
    return Actor(id=row.id, kind=row.kind, permissions=row.permissions)  # type: ignore[arg-type]
