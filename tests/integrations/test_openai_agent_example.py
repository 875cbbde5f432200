"""examples/openai_agent.py on the real openai client against the scripted chat server."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from openai import OpenAI

from tests.chat_server import ScriptedChatServer, tool_calls_reply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_agent.py"


def _example():
    spec = importlib.util.spec_from_file_location("openai_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_loop_fetches_dispatches_and_feeds_back(library, capsys):
    example = _example()
    from skill_library.models import Skill

    library.add(Skill.from_function(example.SKILL, when="cancel every order of a customer by email",
                                    tools=list(example.TOOLS)), verified=True)
    script = [
        tool_calls_reply(("cancel_every_order", {"mail": "bob@example.com"})),  # a wrong argument name
        tool_calls_reply(("cancel_every_order", {"email": "bob@example.com"})),
        "Cancelled W7, W8 and W9.",
    ]
    with ScriptedChatServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5)
        answer = example.run_agent(library, client, "scripted", "cancel every order of bob@example.com")
        requests = server.requests
    assert answer == "Cancelled W7, W8 and W9."
    assert example.CANCELLED == ["W7", "W8", "W9"]
    first = requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["cancel_every_order"]
    assert "- cancel_every_order(email: str)" in first["messages"][0]["content"]
    tool_messages = [m for m in requests[2]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "Error: cancel_every_order has no parameter(s) mail; it takes email"
    assert json.loads(tool_messages[1]["content"]) == ["W7", "W8", "W9"]
    skill = library.get("cancel_every_order")
    assert (skill.successes, skill.failures) == (2, 0)  # the verified add + the fed-back success
    [outcome] = [o for o in library.outcomes("cancel_every_order") if o["trace_id"]]
    assert outcome["success"] is True
    assert "feedback cancel_every_order: success, reliability 0.75" in capsys.readouterr().out
