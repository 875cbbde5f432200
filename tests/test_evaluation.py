"""Evaluation (issue 10): suites, side-by-side runs, what is stored, critical regressions."""

from __future__ import annotations

import json

import pytest

from skill_library.errors import LifecycleError
from skill_library.governance.suite import Suite, SuiteError
from skill_library.models import Skill
from tests.governance_world import V1, V2, V3, WHEN, actors, factory, governed_library

SUITE = {
    "id": "shelf",
    "tasks": [
        {"id": "pear-3", "instruction": "restock 3 pear", "params": {"item": "pear", "count": 3},
         "goal": {"pear": 3}, "critical": True},
        {"id": "apple-8", "instruction": "restock 8 apple", "params": {"item": "apple", "count": 8},
         "goal": {"apple": 8}},
        {"id": "plum-9", "instruction": "restock 9 plum", "params": {"item": "plum", "count": 9},
         "goal": {"plum": 9}},
    ],
}


@pytest.fixture
def library(tmp_path, embedder):
    """These tests govern: the default policy (read_only), not the suite's opt-in to ``all``."""
    lib = governed_library(tmp_path / "lib", embedder)
    yield lib
    lib.close()



def test_suite_files_json_yaml_jsonl_and_a_content_hash(tmp_path):
    as_json = tmp_path / "shelf.json"
    as_json.write_text(json.dumps(SUITE))
    as_yaml = tmp_path / "shelf.yaml"
    import yaml

    as_yaml.write_text(yaml.safe_dump(SUITE))
    as_jsonl = tmp_path / "shelf.jsonl"
    as_jsonl.write_text("\n".join(json.dumps(t) for t in SUITE["tasks"]) + "\n")
    suites = [Suite.load(p) for p in (as_json, as_yaml, as_jsonl)]
    assert {s.id for s in suites} == {"shelf"}
    assert len({s.content_hash for s in suites}) == 1 and len(suites[0].content_hash) == 64
    edited = json.loads(json.dumps(SUITE))
    edited["tasks"][1]["params"]["count"] = 7
    as_json.write_text(json.dumps(edited))
    assert Suite.load(as_json).content_hash != suites[0].content_hash
    assert Suite.load(as_jsonl).tasks[0].critical is True


def test_the_harness_task_files_load_as_suites():
    from benchmarks.worlds.base import TASKS_DIR

    suite = Suite.load(TASKS_DIR / "crafting.jsonl")
    assert suite.id == "crafting" and suite.tasks[0].gold and suite.tasks[0].world == "crafting"


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "is not valid json"),
        ('{"tasks": []}', "tasks"),
        ('{"tasks": [{"id": "a", "instruction": "x", "critcal": true}]}', "critcal"),
        ('{"tasks": [{"id": "a", "instruction": "x"}, {"id": "a", "instruction": "y"}]}', "appears twice"),
    ],
)
def test_a_bad_suite_file_is_one_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(SuiteError, match=message) as info:
        Suite.load(path)
    assert "\n" not in str(info.value)


def two_versions(library, candidate=V2):
    """stock_item v1 active, and a draft candidate v2 proposed by the service actor."""
    proposer, approver = actors(library)
    library.add(Skill.from_function(V1, when=WHEN, tools=["restock"]), verified=True)
    draft = library.propose(Skill.from_function(candidate, when=WHEN, tools=["restock"]), actor=proposer)
    return draft, proposer, approver


def test_an_evaluation_stores_suite_model_and_every_per_task_detail(library):
    draft, proposer, _ = two_versions(library)
    suite = Suite.model_validate({**SUITE, "tasks": SUITE["tasks"] + [
        {"id": "fig-2", "instruction": "restock 2 fig", "params": {"item": "fig", "count": 2}, "goal": {"fig": 2}},
    ]})
    result = library.evaluate("stock_item", draft.version, suite, factory, actor=proposer)
    assert [e.model_dump() for e in library.evaluations("stock_item")] == [result.model_dump()]
    assert library.evaluations("stock_item", version=1) == []
    stored = library.evaluations("stock_item", version=draft.version)[-1]
    assert stored.suite_id == "shelf" and stored.suite_hash == suite.content_hash
    assert stored.active_version == 1 and stored.actor == "pat" and stored.tenant == "default"
    assert stored.model["executor"] == "sandbox" and stored.model["candidate"]["generalizer"] == "hand-written"
    by_id = {r.task_id: r for r in stored.results}
    apple = by_id["apple-8"]
    assert (apple.active.success, apple.candidate.success) == (False, True)
    assert [(c.name, c.arguments) for c in apple.active.calls] == [("restock", {"item": "apple", "count": 5})]
    assert [(c.name, c.arguments) for c in apple.candidate.calls] == [("restock", {"item": "apple", "count": 8})]
    assert apple.candidate.tokens == 7 and apple.candidate.latency_ms > 0
    fig = by_id["fig-2"].candidate
    assert not fig.success and fig.error and fig.denied and fig.denied[0].arguments["rush"] is True
    assert "invalid arguments for tool 'restock'" in fig.denied[0].error
    assert by_id["pear-3"].critical and by_id["pear-3"].regression
    assert not stored.passed and stored.critical_regressions == ["pear-3"]
    assert any("critical task 'pear-3' regressed" in r for r in stored.reasons)
    # nothing of the evaluation is a live outcome or trace
    assert library.get("stock_item", draft.version).outcomes == 0 and library.get("stock_item").outcomes == 1
    assert library.get("stock_item", draft.version).status == "draft"


def test_gold_actions_check_a_task_when_the_factory_gives_no_check(library, tmp_path):
    from skill_library.governance.suite import TaskEnvironment
    from tests.governance_world import Shelf

    draft, proposer, _ = two_versions(library, candidate=V3)
    suite = Suite(id="gold", tasks=[
        {"id": "g", "instruction": "restock 7 kiwi", "params": {"item": "kiwi", "count": 7},
         "gold": [{"name": "restock", "arguments": {"item": "kiwi", "count": 7}}]},
    ])
    result = library.evaluate("stock_item", draft.version, suite,
                              lambda task: TaskEnvironment(tools={"restock": Shelf().restock}),
                              actor=proposer)
    task = result.results[0]
    assert task.candidate.success and not task.active.success
    assert task.active.evidence["expected"] == [["restock", {"item": "kiwi", "count": 7}]]
    assert result.passed and library.get("stock_item", draft.version).status == "evaluated"
    event = library.audit("stock_item")[-1]
    assert (event.from_status, event.to_status, event.actor) == ("draft", "evaluated", "pat")
    assert event.evidence["evaluation_id"] == result.id and event.evidence["suite_hash"] == suite.content_hash


def test_a_critical_regression_blocks_approval_even_when_the_average_improves(library):
    draft, proposer, approver = two_versions(library)
    relaxed = Suite(id="relaxed", tasks=[t for t in SUITE["tasks"] if not t.get("critical")])
    assert library.evaluate("stock_item", draft.version, relaxed, factory, actor=proposer).passed
    assert library.get("stock_item", draft.version).status == "evaluated"
    strict = library.evaluate("stock_item", draft.version, Suite.model_validate(SUITE), factory, actor=proposer)
    assert strict.candidate_success_rate > strict.active_success_rate  # 2/3 against 1/3
    assert not strict.passed and strict.critical_regressions == ["pear-3"]
    with pytest.raises(LifecycleError, match="latest evaluation .* failed: critical task 'pear-3' regressed"):
        library.approve("stock_item", draft.version, actor=approver)
    assert library.get("stock_item", draft.version).status == "evaluated"
    # a fresh draft that fails its first evaluation stays a draft and cannot be approved
    other = library.propose(Skill.from_function(V2.replace("count + 1", "count + 2"), when=WHEN,
                                                tools=["restock"]), actor=proposer)
    assert not library.evaluate("stock_item", other.version, Suite.model_validate(SUITE), factory,
                                actor=proposer).passed
    with pytest.raises(LifecycleError, match="latest evaluation .* failed"):
        library.approve("stock_item", other.version, actor=approver)
    assert library.get("stock_item", other.version).status == "draft"


def test_evaluating_needs_the_propose_permission(library):
    from skill_library.errors import PermissionDenied
    from skill_library.governance import Actor

    draft, _, _ = two_versions(library)
    reader = Actor(id="ro", kind="service", permissions=frozenset())
    library.actors.add(reader)
    with pytest.raises(PermissionDenied, match="ro.*skill.propose"):
        library.evaluate("stock_item", draft.version, Suite.model_validate(SUITE), factory, actor=reader)
    assert library.evaluations("stock_item") == []


def test_a_new_skill_is_evaluated_on_a_benchmark_suite_with_its_world_factory(library):
    from benchmarks.worlds.base import TASKS_DIR
    from benchmarks.worlds.crafting import factory as crafting

    every = Suite.load(TASKS_DIR / "crafting.jsonl")
    logs = Suite(id="crafting-logs", tasks=[t.model_copy(update={"critical": True}) for t in every.tasks
                                            if t.workflow == "obtain:log"][:2])
    proposer, _ = actors(library)
    code = "def chop_logs(count: int):\n    return mine(block='log', count=count)\n"
    draft = library.propose(Skill.from_function(code, when="chop {count} logs", tools=["mine"]), actor=proposer)
    result = library.evaluate("chop_logs", draft.version, logs, crafting, actor=proposer)
    assert result.active_version is None and all(r.active is None for r in result.results)
    assert result.passed, result.reasons
    assert [r.candidate.calls[0].name for r in result.results] == ["mine", "mine"]
    assert library.get("chop_logs", draft.version).status == "evaluated"


def test_a_passed_read_only_version_is_approved_by_the_policy_and_a_side_effect_one_waits(library):
    from skill_library.governance import ToolSpec

    draft, proposer, _ = two_versions(library, candidate=V3)
    relaxed = Suite(id="relaxed", tasks=[t for t in SUITE["tasks"] if not t.get("critical")])
    assert library.evaluate("stock_item", draft.version, relaxed, factory, actor=proposer).passed
    assert library.get("stock_item", draft.version).status == "evaluated"  # restock: undeclared, side effects
    library.register_tools({"restock": ToolSpec(side_effects=False)})
    other = library.propose(Skill.from_function(V3 + "\n", when=WHEN, tools=["restock"]), actor=proposer)
    assert library.evaluate("stock_item", other.version, relaxed, factory, actor=proposer).passed
    assert library.get("stock_item", other.version).status == "approved"
    event = library.audit("stock_item")[-1]
    assert (event.to_status, event.actor) == ("approved", "system") and "auto-approved" in event.reason
