"""Outcomes from outside the process (issue 23): MCP record_outcome must name a run or a
session the library recorded, credits only the version that ran or was given, never an
unreleased one, takes one outcome per run; a quarantine counts only recorded runs."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp")

from desk_tools import CANCEL_CODE, TOOLS  # noqa: E402
from mcp import Client  # noqa: E402

from skill_library.integrations.mcp_server import SkillServer  # noqa: E402
from skill_library.models import Skill  # noqa: E402
from skill_library.patterns.reliability import QUARANTINE_MIN_OUTCOMES  # noqa: E402

NAME = "cancel_every_order"


def _text(result) -> str:
    return result.content[0].text


def calls(desk, steps):
    """Run ``steps(client)`` against an in-memory MCP server of ``desk``; its results."""
    async def main():
        async with Client(SkillServer(desk, TOOLS).server) as client:
            return await steps(client)

    return anyio.run(main)


def record(client, **arguments):
    return client.call_tool("record_outcome", {"name": NAME, "succeeded": False, **arguments})


def test_an_outcome_naming_no_run_or_session_is_refused(desk):
    for _ in range(20):
        desk.feedback(NAME, True)

    async def steps(client):
        return [await record(client) for _ in range(5)] + [await record(client, version=1)]

    results = calls(desk, steps)
    assert all(r.is_error for r in results)
    assert _text(results[0]) == (f"an outcome of {NAME!r} from outside must name the run it reports on "
                                 "(trace_id from run_skill) or the session that fetched or ran it")
    skill = desk.get(NAME)
    assert (skill.status, skill.successes, skill.failures) == ("active", 21, 0)


def test_a_run_takes_one_outcome_so_repeated_reports_cannot_quarantine(desk):
    for _ in range(QUARANTINE_MIN_OUTCOMES + 10):
        desk.feedback(NAME, True)

    async def steps(client):
        ran = await client.call_tool("run_skill", {"name": NAME, "args": {"email": "bob@example.com"}})
        trace_id = ran.structured_content["trace_id"]
        return ran, [await record(client, trace_id=trace_id) for _ in range(6)]

    ran, results = calls(desk, steps)
    assert ran.structured_content["outcome_kind"] is None  # ran fine, judged by no one yet
    assert not results[0].is_error and results[0].structured_content["failures"] == 1
    assert all(r.is_error for r in results[1:])
    assert _text(results[1]) == f"the run {ran.structured_content['trace_id']!r} of {NAME!r} already has its outcome; one per run"
    assert desk.get(NAME).status == "active" and desk.get(NAME).failures == 1


def test_a_trace_must_be_a_recorded_run_of_that_skill_and_version(desk):
    async def steps(client):
        other = await client.call_tool("run_skill", {"name": "count_orders", "args": {"email": "alice@example.com"}})
        mine = await client.call_tool("run_skill", {"name": NAME, "args": {"email": "alice@example.com"}})
        return [
            await record(client, trace_id="made-up"),
            await record(client, trace_id=other.structured_content["trace_id"]),
            await record(client, trace_id=mine.structured_content["trace_id"], version=2),
            await client.call_tool("record_outcome", {"name": "nope", "succeeded": True, "trace_id": "x"}),
        ]

    results = calls(desk, steps)
    assert [_text(r) for r in results[:2]] == [
        f"trace 'made-up' is no recorded run of {NAME!r}; report on a trace_id run_skill returned",
        f"trace {results[1].content[0].text.split(chr(39))[1]!r} is no recorded run of {NAME!r}; "
        "report on a trace_id run_skill returned",
    ]
    assert _text(results[2]).endswith(f"ran v1 of {NAME!r}, not v2")
    assert _text(results[3]) == "no skill named 'nope'"
    assert desk.get(NAME).failures == 0


def test_a_held_never_released_version_is_never_credited(desk):
    draft = desk.propose(Skill.from_function(CANCEL_CODE.replace("customer request", "asked"),
                                             when="cancel every order of a customer by email",
                                             tools=["find_user", "list_orders", "cancel_order"]), actor=None)
    assert (draft.version, draft.status) == (2, "draft")

    async def steps(client):
        await client.call_tool("fetch_skills", {"task": "cancel all orders of bob@example.com", "k": 1,
                                                "session": "s-1"})
        return [await record(client, version=2),
                await record(client, session="s-1", version=2),
                await record(client, session="s-1", succeeded=True)]

    results = calls(desk, steps)
    assert results[0].is_error and results[1].is_error
    assert _text(results[1]) == f"session 's-1' was given v1 of {NAME!r}, not v2"
    assert not results[2].is_error  # credited to what the session was given: v1
    assert desk.get(NAME, 2).successes == desk.get(NAME, 2).failures == 0
    assert desk.get(NAME, 1).successes == 2


def test_session_outcomes_count_in_reliability_but_never_quarantine(desk):
    for _ in range(QUARANTINE_MIN_OUTCOMES):
        desk.feedback(NAME, True)

    async def steps(client):
        unknown = await record(client, session="never-seen")
        await client.call_tool("fetch_skills", {"task": "cancel all orders of bob@example.com", "k": 1,
                                                "session": "s-2"})
        return unknown, [await record(client, session="s-2") for _ in range(6)]

    unknown, results = calls(desk, steps)
    assert _text(unknown) == (f"session 'never-seen' was given no version of {NAME!r}; "
                              "fetch or run it with that session first")
    assert not any(r.is_error for r in results)
    skill = desk.get(NAME)
    assert skill.failures == 6 and skill.status == "active"  # no recorded run failed
    assert {o["origin"] for o in desk.outcomes(NAME)[-6:]} == {"external_session"}


def test_an_outside_caller_reports_misuse_and_wrong_skill(desk):
    async def steps(client):
        one = await client.call_tool("run_skill", {"name": NAME, "args": {"email": "bob@example.com"}})
        two = await client.call_tool("run_skill", {"name": NAME, "args": {"email": "alice@example.com"}})
        return [
            await record(client, trace_id=one.structured_content["trace_id"], kind="misuse",
                         reason="I passed the wrong customer"),
            await record(client, trace_id=two.structured_content["trace_id"], wrong_skill=True),
            await record(client, trace_id=two.structured_content["trace_id"], wrong_skill=True),
        ]

    results = calls(desk, steps)
    assert not results[0].is_error and not results[1].is_error and results[2].is_error
    assert desk.get(NAME).failures == 0
    assert [o["kind"] for o in desk.outcomes(NAME)[-2:]] == ["misuse", "wrong_skill"]
    assert desk.retrieval_misses(NAME) == 1
