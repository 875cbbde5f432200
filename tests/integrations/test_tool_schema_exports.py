"""The digests of the tool schemas a version was verified against travel with it: in the
Agent Skills export's ``metadata`` and in the MCP tool's ``_meta`` (issue 26, item 2)."""

from __future__ import annotations

import json

import anyio
import pytest
import yaml

from skill_library.governance import ToolSpec
from skill_library.integrations.agent_skills import export_library

USER_SCHEMA = {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}


def test_the_export_metadata_carries_the_digests(desk, tmp_path):
    export_library(desk, tmp_path / "out")
    front = yaml.safe_load((tmp_path / "out" / "count-orders" / "SKILL.md").read_text().split("---\n")[1])
    carried = json.loads(front["metadata"]["tool-schemas"])
    assert carried == desk.tool_schema_digests("count_orders") and set(carried) == {"find_user", "list_orders"}


def test_mcp_tool_metadata_carries_the_digests_of_the_served_version(desk, tmp_path):
    pytest.importorskip("mcp")
    from desk_tools import TOOLS
    from mcp import Client

    from skill_library.integrations.mcp_server import SkillServer

    async def main():
        async with Client(SkillServer(desk, TOOLS).server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tool = anyio.run(main)["count_orders"]
    assert tool.meta["skill_library/version"] == 1
    assert tool.meta["skill_library/tool_schemas"] == desk.tool_schema_digests("count_orders")
    # a declared schema the versions were not verified against (and no example trace to
    # replay): both leave the served tools at once, held for a person
    outcome = desk.register_tools({"list_orders": ToolSpec(schema=USER_SCHEMA, side_effects=False)})
    assert sorted(outcome.held) == [("cancel_every_order", 1), ("count_orders", 1)]
    assert "count_orders" not in anyio.run(main) and "cancel_every_order" not in anyio.run(main)
