"""The ``llm`` agent: the real ``openai`` client against a scripted local chat server.

Every test drives a real shop world; the model's side is scripted (``ScriptedChatServer``),
some replies computed from the tool results the agent sent back, so the results really
flow through the loop.
"""

from __future__ import annotations

import json
import socket

import pytest

from benchmarks.agents import agent_for_condition, conditions_for, get_agent
from benchmarks.agents.llm import CONDITIONS, LLMAgent, LLMNotConfigured, make_llm_agent, world_description
from benchmarks.worlds.base import Task
from benchmarks.worlds.shop import ShopWorld, gold
from skill_library import LLMError, Skill
from tests.chat_server import HTTPErrorReply, Reply, ScriptedChatServer, tool_calls_reply

SEED = 7

CANCEL_SKILL = '''\
def cancel_customer_order(email: str, order_id: str, reason: str) -> dict:
    """Cancel a customer's pending order after checking that it is theirs."""
    user_id = find_user_id_by_email(email=email)
    order = get_order_details(order_id=order_id)
    if order["user_id"] != user_id:
        raise ValueError("order " + order_id + " is not this customer's")
    return cancel_pending_order(order_id=order_id, reason=reason)
'''


@pytest.fixture
def shop():
    """A shop world reset for SEED, and a cancel task for a user's pending order in it."""
    world = ShopWorld()
    world.reset(SEED)
    order = next(o for o in world.db["orders"].values() if o["status"] == "pending")
    email = world.db["users"][order["user_id"]]["email"]
    task = Task(
        id="shop-cancel-llm-test",
        world="shop",
        instruction=f"Hi, I'm {email}. Please cancel my order {order['order_id']}, I no longer need it.",
        params={"email": email, "order_id": order["order_id"], "reason": "no longer needed"},
        split="test",
        workflow="cancel_order",
        goal={"order_id": order["order_id"], "status": "cancelled"},
        gold=gold(
            ("find_user_id_by_email", {"email": email}),
            ("get_order_details", {"order_id": order["order_id"]}),
            ("cancel_pending_order", {"order_id": order["order_id"], "reason": "no longer needed"}),
        ),
        seed=SEED,
    )
    world.reset(task.seed, task)
    return world, task


def agent_for(server: ScriptedChatServer, mode: str = "none", **options) -> LLMAgent:
    return LLMAgent(mode, base_url=server.base_url, api_key="test-key", model="test-model", timeout=10, **options)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def add_cancel_skill(library) -> Skill:
    skill = Skill.from_function(
        CANCEL_SKILL,
        when="Cancel the pending order {order_id} of the customer with email {email}",
        tools=["find_user_id_by_email", "get_order_details", "cancel_pending_order"],
    )
    assert library.add(skill, verified=True).added
    return library.get(skill.name)


def test_none_mode_solves_a_shop_task_with_scripted_tool_calls(shop):
    world, task = shop
    email, order_id = task.params["email"], task.params["order_id"]

    def check_order(body):  # uses the user id the agent sent back as the tool result
        user_id = json.loads(tool_messages(body)[-1]["content"])
        assert user_id == world.db["orders"][order_id]["user_id"]
        return Reply(tool_calls=[("get_order_details", {"order_id": order_id})], prompt_tokens=120, completion_tokens=7)

    def cancel(body):
        order = json.loads(tool_messages(body)[-1]["content"])
        assert order["status"] == "pending"
        return Reply(
            tool_calls=[("cancel_pending_order", {"order_id": order["order_id"], "reason": "no longer needed"})],
            prompt_tokens=140,
            completion_tokens=9,
        )

    script = [
        Reply(tool_calls=[("find_user_id_by_email", {"email": email})], prompt_tokens=100, completion_tokens=5),
        check_order,
        cancel,
        Reply(content=f"Order {order_id} is cancelled.", prompt_tokens=160, completion_tokens=11),
    ]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server).solve(task, world, None)
        requests = server.requests

    assert episode.stopped is None
    assert episode.result == f"Order {order_id} is cancelled."
    assert world.verify(task).success, world.verify(task).evidence
    assert world.db["orders"][order_id]["status"] == "cancelled"
    # costs: one model call per reply, tokens summed from usage
    assert (episode.llm_calls, episode.prompt_tokens, episode.completion_tokens) == (4, 520, 32)
    assert (episode.tool_calls, episode.decisions, episode.fetches) == (3, 3, 0)
    assert [c.name for c in episode.calls] == [a.name for a in task.gold]
    assert all(c.ok and c.kind == "tool" for c in episode.calls)
    # what the server received: the model, the world's tools with their schemas, the task
    assert len(requests) == 4 and server.remaining == 0
    first = requests[0]
    assert first["model"] == "test-model" and first["temperature"] == 0
    sent = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(sent) == set(world.tool_schemas())
    for name, schema in world.tool_schemas().items():
        assert sent[name]["parameters"] == schema
        assert sent[name]["description"] == world.tool_descriptions()[name]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == task.instruction
    system = first["messages"][0]["content"]
    assert world_description(world) in system and "Skills from earlier tasks" not in system
    # each tool call is answered by a tool message with its id; results never reach the system prompt
    last = requests[3]["messages"]
    assert [m["role"] for m in last] == ["system", "user"] + ["assistant", "tool"] * 3
    for assistant, answer in zip(last[2::2], last[3::2]):
        assert answer["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert json.loads(last[-1]["content"])["status"] == "cancelled"
    assert all(r["messages"][0] == first["messages"][0] for r in requests)
    user_id = world.db["orders"][order_id]["user_id"]
    assert user_id not in system


def test_the_system_prompt_describes_the_world_for_the_model_not_for_developers(shop):
    world, task = shop
    with ScriptedChatServer(["ok"]) as server:
        agent_for(server).solve(task, world, None)
        system = server.requests[0]["messages"][0]["content"]
    assert world.description and world_description(world) == " ".join(world.description.split())
    assert f"About this world: {world_description(world)}" in system
    assert ShopWorld.__doc__.strip() not in system

    class Undescribed(ShopWorld):
        """Developer notes that must not reach the model."""

        description = ""

    bare = Undescribed()
    bare.reset(task.seed, task)
    with ScriptedChatServer(["ok"]) as server:
        agent_for(server).solve(task, bare, None)
        system = server.requests[0]["messages"][0]["content"]
    assert world_description(bare) == ""
    assert "About this world" not in system and "Developer notes" not in system


def test_replies_without_usage_count_the_call_and_no_tokens(shop):
    world, task = shop
    script = [
        Reply(tool_calls=[("get_order_details", {"order_id": task.params["order_id"]})], usage=False),
        Reply(content="It is pending.", usage=False),
    ]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server).solve(task, world, None)
    assert episode.stopped is None and episode.result == "It is pending."
    assert (episode.llm_calls, episode.prompt_tokens, episode.completion_tokens) == (2, 0, 0)
    assert episode.tool_calls == 1


def test_prompt_mode_renders_the_fetched_skill_into_the_system_prompt(shop, library):
    world, task = shop
    skill = add_cancel_skill(library)
    with ScriptedChatServer(["I will cancel it now."]) as server:
        episode = agent_for(server, "prompt").solve(task, world, library)
        request = server.requests[0]

    assert (episode.fetches, episode.fetch_hits, episode.llm_calls) == (1, 1, 1)
    assert episode.result == "I will cancel it now." and episode.stopped is None
    system = request["messages"][0]["content"]
    assert "Skills from earlier tasks" in system and "suggestions" in system
    assert skill.name in system
    assert f"When to use: {skill.when}" in system
    assert 'return cancel_pending_order(order_id=order_id, reason=reason)' in system  # the code
    assert '"required": ["email", "order_id", "reason"]' in system  # the parameters
    assert "(callable)" not in system
    # prompt mode offers only the world's tools
    assert {t["function"]["name"] for t in request["tools"]} == set(world.tool_schemas())


def test_tools_mode_offers_the_skill_as_a_tool_and_runs_it_in_the_sandbox(shop, library):
    world, task = shop
    skill = add_cancel_skill(library)
    args = {k: task.params[k] for k in ("email", "order_id", "reason")}
    script = [
        tool_calls_reply((skill.name, args)),
        "Your order is cancelled.",
    ]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server, "tools").solve(task, world, library)
        requests = server.requests

    answer = tool_messages(requests[1])[0]
    assert not answer["content"].startswith("Error"), answer["content"]
    assert json.loads(answer["content"])["status"] == "cancelled"
    assert episode.stopped is None and episode.result == "Your order is cancelled."
    assert world.verify(task).success, world.verify(task).evidence
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["tools"]}
    assert set(offered) == set(world.tool_schemas()) | {skill.name}
    assert offered[skill.name]["parameters"] == skill.parameters
    assert skill.when in offered[skill.name]["description"]
    assert f"## {skill.name} (callable)" in requests[0]["messages"][0]["content"]
    # one decision for the skill; its three primitive calls counted as tool calls
    assert episode.decisions == 1 and episode.tool_calls == 3
    assert len(episode.skill_uses) == 1 and episode.skill_uses[0].ok
    assert episode.skill_uses[0].arguments == args
    assert json.loads(answer["content"]) == episode.skill_uses[0].value  # the skill's return value
    assert [(c.name, c.kind) for c in episode.calls] == [(skill.name, "skill")]


def test_a_failing_skill_call_is_answered_with_its_error(shop, library):
    world, task = shop
    skill = add_cancel_skill(library)
    bad = {"email": "nobody@example.com", "order_id": task.params["order_id"], "reason": "no longer needed"}
    with ScriptedChatServer([tool_calls_reply((skill.name, bad)), "I could not cancel it."]) as server:
        episode = agent_for(server, "tools").solve(task, world, library)
        answer = tool_messages(server.requests[1])[0]["content"]

    assert answer.startswith(f"Error: skill {skill.name} failed:") and "nobody@example.com" in answer
    assert episode.skill_uses[0].ok is False and episode.decisions == 1
    assert world.db["orders"][task.params["order_id"]]["status"] == "pending"
    assert episode.result == "I could not cancel it."


def test_malformed_arguments_are_answered_with_an_error_and_the_loop_goes_on(shop):
    world, task = shop
    order_id = task.params["order_id"]
    script = [
        tool_calls_reply(("get_order_details", '{"order_id": "#W12')),
        tool_calls_reply(("get_order_details", "[1, 2]"), ("get_order_details", {"order_id": order_id})),
        "Looked it up.",
    ]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server).solve(task, world, None)
        requests = server.requests

    first_answer = tool_messages(requests[1])[0]["content"]
    assert first_answer.startswith("Error: the arguments of get_order_details are not valid JSON")
    not_object, good = tool_messages(requests[2])[1:]
    assert not_object["content"].startswith("Error: the arguments of get_order_details must be a JSON object")
    assert json.loads(good["content"])["order_id"] == order_id
    assert episode.stopped is None and episode.result == "Looked it up."
    assert episode.llm_calls == 3 and episode.tool_calls == 1 and episode.decisions == 1


def test_tool_errors_go_back_to_the_model_as_error_messages(shop):
    world, task = shop
    with ScriptedChatServer([tool_calls_reply(("get_order_details", {"order_id": "12"})), "No such order."]) as server:
        episode = agent_for(server).solve(task, world, None)
        answer = tool_messages(server.requests[1])[0]["content"]

    assert answer.startswith("Error: no order with id '12'")
    assert episode.calls[0].error is not None and episode.result == "No such order."


def test_a_closed_port_stops_the_episode_with_a_clear_message(shop):
    world, task = shop
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    agent = LLMAgent("none", base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=5)
    episode = agent.solve(task, world, None)
    assert episode.stopped.startswith("llm error: cannot reach http://127.0.0.1:")
    assert str(port) in episode.stopped
    assert (episode.llm_calls, episode.tool_calls, episode.result) == (0, 0, None)


def test_an_http_error_stops_the_episode_after_the_calls_made(shop):
    world, task = shop
    script = [tool_calls_reply(("list_all_product_types", {})), HTTPErrorReply(503, "overloaded")]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server).solve(task, world, None)
    assert episode.stopped.startswith("llm error: HTTP 503") and "overloaded" in episode.stopped
    assert episode.llm_calls == 1 and episode.tool_calls == 1


def test_max_turns_ends_a_model_that_never_answers(shop):
    world, task = shop
    script = [tool_calls_reply(("list_all_product_types", {}))] * 3
    with ScriptedChatServer(script) as server:
        episode = agent_for(server, max_turns=3).solve(task, world, None)
    assert episode.stopped == "no final answer after 3 model calls"
    assert episode.llm_calls == 3 and episode.tool_calls == 3 and server.remaining == 0


def test_the_decision_budget_stops_the_episode(shop):
    world, task = shop
    script = [tool_calls_reply(("list_all_product_types", {}), ("list_all_product_types", {}))]
    with ScriptedChatServer(script) as server:
        episode = agent_for(server, max_decisions=1).solve(task, world, None)
    assert episode.stopped == "decision budget of 1 used up"
    assert episode.decisions == 1 and episode.tool_calls == 1 and episode.llm_calls == 1


def test_configuration_factory_and_registry(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SKILL_LIBRARY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert LLMAgent.configured() is False
    with pytest.raises(LLMError, match="OPENAI_BASE_URL") as raised:
        LLMAgent()
    assert isinstance(raised.value, LLMNotConfigured) and isinstance(raised.value, ValueError)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SKILL_LIBRARY_MODEL", "env-model")
    assert LLMAgent.configured() is True
    agent = LLMAgent()
    assert (agent.mode, agent.model, str(agent.client.base_url)) == ("none", "env-model", "http://127.0.0.1:9/v1/")
    assert agent.client.max_retries == 0
    assert [make_llm_agent(c).mode for c in CONDITIONS] == ["none", "prompt", "tools"]
    assert conditions_for("llm") == CONDITIONS  # the harness's list, kept without importing openai
    assert make_llm_agent("tools", k=4).k == 4
    with pytest.raises(ValueError, match="conditions are: none, prompt, tools"):
        make_llm_agent("sometimes")
    with pytest.raises(ValueError, match="use 'prompt'.* or 'tools'"):
        make_llm_agent("skills")
    registered = get_agent("llm", mode="prompt")
    assert isinstance(registered, LLMAgent) and registered.mode == "prompt" and registered.worlds is None
    harnessed = agent_for_condition("llm", "tools", k=3, max_turns=5)
    assert (harnessed.mode, harnessed.k, harnessed.max_turns) == ("tools", 3, 5)


def test_long_tool_results_are_clipped_with_a_note(shop):
    world, task = shop
    with ScriptedChatServer([tool_calls_reply(("list_all_product_types", {})), "ok"]) as server:
        episode = agent_for(server, max_result_chars=40).solve(task, world, None)
        answer = tool_messages(server.requests[1])[0]["content"]
    full = json.dumps(world.list_all_product_types(), ensure_ascii=False)
    assert answer == full[:40] + f"\n... [{len(full) - 40} more characters not shown]"
    assert episode.calls[0].result == world.list_all_product_types()  # the trace keeps it whole
