"""Revision across traces: one candidate that replays every example trace of a workflow.

A skill learned from one trace is a guess about the workflow; later traces of the same
workflow test it. When one does not reproduce, the learner builds candidates from the
examples together and keeps the first that replays *all* of them (each with its own
bindings):

* the candidate of each example trace on its own, the trace with the most calls first (a
  list that was longer in one trace became a loop there, and the loop replays the shorter
  traces too: a one-item ``r[0]`` skill is revised into a loop);
* for the offline generalizer, the joint candidate of
  :meth:`~skill_library.induction.dataflow.DataflowGeneralizer.generalize_many`, in which a
  constant that differs between traces becomes the parameter or the simple function of
  parameters and earlier results (sum, difference, product, ratio, half, count) that
  explains it in every trace.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skill_library.errors import GeneralizationError
from skill_library.induction.candidate import Candidate, Generalizer
from skill_library.induction.learner import generalize
from skill_library.induction.validation import complete_candidate, validate_candidate
from skill_library.induction.verify import replay_verify
from skill_library.models import Skill, Trace, VerificationReport

if TYPE_CHECKING:  # pragma: no cover
    from sandbox import Sandbox

_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def bind_from_when(when: str, task: str) -> dict[str, str] | None:
    """Values for ``when``'s placeholders read from ``task`` written the same way, or None."""
    parts = _PLACEHOLDER_RE.split(when)
    if len(parts) == 1:
        return {}
    pattern = ""
    names: list[str] = []
    for n, part in enumerate(parts):
        if n % 2:
            if part in names:
                pattern += f"(?P={part})"
            else:
                names.append(part)
                pattern += f"(?P<{part}>.+?)"
        else:
            pattern += r"\s*".join(re.escape(w) for w in part.split())
    found = re.fullmatch(pattern, task.strip(), flags=re.IGNORECASE | re.DOTALL)
    return found.groupdict() if found else None


def _coerce(value: Any, like: Any) -> Any:
    if isinstance(value, str) and isinstance(like, (int, float)) and not isinstance(like, bool):
        try:
            return type(like)(value)
        except ValueError:
            return value
    return value


def trace_bindings(candidate: Candidate, trace: Trace) -> dict[str, Any] | None:
    """Arguments of ``candidate`` for ``trace``: its params by name, else read from its task."""
    properties = (candidate.parameters or {}).get("properties", {}) or candidate.example_args
    args: dict[str, Any] = {}
    missing = []
    for name in properties:
        if name in trace.params:
            args[name] = trace.params[name]
        else:
            missing.append(name)
    if missing:
        read = bind_from_when(candidate.when, trace.task) or {}
        for name in missing:
            if name not in read:
                return None
            args[name] = _coerce(read[name], candidate.example_args.get(name))
    return args


def replays_all(
    candidate: Candidate, traces: Sequence[Trace], sandbox: "Sandbox", related: Sequence[Skill],
    read_only: frozenset[str] = frozenset(),
) -> VerificationReport | None:
    """A passing report when ``candidate`` replays every trace with its bindings, else None."""
    report: VerificationReport | None = None
    for trace in traces:
        args = trace_bindings(candidate, trace)
        if args is None:
            return None
        report = replay_verify(
            candidate.model_copy(update={"example_args": args}), trace, sandbox, related=related,
            read_only=read_only,
        )
        if not report.passed:
            return None
    assert report is not None
    count = len(traces)
    return report.model_copy(
        update={"message": f"replayed all {count} example trace(s) of the workflow"}
    )


def revise(
    traces: Sequence[Trace],
    *,
    generalizer: Generalizer,
    sandbox: "Sandbox",
    related: Sequence[Skill],
    extra: Sequence[Candidate] = (),
    read_only: frozenset[str] = frozenset(),
    tool_docs: Mapping[str, Any] | None = None,
) -> tuple[Candidate, VerificationReport] | None:
    """The first candidate that replays all ``traces`` (see the module docstring), or None.

    ``extra`` candidates (e.g. the one just learned from the newest trace) are tried first.
    """
    tried: set[str] = set()

    def attempt(candidate: Candidate, trace: Trace) -> tuple[Candidate, VerificationReport] | None:
        if candidate.code in tried:
            return None
        tried.add(candidate.code)
        if validate_candidate(candidate, trace, related):
            return None
        candidate = complete_candidate(candidate, trace, related)
        report = replays_all(candidate, traces, sandbox, related, read_only)
        return (candidate, report) if report is not None else None

    newest = traces[-1]
    for candidate in extra:
        found = attempt(candidate, newest)
        if found:
            return found
    many = getattr(generalizer, "generalize_many", None)
    if many is not None:
        try:
            accepts = inspect.signature(many).parameters
            options: dict[str, Any] = {"tool_docs": tool_docs or {}} if "tool_docs" in accepts else {}
            joint = many(list(traces), related=related, read_only=read_only, **options)
        except GeneralizationError:
            joint = None
        if joint is not None:
            found = attempt(joint, max(traces, key=lambda t: len(t.calls)))
            if found:
                return found
    if getattr(generalizer, "name", "") == "llm":
        return None  # one model call per example trace is not worth a guess
    for trace in sorted(traces, key=lambda t: -len([c for c in t.calls if c.ok])):
        try:
            candidate = generalize(generalizer, trace, related=related, read_only=read_only,
                                   tool_docs=tool_docs or {})
        except GeneralizationError:
            continue
        found = attempt(candidate, trace)
        if found:
            return found
    return None

