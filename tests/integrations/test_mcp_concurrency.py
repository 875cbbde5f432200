"""The MCP server serves requests concurrently (issue 23, bounded host work).

Library calls used to run one at a time under one lock: a client's CPU-bound run (up to its
sandbox limit) made every other client's fetch wait. Now reads and runs are served side by
side; only calls that change what the server offers take the lock.
"""

from __future__ import annotations

import threading
import time

import anyio
import pytest

pytest.importorskip("mcp")

from desk_tools import TOOLS  # noqa: E402
from mcp import Client  # noqa: E402

from skill_library.integrations.mcp_server import SkillServer  # noqa: E402
from skill_library.models import Skill  # noqa: E402

SPIN = "def spin_on(n):\n    started()\n    t = 0\n    while True:\n        t += n\n"


def test_a_fetch_is_served_while_another_clients_run_spins(desk):
    desk.add(Skill.from_function(SPIN, when="spin forever on a number", tools=["started"]), verified=True)
    started = threading.Event()
    server = SkillServer(desk, {**TOOLS, "started": started.set})
    out: dict = {}

    async def main():
        async with Client(server.server) as spinner, Client(server.server) as other:
            async def spin():
                out["spin"] = await spinner.call_tool("spin_on", {"n": 1})
                out["spin_done"] = time.monotonic()

            async with anyio.create_task_group() as group:
                group.start_soon(spin)
                with anyio.fail_after(60):
                    while not started.is_set():
                        await anyio.sleep(0.01)
                began = time.monotonic()
                fetched = await other.call_tool("fetch_skills", {"task": "count the orders of alice", "k": 1})
                listed = await other.call_tool("list_skills", {})
                out["fetch_seconds"] = time.monotonic() - began
                out["fetched"], out["listed"] = fetched, listed
                out["spin_running"] = "spin" not in out  # structural: the run had not ended

    anyio.run(main)
    assert out["spin_running"], out
    assert out["fetched"].structured_content["matches"][0]["name"] == "count_orders"
    assert "spin_on" in {s["name"] for s in out["listed"].structured_content["skills"]}
    assert out["spin"].is_error and "spin_on" in out["spin"].content[0].text  # its CPU limit
    print(f"fetch + list beside a spinning run: {out['fetch_seconds'] * 1000:.0f} ms")
