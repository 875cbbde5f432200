"""SkillLibrary.render: the planner's prompt block, cut to a token budget."""

from __future__ import annotations

import pytest

from skill_library.integrations.prompt_block import approx_tokens, render
from skill_library.models import Outcome, ToolCall, Trace


def test_block_lists_signature_when_reliability_and_usage(desk):
    matches = desk.fetch("cancel all orders of carol@example.com", k=2)
    block = desk.render(matches)
    assert block.splitlines()[0].startswith("Skills from the skill library")
    assert "- cancel_every_order(email: str)" in block
    assert "  when: cancel every order of a customer by email" in block
    assert "  reliability: 0.67 (1 ok / 0 failed)" in block
    assert "  usage: cancel_every_order(email='<email>')" in block
    assert "- count_orders(email: str, status: str='pending')" in block
    assert "  usage: count_orders(email='<email>')" in block  # optional arguments left out
    assert block.index("cancel_every_order") < block.index("count_orders")  # fetch order kept


def test_budget_keeps_whole_skills_and_says_what_it_left_out(desk):
    matches = desk.fetch("cancel all orders of carol@example.com", k=2)
    full = desk.render(matches)
    one = desk.render(matches, max_tokens=approx_tokens(full) - 1)
    assert approx_tokens(one) <= approx_tokens(full) - 1
    assert "cancel_every_order" in one and "count_orders" not in one
    assert one.endswith("(1 more skill(s) left out to stay within %d tokens)" % (approx_tokens(full) - 1))
    none = desk.render(matches, max_tokens=20)
    assert none == "(2 skill(s) matched, none fits within 20 tokens)"
    assert desk.render([]) == ""
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        desk.render(matches, max_tokens=0)


def test_usage_line_shows_typed_stand_ins_never_the_values_of_the_trace(library):
    trace = Trace(
        task="restock 3 apples", params={"count": 3},
        calls=[ToolCall(name="restock", arguments={"item": "apple", "count": 3}, result={"stock": 3})],
        outcome=Outcome(success=True, verifier="audit"),
    )
    skill = library.learn(trace).skill
    block = library.render(library.fetch("restock 5 apples", k=1))
    assert f"usage: {skill.name}(count=0)" in block  # the type of the trace's value, not 3


def test_a_custom_token_counter_is_used(desk):
    matches = desk.fetch("cancel all orders", k=2)
    words = lambda text: len(text.split())  # noqa: E731
    block = render(matches, max_tokens=50, count_tokens=words)
    assert words(block) <= 50 and "cancel_every_order" in block and "count_orders(" not in block
