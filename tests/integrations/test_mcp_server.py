"""The MCP server, driven by the real mcp client: in memory, and over stdio against `skills serve-mcp`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from desk_tools import CANCELLED, TOOLS  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from skill_library.integrations.mcp_server import FIXED_TOOLS, SkillServer  # noqa: E402

HERE = Path(__file__).parent

RESTOCK_TRACE = {
    "task": "restock 3 apples in the fruit aisle",
    "params": {"count": 3},
    "calls": [{"name": "restock", "arguments": {"item": "apple", "count": 3}, "result": {"stock": 3}}],
    "outcome": {"success": True, "verifier": "stock-audit"},
}


def _text(result) -> str:
    return result.content[0].text


def test_tools_are_the_six_plus_one_per_active_skill(desk):
    async def main():
        async with Client(SkillServer(desk, TOOLS).server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = anyio.run(main)
    assert set(tools) == set(FIXED_TOOLS) | {"cancel_every_order", "count_orders"}
    cancel = tools["cancel_every_order"]
    assert cancel.description.startswith("cancel every order of a customer by email")
    assert cancel.input_schema == {"type": "object", "properties": {"email": {"type": "string"}},
                                   "required": ["email"]}
    assert tools["fetch_skills"].input_schema["required"] == ["task"]


def test_fetch_run_record_show_and_list_in_memory(desk):
    async def main():
        async with Client(SkillServer(desk, TOOLS).server) as client:
            fetched = await client.call_tool("fetch_skills", {"task": "cancel all orders of bob@example.com", "k": 1})
            ran = await client.call_tool("cancel_every_order", {"email": "bob@example.com"})
            again = await client.call_tool("run_skill", {"name": "count_orders", "args": {"email": "alice@example.com"}})
            recorded = await client.call_tool("record_outcome", {
                "name": "cancel_every_order", "succeeded": True, "trace_id": ran.structured_content["trace_id"]})
            shown = await client.call_tool("show_skill", {"name": "count_orders"})
            listed = await client.call_tool("list_skills", {"status": "active"})
            return fetched, ran, again, recorded, shown, listed

    fetched, ran, again, recorded, shown, listed = anyio.run(main)
    [match] = fetched.structured_content["matches"]
    assert (match["name"], match["reliability"]) == ("cancel_every_order", pytest.approx(2 / 3))
    assert not ran.is_error and json.loads(_text(ran)) == ["W7", "W8", "W9"] and CANCELLED == ["W7", "W8", "W9"]
    assert [c["name"] for c in ran.structured_content["calls"]][:2] == ["find_user", "list_orders"]
    assert _text(again) == "2"
    assert recorded.structured_content["successes"] == 2
    assert desk.outcomes("cancel_every_order")[-1]["trace_id"] == ran.structured_content["trace_id"]
    assert shown.structured_content["code"].startswith("\ndef count_orders")
    assert [s["name"] for s in listed.structured_content["skills"]] == ["cancel_every_order", "count_orders"]


def test_errors_are_tool_errors_and_the_server_keeps_serving(desk):
    async def main():
        async with Client(SkillServer(desk, TOOLS).server) as client:
            results = [
                await client.call_tool("cancel_every_order", {"mail": "x"}),
                await client.call_tool("run_skill", {"name": "nope", "args": {}}),
                await client.call_tool("fetch_skills", {"task": "  "}),
                await client.call_tool("fetch_skills", {"task": "x", "k": 0}),
                await client.call_tool("show_skill", {"name": "count_orders", "version": 9}),
                await client.call_tool("record_outcome", {"name": "nope", "succeeded": True}),
                await client.call_tool("list_skills", {"status": "bogus"}),
                await client.call_tool("record_outcome", {"name": "count_orders"}),
                await client.call_tool("cancel_every_order", {"email": "nobody@example.com"}),
            ]
            after = await client.call_tool("fetch_skills", {"task": "count orders of alice", "k": 1})
            return results, after

    results, after = anyio.run(main)
    assert all(r.is_error for r in results)
    assert [_text(r) for r in results[:8]] == [
        "cancel_every_order has no parameter(s) mail; it takes email",
        "no skill named 'nope'",
        "task must be a non-empty string",
        "k must be between 1 and 50, got 0",
        "skill 'count_orders' has no version 9",
        "no skill named 'nope'",
        "status: Input should be 'draft', 'evaluated', 'approved', 'canary', 'active', 'superseded', 'retired', 'rejected', 'quarantined' or 'suspended'",
        "succeeded: Field required",
    ]
    assert _text(results[8]) == "skill cancel_every_order v1 failed: ToolError: 'nobody@example.com' (line 4)"
    # bad arguments ran nothing; the failed run is recorded as a failure
    assert (desk.get("cancel_every_order").successes, desk.get("cancel_every_order").failures) == (1, 1)
    assert not after.is_error and after.structured_content["matches"][0]["name"] == "count_orders"


def test_clients_are_told_when_the_skill_tools_change(desk):
    def restock(item: str, count: int) -> dict:
        return {"stock": count}

    server = SkillServer(desk, {**TOOLS, "restock": restock})

    async def main():
        async with Client(server.server) as client:
            assert client.server_capabilities.tools.list_changed is True
            async with client.listen(tools_list_changed=True) as events:
                learned = await client.call_tool("learn_trace", {"trace": RESTOCK_TRACE})
                with anyio.fail_after(5):
                    first = await events.__anext__()
                names = {t.name for t in (await client.list_tools()).tools}
                desk.retire("count_orders")  # another writer; noticed on the next call
                await client.call_tool("list_skills", {})
                with anyio.fail_after(5):
                    second = await events.__anext__()
                after = {t.name for t in (await client.list_tools()).tools}
        return learned, first, second, names, after

    learned, first, second, names, after = anyio.run(main)
    assert learned.structured_content["status"] == "saved"
    new = learned.structured_content["skill"]["name"]
    assert type(first).__name__ == type(second).__name__ == "ToolsListChanged"
    assert new in names and "count_orders" in names
    assert "count_orders" not in after and new in after


def test_handshake_era_clients_get_the_list_changed_notification(desk):
    seen = []

    async def on_message(message):
        seen.append(getattr(getattr(message, "root", message), "method", None) or type(message).__name__)

    server = SkillServer(desk, TOOLS)

    async def main():
        async with Client(server.server, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools.list_changed is True
            desk.retire("count_orders")
            await client.call_tool("list_skills", {})
            with anyio.fail_after(5):
                while not seen:
                    await anyio.sleep(0.01)

    anyio.run(main)
    assert seen == ["notifications/tools/list_changed"]


def _stdio_params(desk) -> StdioServerParameters:
    """`skills serve-mcp` of ``desk`` over stdio, with desk_tools as its tools."""
    # the tree under test first (a worktree's PYTHONPATH), then desk_tools' folder
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([*paths, str(HERE)]))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "skill_library.cli", "serve-mcp", "--dir", str(desk.path), "--tools", "desk_tools"],
        env=env, cwd=str(HERE),
    )


@pytest.mark.slow
def test_stdio_subprocess_serves_the_library(desk, tmp_path):
    desk.close()
    params = _stdio_params(desk)

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            fetched = await client.call_tool("fetch_skills", {"task": "cancel all orders of bob@example.com", "k": 1})
            ran = await client.call_tool("cancel_every_order", {"email": "alice@example.com"})
            bad = await client.call_tool("cancel_every_order", {"email": 3})
            alive = await client.call_tool("show_skill", {"name": "cancel_every_order"})
            return names, fetched, ran, bad, alive

    names, fetched, ran, bad, alive = anyio.run(main)
    assert {"fetch_skills", "cancel_every_order", "count_orders"} <= names
    assert fetched.structured_content["matches"][0]["name"] == "cancel_every_order"
    assert not ran.is_error and json.loads(_text(ran)) == ["W1", "W2"]  # the subprocess's desk
    assert bad.is_error and _text(bad) == "argument email must be string, got int 3"
    assert not alive.is_error and alive.structured_content["version"] == 1


@pytest.mark.slow
def test_stdio_subprocess_embeds_through_a_running_skills_serve(desk):
    """With a `skills serve` of the library answering (here in this process, on its real
    socket), the stdio server's fetches are embedded by it (issue 25: MCP's first answer)."""
    from skill_library import served

    params = _stdio_params(desk)

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            return await client.call_tool("fetch_skills", {"task": "cancel all orders of bob@example.com", "k": 1})

    with served.Server(desk, served.socket_path(desk.path), served.deployment_key(desk.path)) as server:
        server.start()
        fetched = anyio.run(main)
        embedded = server.embedded
    assert not fetched.is_error, _text(fetched)
    assert fetched.structured_content["matches"][0]["name"] == "cancel_every_order"
    assert embedded >= 1  # the task's vector came from the running server


def test_streamable_http_on_loopback(desk):
    import socket
    import threading

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "t" * 40
    app = SkillServer(desk, TOOLS, token=token).server.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            anyio.run(anyio.sleep, 0.02)

        async def main():
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
            async with http, Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
                fetched = await client.call_tool("fetch_skills", {"task": "count the orders of alice", "k": 1})
                bad = await client.call_tool("count_orders", {"email": "alice@example.com", "status": 1})
                return fetched, bad

        fetched, bad = anyio.run(main)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert fetched.structured_content["matches"][0]["name"] == "count_orders"
    assert bad.is_error and _text(bad) == "argument status must be string, got int 1"


def test_a_crash_is_a_generic_tool_error_and_the_server_keeps_serving(desk):
    server = SkillServer(desk, TOOLS)

    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    async def main():
        async with Client(server.server) as client:
            desk.list = broken  # the store fails underneath list_skills
            crashed = await client.call_tool("list_skills", {})
            del desk.list
            fine = await client.call_tool("list_skills", {})
            return crashed, fine

    crashed, fine = anyio.run(main)
    assert crashed.is_error and _text(crashed) == "Error executing tool list_skills"
    assert "secret" not in _text(crashed)
    assert not fine.is_error and len(fine.structured_content["skills"]) == 2


def test_fetch_skills_says_when_the_library_is_unsure_and_checks_preconditions_with_args(library):
    """fetch_skills returns fetch's abstained / ambiguous flags and reason (an MCP agent must
    see them, not just a list to run the first of), and with ``args`` checks the candidates'
    preconditions with the server's read-only host tools, changing nothing."""
    from desk_tools import CANCEL_CODE

    from skill_library import Condition, ToolSpec
    from skill_library.models import Skill

    CANCELLED.clear()
    library.register_tools({"find_user": ToolSpec(side_effects=False), "list_orders": ToolSpec(side_effects=False),
                            "cancel_order": ToolSpec(side_effects=True)})
    skill = Skill.from_function(CANCEL_CODE, when="cancel every order of a customer by email",
                                tools=["find_user", "list_orders", "cancel_order"])
    three = Condition(tool="list_orders", occurrence=0, path=[], op="len_eq", value=3)
    skill = skill.model_copy(update={"provenance": skill.provenance.model_copy(update={"preconditions": [three]})})
    library.add(skill, verified=True)
    task = "cancel all orders of the customer, please"

    async def main():
        async with Client(SkillServer(library, TOOLS).server) as client:
            plain = await client.call_tool("fetch_skills", {"task": task, "k": 1})
            alice = await client.call_tool("fetch_skills", {"task": task, "k": 1, "args": {"email": "alice@example.com"}})
            bob = await client.call_tool("fetch_skills", {"task": task, "k": 1, "args": {"email": "bob@example.com"}})
            bad = await client.call_tool("fetch_skills", {"task": task, "args": ["alice"]})
            return plain, alice, bob, bad

    plain, alice, bob, bad = anyio.run(main)
    assert set(plain.structured_content) == {"matches", "abstained", "ambiguous", "reason"}
    assert "applies" not in plain.structured_content["matches"][0]
    assert alice.structured_content["abstained"] is True  # alice has 2 orders: it does not apply
    assert alice.structured_content["matches"][0]["applies"] is False
    assert "does not apply" in alice.structured_content["reason"]
    assert bob.structured_content["matches"][0]["applies"] is True and not bob.structured_content["abstained"]
    assert bad.is_error
    assert CANCELLED == []  # the probes never cancelled anything
