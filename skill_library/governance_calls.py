"""The governance calls of ``SkillLibrary``: actors, policy, tools, the lifecycle of
versions, evaluations and canaries (docs/governance.md).

A mixin of the facade layer, so that ``skill_library/library.py`` stays small: each call
is a one-line delegation to :mod:`skill_library.governance` (docs/api.md#governance-calls),
typed on the ``SkillLibrary`` it is part of.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

from skill_library.deprecation import deprecated
from skill_library.governance import Actor, AuditEvent, Policy, ToolSpec
from skill_library.models import Skill

if TYPE_CHECKING:
    from skill_library.governance.bulk import Decision
    from skill_library.governance.canary import CanaryState
    from skill_library.governance.evaluation import Evaluation
    from skill_library.governance.suite import Suite, ToolsFactory
    from skill_library.governance.tool_schemas import Reverification
    from skill_library.library import SkillLibrary


class GovernanceCalls:
    """``SkillLibrary``'s governance calls (see the module)."""

    @property
    def _lib(self) -> SkillLibrary:
        """This object as the library it is part of (the mixin is only ever ``SkillLibrary``'s)."""
        return cast("SkillLibrary", self)

    # -- actors, policy and tools ---------------------------------------------------------
    def resolve_actor(self, actor: "Actor | str | None" = None) -> Actor:
        """The registered actor ``actor`` names (None: the local administrator);
        :class:`PermissionDenied` when unknown. See docs/api.md#governance-calls."""
        from skill_library.governance import workflow
        return workflow.resolve_actor(self._lib, actor)

    @property
    def read_only_tools(self) -> frozenset[str]:
        """The tools declared without side effects in the tenant, or named by ``read_only_tools=``."""
        return frozenset(n for n, s in self.tool_specs().items() if not s.side_effects)

    def tool_specs(self) -> dict[str, ToolSpec]:
        """The tools declared in the tenant (plus ``read_only_tools=``), by name."""
        from skill_library.governance import workflow
        return workflow.tool_specs(self._lib)

    def register_tools(self, specs: Mapping[str, ToolSpec | None], *, actor: "Actor | str | None" = None,
                       tools: Mapping[str, Callable[..., Any]] | None = None) -> "Reverification":
        """Declare tools in the tenant (``skill.admin``; audited; ``None`` removes one); versions
        bound to a changed schema are suspended and re-verified. See docs/api.md#governance-calls."""
        from skill_library.governance import workflow
        return workflow.register_tools(self._lib, specs, actor=actor, tools=tools)

    def reverify_tools(self, name: str,
                       tools: Mapping[str, Callable[..., Any]] | None = None) -> "Reverification":
        """Re-verify the suspended versions of ``name`` against the tool schemas declared now."""
        from skill_library.governance import tool_schemas
        return tool_schemas.reverify_named(self._lib, name, tools)

    def tool_schema_digests(self, name: str, version: int | None = None) -> dict[str, str]:
        """``{tool: sha256}`` of the tool schemas ``name`` v``version`` was verified against."""
        from skill_library.governance import tool_schemas
        return tool_schemas.digests(self._lib, name, self._lib.context.store.get(name, version).version)

    def resume(self, name: str, *, actor: "Actor | str | None" = None, reason: str = "") -> Skill:
        """An approver returns the suspended version of ``name`` to active. Audited."""
        from skill_library.governance import tool_schemas
        return tool_schemas.resume(self._lib, name, actor=actor, reason=reason)

    @property
    def policy(self) -> Policy:
        """The tenant's policy (``Policy()``, auto_approve ``read_only``, when none is stored)."""
        from skill_library.governance import workflow
        return workflow.policy(self._lib)

    def set_policy(self, policy: Policy, *, actor: "Actor | str | None" = None) -> Policy:
        """Store ``policy`` as the tenant's (``skill.admin``; audited)."""
        from skill_library.governance import workflow
        return workflow.set_policy(self._lib, policy, actor=actor)

    def propose(self, skill: Skill, *, actor: "Actor | str | None" = None, reason: str = "") -> Skill:
        """Store ``skill`` as a draft, the next version of its name (``skill.propose``)."""
        from skill_library.governance import workflow
        return workflow.propose(self._lib, skill, actor=actor, reason=reason)

    def reject(self, name: str, version: int, *, actor: "Actor | str | None" = None,
               reason: str) -> Skill:
        """Reject a draft or evaluated version: kept for audit, never fetched."""
        from skill_library.governance import workflow
        return workflow.reject(self._lib, name, version, actor=actor, reason=reason)

    def approve(self, name: str, version: int, *, actor: "Actor | str | None" = None,
                reason: str = "") -> Skill:
        """Approve an evaluated version (``skill.approve``, a ``user`` actor, not its proposer,
        its latest evaluation passed)."""
        from skill_library.errors import LifecycleError
        from skill_library.governance import evaluation, workflow
        if (problem := evaluation.approval_problem(self._lib, name, version)) is not None:
            raise LifecycleError(problem)
        return workflow.approve(self._lib, name, version, actor=actor, reason=reason)

    def approve_many(self, items: "Sequence[str | tuple[str, int]] | None" = None, *,
                     actor: "Actor | str | None" = None, reason: str = "") -> "list[Decision]":
        """:meth:`approve` each version (``None``: every evaluated version learning held), one
        :class:`~skill_library.governance.bulk.Decision` each. See docs/api.md#governance-calls."""
        from skill_library.governance import bulk
        wanted = bulk.held(self._lib) if items is None else items
        return bulk.approve_many(self._lib, wanted, actor=actor, reason=reason)

    def promote_many(self, items: "Sequence[str | tuple[str, int]]", *,
                     actor: "Actor | str | None" = None) -> "list[Decision]":
        """:meth:`promote` each version (a name alone: its newest approved one), one Decision each."""
        from skill_library.governance import bulk
        return bulk.promote_many(self._lib, items, actor=actor)

    def start_canary(self, name: str, version: int, *, actor: "Actor | str | None" = None,
                     share: float | None = None, cohort: str | None = None) -> Skill:
        """Start a canary of an approved version for ``share`` of sessions or a ``cohort``."""
        from skill_library.governance import workflow
        return workflow.canary(self._lib, name, version, actor=actor, share=share, cohort=cohort)

    def canary(self, name: str, version: int, *, actor: "Actor | str | None" = None,
               share: float | None = None, cohort: str | None = None) -> Skill:
        """Deprecated alias of :meth:`start_canary` (docs/architecture.md#deprecations)."""
        deprecated("canary()", "start_canary()")
        return self.start_canary(name, version, actor=actor, share=share, cohort=cohort)

    def promote(self, name: str, version: int, *, actor: "Actor | str | None" = None) -> Skill:
        """Make an approved (or canary) version the active one; the one before is superseded."""
        from skill_library.governance import workflow
        return workflow.promote(self._lib, name, version, actor=actor)

    def rollback(self, name: str, *, actor: "Actor | str | None" = None,
                 to_version: int | None = None) -> Skill:
        """Flip the active pointer back to the previous released version (or ``to_version``)."""
        from skill_library.governance import workflow
        return workflow.rollback(self._lib, name, actor=actor, to_version=to_version)

    def diff(self, name: str, v1: int, v2: int) -> str:
        """What changed from version ``v1`` to ``v2``: code, ``when``, tools, parameters."""
        from skill_library.governance import workflow
        return workflow.diff(self._lib, name, v1, v2)

    def delete(self, name: str, *, actor: "Actor | str | None" = None) -> AuditEvent:
        """Remove ``name`` entirely (admin only); returns the one audit event it leaves."""
        from skill_library.governance import workflow
        return workflow.delete(self._lib, name, actor=actor)

    def audit(self, name: str | None = None) -> list[AuditEvent]:
        """The audit events of ``name`` (default: every event of the tenant), oldest first."""
        from skill_library.governance import workflow
        return workflow.audit_events(self._lib, name)

    def needs_human(self, name: str, version: int) -> list[str]:
        """Why a human must approve this version (empty: the policy may approve it)."""
        from skill_library.governance import rules
        return rules.needs_human(self._lib, self._lib.context.store.get(name, version))

    def review_queue(self) -> list[Skill]:
        """The versions waiting for a person's decision, oldest first (docs/api.md#governance-calls)."""
        from skill_library.governance import workflow
        return workflow.review_queue(self._lib)

    def retire(self, name: str, *, actor: "Actor | str | None" = None) -> Skill:
        """Retire a skill (``skill.approve``; audited): kept in the records, never fetched again."""
        from skill_library.governance import workflow
        return workflow.retire(self._lib, name, actor=actor)

    # -- evaluation and canaries ------------------------------------------------------------
    def evaluate(self, name: str, version: int, suite: "Suite | str | os.PathLike[str]",
                 tools: "ToolsFactory", *, actor: "Actor | str | None" = None) -> "Evaluation":
        """Run ``version`` and the active version side by side on ``suite``; store and return
        the :class:`Evaluation`. See docs/api.md#governance-calls."""
        from skill_library.governance import evaluation
        return evaluation.evaluate(self._lib, name, version, suite, tools, actor=actor)

    def evaluations(self, name: str, version: int | None = None) -> list["Evaluation"]:
        """The stored evaluations of ``name`` (or of one version), newest last."""
        from skill_library.governance import evaluation
        return evaluation.evaluations(self._lib, name, version)

    def canaries(self) -> list["CanaryState"]:
        """The running canaries: share, cohort, both versions' counts, p-value, decision."""
        from skill_library.governance import canary
        return canary.states(self._lib)

    def import_draft(self, skill: Skill, *, actor: "Actor | str | None" = None) -> Skill:
        """Store ``skill`` as an unverified draft version (:meth:`propose`): never indexed or run."""
        if skill.successes or skill.failures:
            raise ValueError(f"successes/failures: a draft starts with no outcomes; {skill.name!r} has some")
        return self.propose(skill, actor=actor, reason="imported")
