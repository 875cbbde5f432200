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


def test_a_result_fetch_was_unsure_of_never_reads_as_call_one_of_these():
    """An abstained or ambiguous fetch result (skill_library.abstention) keeps its skills in
    the block, but the block says why and that they are suggestions, never "call one"; each
    match's own flags (does not apply, missing parameters, too close to call) are shown."""
    from skill_library.abstention import FetchResult
    from skill_library.models import Match, Skill

    def match(name: str, **flags) -> Match:
        skill = Skill.from_function(f'def {name}(email: str) -> str:\n    """Reset."""\n    return email\n',
                                    when=f"{name.replace('_', ' ')} of an employee")
        return Match(skill=skill, similarity=0.6, reliability=0.9, score=0.6, **flags)

    plain = FetchResult([match("reset_password")])
    assert render(plain).splitlines()[0].endswith("Call one instead of re-deriving its steps.")
    assert "caution" not in render(plain)
    unsure = FetchResult([match("reset_password", missing=["email"]),
                          match("unlock_account", applies=False,
                                applies_reason="does not apply: the employee's status is locked")])
    unsure.abstained, unsure.reason = True, "the best match's similarity 0.50 is under this library's floor 0.60"
    block = render(unsure)
    first = block.splitlines()[0]
    assert "no skill is sure to cover this task (the best match's similarity 0.50" in first
    assert "use one only if it does exactly what the task asks" in first and "Call one instead" not in block
    assert "  caution: the task does not give email" in block
    assert "  caution: does not apply: the employee's status is locked" in block
    close = FetchResult([match("reset_password", ambiguous=True), match("unlock_account", ambiguous=True)])
    close.ambiguous, close.reason = True, "too close to call: reset_password, unlock_account"
    assert render(close).count("caution: too close to call against another skill here") == 2
    assert "these skills are too close to call" in render(close).splitlines()[0]
