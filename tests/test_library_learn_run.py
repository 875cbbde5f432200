"""SkillLibrary.learn and SkillLibrary.run on real parts: real sandbox workers, real index."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sandbox import Limits
from skill_library.errors import TraceError
from skill_library.models import Outcome, Skill, ToolCall, Trace

STOCK: dict[str, int] = {}


def check(item: str) -> dict:
    return {"item": item, "stock": STOCK.get(item, 0)}


def restock(item: str, count: int) -> dict:
    STOCK[item] = STOCK.get(item, 0) + count
    return {"item": item, "stock": STOCK[item]}


TOOLS = {"check": check, "restock": restock}
VERIFIED = Outcome(success=True, verifier="stock-audit")


def restock_trace(*, with_check: bool = False, count: int = 3) -> Trace:
    """A restock trace; another ``count`` is another trace of the workflow (the same content
    is the same trace: learning it again adds nothing)."""
    calls = [ToolCall(name="check", arguments={"item": "apple"}, result={"item": "apple", "stock": 0})] if with_check else []
    calls.append(ToolCall(name="restock", arguments={"item": "apple", "count": count},
                          result={"item": "apple", "stock": count}))
    return Trace(task=f"restock {count} apples in the fruit aisle", params={"count": count}, calls=calls,
                 outcome=VERIFIED)


def test_learned_skill_runs_with_new_arguments_and_records_its_trace(library):
    learned = library.learn(restock_trace())
    assert learned.status == "saved" and learned.report.passed
    skill = learned.skill
    assert skill.when == "Restock (apple). Needs the count."
    assert (skill.successes, skill.failures) == (1, 0)
    STOCK.clear()
    run = library.run(skill.name, {"count": 5}, TOOLS)
    assert run.ok and run.value == {"item": "apple", "stock": 5}
    assert run.trace.task == "Restock (apple). Needs the count. Arguments: count=5."
    assert [(c.name, c.arguments) for c in run.trace.calls] == [("restock", {"item": "apple", "count": 5})]
    assert library.context.store.get_trace(run.trace.id).calls == run.trace.calls
    assert library.get(skill.name).outcomes == 1  # no verdict yet: success comes from feedback


def test_run_verifier_records_the_outcome(library):
    name = library.learn(restock_trace()).skill.name
    library.run(name, {"count": 1}, TOOLS, verifier=lambda r: r.value["stock"] > 0)
    library.run(name, {"count": 1}, TOOLS, verifier=lambda r: False)

    def broken(run):
        raise RuntimeError("audit service down")

    run = library.run(name, {"count": 1}, TOOLS, verifier=broken)
    skill = library.get(name)
    assert (skill.successes, skill.failures) == (2, 2)
    stored = library.context.store.get_trace(run.trace.id)
    assert stored.outcome.success is False and "audit service down" in stored.outcome.evidence


def test_limit_hit_is_a_recorded_failure_and_the_next_run_works(library):
    code = "def spin(n: int) -> int:\n    x = 0\n    while True:\n        x += n\n    return x\n"
    library.add(Skill.from_function(code, when="spin forever on a number"), verified=True)
    run = library.run("spin", {"n": 1}, {}, limits=Limits(cpu_seconds=1, wall_seconds=3))
    assert not run.ok and run.limit in ("cpu", "wall") and run.error
    assert library.get("spin").failures == 1
    name = library.learn(restock_trace()).skill.name
    assert library.run(name, {"count": 2}, TOOLS).ok


def test_run_only_reaches_declared_tools_and_checks_arguments(library):
    name = library.learn(restock_trace()).skill.name
    calls = []

    def check_spy(item: str) -> dict:  # offered, but the skill never declared it
        calls.append(item)
        return {}

    run = library.run(name, {"count": 1}, {"restock": restock, "check": check_spy})
    assert run.ok and calls == []
    with pytest.raises(ValueError, match="has no parameter\\(s\\) colour"):
        library.run(name, {"count": 1, "colour": "red"}, TOOLS)
    with pytest.raises(ValueError, match="needs argument\\(s\\) count"):
        library.run(name, {}, TOOLS)


def test_relearning_a_workflow_merges_the_trace_as_evidence(library):
    first = library.learn(restock_trace())
    again = library.learn(restock_trace(count=4))  # another trace of the same workflow
    assert again.status == "merged" and again.skill.name == first.skill.name
    assert (again.skill.version, again.skill.successes) == (1, 2)
    assert [e.trace_id for e in library.examples(first.skill.name)] == [
        first.skill.provenance.trace_ids[0], again.skill.provenance.trace_ids[0]
    ] or len(library.examples(first.skill.name)) == 2
    assert len(library.list()) == 1
    other = library.learn(restock_trace(with_check=True))  # different procedure, same task
    assert other.status == "duplicate" and "already does this" in other.reasons[0]
    assert [s.version for s in library.history(first.skill.name)] == [1]


def test_the_same_trace_is_evidence_once(library):
    trace = restock_trace()
    name = library.learn(trace).skill.name
    again = library.learn(trace)
    assert again.status == "duplicate" and "was learned before" in again.reasons[0]
    assert again.duplicate_of == name
    # a trace without an id is known by its content: the same content again is a duplicate
    same = library.learn(restock_trace())
    assert same.status == "duplicate" and "was learned before" in same.reasons[0]
    named = restock_trace(count=4).model_copy(update={"id": "ticket-7"})
    assert library.learn(named).status == "merged"
    assert library.learn(restock_trace(count=4).model_copy(update={"id": "ticket-7"})).status == "duplicate"
    assert library.get(name).successes == 2  # the first trace and ticket-7, once each


def test_relearning_replaces_a_version_that_stopped_working(library):
    name = library.learn(restock_trace()).skill.name
    library.feedback(name, False)
    library.feedback(name, False)  # 1 ok, 2 failed: (1+1)/(3+2) = 0.4 < 0.6
    result = library.learn(restock_trace(with_check=True))
    assert result.status == "revised" and result.skill.name == name and result.skill.version == 2
    assert "check(" in result.skill.code and "dropped out" in result.reasons[0]
    assert [(s.version, s.status) for s in library.history(name)] == [(1, "superseded"), (2, "active")]


def test_a_retired_workflow_is_not_revived_by_learning(library):
    name = library.learn(restock_trace()).skill.name
    library.retire(name)
    result = library.learn(restock_trace(count=4))
    assert result.status == "rejected" and "was retired" in result.reasons[0]
    assert library.get(name).status == "retired"


def test_a_name_taken_by_another_workflow_gets_a_fresh_name(library):
    code = "def restock_apple(n: int) -> int:\n    return n\n"
    library.add(Skill.from_function(code, when="water the plants in the garden"), verified=True)
    learned = library.learn(restock_trace())  # the generalizer names it restock_apple
    assert learned.status == "saved" and learned.skill.name == "restock_apple_2"
    assert "def restock_apple_2(" in learned.skill.code
    assert library.get("restock_apple").when == "water the plants in the garden"
    assert library.run("restock_apple_2", {"count": 1}, TOOLS).ok


def test_unverified_and_broken_traces_store_nothing(library):
    unverified = restock_trace().model_copy(update={"outcome": Outcome(success=True)})
    failed = restock_trace().model_copy(update={"outcome": Outcome(success=False, verifier="audit")})
    only_errors = Trace(task="restock 3 apples", calls=[ToolCall(name="restock", error="out of apples")], outcome=VERIFIED)
    for trace in (unverified, failed, only_errors):
        assert library.learn(trace).status == "rejected"
    transcript = {"task": "restock", "outcome": {"success": True, "verifier": "a"},
                  "messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "restock", "arguments": "{"}}]}]}
    result = library.learn(transcript)
    assert result.status == "rejected" and "message 0" in result.reasons[0]
    assert library.list() == []
    with pytest.raises(TraceError, match="message 0: tool call 'c1' has no function name"):
        Trace.from_openai_messages(
            [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": 7}}]}], task="t", outcome=None
        )


def test_add_refuses_what_it_would_silently_change(library):
    with pytest.raises(ValueError, match="status: add\\(\\) stores active versions"):
        library.add(Skill.from_function("def f(x: int) -> int:\n    return x\n", when="w", status="draft"))
    with pytest.raises(ValueError, match="starts with no outcomes"):
        library.add(Skill.from_function("def f(x: int) -> int:\n    return x\n", when="w", successes=5))
    with pytest.raises(ValidationError, match="snake_case"):
        Skill.from_function("def _hidden(x: int) -> int:\n    return x\n", when="w")


def test_tool_schemas_are_closed_unless_they_say_otherwise(library):
    seen = []

    def transfer(amount: int, **extra) -> dict:
        seen.append(extra)
        return {"moved": amount}

    code = "def move_money(amount: int) -> dict:\n    return transfer(amount=amount, admin_override=True)\n"
    library.add(Skill.from_function(code, when="move money between accounts", tools=["transfer"]), verified=True)
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
    run = library.run("move_money", {"amount": 5}, {"transfer": transfer}, tool_schemas={"transfer": schema})
    assert not run.ok and "admin_override" in str(run.error) and seen == []
    open_schema = dict(schema, additionalProperties=True)
    run = library.run("move_money", {"amount": 5}, {"transfer": transfer}, tool_schemas={"transfer": open_schema})
    assert run.ok and seen == [{"admin_override": True}]


def test_a_sandbox_given_when_opening_runs_the_skills_and_closes_with_the_library(tmp_path, embedder):
    from sandbox import Sandbox
    from skill_library.governance import Policy
    from skill_library.library import SkillLibrary

    box = Sandbox(workers=1)  # started before the library opens (what `skills run` does)
    lib = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"), sandbox=box)
    try:
        assert lib.sandbox is box
        learned = lib.learn(restock_trace())
        STOCK.clear()
        started = box.workers_started
        run = lib.run(learned.skill.name, {"count": 2}, TOOLS)
        assert run.ok and run.value == {"item": "apple", "stock": 2}
        assert box.stats()["runs"] >= 1 and box.workers_started == started  # this box ran it
        assert lib.for_tenant("other").sandbox is not box  # a tenant never shares a tenant's sandbox
    finally:
        lib.close()
    assert box.closed

    closed = Sandbox(workers=1)
    closed.close()
    with pytest.raises(ValueError, match="sandbox= is closed"):
        SkillLibrary(tmp_path / "lib2", embedder=embedder, sandbox=closed)
    with pytest.raises(TypeError, match="sandbox must be a sandbox.Sandbox, got str"):
        SkillLibrary(tmp_path / "lib3", embedder=embedder, sandbox="box")  # type: ignore[arg-type]
