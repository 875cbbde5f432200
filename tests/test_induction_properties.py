"""Property: whatever the dataflow, a candidate the DataflowGeneralizer returns replays its
trace exactly in the real sandbox (or generalization is refused for a stated reason)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import Limits, Sandbox, check_source
from skill_library.errors import GeneralizationError
from skill_library.induction import DataflowGeneralizer, verify_candidate
from skill_library.models import Outcome, ToolCall, Trace


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(limits=Limits(cpu_seconds=5, wall_seconds=10, memory_mb=256), workers=1) as sb:
        yield sb


words = st.text(alphabet="abcxyz-", min_size=1, max_size=6)
scalars = st.one_of(words, st.integers(-50, 50))
results = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["id", "name", "items", "n"]),
                                            inner, max_size=3)),
    max_leaves=6,
)


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)] + [value]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)] + [value]
    return [value]


def value_from(draw, pool: list[Any]) -> Any:
    """A constant, a value from ``pool`` (params, earlier results), or text around one."""
    choice = draw(st.integers(0, 3)) if pool else 0
    if choice == 0:
        return draw(scalars)
    picked = draw(st.sampled_from(pool))
    if choice == 3 and isinstance(picked, str) and len(picked) >= 3:
        return f"re: {picked}!"  # a string embedding the value
    return picked


@st.composite
def traces(draw) -> Trace:
    params = draw(st.dictionaries(st.sampled_from(["city", "count", "label"]), scalars,
                                  max_size=2))
    calls: list[ToolCall] = []
    for _ in range(draw(st.integers(1, 5))):
        pool = [x for c in calls if c.ok for x in leaves(c.result)] + list(params.values())
        lists = [x for x in pool if isinstance(x, list) and len(x) >= 2]
        if lists and draw(st.booleans()):  # one call per item of an earlier list
            items = draw(st.sampled_from(lists))
            name = draw(st.sampled_from(["lookup", "fetch", "store"]))
            fixed = draw(scalars)
            for item in items:
                calls.append(ToolCall(name=name, arguments={"a": item, "b": fixed},
                                      result=draw(results)))
            continue
        args = {}
        for name in draw(st.lists(st.sampled_from(["a", "b", "q"]), max_size=3, unique=True)):
            args[name] = value_from(draw, pool)
        failed = draw(st.integers(0, 5)) == 0
        calls.append(ToolCall(name=draw(st.sampled_from(["lookup", "fetch", "store"])),
                              arguments=args, result=None if failed else draw(results),
                              error="boom" if failed else None))
    ok = [c for c in calls if c.ok]
    final = draw(st.sampled_from([None] + [c.result for c in ok])) if ok else None
    task = "do the thing " + " ".join(str(v) for v in params.values())
    return Trace(task=task, params=params, calls=calls, result=final,
                 outcome=Outcome(success=True, verifier="property"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces())
def test_a_generalized_trace_always_replays(sandbox, trace):
    if not any(c.ok for c in trace.calls):
        with pytest.raises(GeneralizationError, match="no successful tool calls"):
            DataflowGeneralizer().generalize(trace)
        return
    try:
        candidate = DataflowGeneralizer().generalize(trace)
    except GeneralizationError as exc:  # a constant copied out of a longer result string
        assert "cannot become a constant" in str(exc)
        return
    check_source(candidate.code)
    report = verify_candidate(candidate, trace, sandbox)
    assert report.passed, (report.message, candidate.code)
