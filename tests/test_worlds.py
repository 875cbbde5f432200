"""Benchmark worlds: registry, tools and schemas, verification, informative errors, seeds, suites."""

from __future__ import annotations

import itertools
import re
import sys
import textwrap

import pytest

from benchmarks.tasks import generate
from benchmarks.worlds import GoldAction, Task, ToolError, discover, get_world, load_tasks, world_names
from benchmarks.worlds.crafting import ITEMS, PHRASES, CraftingWorld, phrase, plan
from benchmarks.worlds.shop import ShopWorld


def test_registry_finds_both_worlds_and_rejects_unknown_names():
    assert {"crafting", "shop"} <= set(world_names())
    assert isinstance(get_world("crafting"), CraftingWorld)
    assert isinstance(get_world("shop"), ShopWorld)
    with pytest.raises(KeyError, match="unknown world 'nope'"):
        get_world("nope")


def test_a_new_world_is_one_file(tmp_path, monkeypatch):
    package = tmp_path / "extra_worlds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "counter.py").write_text(
        textwrap.dedent(
            """
            from benchmarks.worlds.base import ToolError, Verdict, World

            class CounterWorld(World):
                name = "counter"

                def reset(self, seed=0, task=None):
                    self.seed, self.n = seed, seed

                def tool_functions(self):
                    return {"add": self.add}

                def add(self, k):
                    self.n += k
                    return self.n

                def tool_schemas(self):
                    return {"add": {"type": "object", "properties": {"k": {"type": "integer"}},
                                    "required": ["k"], "additionalProperties": False}}

                def tool_descriptions(self):
                    return {"add": "add k"}

                def state(self):
                    return {"n": self.n}

                def verify(self, task):
                    return Verdict(success=self.n == task.goal["n"])
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover("extra_worlds")
    assert list(found) == ["counter"]
    world = found["counter"]()
    world.reset(2)
    assert world.tools()["add"](k=3) == 5
    with pytest.raises(ToolError, match="argument k must be of type integer"):
        world.tools()["add"](k="3")
    sys.modules.pop("extra_worlds.counter", None)
    sys.modules.pop("extra_worlds", None)


@pytest.mark.parametrize("name", ["crafting", "shop"])
def test_every_tool_has_an_object_schema_and_a_description(name):
    world = get_world(name)
    world.reset(0)
    tools, schemas, descriptions = world.tools(), world.tool_schemas(), world.tool_descriptions()
    assert set(tools) == set(schemas) == set(descriptions)
    for tool, schema in schemas.items():
        assert schema["type"] == "object", tool
        assert isinstance(schema.get("properties"), dict), tool
        assert descriptions[tool].strip(), tool
    assert len(world.openai_tools()) == len(tools)
    # a description for the agent (1-3 sentences), not the developer docstring
    description = world.description.strip()
    assert description and description != (type(world).__doc__ or "").strip()
    assert 1 <= len(re.split(r"(?<=\.)\s+", description)) <= 3, description
    if name == "crafting":
        assert all(f"`{tool}`" in description for tool in tools)
    if name == "shop":
        assert len(tools) >= 10


@pytest.mark.parametrize("name", ["crafting", "shop"])
def test_every_gold_trace_verifies(name):
    world = get_world(name)
    tasks = load_tasks(name)
    for task in tasks:
        world.reset(0, task)
        assert not world.verify(task).success or name == "crafting" and not task.goal["items"], task.id
        results = world.replay(task.gold)
        assert [r["error"] for r in results] == [None] * len(results), task.id
        verdict = world.verify(task)
        assert verdict.success, (task.id, verdict.evidence)


def test_crafting_tech_tree_reaches_diamond_tools_and_verifies_on_inventory():
    assert len(ITEMS) >= 25
    for item in ("log", "planks", "stick", "crafting_table", "wooden_pickaxe", "stone_pickaxe",
                 "iron_pickaxe", "furnace", "coal", "iron_ingot", "diamond_pickaxe"):
        assert item in ITEMS
    assert set(PHRASES) == set(ITEMS)
    world = CraftingWorld()
    task = Task(id="t", world="crafting", instruction=phrase("iron_ingot", 2), params={"count": 2},
                split="test", goal={"items": {"iron_ingot": 2}})
    world.reset(0)
    verdict = world.verify(task)
    assert not verdict.success and verdict.evidence["short"] == {"iron_ingot": 2}
    # a plan for one ingot falls short of two
    world.replay(plan({"iron_ingot": 1}))
    assert world.inventory["iron_ingot"] == 1
    assert not world.verify(task).success
    world.replay([GoldAction(name="smelt", arguments={"item": "iron_ingot", "count": 1})])
    assert not world.verify(task).success  # out of ore and coal: the call failed
    world.replay([GoldAction(name="mine", arguments={"block": "iron_ore", "count": 1}),
                  GoldAction(name="mine", arguments={"block": "coal", "count": 1}),
                  GoldAction(name="smelt", arguments={"item": "iron_ingot", "count": 1})])
    assert world.verify(task).success


def test_crafting_errors_say_what_is_missing():
    world = CraftingWorld()
    world.reset(0)
    tools = world.tools()
    with pytest.raises(ToolError) as err:
        tools["craft"](item="stone_pickaxe", count=2)
    message = str(err.value)
    assert "needs a crafting_table in the inventory" in message
    assert "need 6 cobblestone, have 0" in message and "need 4 stick, have 0" in message
    with pytest.raises(ToolError, match=r"needs a stone_pickaxe or better \(best pickaxe: none\)"):
        tools["mine"](block="iron_ore", count=1)
    with pytest.raises(ToolError, match="needs a furnace.*need 2 iron_ore, have 0.*need 2 coal as fuel, have 0"):
        tools["smelt"](item="iron_ingot", count=2)
    with pytest.raises(ToolError, match="iron_ingot cannot be crafted; it is made with smelt"):
        tools["craft"](item="iron_ingot", count=1)
    with pytest.raises(ToolError, match="planks cannot be mined; it is made with craft"):
        tools["mine"](block="planks", count=1)
    with pytest.raises(ToolError, match="unknown item 'gold_block'"):
        tools["craft"](item="gold_block", count=1)
    with pytest.raises(ToolError, match="count must be at least 1"):
        tools["mine"](block="log", count=0)
    with pytest.raises(ToolError, match="missing required argument"):
        tools["mine"](count=1)
    tools["mine"](block="log", count=1)
    tools["craft"](item="planks", count=1)
    with pytest.raises(ToolError) as err:
        tools["craft"](item="chest", count=1)
    assert str(err.value) == (
        "cannot craft 1 chest: needs a crafting_table in the inventory; need 8 planks, have 4"
    )


def test_crafting_recipes_scale_with_count():
    world = CraftingWorld()
    world.reset(0)
    world.inventory = {"log": 3}
    result = world.tools()["craft"](item="planks", count=9)  # three batches of four
    assert result["added"] == 12 and result["inventory"] == {"planks": 12}
    world.inventory = {}
    with pytest.raises(ToolError, match="need 8 planks, have 0"):
        world.tools()["craft"](item="crafting_table", count=2)


def test_crafting_is_deterministic():
    a, b = CraftingWorld(), CraftingWorld()
    for world in (a, b):
        world.reset(5)
        world.replay(plan({"torch": 4}))
    assert a.state() == b.state()
    a.reset(5)
    assert a.state() == {"inventory": {}}


def test_shop_is_generated_from_the_seed():
    a, b, c = ShopWorld(), ShopWorld(), ShopWorld()
    a.reset(0)
    b.reset(0)
    c.reset(1)
    assert a.state() == b.state()
    assert a.state() != c.state()
    db = a.state()
    assert len(db["users"]) >= 20 and len(db["orders"]) >= 40 and len(db["products"]) >= 8
    assert {o["status"] for o in db["orders"].values()} >= {"pending", "delivered", "processed", "cancelled"}
    assert all(len(p["variants"]) >= 4 for p in db["products"].values())
    a.cancel_pending_order(next(o for o, v in a.db["orders"].items() if v["status"] == "pending"), "no longer needed")
    assert a.state() != b.state()
    a.reset(0)
    assert a.state() == b.state()


def test_shop_wrong_actions_fail_verification():
    world = ShopWorld()
    tasks = {t.workflow: t for t in load_tasks("shop", "train")}
    cancel = tasks["cancel_by_email"]
    world.reset(0, cancel)
    assert not world.verify(cancel).success  # nothing done
    other = "ordered by mistake" if cancel.params["reason"] == "no longer needed" else "no longer needed"
    world.tools()["cancel_pending_order"](order_id=cancel.params["order_id"], reason=other)
    verdict = world.verify(cancel)
    assert not verdict.success
    assert any("cancel_reason" in d for d in verdict.evidence["differences"])
    # the right change plus an extra one also fails
    world.reset(0, cancel)
    world.replay(cancel.gold)
    assert world.verify(cancel).success
    moved = tasks["user_address"]
    world.replay(moved.gold)
    assert not world.verify(cancel).success


def test_shop_errors_are_informative():
    world = ShopWorld()
    world.reset(0)
    tools = world.tools()
    db = world.db
    delivered = next(o for o in db["orders"].values() if o["status"] == "delivered")
    pending = next(o for o in db["orders"].values() if o["status"] == "pending")
    with pytest.raises(ToolError, match=r"is delivered; only pending orders can be cancelled"):
        tools["cancel_pending_order"](order_id=delivered["order_id"], reason="no longer needed")
    with pytest.raises(ToolError, match="must be one of"):
        tools["cancel_pending_order"](order_id=pending["order_id"], reason="too expensive")
    with pytest.raises(ToolError, match="no user has the email 'x@y.z'"):
        tools["find_user_id_by_email"](email="x@y.z")
    with pytest.raises(ToolError, match=r"order ids look like '#W1234567'"):
        tools["get_order_details"](order_id="1234567")
    with pytest.raises(ToolError, match="is not in order"):
        tools["return_delivered_order_items"](
            order_id=delivered["order_id"], item_ids=["0"],
            payment_method_id=delivered["payment_history"][0]["payment_method_id"],
        )
    with pytest.raises(ToolError, match="is not a payment method of user"):
        tools["modify_pending_order_payment"](order_id=pending["order_id"], payment_method_id="paypal_0")
    with pytest.raises(ToolError, match="argument item_ids must be of type array"):
        tools["return_delivered_order_items"](order_id=delivered["order_id"], item_ids="1", payment_method_id="x")
    with pytest.raises(ToolError, match="unknown argument"):
        tools["get_user_details"](user_id="a", verbose=True)


def test_shop_cancel_refunds_and_gift_cards_track_balances():
    world = ShopWorld()
    world.reset(0)
    order = next(
        o for o in world.db["orders"].values()
        if o["status"] == "pending"
        and any(m.startswith("gift_card") for m in world.db["users"][o["user_id"]]["payment_methods"])
    )
    user = world.db["users"][order["user_id"]]
    gift = next(m for m in user["payment_methods"] if m.startswith("gift_card"))
    balance = user["payment_methods"][gift]["balance"]
    amount = order["payment_history"][0]["amount"]
    if amount <= balance:
        world.tools()["modify_pending_order_payment"](order_id=order["order_id"], payment_method_id=gift)
        assert user["payment_methods"][gift]["balance"] == pytest.approx(balance - amount)
        result = world.tools()["cancel_pending_order"](order_id=order["order_id"], reason="no longer needed")
        assert user["payment_methods"][gift]["balance"] == pytest.approx(balance)
    else:
        with pytest.raises(ToolError, match="has a balance of"):
            world.tools()["modify_pending_order_payment"](order_id=order["order_id"], payment_method_id=gift)
        result = world.tools()["cancel_pending_order"](order_id=order["order_id"], reason="no longer needed")
    assert result["status"] == "cancelled"
    assert result["payment_history"][-1]["transaction_type"] == "refund"


# -- task suites ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_task_files_are_in_sync_with_the_generator():
    for world, make in generate.SUITES.items():
        committed = (generate.TASKS_DIR / f"{world}.jsonl").read_text(encoding="utf-8")
        assert committed == generate.to_jsonl(make()), f"run python -m benchmarks.tasks.generate ({world})"
    assert generate.main(["--check"]) == 0


@pytest.mark.parametrize("name", ["crafting", "shop"])
def test_suites_have_forty_tasks_split_into_train_and_test(name):
    tasks = load_tasks(name)
    assert len(tasks) >= 40
    assert len({t.id for t in tasks}) == len(tasks)
    train, test = load_tasks(name, "train"), load_tasks(name, "test")
    assert len(train) >= 20 and len(test) >= 20 and len(train) + len(test) == len(tasks)
    assert all(t.world == name and t.gold for t in tasks)
    train_flows = {t.workflow: t for t in train}
    same = [t for t in test if t.workflow in train_flows]
    assert len(same) >= 8
    # test tasks repeat train workflows with other values...
    assert all(t.params != train_flows[t.workflow].params for t in same)
    train_keys = {(t.workflow, json_key(t.params)) for t in train}
    assert not any((t.workflow, json_key(t.params)) in train_keys for t in test)
    # ...and combine them in new ways
    assert sum(1 for t in test if "+" in t.workflow) >= 4
    for task in tasks:
        for value in task.params.values():
            shown = ", ".join(value) if isinstance(value, list) else str(value)
            assert shown in task.instruction, (task.id, value)


def json_key(params):
    import json

    return json.dumps(params, sort_keys=True)


def test_crafting_instructions_are_the_phrases_of_their_goals():
    for task in load_tasks("crafting"):
        items = task.goal["items"]
        if len(items) == 1:
            (item, count), = items.items()
            assert task.instruction == phrase(item, count)
            assert task.params == {"count": count}


def test_learned_when_texts_of_different_crafting_workflows_stay_apart(embedder):
    """The library de-duplicates skills whose ``when`` is > 0.9 similar; ours stay below 0.85."""
    items = sorted(PHRASES)
    vectors = embedder.embed([PHRASES[i] for i in items])
    worst = max(
        (sum(x * y for x, y in zip(vectors[a], vectors[b])), items[a], items[b])
        for a, b in itertools.combinations(range(len(items)), 2)
    )
    assert worst[0] < 0.85, worst
    # and a sub-goal's text is closest to its own item's when text
    texts = embedder.embed([phrase(i, 3) for i in items])
    for row, item in zip(texts, items):
        sims = [sum(x * y for x, y in zip(row, v)) for v in vectors]
        assert items[max(range(len(items)), key=sims.__getitem__)] == item
