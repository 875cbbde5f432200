"""Honest outcomes (issue 21 item 5, issue 23's outside outcomes): what a run's outcome
says about the skill, and who may report one.

* :func:`classify` judges a finished run: a failure in a read-only lookup on a value the
  caller passed in (the lookup said "not found" / "invalid") is ``misuse``; a run stopped
  by a precondition (error type :data:`~skill_library.models.NOT_APPLICABLE_ERROR`) is
  ``not_applicable``; anything else that failed (a state-changing call raising, a limit, a
  verifier's "wrong") is ``failure``; a verifier's "right" is ``success``.
* :func:`feedback` is ``SkillLibrary.feedback``: a kind (or a bool) for a skill or a
  procedure; ``wrong_skill=True`` records a wrong fetch against retrieval, not the skill.
* :func:`record_external` is what MCP (or any server) calls for an outcome from outside
  the process: it must name a run (``trace_id``) or a session the library recorded, credits
  only the version that ran or was given to that session, never a version that was not
  released, and takes one outcome per run.

Only ``success`` and ``failure`` are the skill's own record: Laplace reliability and the
quarantine rule count them; the other kinds are kept in the outcome log (with their
reason) and shown in the counts (:meth:`SkillLibrary.outcome_counts`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from skill_library.errors import SkillLibraryError
from skill_library.models import NOT_APPLICABLE_ERROR, OutcomeKind, Skill, SkillRun

if TYPE_CHECKING:
    from skill_library.governance.actors import Actor
    from skill_library.protocols import Canaried, Governed, Recording, Reverifying, Ruled, Tenant

#: what a lookup says when the value it was given names nothing (or nothing valid)
NOT_FOUND_RE = re.compile(
    r"not\s+found|no\s+such|does\s*n[o']t\s+exist|unknown(?!\s+error)|invalid|not\s+(?:a\s+)?valid|malformed|"
    r"not\s+recogni[sz]ed|no\s+match|\bno\s+\w+\s+(?:has|with|named|matches|for|called)\b|"
    r"not\s+a\s+known|unrecogni[sz]ed|bad\s+format|could\s*n[o']t\s+find|can\s*n[o']t\s+find",
    re.IGNORECASE,
)
#: statuses of versions that were released (served to callers): only these take outcomes
#: from outside the process
RELEASED_STATUSES = frozenset({"active", "canary", "quarantined", "superseded", "retired"})
#: where an outcome came from (the ``origin`` column of the outcome log)
ORIGINS = ("run", "feedback", "external", "learned")


def classify(run: SkillRun, args: Mapping[str, Any], read_only: Iterable[str]) -> tuple[OutcomeKind, str] | None:
    """The kind and reason of a failed run (None for a run that did not fail).

    ``misuse`` needs all of: the run failed in a call of a read-only tool (``read_only``:
    declared without side effects), one of whose arguments is a value the caller passed
    in ``args``, with an error that says the value names nothing or nothing valid
    (:data:`NOT_FOUND_RE`). A read-only call that fails otherwise (an outage, a timeout) and
    a state-changing call that raises are the skill's ``failure``. Reasons name tools and
    parameters, never the values.
    """
    if run.ok:
        return None
    error = run.error
    if error is not None and error.type == NOT_APPLICABLE_ERROR:
        return OutcomeKind.NOT_APPLICABLE, f"does not apply: {_one_line(error.message)}"
    if run.limit:
        return OutcomeKind.FAILURE, f"the run hit its {run.limit} limit"
    calls = run.trace.calls
    failed = calls[-1] if calls and calls[-1].error is not None else None
    if failed is None:
        what = f"{error.type}" if error is not None else "an error"
        return OutcomeKind.FAILURE, f"the skill raised {what} (no tool call failed)"
    readers = frozenset(read_only)
    if failed.name in readers:
        params = [p for p, v in args.items() if any(_derives(a, v) for a in failed.arguments.values())]
        said = NOT_FOUND_RE.search(failed.error or "")
        if params and said:
            acted = sum(1 for c in calls[:-1] if c.name not in readers and c.error is None)
            changed = f"; {acted} state-changing call(s) had run before it" if acted else ""
            return (OutcomeKind.MISUSE,
                    f"the read-only lookup {failed.name} refused the caller's {', '.join(params)} "
                    f"({said.group(0).lower()}){changed}")
        return OutcomeKind.FAILURE, f"the read-only call {failed.name} failed (not on a value the caller passed)"
    return OutcomeKind.FAILURE, f"the state-changing call {failed.name} raised"


def _derives(argument: Any, value: Any) -> bool:
    """Whether a call's ``argument`` is the caller's ``value`` (or one of its items), up to
    case and surrounding spaces."""
    if isinstance(value, (list, tuple)):
        return any(_derives(argument, v) for v in value)
    if isinstance(argument, str) and isinstance(value, str):
        return argument.strip().casefold() == value.strip().casefold() and bool(value.strip())
    if isinstance(argument, bool) or isinstance(value, bool):
        return False
    return argument == value and argument is not None


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def feedback(
    library: "Recording",
    name: str,
    succeeded: "bool | OutcomeKind | str",
    *,
    version: int | None,
    trace_id: str | None,
    session: str | None,
    cohort: str | None,
    wrong_skill: bool,
    reason: str | None,
    origin: str = "feedback",
) -> Skill:
    """``SkillLibrary.feedback``: record one outcome of ``name``; see its docstring."""
    if not isinstance(succeeded, (bool, str)):
        raise TypeError(f"succeeded must be a bool or an OutcomeKind, got {type(succeeded).__name__}")
    if not isinstance(wrong_skill, bool):
        raise TypeError(f"wrong_skill must be a bool, got {type(wrong_skill).__name__}")
    kind = OutcomeKind.WRONG_SKILL if wrong_skill else OutcomeKind.of(succeeded)
    reason = _one_line(reason) if reason else None
    if kind is OutcomeKind.WRONG_SKILL and reason is None:
        reason = "the agent fetched the wrong workflow (counted against retrieval)"
    if version is None and (session is not None or cohort is not None):
        from skill_library.governance import canary

        version = canary.session_version(library, name, session=session, cohort=cohort)
    if version is None and trace_id is None and library.context.store.get(name).kind == "instruction":
        library.procedures.record_outcome(name, kind, reason=reason)
        return library.context.store.get(name)
    if kind is OutcomeKind.WRONG_SKILL and trace_id is not None:
        earlier = library.context.store.trace_outcome(trace_id)
        if earlier is not None and earlier["kind"] in ("success", "failure") and _run_of(library, trace_id, name):
            # the run's own verdict came from the wrong task: it moves to retrieval's count
            return library.context.store.reclassify_outcome(trace_id, name, kind, reason)
    skill = library.context.store.record_outcome(name, kind is OutcomeKind.SUCCESS, version=version, trace_id=trace_id,
                                         kind=kind, reason=reason, origin=origin)
    if kind is OutcomeKind.FAILURE:
        skill = check_quarantine(library, skill)
    after_outcome(library, name)
    return skill


def check_quarantine(library: "Governed", skill: Skill) -> Skill:
    """After a failure of ``skill``: quarantine its active version when its recent outcomes
    break the rule (skill_library.patterns.reliability), as the system actor, audited; the
    skill as it now is (unchanged when the rule holds or another process moved it first)."""
    from skill_library.errors import LifecycleError
    from skill_library.governance import lifecycle
    from skill_library.patterns.reliability import quarantine_problem, record_event

    current = library.context.store.get(skill.name)
    problem = quarantine_problem(library.context.store, current) if current.version == skill.version else None
    if problem is None:
        return skill
    try:
        quarantined = lifecycle.library_transition(
            library, skill.name, current.version, "quarantined",
            actor=library.actors.resolve("system"), reason=problem,
        )
    except LifecycleError:  # another process moved it first
        return library.context.store.get(skill.name, skill.version)
    record_event(library.context.store, quarantined, "quarantined", problem, None)
    return quarantined


def after_outcome(library: "Canaried", name: str) -> None:
    """After an outcome of ``name``: test its canary, if it has one (may roll it back)."""
    from skill_library.governance import canary

    if name in canary.running(library):
        canary.after_outcome(library, name)


def lift_quarantine(library: "Governed", name: str, *, actor: "Actor | str | None" = None) -> Skill:
    """``SkillLibrary.lift_quarantine``: an approver lifts the quarantine of ``name``."""
    return _lift(library, name, library.actors.caller(actor), "lifted by an approver")


def reverify(library: "Reverifying", name: str, args: Mapping[str, Any] | None,
             tools: Mapping[str, Callable[..., Any]] | None, *, verifier: Callable[[SkillRun], bool],
             actor: "Actor | str | None" = None, **run_options: Any) -> SkillRun:
    """``SkillLibrary.reverify``: run a quarantined skill once under ``verifier``; a pass
    lifts the quarantine (as ``actor``, default the system actor)."""
    skill = library.context.store.get(name)
    if skill.status != "quarantined":
        raise SkillLibraryError(f"skill {name!r} is {skill.status}, not quarantined")
    run = library.run(name, args, tools, verifier=verifier, _allow_quarantined=True, **run_options)
    outcome = run.trace.outcome
    if outcome is not None and outcome.success:
        who = library.actors.caller(actor) if actor is not None else library.actors.resolve("system")
        _lift(library, name, who, f"a re-verification passed (trace {run.trace.id})")
    return run


def _lift(library: "Ruled", name: str, actor: "Actor", reason: str) -> Skill:
    from skill_library.governance import lifecycle
    from skill_library.patterns.reliability import record_event

    skill = library.context.store.get(name)
    if skill.status != "quarantined":
        raise SkillLibraryError(f"skill {name!r} is {skill.status}, not quarantined")
    lifted = lifecycle.library_transition(library, name, skill.version, "active", actor=actor, reason=reason)
    record_event(library.context.store, lifted, "lifted", reason, None if actor.kind == "system" else actor.id)
    return lifted


def _run_of(library: "Tenant", trace_id: str, name: str) -> int | None:
    """The version whose recorded run trace ``trace_id`` is (None: no run of ``name``)."""
    try:
        trace = library.context.store.get_trace(trace_id)
    except KeyError:
        return None
    match = re.fullmatch(rf"skill:{re.escape(name)}@(\d+)", trace.source)
    return int(match.group(1)) if match else None


def record_external(
    library: "Recording",
    name: str,
    succeeded: "bool | OutcomeKind | str | None",
    *,
    trace_id: str | None = None,
    session: str | None = None,
    version: int | None = None,
    wrong_skill: bool = False,
    reason: str | None = None,
) -> Skill:
    """An outcome reported from outside the process (MCP ``record_outcome``, HTTP).

    It must name the run it reports on (``trace_id``, as ``run_skill`` returned it) or a
    ``session`` the library gave a version of ``name`` to (``fetch``/``run`` with that
    session). It credits only that version (an explicit ``version`` must be it), never one
    that was not released (draft, evaluated, approved, rejected), and a run takes one
    outcome: a second report on the same run is refused. Outcomes named by a session alone
    count in reliability but not toward a quarantine (which counts only outcomes of
    recorded runs). Refusals are :class:`SkillLibraryError` with one line saying what to do.
    """
    library.context.store.get(name)  # an unknown name: "no skill named ..."
    if trace_id is None and session is None:
        raise SkillLibraryError(
            f"an outcome of {name!r} from outside must name the run it reports on (trace_id from "
            "run_skill) or the session that fetched or ran it"
        )
    if trace_id is not None:
        ran = _run_of(library, trace_id, name)
        if ran is None:
            raise SkillLibraryError(
                f"trace {trace_id!r} is no recorded run of {name!r}; report on a trace_id run_skill returned"
            )
        if version is not None and version != ran:
            raise SkillLibraryError(f"trace {trace_id!r} ran v{ran} of {name!r}, not v{version}")
        earlier = library.context.store.trace_outcome(trace_id)
        if earlier is not None and (not wrong_skill or earlier["kind"] == OutcomeKind.WRONG_SKILL.value):
            raise SkillLibraryError(f"the run {trace_id!r} of {name!r} already has its outcome; one per run")
        credited = ran
    else:
        # the versions fetch/run gave each session (governance.canary.remember)
        given = library.context.routes.sessions.get((str(session), name))
        if given is None:
            raise SkillLibraryError(
                f"session {session!r} was given no version of {name!r}; fetch or run it with that session first"
            )
        if version is not None and version != given:
            raise SkillLibraryError(f"session {session!r} was given v{given} of {name!r}, not v{version}")
        credited = given
    skill = library.context.store.get(name, credited)
    if skill.status not in RELEASED_STATUSES:
        raise SkillLibraryError(
            f"v{credited} of {name!r} is {skill.status} (never released): it takes no outcomes"
        )
    origin = "external" if trace_id is not None else "external_session"
    kind: "bool | OutcomeKind | str" = False if succeeded is None else succeeded
    return feedback(library, name, kind, version=credited, trace_id=trace_id, session=None, cohort=None,
                    wrong_skill=wrong_skill, reason=reason, origin=origin)


def retrieval_misses(library: "Tenant", name: str) -> int:
    """How many times ``name`` (any version) was reported fetched for the wrong task."""
    return sum(library.context.store.outcome_counts(name, v.version)[OutcomeKind.WRONG_SKILL.value]
               for v in library.context.store.history(name))
