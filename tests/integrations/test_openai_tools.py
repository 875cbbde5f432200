"""as_openai_tools and dispatch, with the real openai client against the scripted chat server."""

from __future__ import annotations

import json

import pytest
from desk_tools import CANCELLED, TOOLS
from openai import OpenAI

from skill_library.integrations.openai_tools import strict_parameters
from tests.chat_server import ScriptedChatServer, tool_calls_reply


def test_chat_and_responses_tools_strict_only_where_the_schema_allows(desk):
    matches = desk.fetch("cancel all orders of carol@example.com", k=2)
    chat = {t["function"]["name"]: t for t in desk.as_openai_tools(matches)}
    cancel = chat["cancel_every_order"]
    assert cancel["type"] == "function"
    assert cancel["function"]["strict"] is True
    assert cancel["function"]["parameters"] == {
        "type": "object", "properties": {"email": {"type": "string"}},
        "required": ["email"], "additionalProperties": False,
    }
    assert cancel["function"]["description"].startswith("cancel every order of a customer by email.")
    count = chat["count_orders"]["function"]
    assert count["strict"] is False  # `status` is optional: strict mode would force it
    assert count["parameters"]["properties"]["status"]["default"] == "pending"
    responses = desk.as_openai_tools(matches, api="responses")
    assert {t["name"] for t in responses} == {"cancel_every_order", "count_orders"}
    assert all(t["type"] == "function" and "parameters" in t and "strict" in t for t in responses)


@pytest.mark.parametrize("schema, strict", [
    ({"type": "object", "properties": {"x": {}}, "required": ["x"]}, False),  # untyped (Any)
    ({"type": "object", "properties": {"x": {"type": "object"}}, "required": ["x"]}, False),  # free-form
    ({"type": "object", "properties": {"x": {"type": "array"}}, "required": ["x"]}, False),  # no items
    ({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "integer"}}},
      "required": ["x"]}, True),
    ({"type": "object", "properties": {"x": {"type": ["string", "null"]}}, "required": ["x"]}, True),
])
def test_strict_parameters(schema, strict):
    assert (strict_parameters(schema) is not None) is strict


def _call(name, args, call_id="call_1"):
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def test_dispatch_runs_the_skill_and_answers_with_a_tool_message(desk):
    message = desk.dispatch(_call("cancel_every_order", {"email": "bob@example.com"}), TOOLS)
    assert dict(message) == {"role": "tool", "tool_call_id": "call_1", "content": '["W7", "W8", "W9"]'}
    assert CANCELLED == ["W7", "W8", "W9"]
    assert message.run.ok and desk.context.store.get_trace(message.run.trace.id).calls[0].name == "find_user"
    item = {"type": "function_call", "call_id": "fc_9", "name": "count_orders",
            "arguments": '{"email": "alice@example.com"}'}
    assert dict(desk.dispatch(item, TOOLS)) == {
        "type": "function_call_output", "call_id": "fc_9", "output": "2"
    }


@pytest.mark.parametrize("name, args, error", [
    ("cancel_every_order", "{email: bob}", "Error: arguments of cancel_every_order are not JSON"),
    ("cancel_every_order", "[1]", "Error: arguments must be a JSON object, got list"),
    ("cancel_every_order", {"mail": "bob@example.com"},
     "Error: cancel_every_order has no parameter(s) mail; it takes email"),
    ("cancel_every_order", {}, "Error: cancel_every_order needs argument(s) email"),
    ("cancel_every_order", {"email": 7}, "Error: argument email must be string, got int 7"),
    ("cancel_all", {"email": "bob@example.com"}, "Error: there is no skill named 'cancel_all'"),
])
def test_bad_arguments_are_an_error_for_the_model_not_a_skill_failure(desk, name, args, error):
    before = len(desk.outcomes("cancel_every_order"))
    message = desk.dispatch(_call(name, args), TOOLS)
    assert message["role"] == "tool" and message["content"].startswith(error)
    assert message.run is None
    assert len(desk.outcomes("cancel_every_order")) == before  # nothing recorded
    assert CANCELLED == []


def test_a_skill_that_fails_in_the_sandbox_is_recorded_and_reported(desk):
    message = desk.dispatch(_call("cancel_every_order", {"email": "nobody@example.com"}), TOOLS)
    assert message["content"].startswith("Error: skill cancel_every_order v1 failed: ToolError: 'nobody@example.com' (line 4)")
    assert desk.get("cancel_every_order").failures == 1
    assert desk.outcomes("cancel_every_order")[-1]["success"] is False


def test_tool_calls_from_the_real_openai_client(desk):
    script = [tool_calls_reply(("cancel_every_order", {"email": "alice@example.com"}),
                               ("count_orders", {"email": "bob@example.com"})), "done"]
    with ScriptedChatServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5)
        tools = desk.as_openai_tools(desk.fetch("cancel all orders of alice@example.com", k=2))
        messages = [{"role": "user", "content": "cancel all orders of alice@example.com"}]
        reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
        calls = reply.choices[0].message.tool_calls
        messages.append(reply.choices[0].message.model_dump(exclude_none=True))
        messages += [desk.dispatch(call, TOOLS) for call in calls]
        final = client.chat.completions.create(model="m", messages=messages, tools=tools)
        sent = server.requests[1]["messages"]
    assert final.choices[0].message.content == "done"
    assert server.requests[0]["tools"] == tools
    assert [m["content"] for m in sent if m["role"] == "tool"] == ['["W1", "W2"]', "3"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [c.id for c in calls]


def test_a_tool_fetch_was_unsure_of_says_so_in_its_description():
    from skill_library.abstention import FetchResult
    from skill_library.integrations.openai_tools import as_openai_tools
    from skill_library.models import Match, Skill

    skill = Skill.from_function('def reset_password(email: str) -> str:\n    """Reset."""\n    return email\n',
                                when="reset an employee's password")
    plain = as_openai_tools(FetchResult([Match(skill=skill, similarity=0.7, reliability=0.9, score=0.7)]))
    assert "Caution" not in plain[0]["function"]["description"]
    unsure = FetchResult([Match(skill=skill, similarity=0.5, reliability=0.9, score=0.5, missing=["email"])])
    unsure.abstained, unsure.reason = True, "the best match's similarity 0.50 is under the floor 0.60"
    [tool] = as_openai_tools(unsure, api="responses")
    assert tool["description"].startswith("reset an employee's password")
    assert ("Caution: no skill is sure to cover this task (the best match's similarity 0.50 is under the floor "
            "0.60); call it only if it does exactly what the task asks; the task does not give email.") \
        in tool["description"]
    assert as_openai_tools([skill])[0]["function"]["description"] == plain[0]["function"]["description"]
