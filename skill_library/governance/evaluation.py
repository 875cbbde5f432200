"""Evaluation: a candidate version and the active version, side by side, on a suite.

``evaluate(library, name, version, suite, tools, actor=...)`` runs every task of the suite
(:mod:`skill_library.governance.suite`) twice, on a fresh world each time from the tools
factory: once with the active version, once with the candidate. Both run in the real
sandbox, through the same path as ``SkillLibrary.run``, and are **not recorded** as outcomes
or traces (an evaluation must not move the versions' reliability, which canary decisions
and fetch read); everything about them is stored in the evaluation instead.

Stored with the version (table ``evaluations``, one row per evaluation, with its tenant):
the suite's id and content hash, the model configuration, and per task and version: the
success, the exact tool calls (names and arguments, in order), the calls the sandbox denied
(an undeclared tool, arguments outside a schema, the call limit), the error, the latency
and the tokens; then passed or failed, with the reasons.

The verdict:

- a **critical regression** (a task marked ``critical`` that the active version solves and
  the candidate does not) fails the evaluation whatever the average says;
- with an active version, the candidate fails when its success rate is more than
  :data:`MAX_SUCCESS_RATE_DROP` below the active version's;
- with no active version (a new skill), it must solve every critical task and at least
  :data:`NEW_SKILL_MIN_SUCCESS_RATE` of the tasks.

A passed evaluation of a ``draft`` moves it to ``evaluated`` through the lifecycle's
``transition`` (audited, with the evaluation id as evidence) and, when the tenant's policy
needs no human for it (skill_library.governance.rules.needs_human: ``auto_approve`` and the
tools' side effects), the ``system`` actor approves it at once. Approval requires the
latest evaluation to have passed.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from pydantic import BaseModel, ConfigDict, Field

from skill_library import execution
from skill_library.errors import SkillLibraryError, SkillUsageError
from skill_library.governance.lifecycle import tenant_of, unit_of
from skill_library.governance.suite import Suite, SuiteTask, ToolsFactory, environment
from skill_library.models import Skill, SkillRun, utc_now
from skill_library.storage import governance_rows

if TYPE_CHECKING:
    from skill_library.governance.actors import Actor
    from skill_library.protocols import Evaluating, Tenant

#: largest drop of the candidate's success rate below the active version's that passes
MAX_SUCCESS_RATE_DROP = 0.0
#: least success rate of a candidate that has no active version to compare with
NEW_SKILL_MIN_SUCCESS_RATE = 0.8
#: how an error of a sandbox-refused tool call begins (it counts as a denied action)
DENIAL_MARKERS = ("invalid arguments for tool", "is not available (available:", "tool call limit of")


class EvalCall(BaseModel):
    """One tool call a version made on a task (``denied``: the sandbox refused it)."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    denied: bool = False


class VersionResult(BaseModel):
    """How one version did on one task."""

    model_config = ConfigDict(frozen=True)

    version: int
    success: bool
    calls: list[EvalCall] = Field(default_factory=list)
    denied: list[EvalCall] = Field(default_factory=list)
    error: str | None = None
    latency_ms: float = 0.0
    tokens: int | None = None
    evidence: Any = None


class TaskResult(BaseModel):
    """One task: the candidate's and the active version's results, and whether it regressed."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    critical: bool
    candidate: VersionResult
    active: VersionResult | None = None

    @property
    def regression(self) -> bool:
        """True when the active version solved the task and the candidate did not."""
        return self.active is not None and self.active.success and not self.candidate.success


class Evaluation(BaseModel):
    """One stored evaluation of ``name`` version ``version`` (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    id: int
    tenant: str
    name: str
    version: int
    active_version: int | None
    suite_id: str
    suite_hash: str
    model: dict[str, Any]
    results: list[TaskResult]
    passed: bool
    reasons: list[str]
    candidate_success_rate: float
    active_success_rate: float | None
    actor: str
    created_at: datetime

    @property
    def critical_regressions(self) -> list[str]:
        """The ids of the critical tasks that regressed."""
        return [r.task_id for r in self.results if r.critical and r.regression]


def evaluate(library: "Evaluating", name: str, version: int, suite: "Suite | str | os.PathLike[str]",
             tools: ToolsFactory,
             *, actor: "Actor | str | None") -> Evaluation:
    """Evaluate ``version`` of ``name`` against the active version on ``suite`` (a
    :class:`Suite` or the path of a suite file); store and return the :class:`Evaluation`."""
    from skill_library.governance.actors import require

    actor = library.actors.caller(actor)
    require(actor, "skill.propose", f"evaluate {name!r} v{version}")
    if not isinstance(suite, Suite):
        suite = Suite.load(suite)
    candidate = library.context.store.get(name, version)
    if candidate.kind != "code" or not candidate.code:
        raise SkillLibraryError(f"skill {name!r} v{version} is an instruction skill: only code skills are evaluated")
    current = library.context.store.get(name)
    if current.version == candidate.version and current.status == "active":
        raise SkillLibraryError(
            f"skill {name!r} v{version} is the active version; evaluate a candidate version against it"
        )
    active = current if current.status == "active" else None
    results = [
        TaskResult(
            task_id=task.id,
            critical=task.critical,
            candidate=_run_task(library, candidate, task, tools),
            active=_run_task(library, active, task, tools) if active is not None else None,
        )
        for task in suite.tasks
    ]
    passed, reasons, rates = verdict(results)
    body: dict[str, Any] = {
        "tenant": tenant_of(library), "name": name, "version": version,
        "active_version": active.version if active is not None else None,
        "suite_id": suite.id, "suite_hash": suite.content_hash,
        "model": model_configuration(library, candidate, active),
        "results": [r.model_dump(mode="json") for r in results],
        "passed": passed, "reasons": reasons,
        "candidate_success_rate": rates[0], "active_success_rate": rates[1],
        "actor": str(actor.id), "created_at": utc_now(),
    }
    row_id = governance_rows.add_evaluation(
        unit_of(library), name=name, version=version, active_version=body["active_version"],
        suite_id=suite.id, suite_hash=body["suite_hash"], passed=passed, actor=body["actor"],
        body={k: v for k, v in body.items() if k != "created_at"}, created_at=body["created_at"])
    evaluation = Evaluation(id=int(row_id), **body)
    if passed and candidate.status == "draft":
        from skill_library.governance import rules
        from skill_library.governance.actors import system_actor
        from skill_library.governance.lifecycle import library_transition, transition

        evidence = {"evaluation_id": evaluation.id, "suite_id": suite.id, "suite_hash": suite.content_hash,
                    "passed": True}
        evaluated = transition(
            library, name, version, "evaluated", actor=actor,
            reason=f"passed evaluation {evaluation.id} on suite {suite.id} ({suite.content_hash[:12]})",
            evidence=evidence,
        )
        if not rules.needs_human(library, evaluated):  # the tenant's policy approves it
            library_transition(library, name, version, "approved", actor=system_actor(),
                       reason=f"auto-approved after evaluation {evaluation.id}: the tenant's policy allows it",
                       evidence=evidence)
    return evaluation


def evaluations(library: "Tenant", name: str, version: int | None = None) -> list[Evaluation]:
    """The stored evaluations of ``name`` (optionally one version), oldest first."""
    from skill_library.governance.canary import aware

    rows = governance_rows.evaluation_rows(unit_of(library), name, version)
    return [Evaluation(id=int(r["id"]), created_at=aware(r["created_at"]), **r["body"]) for r in rows]


def approval_problem(library: "Tenant", name: str, version: int) -> str | None:
    """Why ``version`` may not be approved for want of a passed evaluation (None: it may).

    A version with evaluations needs its newest one passed; one without any reached
    ``evaluated`` by replay verification of learning, which counts as its evaluation."""
    found = evaluations(library, name, version)
    if found and not found[-1].passed:
        latest = found[-1]
        return (
            f"skill {name!r} v{version}: its latest evaluation ({latest.id}, suite {latest.suite_id}) "
            f"failed: {'; '.join(latest.reasons)}"
        )
    return None


def verdict(results: Sequence[TaskResult]) -> tuple[bool, list[str], tuple[float, float | None]]:
    """(passed, reasons, (candidate rate, active rate)) of per-task results."""
    n = len(results)
    candidate_rate = sum(r.candidate.success for r in results) / n
    compared = all(r.active is not None for r in results)
    active_rate = sum(bool(r.active and r.active.success) for r in results) / n if compared else None
    reasons: list[str] = []
    for r in results:
        if r.critical and r.regression:
            assert r.active is not None
            why = f" ({r.candidate.error})" if r.candidate.error else ""
            reasons.append(
                f"critical task {r.task_id!r} regressed: v{r.active.version} solves it, "
                f"v{r.candidate.version} does not{why}"
            )
    if active_rate is not None:
        if candidate_rate < active_rate - MAX_SUCCESS_RATE_DROP - 1e-12:
            reasons.append(
                f"success rate {candidate_rate:.0%} is below the active version's {active_rate:.0%}"
            )
    else:
        for r in results:
            if r.critical and not r.candidate.success:
                reasons.append(f"critical task {r.task_id!r} failed (no active version to compare with)")
        if candidate_rate < NEW_SKILL_MIN_SUCCESS_RATE:
            reasons.append(
                f"success rate {candidate_rate:.0%} is below {NEW_SKILL_MIN_SUCCESS_RATE:.0%} "
                "(NEW_SKILL_MIN_SUCCESS_RATE, no active version to compare with)"
            )
    passed = not reasons
    if passed:
        against = f" vs {active_rate:.0%} for the active version" if active_rate is not None else ""
        reasons.append(f"passed: success rate {candidate_rate:.0%}{against}, no critical regression")
    return passed, reasons, (candidate_rate, active_rate)


def model_configuration(library: "Evaluating", candidate: Skill, active: Skill | None) -> dict[str, Any]:
    """What produced and ran the versions: the executor, the embedder, and each version's
    generalizer and model (a code skill runs without a model; tokens come from the world)."""
    def origin(skill: Skill) -> dict[str, Any]:
        p = skill.provenance
        return {"version": skill.version, "generalizer": p.generalizer, "model": p.model, "usage": dict(p.usage)}

    return {
        "executor": "sandbox",
        "embedder": str(getattr(library.embedder, "model_name", type(library.embedder).__name__)),
        "candidate": origin(candidate),
        "active": origin(active) if active is not None else None,
    }


def _run_task(library: "Evaluating", skill: Skill, task: SuiteTask, tools: ToolsFactory) -> VersionResult:
    env = environment(tools(task))
    properties = (skill.parameters or {}).get("properties", {})
    required = (skill.parameters or {}).get("required", [])
    missing = [p for p in required if p not in task.params]
    if missing:
        return VersionResult(
            version=skill.version, success=False,
            error=f"the task's params lack the skill's parameter(s) {', '.join(missing)}",
        )
    args = {k: v for k, v in task.params.items() if k in properties}
    tokens_before = env.tokens() if env.tokens is not None else None
    started = time.perf_counter()
    try:
        run: SkillRun | None = execution.execute(library, skill, args, env.tools, tool_schemas=env.tool_schemas)
        error = None
    except SkillUsageError as exc:
        run, error = None, str(exc)
    latency = (time.perf_counter() - started) * 1000.0
    tokens = env.tokens() - tokens_before if env.tokens is not None and tokens_before is not None else None
    if run is None:
        return VersionResult(version=skill.version, success=False, error=error, latency_ms=latency, tokens=tokens)
    calls = [
        EvalCall(name=c.name, arguments=dict(c.arguments), error=c.error,
                 denied=bool(c.error) and any(m in (c.error or "") for m in DENIAL_MARKERS))
        for c in run.trace.calls
    ]
    error = str(run.error) if run.error is not None else (f"limit: {run.limit}" if run.limit else None)
    success, evidence = False, None
    if run.ok:
        try:
            success, evidence = _check(env.check, task, run)
        except Exception as exc:  # a check that cannot judge counts as a failure
            error = f"the check raised {type(exc).__name__}: {exc}"
    return VersionResult(
        version=skill.version, success=success, calls=calls, denied=[c for c in calls if c.denied],
        error=error, latency_ms=latency, tokens=tokens, evidence=evidence,
    )


def _check(check: Any, task: SuiteTask, run: SkillRun) -> tuple[bool, Any]:
    if check is not None:
        verdict = check(run)
        return bool(getattr(verdict, "success", verdict)), getattr(verdict, "evidence", None)
    if task.gold is not None:
        made = [(c.name, c.arguments) for c in run.trace.calls]
        gold = [(g.name, g.arguments) for g in task.gold]
        return made == gold, None if made == gold else {"expected": gold, "made": made}
    return True, None  # no check and no gold: a run without error is a success
