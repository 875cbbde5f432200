"""Replay verification: re-execute a candidate in the sandbox against its own trace.

The candidate runs with the trace's parameter values. Every tool, and every skill the
trace invoked as a whole (``kind == "skill"``), is a replay stub that answers a call with
the recorded result of the matching successful call (same name, same arguments) and
raises for a call the trace never made. The candidate passes when it makes exactly the
trace's successful calls, in order, with equal arguments, and returns the trace's final
result when one was recorded. Related skills that the candidate calls but the trace did not
invoke as a whole are composed into the run, so their own tool calls are replayed too.
"""

from __future__ import annotations

import copy
import inspect
import keyword
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from skill_library.induction.candidate import Candidate
from skill_library.induction.validation import complete_candidate, derived_parameters_safe
from skill_library.models import Skill, ToolCall, Trace, VerificationReport

if TYPE_CHECKING:  # pragma: no cover
    from sandbox import Limits, Sandbox

LiveVerifier = Callable[[Candidate], "bool | VerificationReport"]


class ReplayMismatch(Exception):
    """Raised by a replay stub for a call the trace does not contain."""


def same_value(a: Any, b: Any) -> bool:
    """JSON-style equality: tuples equal lists, 2 equals 2.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return set(map(str, a)) == set(map(str, b)) and all(
            same_value(v, _lookup(b, k)) for k, v in a.items()
        )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _lookup(mapping: dict[Any, Any], key: Any) -> Any:
    if key in mapping:
        return mapping[key]
    return next(v for k, v in mapping.items() if str(k) == str(key))


def format_call(name: str, arguments: dict[str, Any], limit: int = 60) -> str:
    """``craft(item='planks', count=4)``, long values shortened."""

    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."

    return f"{name}(" + ", ".join(f"{k}={short(v)}" for k, v in arguments.items()) + ")"


class _Replay:
    """Replay stubs for one run, and the calls they received."""

    def __init__(self, expected: list[ToolCall], read_only: frozenset[str] = frozenset()) -> None:
        self.expected = expected
        self.read_only = read_only
        self.used = [False] * len(expected)
        self.actual: list[ToolCall] = []
        self.order: dict[str, list[str]] = {}  # argument order per name, for positional calls
        for call in expected:
            names = self.order.setdefault(call.name, [])
            names.extend(a for a in call.arguments if a not in names)

    def stub(self, name: str, kind: str) -> Callable[..., Any]:
        order = self.order.get(name, [])

        def replay(*args: Any, **kwargs: Any) -> Any:
            arguments = dict(zip(order, args))
            if len(args) > len(order):
                arguments.update({f"arg{n}": v for n, v in enumerate(args) if n >= len(order)})
            arguments.update(kwargs)
            self.actual.append(ToolCall(name=name, arguments=arguments, kind=kind))  # type: ignore[arg-type]
            for index, call in enumerate(self.expected):
                if (
                    not self.used[index]
                    and call.name == name
                    and same_value(call.arguments, arguments)
                ):
                    self.used[index] = True
                    return copy.deepcopy(call.result)
            if name in self.read_only:
                # a read the trace did not make as often: answer with what the same read
                # returned in the trace, or an empty mapping when it never made one
                same = [c for c in self.expected if c.name == name
                        and same_value(c.arguments, arguments)]
                if same:
                    return copy.deepcopy(same[-1].result)
                if not any(c.name == name for c in self.expected):
                    return {}
            raise ReplayMismatch(
                f"unexpected call {format_call(name, arguments)}: the trace has no such call"
            )

        replay.__name__ = name
        replay.__doc__ = f"Replay stub for {name}: answers with the recorded result."
        # a signature lets the sandbox name positional arguments in the recorded order;
        # defaults and **kwargs let every call through to the stub, which judges it
        if all(a.isidentifier() and not keyword.iskeyword(a) for a in order):
            params = [
                inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
                for a in order
            ]
            extra = "more_arguments"
            while extra in order:
                extra += "_"
            params.append(inspect.Parameter(extra, inspect.Parameter.VAR_KEYWORD))
            replay.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return replay


def _composed_sources(candidate: Candidate, trace: Trace, related: Sequence[Skill]) -> list[str]:
    """Sources of related skills the candidate (transitively) calls but the trace did not
    invoke as a whole; those run for real so their tool calls are replayed too."""
    stubbed = {c.name for c in trace.calls if c.kind == "skill"}
    by_name = {s.name: s for s in related if s.kind == "code" and s.code}
    sources: list[str] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        if name in seen or name in stubbed or name not in by_name:
            return
        seen.add(name)
        skill = by_name[name]
        for dep in skill.depends_on:
            add(dep)
        sources.append(skill.code or "")

    for dep in candidate.depends_on:
        add(dep)
    return sources


def _arguments(candidate: Candidate, trace: Trace) -> dict[str, Any]:
    schema = derived_parameters_safe(candidate)
    names = list((schema or {}).get("properties", {})) or list(candidate.example_args)
    args: dict[str, Any] = {}
    for name in names:
        if name in candidate.example_args:
            args[name] = candidate.example_args[name]
        elif name in trace.params:
            args[name] = trace.params[name]
    return args


def _error_text(error: Any) -> str:
    if error is None:
        return "unknown error"
    kind = getattr(error, "type", None) or type(error).__name__
    message = getattr(error, "message", None) or str(error)
    line = getattr(error, "line", None)
    return f"{kind}{f' at line {line}' if line else ''}: {message}"


def replay_verify(
    candidate: Candidate,
    trace: Trace,
    sandbox: "Sandbox",
    *,
    related: Sequence[Skill] = (),
    read_only: frozenset[str] = frozenset(),
    limits: "Limits | None" = None,
) -> VerificationReport:
    """Run ``candidate`` against replay stubs of ``trace`` and compare (no live check).

    The tools and skills the candidate calls are read from its code, not its declaration;
    ``limits`` are the sandbox limits of the replay (default: the sandbox's own).
    Calls of ``read_only`` tools are optional: the candidate may make them more or less
    often than the trace (a look before acting, or no repeat of an unused read); only the
    other calls are compared.
    """
    candidate = complete_candidate(candidate, trace, related)
    recorded = [c for c in trace.calls if c.ok]
    replay = _Replay(recorded, frozenset(read_only))
    expected = [c for c in recorded if c.name not in read_only]
    stubs: dict[str, Callable[..., Any]] = {}
    composed = _composed_sources(candidate, trace, related)
    composed_names = {s.name for s in related if s.code in composed}
    kinds = {c.name: c.kind for c in trace.calls}
    for name in [*kinds, *candidate.tools, *candidate.depends_on]:
        if name not in stubs and name not in composed_names:
            stubs[name] = replay.stub(name, kinds.get(name, "tool"))
    args = _arguments(candidate, trace)
    try:
        # the sandbox names positional arguments only by a schema: the recorded order
        schemas = {
            name: {"type": "object", "additionalProperties": True,
                   "properties": {a: {} for a in replay.order.get(name, [])}}
            for name in stubs
        }
        run = sandbox.run(
            [*composed, candidate.code], entry=candidate.name, args=args, tools=stubs,
            limits=limits,
            tool_schemas=schemas,
        )
    except Exception as exc:  # the sandbox itself failed: not the candidate's verdict alone
        return VerificationReport(
            passed=False,
            message=f"the sandbox could not run the candidate: {type(exc).__name__}: {exc}",
            expected_calls=expected,
            actual_calls=replay.actual,
        )
    # every call the skill made, including those refused before reaching a stub
    actual = [
        ToolCall(name=c.name, arguments=dict(c.arguments), result=c.result, error=c.error,
                 kind=kinds.get(c.name, "tool"), duration_ms=c.duration_ms)
        for c in run.calls
        if c.name not in read_only
    ]
    report = dict(expected_calls=expected, actual_calls=actual, value=_plain(run.value))
    failure = None if run.ok else _error_text(run.error)
    if run.limit:
        failure = f"hit the sandbox's {run.limit} limit" + (f" ({failure})" if failure else "")
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else None
        got = actual[index] if index < len(actual) else None
        if want and got and want.name == got.name and same_value(want.arguments, got.arguments):
            continue
        if want and got:
            detail = (
                f"expected {format_call(want.name, want.arguments)}, "
                f"got {format_call(got.name, got.arguments)}"
            )
        elif want:
            detail = f"expected {format_call(want.name, want.arguments)}, but the skill made no " \
                     "further calls"
            if failure:
                detail += f" (it stopped with {failure})"
        else:
            assert got is not None
            detail = (
                f"the trace has no call {index + 1}, but the skill called "
                f"{format_call(got.name, got.arguments)}"
            )
        return VerificationReport(
            passed=False,
            message=f"replay diverged at call {index + 1}: {detail}",
            first_divergence=index,
            **report,
        )
    if failure:
        return VerificationReport(
            passed=False,
            message=f"the skill made every call of the trace but then failed: {failure}",
            **report,
        )
    if trace.result is not None and not same_value(run.value, trace.result):
        return VerificationReport(
            passed=False,
            message=(
                f"the skill returned {_short(run.value)} but the trace's final result was "
                f"{_short(trace.result)}"
            ),
            **report,
        )
    checked = " and returned the trace's final result" if trace.result is not None else ""
    return VerificationReport(
        passed=True,
        message=f"replay reproduced all {len(expected)} successful call(s) in order{checked}",
        **report,
    )


def run_live_verifier(
    candidate: Candidate, report: VerificationReport, live_verifier: LiveVerifier
) -> VerificationReport:
    """Apply an optional live check after a passing replay."""
    if not report.passed:
        return report
    try:
        verdict = live_verifier(candidate)
    except Exception as exc:
        return report.model_copy(
            update={"passed": False,
                    "message": f"live verifier raised {type(exc).__name__}: {exc}"}
        )
    if isinstance(verdict, VerificationReport):
        if verdict.passed:
            message = report.message + (f"; live verifier: {verdict.message}"
                                        if verdict.message else "; live verifier passed")
            return report.model_copy(update={"message": message})
        return verdict.model_copy(
            update={"message": f"live verifier rejected the candidate: "
                               f"{verdict.message or 'no reason given'}"}
        )
    if verdict:
        return report.model_copy(update={"message": report.message + "; live verifier passed"})
    return report.model_copy(
        update={"passed": False, "message": "live verifier rejected the candidate"}
    )


def verify_candidate(
    candidate: Candidate,
    trace: Trace,
    sandbox: "Sandbox",
    *,
    live_verifier: LiveVerifier | None = None,
    related: Sequence[Skill] = (),
    read_only: frozenset[str] = frozenset(),
) -> VerificationReport:
    """Replay ``candidate`` against ``trace`` in ``sandbox``, then the live verifier if any.

    The report names the first differing call (``first_divergence`` is its 0-based index;
    the message counts calls from 1).
    """
    report = replay_verify(candidate, trace, sandbox, related=related, read_only=read_only)
    if live_verifier is not None:
        report = run_live_verifier(candidate, report, live_verifier)
    return report


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: Any) -> Any:
    """A value safe to keep on a pydantic report (JSON-like, else its repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)
