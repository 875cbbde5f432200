"""Revision across traces: one candidate that replays the example traces of a workflow.

A skill learned from one trace is a guess about the workflow; later traces of the same
workflow test it. When one does not reproduce, the learner builds candidates from the
examples together and keeps the first that replays a bounded, diverse *sample* of them
(each with its own bindings; :func:`sample`: the new trace, then traces with tool paths,
lengths and parameter shapes not yet covered, then the newest; at most
:data:`skill_library.settings.REVISION_SAMPLE`):

* the candidate of each example trace on its own, the trace with the most calls first (a
  list that was longer in one trace became a loop there, and the loop replays the shorter
  traces too: a one-item ``r[0]`` skill is revised into a loop);
* for the offline generalizer, the joint candidate of
  :meth:`~skill_library.induction.dataflow.DataflowGeneralizer.generalize_many`, in which a
  constant that differs between traces becomes the parameter or the simple function of
  parameters and earlier results (sum, difference, product, ratio, half, count) that
  explains it in every trace.

Every example trace stays the new version's evidence, sampled or not. A revision that breaks
an unsampled trace is found by the full check, :func:`verify_all`
(``SkillLibrary.verify_all()``), which replays every example trace of every active learned
skill without taking the write lock: the learning path stays bounded, the check runs when
the caller chooses (after a bulk ``learn_many``, in a nightly job).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library import settings
from skill_library.errors import GeneralizationError
from skill_library.induction.candidate import Candidate, Generalizer
from skill_library.induction.learner import generalize
from skill_library.induction.validation import complete_candidate, validate_candidate
from skill_library.induction.verify import replay_verify
from skill_library.models import Skill, Trace, VerificationReport

if TYPE_CHECKING:  # pragma: no cover
    from sandbox import Sandbox
    from skill_library.protocols import Verifying

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


def _shape(value: Any) -> str:
    """A value's shape for diversity: its type, and for a list its length."""
    if isinstance(value, (list, tuple)):
        return f"list[{len(value)}]"
    return type(value).__name__


def features(trace: Trace) -> frozenset[tuple[Any, ...]]:
    """What makes ``trace`` a different test of a workflow's code: its path (the successful
    calls' tools in order), its length, and its parameters' names and shapes."""
    path = tuple(c.name for c in trace.calls if c.ok)
    shapes = tuple(sorted((k, _shape(v)) for k, v in trace.params.items()))
    return frozenset({("path", path), ("length", len(path)), ("shapes", shapes),
                      *(("param", k, shape) for k, shape in shapes)})


def sample(traces: Sequence[Trace], size: int | None = None) -> list[Trace]:
    """At most ``size`` (default :data:`settings.REVISION_SAMPLE`) of ``traces`` (oldest
    first, the new one last), in their order: the last always, then greedily the trace
    that adds the most :func:`features` not yet covered (the newest among equals), then the
    newest of the rest. Deterministic: the same traces give the same sample."""
    size = settings.REVISION_SAMPLE if size is None else size
    if size < 1:
        raise ValueError(f"REVISION_SAMPLE must be at least 1 (the new trace), got {size}")
    if len(traces) <= size:
        return list(traces)
    seen = [features(t) for t in traces]
    chosen = [len(traces) - 1]
    covered = set(seen[-1])
    while len(chosen) < size:
        rest = [n for n in range(len(traces)) if n not in chosen]
        best = max(rest, key=lambda n: (len(seen[n] - covered), n))
        chosen.append(best)
        covered |= seen[best]
    return [traces[n] for n in sorted(chosen)]


def replays_all(
    candidate: Candidate, traces: Sequence[Trace], sandbox: "Sandbox", related: Sequence[Skill],
    read_only: frozenset[str] = frozenset(),
) -> VerificationReport | None:
    """A passing report when ``candidate`` replays every one of ``traces`` with its
    bindings, else None."""
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


def _sampled(report: VerificationReport, replayed: int, total: int) -> VerificationReport:
    if replayed == total:
        return report
    return report.model_copy(update={"message": (
        f"replayed {replayed} of the workflow's {total} example traces (a diverse sample, "
        "settings.REVISION_SAMPLE; verify_all replays them all)")})


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
    """The first candidate that replays the :func:`sample` of ``traces`` (oldest first, the
    new trace last; see the module docstring), or None.

    ``extra`` candidates (e.g. the one just learned from the newest trace) are tried first.
    """
    tried: set[str] = set()
    total = len(traces)
    traces = sample(traces)

    def attempt(candidate: Candidate, trace: Trace) -> tuple[Candidate, VerificationReport] | None:
        if candidate.code in tried:
            return None
        tried.add(candidate.code)
        if validate_candidate(candidate, trace, related):
            return None
        candidate = complete_candidate(candidate, trace, related)
        report = replays_all(candidate, traces, sandbox, related, read_only)
        return (candidate, _sampled(report, len(traces), total)) if report is not None else None

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



# -- the full check, off the write path ------------------------------------------------------------


@dataclass(frozen=True)
class SkillCheck:
    """What :func:`verify_all` found for one active learned skill.

    ``traces``: its example traces; ``broken``: ``(trace_id, why)`` of each one its current
    version does not reproduce (its bindings missing, or the replay diverging); ``missing``:
    example trace ids whose trace is no longer stored (forgotten)."""

    name: str
    version: int
    traces: int
    broken: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every stored example trace replays."""
        return not self.broken


def verify_all(lib: "Verifying", names: Sequence[str] | None = None) -> list[SkillCheck]:
    """Replay every stored example trace of every active learned code skill (or of
    ``names``) with the current version, in the sandbox; one :class:`SkillCheck` per skill,
    by name. Reads only: no write lock is taken and nothing is changed."""
    from skill_library.errors import SkillNotFoundError, TraceNotFoundError
    from skill_library.induction.admission import as_candidate

    if names is None:
        skills = [s for s in lib.context.store.list() if s.status == "active"]
    else:
        found = lib.context.store.get_many_active(list(names))
        unknown = [n for n in names if n not in found]
        if unknown:
            raise SkillNotFoundError(unknown[0])
        skills = [found[n] for n in names]
    skills = [s for s in skills if s.kind == "code" and s.code]
    examples = lib.context.store.examples([s.name for s in skills])
    checks = []
    for skill in sorted(skills, key=lambda s: s.name):
        ids = list(dict.fromkeys([*skill.provenance.trace_ids, *(e.trace_id for e in examples[skill.name])]))
        if not ids:
            continue  # hand-written: nothing to replay
        related = []
        for name in skill.depends_on:
            try:
                related.append(lib.context.store.get(name))
            except SkillNotFoundError:
                pass
        broken: list[tuple[str, str]] = []
        missing: list[str] = []
        base = as_candidate(skill, {})
        for trace_id in ids:
            try:
                trace = lib.context.store.get_trace(trace_id)
            except (KeyError, TraceNotFoundError):
                missing.append(trace_id)
                continue
            args = trace_bindings(base, trace)
            if args is None:
                broken.append((trace_id, "its parameters cannot be bound from the trace"))
                continue
            report = replay_verify(base.model_copy(update={"example_args": args}), trace, lib.sandbox,
                                   related=related, read_only=lib.read_only_tools)
            if not report.passed:
                broken.append((trace_id, report.message))
        checks.append(SkillCheck(skill.name, skill.version, len(ids) - len(missing), broken, missing))
    return checks
