"""Executing one skill version: its sources and its dependencies' in the sandbox, with only
the tools they declare, arguments checked against its parameter schema, and the calls it
made returned as a :class:`Trace` (:func:`execute` records nothing); and :func:`run`,
``SkillLibrary.run``'s version choice, outcome and records around it."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping

from skill_library import outcomes
from skill_library.errors import SkillLibraryError, SkillNotFoundError, SkillUsageError
from skill_library.models import (
    NOT_APPLICABLE_ERROR,
    Outcome,
    OutcomeKind,
    RunError,
    Skill,
    SkillRun,
    ToolCall,
    Trace,
    new_id,
)

if TYPE_CHECKING:
    from sandbox import Limits
    from skill_library.protocols import Executing, Running


def execute(
    library: "Executing",
    skill: Skill,
    args: Mapping[str, Any] | None,
    tools: Mapping[str, Callable[..., Any]] | None,
    *,
    tool_schemas: Mapping[str, dict[str, Any]] | None = None,
    limits: "Limits | None" = None,
) -> SkillRun:
    """Run this exact version of a skill in ``library``'s sandbox with its dependencies;
    nothing is recorded and no outcome judged (``SkillLibrary.run`` adds both; evaluation
    uses it to run candidate versions of any status)."""
    name = skill.name
    if skill.kind != "code" or not skill.code:
        raise SkillLibraryError(f"skill {name!r} is an instruction skill and cannot be run")
    args = dict(args or {})
    check_args(skill, args)
    sources, declared = closure(library, skill)
    provided = dict(tools or {})
    missing = [t for t in declared if t not in provided]
    if missing:
        raise SkillUsageError(
            f"skill {name!r} needs the tool(s) {', '.join(missing)}, which were not given "
            "(pass them in tools=, or the CLI's --tools MODULE)"
        )
    allowed = {t: provided[t] for t in declared if t in provided}
    guard = None
    if skill.provenance.preconditions:  # checked before the first state-changing call
        from skill_library.induction.preconditions import Guard

        guard = Guard(skill.provenance.preconditions, library.read_only_tools)
        allowed = guard.wrap(allowed)
    # closed by default: a skill may not pass arguments a tool's schema does not list
    schemas = {
        t: {**s, "additionalProperties": s.get("additionalProperties", False)}
        for t, s in (tool_schemas or {}).items()
        if t in allowed
    }
    result = library.sandbox.run(
        sources,
        entry=skill.name,
        args=args,
        tools=allowed,
        tool_schemas=schemas or None,
        limits=limits,
    )
    calls = [
        ToolCall(
            name=c.name,
            arguments=c.arguments,
            result=c.result,
            error=c.error,
            duration_ms=c.duration_ms,
        )
        for c in result.calls
    ]
    error = None
    if not result.ok and result.error is not None:
        error = RunError(
            type=result.error.type, message=result.error.message, line=result.error.line
        )
    ok, value = result.ok, result.value
    if guard is not None and guard.message is not None:  # stopped before anything changed
        refused = "does not apply: "  # the refused calls never ran: not in the trace
        calls = [c for c in calls if c.name in guard.read_only or not (c.error or "").startswith(refused)]
        error = RunError(type=NOT_APPLICABLE_ERROR, message=guard.message.removeprefix("does not apply: "))
        ok, value = False, None
    trace = Trace(
        id=new_id(),  # every run is its own event, even with the same arguments and calls
        task=task_text(skill, args),
        params=args,
        calls=calls,
        result=value if ok else None,
        source=f"skill:{skill.name}@{skill.version}",
    )
    return SkillRun(
        name=skill.name,
        version=skill.version,
        ok=ok,
        value=value if ok else None,
        error=error,
        limit=result.limit,
        stdout=result.stdout,
        duration_ms=result.duration_ms,
        trace=trace,
    )


def run(
    library: "Running",
    name: str,
    args: Mapping[str, Any] | None,
    tools: Mapping[str, Callable[..., Any]] | None,
    *,
    version: int | None,
    tool_schemas: Mapping[str, dict[str, Any]] | None,
    limits: "Limits | None",
    verifier: Callable[[SkillRun], bool] | None,
    record: bool,
    subject: str | None,
    session: str | None,
    cohort: str | None,
    allow_quarantined: bool = False,
) -> SkillRun:
    """``SkillLibrary.run``: pick the version (a session's canary or the active one), run it,
    judge the outcome (sandbox failure, ``verifier``), and record trace, outcome, usage
    pattern and the quarantine and canary checks unless ``record`` is False."""
    explicit = version is not None
    if version is None and (session is not None or cohort is not None):
        from skill_library.governance import canary

        version = canary.session_version(library, name, session=session, cohort=cohort)
    skill = library.get(name, version)
    runnable = ("active", "canary") + (("quarantined",) if allow_quarantined else ())
    if skill.status not in runnable and not explicit and version is not None:
        skill = library.get(name)  # the session's canary ended meanwhile: the active version
    if skill.kind != "code" or not skill.code:
        raise SkillLibraryError(f"skill {name!r} is an instruction skill and cannot be run")
    if skill.status not in runnable:
        if explicit:
            raise SkillLibraryError(
                f"v{skill.version} of {name!r} is {skill.status}; only active and canary versions run"
            )
        raise SkillLibraryError(f"skill {name!r} is {skill.status}; only active skills run")
    if session is not None:
        from skill_library.governance import canary

        canary.remember(library, session, skill.name, skill.version)
    run = execute(library, skill, args, tools, tool_schemas=tool_schemas, limits=limits)
    outcome = judge(run, args or {}, library.read_only_tools, verifier)
    trace = run.trace.model_copy(update={"outcome": outcome})
    run = run.model_copy(update={"trace": trace})
    if not record:
        return run
    if subject is not None and session is not None:
        library.patterns.record_invocation(subject, skill.name, session=session)
    library.context.store.save_trace(trace)
    if outcome is not None:
        stored = library.context.store.record_outcome(
            skill.name, outcome.success, version=skill.version, trace_id=trace.id,
            kind=outcome.kind, reason=outcome.reason, origin="run",
        )
        if outcome.kind is OutcomeKind.FAILURE and stored.status == "active":
            outcomes.check_quarantine(library, stored)
        outcomes.after_outcome(library, skill.name)
    return run


def judge(
    run: SkillRun,
    args: Mapping[str, Any],
    read_only: frozenset[str],
    verifier: Callable[[SkillRun], bool] | None,
) -> Outcome | None:
    """The outcome of a finished run (skill_library.outcomes.classify): a failed run is
    ``misuse``, ``not_applicable`` or ``failure`` with the reason; a run that returned is
    judged by ``verifier`` (None without one: the caller reports it with ``feedback``)."""
    from skill_library.outcomes import classify

    failed = classify(run, args, read_only)
    if failed is not None:
        kind, reason = failed
        return Outcome(success=False, kind=kind, verifier="sandbox", reason=reason,
                       evidence=str(run.error) if run.error else run.limit)
    if verifier is None:
        return None
    name = getattr(verifier, "__name__", "verifier")
    try:
        verdict = bool(verifier(run))
    except Exception as exc:  # a verifier that cannot judge counts as a failure
        return Outcome(success=False, verifier=name, reason=f"the verifier {name} raised {type(exc).__name__}",
                       evidence=f"verifier raised {type(exc).__name__}: {exc}")
    if verdict:
        return Outcome(success=True, verifier=name)
    return Outcome(success=False, verifier=name, reason=f"the verifier {name} judged the result wrong")


def closure(library: "Executing", skill: Skill) -> tuple[list[str], list[str]]:
    """Sources of ``skill`` and its dependencies, and every tool they declare."""
    sources: list[str] = []
    tools: list[str] = []
    seen: set[str] = set()
    stack = [skill]
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        if current.code:
            sources.append(current.code)
        tools.extend(t for t in current.tools if t not in tools)
        for dep in current.depends_on:
            if dep not in seen:
                try:
                    dep_skill = library.get(dep)
                except SkillNotFoundError:
                    raise SkillLibraryError(
                        f"skill {current.name!r} depends on {dep!r}, which does not exist"
                    ) from None
                stack.append(dep_skill)
    return sources, tools


def check_args(skill: Skill, args: dict[str, Any]) -> None:
    """Arguments against the skill's parameter schema; messages never echo the values."""
    from sandbox.schema import schema_errors

    properties = (skill.parameters or {}).get("properties", {})
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise SkillUsageError(f"skill {skill.name!r} has no parameter(s) {', '.join(unknown)}")
    missing = [p for p in (skill.parameters or {}).get("required", []) if p not in args]
    if missing:
        raise SkillUsageError(f"skill {skill.name!r} needs argument(s) {', '.join(missing)}")
    types_only = {
        "type": "object",
        "properties": {
            k: {"type": v["type"]} for k, v in properties.items() if isinstance(v, dict) and "type" in v
        },
    }
    problems = schema_errors(args, types_only)
    if problems:
        raise SkillUsageError(f"skill {skill.name!r}: {'; '.join(problems)}")


_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def task_text(skill: Skill, args: Mapping[str, Any]) -> str:
    """``skill.when`` with each ``{name}`` placeholder replaced by that argument's value;
    a ``when`` without placeholders (a description in words) gets the arguments appended.

    Plain substitution, not ``str.format``: ``when`` may come from a model and may hold
    any braces (``{x[0]}``, ``{x.__class__}``), which must neither raise nor reach into
    the arguments' attributes.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in args:
            return match.group(0)
        found = args[name]
        return found if isinstance(found, str) else json.dumps(found, default=str)

    text = _PLACEHOLDER_RE.sub(value, skill.when)
    if args and not _PLACEHOLDER_RE.search(skill.when):  # a description in words: name the inputs
        listed = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
                           for k, v in args.items())
        text += f" Arguments: {listed}."
    return text
