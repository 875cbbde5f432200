"""The rules a governed write must pass beyond permissions: each a small function that
returns what it refuses (None when it refuses nothing).

* nobody approves their own proposal, and an approval needs a ``user`` actor holding
  ``skill.approve``; the system actor approves only what the tenant's policy lets through
  without a human (:func:`needs_human` is empty);
* a version that calls a tool with side effects (a tool nobody declared counts), or
  widens the tools of its skill, needs a human unless the policy is ``all``; under
  ``never`` every version needs one;
* whatever the policy, a version whose trace looked instructed by a tool result
  (skill_library.governance.instructed), or whose state-changing calls are not grounded
  in the task and its params (skill_library.governance.grounding), needs a human;
* an approval needs a passed latest evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skill_library.governance import audit
from skill_library.governance import policy as policy_store
from skill_library.governance import tools as tool_store
from skill_library.governance.actors import Actor
from skill_library.governance.policy import Policy
from skill_library.models import Skill
from skill_library.storage import governance_rows
from skill_library.storage.transactions import Connection

if TYPE_CHECKING:
    from skill_library.protocols import Ruled, Tenant

#: the evidence key of an audit event that lists why a trace looked instructed
INSTRUCTED_KEY = "instructed"
#: the evidence key of an audit event that lists the state-changing calls of its trace
#: that are not grounded in trusted input
UNGROUNDED_KEY = "ungrounded"
#: actors that are not people: their approvals do not make a tool "asked for"
_NOT_PEOPLE = frozenset({"system", "generalizer"})


def human_approved_tools(conn: Connection, tenant: str, name: str) -> set[str]:
    """The tools of the versions of ``name`` that a person (not the system actor)
    approved: a workflow a person approved asks for its tools."""
    versions = governance_rows.approved_versions(conn, tenant, name, not_by=_NOT_PEOPLE)
    if not versions:
        return set()
    tools: set[str] = set()
    for found in governance_rows.version_tools(conn, tenant, name, versions):
        tools.update(found)
    return tools


def _events(library: "Tenant", skill: Skill, conn: Connection | None) -> list[audit.AuditEvent]:
    from skill_library.governance.lifecycle import tenant_of, unit_of

    if conn is not None:
        return audit.read(conn, tenant_of(library), skill.name, skill.version)
    with unit_of(library).transaction(write=False) as own:
        return audit.read(own, tenant_of(library), skill.name, skill.version)


def proposer(events: list[audit.AuditEvent], skill: Skill) -> str | None:
    """Who proposed the version: the actor of its first event (else its provenance)."""
    return events[0].actor if events else skill.provenance.created_by


def needs_human(
    library: "Ruled", skill: Skill, *, conn: Connection | None = None,
    policy: Policy | None = None, specs: dict[str, Any] | None = None,
) -> list[str]:
    """Why a human must approve ``skill`` (empty: the policy may approve it automatically)."""
    from skill_library.governance.lifecycle import tenant_of, unit_of

    tenant = tenant_of(library)
    if policy is None or specs is None:
        if conn is not None:
            policy = policy or policy_store.load(conn, tenant) or Policy()
            specs = specs if specs is not None else tool_store.load(conn, tenant)
        else:
            with unit_of(library).transaction(write=False) as own:
                policy = policy or policy_store.load(own, tenant) or Policy()
                specs = specs if specs is not None else tool_store.load(own, tenant)
    specs = {**library.constructor_tool_specs(), **specs}
    reasons: list[str] = []
    for event in _events(library, skill, conn):
        for why in event.evidence.get(INSTRUCTED_KEY) or []:
            reasons.append(f"its trace looks instructed by a tool result: {why}")
        for why in event.evidence.get(UNGROUNDED_KEY) or []:
            reasons.append(f"a state-changing call is not grounded in the task: {why}")
    if policy.auto_approve == "never":
        reasons.append("the tenant's policy (auto_approve='never') approves nothing automatically")
    elif policy.auto_approve == "read_only":
        tools = _closure_tools(library, skill)
        effects = tool_store.side_effect_tools(tools, specs)
        if effects:
            undeclared = [t for t in effects if t not in specs]
            note = f" ({', '.join(undeclared)} undeclared: counted as side effects)" if undeclared else ""
            reasons.append(f"it calls tools with side effects: {', '.join(effects)}{note}")
        previous = _released_before(library, skill)
        if previous is not None:
            wider = [t for t in skill.tools if t not in previous.tools]
            if wider:
                reasons.append(f"it widens the tools of {skill.name!r} v{previous.version}: "
                               f"{', '.join(wider)}")
    return reasons


def _closure_tools(library: "Tenant", skill: Skill) -> list[str]:
    tools = list(skill.tools)
    for dep in skill.depends_on:
        try:
            tools.extend(t for t in library.context.store.get(dep).tools if t not in tools)
        except KeyError:
            continue
    return tools


def _released_before(library: "Tenant", skill: Skill) -> Skill | None:
    """The newest version of the skill before ``skill`` that was released."""
    try:
        history = library.context.store.history(skill.name)
    except KeyError:
        return None
    released = [s for s in history if s.version < skill.version
                and s.status in ("active", "superseded", "canary", "quarantined")]
    return released[-1] if released else None


def approval_problem(
    library: "Ruled", skill: Skill, actor: Actor, *, conn: Connection | None = None,
) -> str | None:
    """Why ``actor`` may not approve ``skill`` now (None: it may)."""
    events = _events(library, skill, conn)
    who = proposer(events, skill)
    if who is not None and who == actor.id:
        return (f"actor {actor.id!r} proposed {skill.name!r} v{skill.version}: nobody approves "
                "their own proposal")
    evaluated = [e for e in events if e.to_status == "evaluated"]
    if evaluated and evaluated[-1].evidence.get("passed") is False:
        return f"{skill.name!r} v{skill.version}'s latest evaluation failed"
    from skill_library.governance.evaluation import evaluations

    found = evaluations(library, skill.name, skill.version)
    if found and not found[-1].passed:
        return f"{skill.name!r} v{skill.version}'s latest evaluation failed"
    if actor.kind == "system":
        reasons = needs_human(library, skill, conn=conn)
        if reasons:
            return (f"{skill.name!r} v{skill.version} needs a human approval: "
                    f"{'; '.join(reasons)}")
        return None
    if actor.kind != "user":
        return (f"actor {actor.id!r} is a {actor.kind}: approvals need a user actor holding "
                "'skill.approve'")
    return None
