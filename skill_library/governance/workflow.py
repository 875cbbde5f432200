"""The facade's governed calls (``SkillLibrary.propose/approve/promote/...``), each built
on :func:`skill_library.governance.lifecycle.transition` or on the same transaction: the
records, the audit event and then the index."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Sequence

from skill_library.errors import LifecycleError, PermissionDenied, SkillLibraryError
from skill_library.governance import audit, tool_schemas
from skill_library.governance import policy as policy_store
from skill_library.governance import tools as tool_store
from skill_library.governance.actors import Actor, os_user, require
from skill_library.governance.lifecycle import apply, tenant_of, transition, unit_of, write
from skill_library.governance.policy import BREADTH, Policy
from skill_library.governance.tools import ToolSpec
from skill_library.models import Skill
from skill_library.storage import canary_rows
from skill_library.storage.interface import UnitOfWork
from skill_library.storage.skill_rows import SkillRows
from skill_library.storage.transactions import Connection

if TYPE_CHECKING:
    from skill_library.protocols import Governed, Reviewing

#: the share of sessions a canary gets when neither ``share`` nor ``cohort`` is given
DEFAULT_CANARY_SHARE = 0.1


def open_tenant(library: "Reviewing", policy: Policy | None, *, check: bool = True) -> None:
    """On opening: a tenant with no actors yet (a new library, or one made before
    governance) gets its actors and its policy (``policy`` or the default); an existing
    one must not be opened with a different ``policy`` (``check=False``: a tenant view
    made by ``for_tenant``, where ``policy`` only seeds a new tenant)."""
    if not isinstance(library.context.store, UnitOfWork):
        return
    tenant = tenant_of(library)
    sql = unit_of(library)
    with sql.transaction(write=False) as conn:
        stored = policy_store.load(conn, tenant)
    if stored is None and library.actors.seed():
        chosen = policy or Policy()

        def store_policy(conn: Connection) -> None:
            if policy_store.load(conn, tenant) is None:
                policy_store.save(conn, tenant, chosen)
                audit.write(conn, tenant, audit.POLICY, None, None, "set", actor=os_user(),
                            reason="the policy the library was created with",
                            evidence=chosen.model_dump(mode="json"))

        sql.retrying(store_policy)
        return
    if check and policy is not None and stored is not None and stored != policy:
        raise SkillLibraryError(
            f"the library's stored policy is auto_approve={stored.auto_approve!r}, not "
            f"{policy.auto_approve!r}: policy= applies only when a library is created; change it "
            "with library.set_policy(policy, actor=...) or `skills policy set` (an audited admin action)"
        )


def caller_actor(library: "Governed", actor: Actor | str | None) -> Actor:
    """:meth:`ActorRegistry.caller`: a caller's per-call ``actor=`` resolved, the library's
    own actors (``system``, ``generalizer``) refused."""
    return library.actors.caller(actor)


def resolve_actor(library: "Governed", actor: Actor | str | None) -> Actor:
    """:meth:`ActorRegistry.resolve`: the registered actor for ``actor`` (None: the
    library's ``actor=``, else the local administrator, the OS user)."""
    return library.actors.resolve(actor)


# -- policy and tools -----------------------------------------------------------------------
def policy(library: "Reviewing") -> Policy:
    """The tenant's stored policy, else the default (``read_only``)."""
    with unit_of(library).transaction(write=False) as conn:
        return policy_store.load(conn, tenant_of(library)) or Policy()


def set_policy(library: "Reviewing", new: Policy, *, actor: Actor | str | None) -> Policy:
    """Store ``new`` as the tenant's policy (``skill.admin``), audited with the old one."""
    if not isinstance(new, Policy):
        raise TypeError(f"set_policy() takes a Policy, got {type(new).__name__}")
    who = caller_actor(library, actor)
    require(who, "skill.admin", "change the tenant's policy")
    tenant = tenant_of(library)

    def work(conn: Connection) -> Policy:
        old = policy_store.load(conn, tenant) or Policy()
        policy_store.save(conn, tenant, new)
        widened = BREADTH[new.auto_approve] > BREADTH[old.auto_approve]
        audit.write(conn, tenant, audit.POLICY, None, old.auto_approve, new.auto_approve,
                    actor=who.id, reason="policy widened" if widened else "policy set",
                    evidence={"from": old.model_dump(mode="json"), "to": new.model_dump(mode="json")})
        return new

    result: Policy = unit_of(library).retrying(work)
    return result


def tool_specs(library: "Reviewing") -> dict[str, ToolSpec]:
    """``read_only_tools=`` of the library object, overridden by the tenant's declarations."""
    with unit_of(library).transaction(write=False) as conn:
        stored = tool_store.load(conn, tenant_of(library))
    return {**library.constructor_tool_specs(), **stored}


def register_tools(library: "Reviewing", specs: Mapping[str, ToolSpec | None], *,
                   actor: Actor | str | None, tools: Mapping[str, Any] | None = None
                   ) -> "tool_schemas.Reverification":
    """Declare ``specs`` in the tenant (``skill.admin``; one audit event); a ``None`` spec
    removes the tool's declaration. Every active version bound to a schema that changes
    (or to a removed tool) is suspended in the same transaction, then re-verified
    (skill_library.governance.tool_schemas)."""
    checked: dict[str, ToolSpec | None] = {}
    for name, spec in specs.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"tool name {name!r} is not an identifier")
        if isinstance(spec, Mapping):
            spec = ToolSpec.model_validate(spec)
        if spec is not None and not isinstance(spec, ToolSpec):
            raise TypeError(f"tool {name!r}: expected a ToolSpec (or None to remove it), got {type(spec).__name__}")
        if spec is not None:
            tool_schemas.check_schema(name, spec.schema_)
        checked[name] = spec
    who = caller_actor(library, actor)
    require(who, "skill.admin", "declare tools")
    tenant = tenant_of(library)
    hits: dict[tuple[str, int], list[str]] = {}
    waiting: list[tuple[str, int]] = []
    canaries: dict[str, set[int]] = {}

    def work(conn: Connection) -> None:
        old = {**library.constructor_tool_specs(), **tool_store.load(conn, tenant)}
        changed = tool_schemas.changed_tools(old, checked)
        tool_store.save(conn, tenant, {n: s for n, s in checked.items() if s is not None})
        tool_store.remove(conn, tenant, [n for n, s in checked.items() if s is None])
        audit.write(conn, tenant, audit.TOOLS, None, None, "registered", actor=who.id,
                    reason=f"declared {sum(s is not None for s in checked.values())} tool(s)"
                           + (f", removed {sum(s is None for s in checked.values())}"
                              if any(s is None for s in checked.values()) else ""),
                    evidence={n: ({"side_effects": s.side_effects, "digest": tool_schemas.digest(s.schema_)}
                                  if s is not None else {"removed": True}) for n, s in checked.items()})
        hits.clear()
        hits.update(tool_schemas.affected(conn, tenant, checked, changed))
        waiting[:] = tool_schemas.suspended_calling(conn, tenant, checked)  # held before: try again
        canaries.clear()
        for n, v in tool_schemas.canaries_of(conn, tenant, {n for n, _ in hits}):
            canaries.setdefault(n, set()).add(v)
        tool_schemas.suspend(conn, library, hits, checked, changed)

    with library.context.index.writing() as index:
        unit_of(library).retrying(work)
        gone = sorted({n for n, v in hits if v not in canaries.get(n, ())})  # a canary has no index entry
        index.delete_ids(list(index.texts_of_many(gone)) if gone else [])  # one read, one delete
    return tool_schemas.reverify(library, sorted({*hits, *waiting}), tool_specs(library), tools)


# -- writing versions ----------------------------------------------------------------------
def add_active(library: "Governed", skills: Sequence[Skill], *, initial_success: bool,
               actor: Actor, reason: str) -> list[Skill]:
    """The direct path (``add``/``add_many``): store each skill as its name's active
    version, audited (``None -> active``, and ``active -> superseded`` for the one before),
    in one transaction. No index write (the caller does it)."""
    require(actor, "skill.admin", "add active versions directly (propose() is the governed path)")
    store = unit_of(library)
    tenant = tenant_of(library)

    def work(conn: Connection) -> list[Skill]:
        stored, superseded = store.insert_versions(conn, skills, initial_success=initial_success)
        tool_schemas.record_for(conn, library, stored)
        events: list[dict[str, Any]] = []
        for skill, new, replaced in zip(skills, stored, superseded):
            events.extend({"name": new.name, "version": old, "from_status": "active",
                           "to_status": "superseded", "reason": f"superseded by v{new.version}"}
                          for old in replaced)
            events.append({"name": new.name, "version": new.version, "from_status": None,
                           "to_status": "active", "reason": reason,
                           "evidence": _verified_evidence(skill, initial_success)})
        audit.write_many(conn, tenant, events, actor=actor.id)
        return stored

    result: list[Skill] = store.retrying(work)
    return result


def _verified_evidence(skill: Skill, verified: bool) -> dict[str, Any]:
    if not verified:
        return {}
    ids = skill.provenance.trace_ids
    if ids:
        return {"verified": True, "trace": ids[0]}
    return {"verified": True, "trace": None, "evidence": "asserted by the local administrator"}


def propose(library: "Governed", skill: Skill, *, actor: Actor | str | None,
            reason: str = "") -> Skill:
    """Store ``skill`` as a draft (the next version of its name), audited."""
    from skill_library.induction.validation import check_policy

    if not isinstance(skill, Skill):
        raise TypeError(f"propose() takes a Skill, got {type(skill).__name__}")
    who = caller_actor(library, actor)
    require(who, "skill.propose", f"propose {skill.name!r}")
    check_policy(skill)
    if skill.successes or skill.failures:
        raise ValueError(f"successes/failures: a proposal starts with no outcomes; {skill.name!r} has some")
    provenance = skill.provenance.model_copy(update={"created_by": who.id})
    draft = skill.model_copy(update={"provenance": provenance, "status": "draft"})
    store = unit_of(library)
    tenant = tenant_of(library)

    def work(conn: Connection) -> Skill:
        stored, _ = store.insert_version(conn, draft, status="draft")
        tool_schemas.record_for(conn, library, [stored])
        audit.write(conn, tenant, stored.name, stored.version, None, "draft", actor=who.id,
                    reason=reason or "proposed")
        return stored

    return write(library, skill.name, work)


def reject(library: "Reviewing", name: str, version: int, *, actor: Actor | str | None,
           reason: str) -> Skill:
    """A draft or evaluated version becomes ``rejected`` (kept for audit)."""
    if not reason or not reason.strip():
        raise ValueError("reason: a rejection says why")
    return transition(library, name, version, "rejected", actor=caller_actor(library, actor),
                      reason=reason)


def approve(library: "Reviewing", name: str, version: int, *, actor: Actor | str | None,
            reason: str = "") -> Skill:
    """An evaluated version becomes ``approved`` (a user actor with ``skill.approve``, not
    its proposer, its latest evaluation passed)."""
    who = caller_actor(library, actor)
    require(who, "skill.approve", f"approve {name!r} v{version}")
    if who.kind != "user":
        raise PermissionDenied(
            f"actor {who.id!r} is a {who.kind}: approvals need a user actor holding 'skill.approve'")
    skill = library.context.store.get(name, version)
    if skill.status == "draft" and skill.kind == "instruction":
        # a procedure has no code to run against a suite: the approver's review is its evaluation
        transition(library, name, version, "evaluated", actor=who,
                   reason="a procedure is evaluated by the person who reviews it")
    elif skill.status == "draft":
        raise LifecycleError(
            f"skill {name!r} v{version} is draft: it must pass an evaluation first "
            f"(`skills evaluate {name} {version} --suite FILE --world MODULE:NAME`) before it can be approved")
    return transition(library, name, version, "approved", actor=who, reason=reason or "approved")


def canary(library: "Reviewing", name: str, version: int, *, actor: Actor | str | None,
           share: float | None = None, cohort: str | None = None) -> Skill:
    """An approved version becomes ``canary`` for ``share`` of sessions (default
    :data:`DEFAULT_CANARY_SHARE`) or the named ``cohort``; E's routing reads the row."""
    if share is not None and not 0.0 < share < 1.0:
        raise ValueError(f"share must be within (0, 1), got {share}")
    if cohort is not None and not cohort.strip():
        raise ValueError("cohort must not be blank")
    if share is None and cohort is None:
        share = DEFAULT_CANARY_SHARE
    who = caller_actor(library, actor)
    tenant = tenant_of(library)

    def work(conn: Connection) -> Skill:
        running = canary_rows.running_version(conn, tenant, name)
        if running is not None:
            raise LifecycleError(f"skill {name!r} already has a canary (v{running}): promote or "
                                 "roll it back first")
        active = unit_of(library).versions_with_status(conn, name, "active")
        if not active:
            raise LifecycleError(f"skill {name!r} has no active version to compare a canary with: "
                                 f"promote v{version} instead")
        stored = apply(conn, library, name, version, "canary", actor=who,
                       reason=f"canary for {f'cohort {cohort!r}' if cohort else f'{share:.0%} of sessions'}",
                       evidence={"share": share, "cohort": cohort, "active_version": active[-1]})
        canary_rows.start(conn, tenant, name, version, share=share, cohort=cohort, actor=who.id)
        return stored

    return write(library, name, work)


def promote(library: "Reviewing", name: str, version: int, *, actor: Actor | str | None) -> Skill:
    """An approved or canary version becomes active; the active one before it superseded."""
    return transition(library, name, version, "active", actor=caller_actor(library, actor),
                      reason="promoted")


def rollback(library: "Reviewing", name: str, *, actor: Actor | str | None,
             to_version: int | None = None) -> Skill:
    """Retire the active version and make the previous released one (the newest
    superseded version before it, or ``to_version``) active, in one transaction."""
    who = caller_actor(library, actor)
    store = unit_of(library)

    def work(conn: Connection) -> Skill:
        current = store.read_version(conn, name)
        if current.status != "active":
            raise LifecycleError(f"skill {name!r} has no active version to roll back "
                                 f"(v{current.version} is {current.status})")
        if to_version is None:
            earlier = [v for v in store.versions_with_status(conn, name, "superseded")
                       if v < current.version]
            if not earlier:
                raise LifecycleError(f"skill {name!r} has no earlier released version to roll "
                                     f"back to from v{current.version}")
            target = earlier[-1]
        else:
            target = to_version
            found = store.read_version(conn, name, target)
            if found.status not in ("superseded", "approved"):
                raise LifecycleError(f"skill {name!r} v{target} is {found.status}: a rollback "
                                     "returns to a superseded (or approved) version")
        apply(conn, library, name, current.version, "retired", actor=who,
              reason=f"rolled back to v{target}")
        return apply(conn, library, name, target, "active", actor=who,
                     reason=f"rollback from v{current.version}")

    return write(library, name, work)


def retire(library: "Reviewing", name: str, *, actor: Actor | str | None = None) -> Skill:
    """The pointer's version (active or quarantined) becomes ``retired``."""
    current = library.context.store.get(name)
    return transition(library, name, current.version, "retired",
                      actor=caller_actor(library, actor), reason="retired")


# -- reading ---------------------------------------------------------------------------------
def diff(library: "Reviewing", name: str, v1: int, v2: int) -> str:
    """A readable diff of two versions: ``when``, tools, parameters, then the code."""
    a, b = library.context.store.get(name, v1), library.context.store.get(name, v2)
    lines = [f"--- {name} v{v1} ({a.status})", f"+++ {name} v{v2} ({b.status})"]
    lines.append(f"when: {a.when!r}" if a.when == b.when else f"when: {a.when!r} -> {b.when!r}")
    added = [t for t in b.tools if t not in a.tools]
    removed = [t for t in a.tools if t not in b.tools]
    if added or removed:
        lines.append("tools: " + " ".join([*(f"+{t}" for t in added), *(f"-{t}" for t in removed)]))
    else:
        lines.append(f"tools: unchanged ({', '.join(a.tools) or 'none'})")
    pa = json.dumps(a.parameters, sort_keys=True)
    pb = json.dumps(b.parameters, sort_keys=True)
    lines.append("parameters: unchanged" if pa == pb else f"parameters: {pa} -> {pb}")
    code = list(difflib.unified_diff(
        (a.code or a.description).splitlines(), (b.code or b.description).splitlines(),
        f"v{v1}", f"v{v2}", lineterm="",
    ))
    lines.append("code: unchanged" if not code else "code:")
    lines.extend(code)
    return "\n".join(lines)


def audit_events(library: "Reviewing", name: str | None = None) -> list[audit.AuditEvent]:
    """The tenant's audit events (of ``name``), oldest first."""
    with unit_of(library).transaction(write=False) as conn:
        return audit.read(conn, tenant_of(library), name)


audit_log = audit_events


#: What a person decides for a version in the review queue, by its status.
DECISIONS: dict[str, str] = {
    "draft": "approve or reject",
    "evaluated": "approve or reject",
    "quarantined": "lift the quarantine or retire",
    tool_schemas.SUSPENDED: "resume or retire",
}


def review_queue(library: "Reviewing") -> list[Skill]:
    """Every version taken out of fetch or not yet in it that waits for a person, oldest
    first: draft and evaluated versions (approve or reject), quarantined ones (by
    ``system``: a failure burst or a reliably negative uplift; lift the quarantine or
    retire) and suspended ones (a tool schema change it failed; resume or retire).
    :data:`DECISIONS` names each status's decision, :func:`queue_reason` its evidence."""
    keys = SkillRows(unit_of(library)).with_status(DECISIONS)
    found = library.context.store.get_many(keys)
    return [found[k] for k in keys if k in found]


def queue_reason(library: "Reviewing", skill: Skill) -> str:
    """The reason of the latest audit event of ``skill``'s version (for a quarantined or
    suspended version: why it left fetch, e.g. the uplift interval); empty when none."""
    events = [e for e in audit_events(library, skill.name) if e.version == skill.version]
    return events[-1].reason if events else ""


def delete(library: "Reviewing", name: str, *, actor: Actor | str | None) -> audit.AuditEvent:
    """Remove every record of ``name`` (see ``SkillLibrary.delete``); one audit event stays."""
    who = caller_actor(library, actor)
    require(who, "skill.admin", f"delete {name!r}")
    store = unit_of(library)
    history = library.context.store.history(name)  # raises for an unknown name
    traces = {t.id for t in library.context.store.traces_for(name)}
    traces.update(i for s in history for i in s.provenance.trace_ids)
    tenant = tenant_of(library)

    def work(conn: Connection) -> audit.AuditEvent:
        # the records, canary, evaluations, audit and reliability events of the name
        gone = SkillRows(store).delete_skill(conn, name, traces)
        from skill_library.uplift import delete_outcomes

        delete_outcomes(conn, tenant, name)
        tool_schemas.purge(conn, tenant, name)
        return audit.write(conn, tenant, name, None, history[-1].status, "deleted", actor=who.id,
                           reason=f"deleted with {len(history)} version(s) and {len(gone)} trace(s)",
                           evidence={"versions": len(history), "traces": len(gone)})

    event: audit.AuditEvent = write(library, name, work)
    return event
