"""The shop world's ``users`` suite and the harness's library-quality reporting.

The suite is checked whole (it is generated data: every gold solution must verify); the
harness is run on a small slice of it, the full run belongs to the benchmark command.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from benchmarks import __main__ as cli
from benchmarks import report
from benchmarks.harness import (
    RunConfig,
    probe_fetched_skills,
    right_workflow,
    run_benchmark,
    skill_workflows,
    suite_path,
)
from benchmarks.tasks import shop_users
from benchmarks.worlds import get_world, load_tasks


@pytest.fixture(scope="module")
def tasks():
    return load_tasks("shop", path=suite_path("shop", "users"))


def _names_and_emails(task):
    text = task.instruction
    emails = set(re.findall(r"[\w.]+@example\.com", text))
    first = {n for n in re.findall(r"[A-Z][a-z]+", text)} & set(shop_users_first_names())
    return emails, first


def shop_users_first_names():
    from benchmarks.worlds.shop import FIRST_NAMES

    return FIRST_NAMES


def test_the_suite_has_the_shape_the_issue_asks_for(tasks):
    train = [t for t in tasks if t.split == "train"]
    test = [t for t in tasks if t.split == "test"]
    assert len(train) >= 200 and len(test) >= 40
    assert len({t.id for t in tasks}) == len(tasks)
    workflows = {t.workflow for t in train}
    assert len(workflows) <= 30 and {t.workflow for t in test} <= workflows
    assert all(t.world == "shop" and t.gold and t.params and t.workflow for t in tasks)
    # several phrasings per workflow; the test ones are held out
    for workflow in workflows:
        _, phrasings = shop_users.REQUESTS[workflow]
        assert len(phrasings) - shop_users.TRAIN_PHRASINGS >= 2
    # persona sentences, moods and chatter around the request
    assert all(re.search(r"@example\.com|\b\d{5}\b", t.instruction) for t in tasks)
    assert sum(any(m and m in t.instruction for m in shop_users.MOODS) for t in tasks) > len(tasks) / 2
    assert sum(any(c and c in t.instruction for c in shop_users.CHATTER) for t in tasks) > len(tasks) / 3
    # every param is in the message, lists written as people write them
    for t in tasks:
        for value in t.params.values():
            shown = shop_users.say_list(value) if isinstance(value, list) else str(value)
            assert shown in t.instruction, (t.id, value)
    # test tasks are new instances, some with more items than any train task of the workflow
    train_keys = {json.dumps([t.workflow, t.seed, t.params], sort_keys=True) for t in train}
    assert not any(json.dumps([t.workflow, t.seed, t.params], sort_keys=True) in train_keys for t in test)
    most = defaultdict(int)
    for t in train:
        most[t.workflow] = max(most[t.workflow], max(len(a.arguments.get("item_ids", [])) for a in t.gold))
    longer = [t for t in test if max(len(a.arguments.get("item_ids", [])) for a in t.gold) > most[t.workflow]]
    assert len(longer) >= 5


def test_test_customers_never_occur_in_train(tasks):
    seen = defaultdict(set)
    for t in tasks:
        emails, first = _names_and_emails(t)
        assert emails or first, t.id
        seen[t.split, "email"] |= emails
        seen[t.split, "first"] |= first
    assert not seen["train", "email"] & seen["test", "email"]
    assert not seen["train", "first"] & seen["test", "first"]
    assert seen["test", "first"] <= shop_users.TEST_FIRST_NAMES


@pytest.mark.slow
def test_every_gold_solution_verifies(tasks):
    world = get_world("shop")
    for task in tasks:
        world.reset(0, task)
        assert not world.verify(task).success, task.id  # the task asks for a change
        results = world.replay(task.gold)
        assert [r["error"] for r in results] == [None] * len(results), task.id
        assert world.verify(task).success, task.id


def test_no_train_trace_of_one_workflow_is_also_a_trace_of_another(tasks):
    """Train returns of chosen items keep some items: the same calls as a whole-order return
    would make one trace evidence for two workflows."""
    world = get_world("shop")
    for task in tasks:
        if task.split == "train" and task.workflow.startswith("return_items"):
            world.reset(0, task)
            order = world.call("get_order_details", {"order_id": task.params["order_id"]})
            assert len(task.params["item_ids"]) < len(order["items"]), task.id
    calls = defaultdict(set)
    for task in tasks:
        if task.split == "train":
            calls[json.dumps([[a.name, a.arguments] for a in task.gold], sort_keys=True)].add(task.workflow)
    assert all(len(flows) == 1 for flows in calls.values())


def test_an_unknown_suite_is_named(tmp_path, capsys):
    assert cli.main(["run", "--world", "shop", "--suite", "nope", "--agent", "replay",
                     "--out", str(tmp_path), "--no-progress"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "no suite 'nope'" in out and "users" in out


def test_skill_workflows_follow_the_learn_statuses():
    rows = [
        {"task_id": "a1", "workflow": "a", "learn": {"status": "saved", "skill": "do_a"}},
        {"task_id": "a2", "workflow": "a", "learn": {"status": "merged", "skill": "do_a"}},
        {"task_id": "b1", "workflow": "b", "learn": {"status": "revised", "skill": "do_a"}},
        {"task_id": "b2", "workflow": "b", "learn": {"status": "duplicate", "skill": "do_b"}},
        {"task_id": "c1", "workflow": "c", "learn": {"status": "held", "skill": "do_c"}},
        {"task_id": "c2", "workflow": "c", "learn": {"status": "rejected", "skill": None}},
        {"task_id": "c3", "workflow": "c", "learn": None},
    ]
    assert skill_workflows(rows) == {"do_a": {"a", "b"}, "do_b": {"b"}}
    assert right_workflow("a", {"a", "b"}) and not right_workflow("c", {"a"})
    assert right_workflow("a+c", {"a"})


def test_paired_outcomes_list_the_tasks_skills_made_worse():
    def row(condition, task, ok, seed=0):
        return {"condition": condition, "phase": "test", "seed": seed, "task_id": task,
                "workflow": task[0], "success": ok, "stopped": None}

    records = [row("none", "a1", True), row("skills", "a1", False), row("none", "b1", False),
               row("skills", "b1", True), row("none", "a1", True, 1), row("skills", "a1", True, 1)]
    pairs = report.paired(records, ["none", "skills"])
    assert [w["task_id"] for w in pairs["skills"]["made_worse"]] == ["a1"]
    assert pairs["skills"]["made_worse"][0]["seed"] == 0
    assert [b["task_id"] for b in pairs["skills"]["made_better"]] == ["b1"]
    assert pairs["skills"]["pairs"] == 3
    assert report.paired(records, ["skills"]) == {}


def test_harness_reports_the_library_alone_on_a_slice_of_the_suite(tasks, tmp_path, embedder):
    # two workflows, three train traces each, and one test task of each
    flows = ("cancel_order", "change_payment")
    train = [t for t in tasks if t.split == "train" and t.workflow in flows][:6]
    test = [next(t for t in tasks if t.split == "test" and t.workflow == f) for f in flows]
    config = RunConfig(world="shop", suite="users", agent="replay", conditions=["none", "skills"],
                       out=tmp_path, command="python -m benchmarks run --world shop --suite users")
    results = run_benchmark(config, tasks=train + test, embedder=embedder)
    q = results["skill_quality"]["skills"]
    library = results["libraries"]["skills-seed0"]["skills"]
    assert q["skills"] == len({s["name"] for s in library}) >= 1
    assert q["train_workflows"] == 2 and q["skills_per_workflow"] == q["skills"] / 2
    assert q["test_tasks"] == 2 and set(q["learn_statuses"]) <= set(report.LEARN_STATUSES) | {"error"}
    probes = results["probes"]
    assert [p["task_id"] for p in probes] == [t.id for t in test]
    for p in probes:
        assert p["condition"] == "skills" and p["seed"] == 0
        assert p["right_workflow"] == (p["workflow"] in p["skill_workflows"])
        assert not p["success"] or p["bound"] and p["ran_ok"] and p["tool_calls"] > 0
    assert q["fetch_at_1"] == sum(p["right_workflow"] for p in probes) / 2
    assert q["fetched_success"] == sum(p["success"] for p in probes) / 2
    assert set(q["by_workflow"]) == set(flows) and all(w["tasks"] == 1 for w in q["by_workflow"].values())
    assert set(results["made_worse"]) == {"skills"}
    assert results["paired"]["skills"]["pairs"] == 2
    # the replay agent replays what its skills did not do: skills never make it fail here
    assert results["made_worse"]["skills"] == []
    text, _ = report.write(results, tmp_path)
    assert "## The library alone on the test tasks" in text and "skills, by test workflow" in text
    assert "**0 made worse**" in text and "Command: `python -m benchmarks run --world shop --suite users`" in text
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["made_worse"] == {"skills": []} and len(saved["probes"]) == 2


def test_probe_runs_the_fetched_skill_and_counts_an_unbound_parameter_as_a_failure(tasks, library):
    from skill_library.induction import DataflowGeneralizer
    from skill_library.models import Outcome, ToolCall, Trace

    task = next(t for t in tasks if t.split == "train" and t.workflow == "cancel_order")
    world = get_world("shop")
    world.reset(0, task)
    calls = [ToolCall(name=a.name, arguments=dict(a.arguments), result=world.call(a.name, dict(a.arguments)))
             for a in task.gold]
    trace = Trace(task=task.instruction, params=dict(task.params), calls=calls,
                  outcome=Outcome(success=True, verifier="test"))
    learned = library.learn(trace, generalizer=DataflowGeneralizer())
    assert learned.status == "saved"
    workflows = {learned.skill.name: {"cancel_order"}}
    (probe,) = probe_fetched_skills(library, world, [task], workflows)
    assert probe["skill"] == learned.skill.name and probe["right_workflow"]
    assert probe["bound"] and probe["ran_ok"] and probe["success"] and probe["tool_calls"] == 3
    assert "reason" in learned.skill.parameters["properties"]
    unbound = task.model_copy(update={"params": {k: v for k, v in task.params.items() if k != "reason"}})
    (probe,) = probe_fetched_skills(library, world, [unbound], {})
    assert not probe["right_workflow"] and not probe["bound"] and not probe["success"]
    assert "reason" in probe["error"]


def test_replay_agent_trusting_fetch_learns_from_gold_and_can_be_made_worse(tasks, tmp_path, embedder):
    """fit=top: no skills while learning; at test the top skill runs if it binds, right or wrong.

    The library knows only a return skill; an exchange of a delivered order binds its
    parameters (email, order_id, item_ids, payment_method_id), so the agent runs it: the
    order becomes "return requested" and the gold exchange fails. Without skills it succeeds.
    """
    world = get_world("shop")

    def refund_allowed(t):  # the return skill's refund must be allowed for the exchange's method
        world.reset(0, t)
        order = world.call("get_order_details", {"order_id": t.params["order_id"]})
        method = t.params["payment_method_id"]
        return method == order["payment_history"][0]["payment_method_id"] or method.startswith("gift_card")

    train = [next(t for t in tasks if t.split == "train" and t.workflow == "return_items")]
    test = [next(t for t in tasks if t.split == "test" and t.workflow == "exchange_items" and refund_allowed(t))]
    config = RunConfig(world="shop", suite="users", agent="replay", conditions=["none", "skills"],
                       out=tmp_path, agent_options={"fit": "top", "min_similarity": 0.0})
    results = run_benchmark(config, tasks=train + test, embedder=embedder)
    by = {(r["condition"], r["phase"]): r for r in results["records"]}
    assert by["skills", "train"]["fetches"] == 0 and by["skills", "train"]["learn"]["status"] == "saved"
    assert by["none", "test"]["success"] and not by["skills", "test"]["success"]
    assert by["skills", "test"]["skill_invocations"] == 1
    assert [w["task_id"] for w in results["made_worse"]["skills"]] == [test[0].id]
    (probe,) = results["probes"]
    assert probe["skill_workflows"] == ["return_items"] and not probe["right_workflow"]
    text, _ = report.write(results, tmp_path)
    assert "**1 made worse**" in text and test[0].id in text


def test_replay_agent_refuses_an_unknown_fit():
    from benchmarks.agents import get_agent

    with pytest.raises(ValueError, match="fit must be one of when, top"):
        get_agent("replay", fit="best")


def test_retrieval_headroom_script_masks_params_and_value_shaped_tokens(tasks):
    from benchmarks.users_retrieval import mask_params, mask_values

    task = next(t for t in tasks if t.workflow == "exchange_items" and len(t.params["item_ids"]) == 3)
    masked = mask_params(task)
    assert "{item_ids}" in masked and "{new_item_ids}" in masked and "{order_id}" in masked
    assert not any(v in masked for v in task.params["item_ids"] + [task.params["email"]])
    generic = mask_values(task.instruction)
    assert "{order}" in generic and "{id}" in generic and "@" not in generic and "{payment_method}" in generic
