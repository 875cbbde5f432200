"""Learning under governance: a learned version is proposed by the generalizer actor, its
replay verification is its evaluation (the system actor records it), and the tenant's
policy decides whether it is approved and activated at once (by the system actor) or held
for a human (``LearnResult.status == "held"``): skill_library.governance.rules. Whatever
the policy, a trace that looks instructed by a tool result (skill_library.governance.
instructed), or whose state-changing calls are not grounded in the task and its params
(skill_library.governance.grounding), holds the version, with the reasons in its audit
trail. A held
revision leaves the active version active."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.governance import audit, rules, tool_schemas
from skill_library.governance import policy as policy_store
from skill_library.governance import tools as tool_store
from skill_library.governance.actors import GENERALIZER_ID, SYSTEM_ID, require
from skill_library.governance.grounding import ungrounded_calls
from skill_library.governance.instructed import instructed_calls
from skill_library.governance.lifecycle import apply, tenant_of, unit_of
from skill_library.governance.policy import Policy
from skill_library.models import Skill, Trace, VerificationReport
from skill_library.storage import governance_rows
from skill_library.storage.transactions import Connection

if TYPE_CHECKING:
    from skill_library.protocols import Admitting


@dataclass
class Admitted:
    """What governance made of one learned version."""

    skill: Skill
    activated: bool
    revision: bool  # the name had a version before this one
    reasons: list[str] = field(default_factory=list)


def admit_learned(library: "Admitting", version: Skill, trace: Trace,
                  report: VerificationReport | None) -> Admitted:
    """Store ``version`` as the generalizer's draft, record its replay as its evaluation,
    and approve and activate it when nothing needs a human; one transaction. No index
    write (the learning batch syncs the index)."""
    generalizer = library.actors.resolve(GENERALIZER_ID)
    system = library.actors.resolve(SYSTEM_ID)
    require(generalizer, "skill.propose", f"propose the learned skill {version.name!r}")
    store = unit_of(library)
    tenant = tenant_of(library)
    trusted_tools = library.trusted_output_tools
    instructed = instructed_calls(trace, trusted_tools)
    provenance = version.provenance.model_copy(update={"created_by": generalizer.id})
    draft = version.model_copy(update={"provenance": provenance, "status": "draft"})

    def work(conn: Connection) -> Admitted:
        revision = governance_rows.skill_exists(conn, store.tenant, draft.name)
        policy = policy_store.load(conn, tenant) or Policy()
        specs = tool_store.load(conn, tenant)
        ungrounded = ungrounded_calls(trace, {**library.constructor_tool_specs(), **specs},
                                      rules.human_approved_tools(conn, tenant, draft.name),
                                      trusted_tools)
        stored, _ = store.insert_version(conn, draft, status="draft")
        tool_schemas.record(conn, tenant, [stored], {**library.constructor_tool_specs(), **specs},
                            [c.model_dump(mode="json") for c in trace.calls])
        evidence: dict[str, Any] = {"trace": trace.id, "generalizer": provenance.generalizer}
        if instructed:
            evidence[rules.INSTRUCTED_KEY] = instructed
        if ungrounded:
            evidence[rules.UNGROUNDED_KEY] = ungrounded
        audit.write(conn, tenant, stored.name, stored.version, None, "draft", actor=generalizer.id,
                    reason=f"learned from trace {trace.id}", evidence=evidence)
        waiting = rules.needs_human(library, stored, conn=conn, policy=policy, specs=specs)
        replay = {"passed": True, "kind": "replay", "trace": trace.id,
                  "message": report.message if report else ""}
        if waiting:
            replay["held"] = waiting
        stored = apply(conn, library, stored.name, stored.version, "evaluated", actor=system,
                       reason="replay verification passed" + ("; held for a human approval" if waiting else ""),
                       evidence=replay)
        if waiting:
            reason = (f"{stored.name!r} v{stored.version} is held for approval: {'; '.join(waiting)}; "
                      f"a user with skill.approve approves it with `skills approve {stored.name} "
                      f"{stored.version}` and activates it with `skills promote {stored.name} "
                      f"{stored.version}`")
            return Admitted(stored, activated=False, revision=revision, reasons=[reason])
        stored = apply(conn, library, stored.name, stored.version, "approved", actor=system,
                       reason=f"auto-approved: the tenant's policy is auto_approve={policy.auto_approve!r}")
        stored = apply(conn, library, stored.name, stored.version, "active", actor=system,
                       reason="activated after auto-approval")
        return Admitted(stored, activated=True, revision=revision)

    result: Admitted = store.retrying(work)
    return result
