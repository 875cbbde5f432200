"""Bounded host work (issue 23, item 2): a named cap on calls per trace, refused with the
reason before any planning; loop planning near-linear in the calls (the calls are indexed
by value and by list once, not rescanned per position)."""

from __future__ import annotations

import gc
import time

from skill_library.errors import GeneralizationError
from skill_library.induction import check_trace
from skill_library.induction.dataflow import MAX_TRACE_CALLS, DataflowGeneralizer
from skill_library.models import Outcome, ToolCall, Trace

OK = Outcome(success=True, verifier="log-check")


def same_tool_trace(n: int) -> Trace:
    """``n`` calls of one tool that no list explains (the review's cubic case), results
    holding lists of several lengths and free text."""
    return Trace(task="ping the server", outcome=OK, calls=[
        ToolCall(name="ping", arguments={"seq": i, "tag": f"t{i}"},
                 result={"items": list(range(i % 7 + 2)), "note": f"pong number {i} done"})
        for i in range(n)])


def planning_seconds(n: int) -> float:
    """The best of three plannings of ``n`` calls, in CPU seconds, without the garbage
    collector (whose passes grow with the whole test session's heap, not with the trace)."""
    trace = same_tool_trace(n)
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            start = time.process_time()
            DataflowGeneralizer().generalize(trace)
            times.append(time.process_time() - start)
    finally:
        gc.enable()
    return min(times)


def test_planning_grows_near_linearly_in_the_calls():
    planning_seconds(50)  # warm up imports and regex caches
    small, large = planning_seconds(400), planning_seconds(1600)
    # quadratic growth would be 16x, the reviewed cubic 64x
    assert large / max(small, 1e-3) < 9, (small, large)
    assert large < 10


def test_a_loop_is_still_found_in_a_long_trace():
    items = [{"id": f"x{i}"} for i in range(1500)]
    trace = Trace(task="touch every record", outcome=OK, calls=[
        ToolCall(name="list_all", result=items),
        *[ToolCall(name="touch", arguments={"id": f"x{i}"}, result="ok") for i in range(1500)]])
    code = DataflowGeneralizer().generalize(trace).code
    assert "for item in r1:" in code and "touch(id=item['id'])" in code


def test_twenty_thousand_calls_are_refused_at_once_with_the_cap_named(tmp_path, embedder):
    from skill_library import SkillLibrary

    start = time.process_time()
    trace = same_tool_trace(20_000)
    reasons = check_trace(trace)
    assert reasons == [f"trace has 20000 calls, more than MAX_TRACE_CALLS={MAX_TRACE_CALLS}: refused "
                       "before planning (split it into traces of one task each)"]
    try:
        DataflowGeneralizer().generalize(trace)
    except GeneralizationError as exc:
        assert "MAX_TRACE_CALLS" in str(exc)
    else:
        raise AssertionError("the generalizer planned a trace above the cap")
    with SkillLibrary(tmp_path / "lib", embedder=embedder) as library:
        result = library.learn(trace)
    assert result.status == "rejected" and "MAX_TRACE_CALLS" in result.reasons[0]
    assert time.process_time() - start < 2


def test_a_24_mb_script_is_refused_before_parsing_in_under_a_second():
    import resource

    from skill_library.models import Skill
    from skill_library.signature import parse_source

    body = "    x = [" + ", ".join(["1"] * 2000) + "]\n"
    code = "def huge(n: int) -> int:\n" + body * (24 * 1024 * 1024 // len(body)) + "    return n\n"
    assert len(code) > 24_000_000
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    start = time.process_time()
    for parse in (parse_source, lambda c: Skill.from_function(c, when="a huge skill")):
        try:
            parse(code)
        except ValueError as exc:
            assert "more than MAX_SOURCE_BYTES" in str(exc)
        else:
            raise AssertionError("a 24 MB source was parsed")
    assert time.process_time() - start < 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 100 * 1024
