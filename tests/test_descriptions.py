"""Descriptions from what a skill does (induction/describe.py), names from its acting verbs,
compound traces split into their workflows (induction/parts.py), and plans (planning.py)."""

from __future__ import annotations

import pytest

from skill_library.governance import Policy, ToolSpec
from skill_library.induction import DataflowGeneralizer
from skill_library.induction.describe import (
    Step,
    ToolDoc,
    describe_steps,
    description_problems,
    first_sentence,
    prose,
    tool_docs,
)
from skill_library.induction.parts import clauses, split, whole_id
from skill_library.models import Outcome, ToolCall, Trace

VERIFIED = Outcome(success=True, verifier="test")
DOCS = {
    "find_user": ToolDoc("find_user", "Find a customer's id by their email", True),
    "get_order": ToolDoc("get_order", "Get an order's details", True),
    "return_items": ToolDoc("return_items", "Return some items of a delivered order"),
    "modify_items": ToolDoc("modify_items", "Modify some items of a pending order"),
    "cancel_order": ToolDoc("cancel_order", "Cancel a pending order"),
}


def test_first_sentence_is_the_first_clause_of_a_description():
    assert first_sentence("Return some items of a delivered order. The status changes.") == \
        "Return some items of a delivered order"
    assert first_sentence("Switch an account on (status active); others stay") == \
        "Switch an account on (status active)"
    assert first_sentence("") == ""


def test_parameters_are_read_in_prose():
    assert prose("payment_method_id") == "the payment method id"
    assert prose("order_id_2") == "the second order id"
    assert prose("newItemIds") == "the new item ids"


def test_look_alikes_are_told_apart_by_what_their_tools_say():
    ret = describe_steps([Step("get_order"), Step("return_items")], ["order_id", "item_ids"], DOCS)
    mod = describe_steps([Step("get_order"), Step("modify_items")], ["order_id", "item_ids"], DOCS)
    assert ret == ("Return some items of a delivered order (after: get order). "
                   "Needs the order id and the item ids.")
    assert "pending order" in mod and ret != mod
    every = describe_steps([Step("find_user"), Step("cancel_order", loop_over="lookup:find_user")],
                           ["email"], DOCS)
    assert every == ("Cancel a pending order, for every one that find user returns "
                     "(after: find user). Needs the email.")
    assert "{" not in ret + mod + every


def test_tool_docs_come_from_declarations_and_undeclared_tools_read_by_name():
    docs = tool_docs({"cancel_order": ToolSpec(description="Cancel a pending order. Refunds it."),
                      "get_order": ToolSpec(side_effects=False)})
    assert docs["cancel_order"].summary == "Cancel a pending order"
    assert docs["get_order"].read_only and docs["get_order"].summary == ""
    assert describe_steps([Step("archive_mail")], [], {}) == "Archive mail."


def test_a_description_from_elsewhere_is_checked():
    assert description_problems("Cancel a pending order; needs the order id.", ["order_id"]) == []
    problems = description_problems("cancel {order_id} for ines@x.org", ["order_id", "reason"],
                                    personal=["ines@x.org"])
    text = " ".join(problems)
    assert "placeholders" in text and "value of the trace" in text and "email" in text
    assert "'reason'" in text
    assert "shorter" in " ".join(description_problems("do it", []))


def _orders_trace(task: str) -> Trace:
    return Trace(
        task=task, params={"customer": "c1"},
        calls=[ToolCall(name="list_orders", arguments={"customer": "c1"},
                        result=[{"order_id": "A1"}, {"order_id": "A2"}]),
               *[ToolCall(name="cancel_order", arguments={"order_id": o}, result="ok") for o in ("A1", "A2")]],
        outcome=VERIFIED)


def test_a_learned_skill_says_what_it_does_and_its_name_its_verbs():
    docs = {"list_orders": ToolDoc("list_orders", "List a customer's orders", True),
            "cancel_order": ToolDoc("cancel_order", "Cancel a pending order")}
    candidate = DataflowGeneralizer().generalize(
        _orders_trace("Hi, Ines Garcia here! Cancel every order of c1, my cat is ill."),
        read_only=frozenset({"list_orders"}), tool_docs=docs)
    assert candidate.name == "cancel_every_order"
    assert candidate.when == ("Cancel a pending order, for every one that list orders returns "
                              "(after: list orders). Needs the customer.")
    doc = candidate.description
    assert doc.startswith(candidate.when) and "customer (str): the customer" in doc
    assert "Ines" not in candidate.code and "cat" not in candidate.code and "Learned from" not in candidate.code


def _compound() -> Trace:
    return Trace(
        task=("Your name is Ines Garcia. For #W111, return the lamp via paypal_9; "
              "and then cancel order #W222 because no longer needed."),
        params={"order_id": "#W111", "item_ids": ["I1"], "payment_method_id": "paypal_9",
                "order_id_2": "#W222", "reason": "no longer needed"},
        calls=[ToolCall(name="return_items", arguments={"order_id": "#W111", "item_ids": ["I1"],
                                                        "payment_method_id": "paypal_9"}, result="ok"),
               ToolCall(name="cancel_order", arguments={"order_id": "#W222", "reason": "no longer needed"},
                        result="ok")],
        outcome=VERIFIED, id="t1")


def test_a_compound_trace_splits_into_its_workflows_by_its_own_values():
    parts = split(_compound())
    assert parts is not None and [p.id for p in parts] == ["t1/1", "t1/2"]
    ret, cancel = parts
    assert [c.name for c in ret.calls] == ["return_items"]
    assert set(ret.params) == {"order_id", "item_ids", "payment_method_id"}
    assert cancel.params == {"order_id": "#W222", "reason": "no longer needed"}  # plain names
    assert "#W111" in ret.task and "#W222" not in ret.task
    assert "#W222" in cancel.task and "lamp" not in cancel.task
    assert all(p.task.startswith("Your name is") for p in parts)  # who asks: redacted later
    assert whole_id("t1/2") == "t1" and whole_id("t1") == "t1"


def test_a_task_naming_one_target_for_two_tools_is_one_workflow():
    offboard = Trace(
        task="Ines (ines@corp.example) left: revoke her access and disable her account.",
        params={"email": "ines@corp.example"},
        calls=[ToolCall(name="revoke_access", arguments={"email": "ines@corp.example"}, result="ok"),
               ToolCall(name="disable_account", arguments={"email": "ines@corp.example"}, result="ok")],
        outcome=VERIFIED)
    assert split(offboard) is None
    assert split(_orders_trace("cancel every order of c1")) is None  # one tool
    assert clauses("Do a; then b, and also c. Next d.") == ["Do a", "then b", "and also c.", "Next d."]


@pytest.fixture
def shop(tmp_path, embedder):
    from skill_library import SkillLibrary

    library = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"))
    library.register_tools({
        "return_items": ToolSpec(description="Return some items of a delivered order."),
        "cancel_order": ToolSpec(description="Cancel a pending order."),
    })
    yield library
    library.close()


def test_learning_a_compound_trace_stores_its_parts_and_a_plan_composes_them(shop):
    result = shop.learn(_compound())
    assert len(result.parts) == 2 and all(p.status == "saved" for p in result.parts)
    names = sorted(s.name for s in shop.list())
    assert names == ["cancel_order_workflow", "return_items_workflow"] or len(names) == 2
    texts = " ".join(s.when + (s.code or "") for s in shop.list())
    for value in ("Ines", "Garcia", "#W111", "#W222", "paypal_9"):
        assert value not in texts
    plan = shop.plan("For order #W5, return the mug via paypal_1. Also cancel order #W6 because it was a mistake.")
    assert [s.name for s in plan.steps] == [p.skill.name for p in result.parts]
    assert "#W5" in plan.steps[0].part and "#W6" in plan.steps[1].part
    assert plan.compound and "order_id" in plan.steps[1].params
    fetched = shop.fetch("For order #W5, return the mug via paypal_1. Also cancel order #W6 because it was a mistake.",
                         k=2, plan=True)  # the flag on fetch gives the same plan beside the matches
    assert [s.name for s in fetched.plan.steps] == [s.name for s in plan.steps] and len(fetched) >= 1
    assert shop.fetch("cancel order #W6", k=1).plan is None
    single = shop.plan("Please cancel my order #W7, I no longer need it.")
    assert [s.name for s in single.steps] == [result.parts[1].skill.name] and not single.compound
    with pytest.raises(ValueError, match="non-empty"):
        shop.plan("  ")
    # the plan runs as its steps, each a run of its own skill, in order
    done: list[str] = []
    tools = {"return_items": lambda **kw: done.append("return") or "ok",
             "cancel_order": lambda **kw: done.append("cancel") or "ok"}
    args = [{"order_id": "#W5", "item_ids": ["I9"], "payment_method_id": "paypal_1"},
            {"order_id": "#W6", "reason": "a mistake"}]
    ran = shop.run_plan(plan, args, tools)
    assert ran.ok and done == ["return", "cancel"] and ran.stopped_at is None
    assert [r.trace.calls[-1].name for r in ran.runs] == ["return_items", "cancel_order"]
    failing = {**tools, "return_items": lambda **kw: (_ for _ in ()).throw(RuntimeError("closed"))}
    stopped = shop.run_plan(plan, args, failing)
    assert not stopped.ok and stopped.stopped_at == 0 and len(stopped.runs) == 1
    with pytest.raises(ValueError, match="one argument mapping per step"):
        shop.run_plan(plan, args[:1], tools)


def test_a_long_recipe_keeps_its_first_step_and_its_last_and_names_stay_within_openais_64_characters():
    from skill_library.induction.description import MAX_NAME_CHARS, behaviour_name

    steps = ["mine_log", "craft_planks", "craft_crafting_table", "craft_sticks", "craft_wooden_pickaxe",
             "smelt_iron_ingot"]
    calls = [(tool, {}, False) for tool in steps]
    name = behaviour_name(calls)
    assert name == "mine_log_and_craft_planks_and_smelt_iron_ingot"
    taken: list[str] = []
    for _ in range(12):  # look-alikes of the same steps get counters: every one still fits
        taken.append(behaviour_name(calls, taken=taken))
    assert len(set(taken)) == 12 and max(len(n) for n in taken) <= 64
    long_tool = [("record_the_quarterly_inventory_reconciliation_for_the_regional_warehouse", {}, False)]
    assert len(behaviour_name(long_tool, taken=["record_the_quarterly_inventory_reconciliation_for_the"])) <= 64
    assert MAX_NAME_CHARS + len("_999") <= 64
