"""The learn pipeline: check the trace, generalize it, verify the candidate.

Rules enforced here (whatever the generalizer):

1. only a verified success (``outcome.success`` and a named ``outcome.verifier``) with at
   least one successful call is learned; failed calls are never part of a skill;
2. a candidate is accepted only after it passes the static checks of
   :mod:`~skill_library.induction.validation` and is re-executed in the sandbox and
   reproduces the trace (:func:`~skill_library.induction.verify.verify_candidate`);
3. tool results are untrusted: the static checks refuse text copied from them.
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from skill_library.errors import GeneralizationError, TraceError
from skill_library.induction.candidate import Candidate, Generalizer
from skill_library.induction.validation import complete_candidate, validate_candidate
from skill_library.induction.verify import LiveVerifier, replay_verify, run_live_verifier
from skill_library.models import Skill, Trace, VerificationReport

if TYPE_CHECKING:  # pragma: no cover
    from sandbox import Limits, Sandbox

LearnOutcome = tuple[Candidate | None, VerificationReport | None, list[str]]


#: characters no store or embedding model takes: NUL, and surrogates without a pair
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def bad_text(trace: Trace) -> str | None:
    """Why ``trace`` holds text that cannot be stored (None: it holds none): a NUL or a
    lone surrogate anywhere in its task, params, calls, result or outcome."""
    def walk(value: Any, where: str) -> str | None:
        if isinstance(value, str):
            found = _BAD_TEXT.search(value)
            if found:
                what = "a NUL character" if found.group(0) == "\x00" else "a lone surrogate"
                return (f"trace is malformed: {where} holds {what} "
                        f"({found.group(0).encode('unicode_escape', 'backslashreplace').decode()}), "
                        "which cannot be stored")
            return None
        if isinstance(value, dict):
            for key, item in value.items():
                problem = walk(str(key), f"{where} (a key)") or walk(item, f"{where}[{key!r}]")
                if problem:
                    return problem
        elif isinstance(value, (list, tuple)):
            for n, item in enumerate(value):
                problem = walk(item, f"{where}[{n}]")
                if problem:
                    return problem
        return None

    parts: list[tuple[str, Any]] = [("task", trace.task), ("params", trace.params),
                                    ("result", trace.result), ("source", trace.source)]
    for n, call in enumerate(trace.calls):
        parts += [(f"calls[{n}].name", call.name), (f"calls[{n}].arguments", call.arguments),
                  (f"calls[{n}].result", call.result), (f"calls[{n}].error", call.error)]
    if trace.outcome is not None:
        parts += [("outcome.verifier", trace.outcome.verifier),
                  ("outcome.evidence", trace.outcome.evidence)]
    for where, value in parts:
        try:
            problem = walk(value, where)
        except RecursionError:
            return f"trace is malformed: {where} is nested too deeply to be read"
        if problem:
            return problem
    return None


def check_trace(trace: Trace) -> list[str]:
    """Why ``trace`` may not be learned; an empty list means it may."""
    from skill_library.induction.dataflow import calls_problem

    too_many = calls_problem(trace)
    if too_many:  # before anything reads the calls
        return [too_many]
    bad = bad_text(trace)
    if bad:
        return [bad]
    reasons: list[str] = []
    outcome = trace.outcome
    if outcome is None:
        reasons.append("trace has no outcome: only verified successes are learned")
    else:
        if not outcome.success:
            reasons.append(
                "trace outcome is not a verified success (outcome.success=False)"
            )
        if not (outcome.verifier or "").strip():
            reasons.append(
                "trace has no verifier named (outcome.verifier is empty): only successes "
                "judged by a named verifier are learned"
            )
    ok_calls = [c for c in trace.calls if c.ok]
    if not trace.calls:
        reasons.append("trace has no tool calls")
    elif not ok_calls:
        reasons.append(
            f"trace has no successful tool calls (all {len(trace.calls)} call(s) returned "
            "errors)"
        )
    for index, call in enumerate(trace.calls, start=1):
        if not call.ok:
            continue
        if not call.name.isidentifier() or keyword.iskeyword(call.name):
            reasons.append(
                f"call {index} ({call.name!r}) cannot be called from skill code: its name is "
                "not a Python identifier"
            )
        elif call.name.startswith("_"):
            reasons.append(
                f"call {index} ({call.name!r}) cannot be called from skill code: names "
                "starting with '_' are refused by the sandbox"
            )
    return reasons


def coerce_trace(trace: Trace | Mapping[str, Any]) -> tuple[Trace | None, list[str]]:
    """A :class:`Trace` from a trace, a dict of trace fields, or an OpenAI transcript.

    A mapping with ``messages`` is read with :meth:`Trace.from_openai_messages` (it also
    needs ``task`` and ``outcome``; ``params`` is optional). Malformed input gives
    ``(None, [reason])`` instead of raising.
    """
    if isinstance(trace, Trace):
        return trace, []
    if not isinstance(trace, Mapping):
        return None, [f"trace is malformed: expected a Trace or a mapping, got "
                      f"{type(trace).__name__}"]
    try:
        if "messages" in trace:
            if not trace.get("task"):
                return None, ["trace is malformed: an OpenAI transcript needs a task"]
            return Trace.from_openai_messages(
                trace["messages"],
                task=trace["task"],
                outcome=trace.get("outcome"),
                params=trace.get("params"),
                source=trace.get("source", "openai"),
            ), []
        return Trace.model_validate(dict(trace)), []
    except TraceError as exc:
        return None, [f"trace is malformed: {exc}"]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'trace'}: {e['msg']}" for e in exc.errors()
        )
        return None, [f"trace is malformed: {problems}"]


class _CachedVerify:
    """Replay verification memoized by candidate fingerprint: one sandbox run per version."""

    def __init__(
        self,
        trace: Trace,
        sandbox: "Sandbox",
        related: Sequence[Skill],
        limits: "Limits | None" = None,
        read_only: frozenset[str] = frozenset(),
    ) -> None:
        self.trace, self.sandbox, self.related = trace, sandbox, related
        self.limits = limits
        self.read_only = read_only
        self.reports: dict[str, VerificationReport] = {}
        self.runs = 0

    def __call__(self, candidate: Candidate) -> VerificationReport:
        # replay reads the calls from the code: key on the completed form, so a candidate
        # and its completed copy share one verdict
        key = complete_candidate(candidate, self.trace, self.related).fingerprint()
        if key not in self.reports:
            self.runs += 1
            self.reports[key] = replay_verify(
                candidate, self.trace, self.sandbox, related=self.related, limits=self.limits,
                read_only=self.read_only,
            )
        return self.reports[key]


def generalize(generalizer: Generalizer, trace: Trace, **options: Any) -> Candidate:
    """``generalizer.generalize(trace, **options)``; ``read_only`` and ``tool_docs`` only for
    generalizers that take them (the protocol added them later)."""
    accepts = inspect.signature(generalizer.generalize).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepts.values()):
        for optional in ("read_only", "tool_docs"):
            if optional not in accepts:
                options.pop(optional, None)
    return generalizer.generalize(trace, **options)


def learn_from_trace(
    trace: Trace | Mapping[str, Any],
    *,
    generalizer: Generalizer,
    sandbox: "Sandbox",
    related: Sequence[Skill] = (),
    live_verifier: LiveVerifier | None = None,
    limits: "Limits | None" = None,
    read_only: frozenset[str] = frozenset(),
    tool_docs: Mapping[str, Any] | None = None,
) -> LearnOutcome:
    """Turn one trace into a verified candidate, or say why not.

    Returns ``(candidate, report, reasons)``: non-empty ``reasons`` means rejected (the
    candidate and report, when there is one, show what was tried). The generalizer gets a
    ``verify`` callback; the replay verdict is cached by candidate content, so a candidate
    the generalizer already verified is not replayed again. ``live_verifier`` runs once,
    after the replay passes. :class:`~skill_library.errors.LLMError` (the model could not
    be reached) propagates: a configured model that is down is an error for the caller to
    see (``SkillLibrary.learn`` raises it), not a reason to silently learn differently.
    """
    checked, reasons = coerce_trace(trace)
    if checked is None:
        return None, None, reasons
    reasons = check_trace(checked)
    if reasons:
        return None, None, reasons
    verify = _CachedVerify(checked, sandbox, related, limits, read_only)
    try:
        candidate = generalize(generalizer, checked, related=related, verify=verify,
                               read_only=read_only, tool_docs=tool_docs or {})
    except GeneralizationError as exc:
        return None, None, [f"{generalizer.name} generalizer: {exc}"]
    problems = validate_candidate(candidate, checked, related)
    if problems:
        return candidate, None, problems
    candidate = complete_candidate(candidate, checked, related)
    report = verify(candidate)
    if report.passed and live_verifier is not None:
        report = run_live_verifier(candidate, report, live_verifier)
    if not report.passed:
        return candidate, report, [report.message]
    return candidate, report, []
