"""Running a skill: usage errors record nothing, limits are settable, errors are
structured, traces are capped (issue 14 items 4, 6, 7, 8), in the API and the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sandbox import Limits
from skill_library.cli import app
from skill_library.errors import SkillUsageError
from skill_library.models import TRACE_VALUE_MAX_BYTES, Outcome, RunError, Skill, ToolCall, Trace

runner = CliRunner()

RESERVE = (
    "def reserve_item(item: str, quantity: int) -> dict:\n"
    "    stock = check_stock(item=item)\n"
    "    if stock['available'] < quantity:\n"
    "        raise ValueError('not enough ' + item)\n"
    "    return reserve(item=item, quantity=quantity)\n"
)
TOOLS_MODULE = (
    "def check_stock(item: str) -> dict:\n"
    "    return {'item': item, 'available': 5}\n"
    "def reserve(item: str, quantity: int) -> dict:\n"
    "    return {'reserved': quantity, 'item': item}\n"
)


def tools():
    return {
        "check_stock": lambda item: {"item": item, "available": 5},
        "reserve": lambda item, quantity: {"reserved": quantity, "item": item},
    }


@pytest.fixture
def stocked(library):
    library.add(Skill.from_function(RESERVE, when="reserve {quantity} {item}", tools=["check_stock", "reserve"]))
    return library


def invoke(*args: str, lib) -> tuple[int, str]:
    if "--create" in args and not (lib / "records.db").exists():
        # these tests learn skills that must activate: the library opts in to auto-approval
        runner.invoke(app, ["init", "--auto-approve", "all"], env={"SKILLS_DIR": str(lib)})
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(lib)})
    return result.exit_code, result.output


def counts(library, name="reserve_item"):
    skill = library.get(name)
    return skill.successes, skill.failures


def test_a_missing_tool_is_a_usage_error_and_records_nothing(stocked):
    with pytest.raises(SkillUsageError, match="needs the tool\\(s\\) reserve, which were not given"):
        stocked.run("reserve_item", {"item": "apple", "quantity": 1}, {"check_stock": tools()["check_stock"]})
    assert counts(stocked) == (0, 0)
    assert stocked.traces("reserve_item") == []


@pytest.mark.parametrize(
    "args, message",
    [
        ({"item": "apple", "quantity": "three"}, "arguments.quantity: expected integer, got string"),
        ({"item": "apple"}, "needs argument\\(s\\) quantity"),
        ({"item": "apple", "quantity": 1, "colour": "red"}, "has no parameter\\(s\\) colour"),
    ],
)
def test_arguments_that_break_the_schema_are_usage_errors(stocked, args, message):
    with pytest.raises(SkillUsageError, match=message):
        stocked.run("reserve_item", args, tools())
    assert counts(stocked) == (0, 0)


def test_a_large_argument_is_not_echoed_into_the_error(stocked):
    huge = "x" * 100_000
    with pytest.raises(SkillUsageError) as caught:
        stocked.run("reserve_item", {"item": "apple", "quantity": huge}, tools())
    assert len(str(caught.value)) < 300


def test_run_error_is_structured(stocked):
    run = stocked.run("reserve_item", {"item": "plum", "quantity": 9}, tools())
    assert not run.ok
    assert isinstance(run.error, RunError)
    assert (run.error.type, run.error.message, run.error.line) == ("ValueError", "not enough plum", 4)
    assert str(run.error) == "ValueError: not enough plum (line 4)"
    assert json.loads(run.model_dump_json())["error"] == {
        "type": "ValueError", "message": "not enough plum", "line": 4,
    }
    assert counts(stocked) == (0, 1)


def test_run_takes_limits(stocked):
    run = stocked.run("reserve_item", {"item": "apple", "quantity": 1}, tools(),
                      limits=Limits(max_tool_calls=1))
    assert not run.ok and run.limit == "tool_calls"
    run = stocked.run("reserve_item", {"item": "apple", "quantity": 1}, tools(),
                      limits=Limits(max_tool_calls=2))
    assert run.ok


def test_a_huge_argument_is_stored_capped_with_its_original_size(stocked):
    records = stocked.path / "records.db"
    before = records.stat().st_size + sum(p.stat().st_size for p in stocked.path.glob("records.db-*"))
    huge = "apple" * 600_000  # 3 MB
    run = stocked.run("reserve_item", {"item": huge, "quantity": 1}, tools())
    after = records.stat().st_size + sum(p.stat().st_size for p in stocked.path.glob("records.db-*"))
    assert after - before < 1_000_000
    stored = stocked.trace(run.trace.id)
    assert stored.params["item"].endswith(f"[truncated: {len(huge)} bytes]")
    assert len(stored.params["item"]) < TRACE_VALUE_MAX_BYTES
    assert len(stored.model_dump_json()) < 4 * TRACE_VALUE_MAX_BYTES


def test_trace_capped_keeps_small_values_and_marks_large_ones():
    big = list(range(50_000))
    trace = Trace(task="t", params={"small": 1, "big": big},
                  calls=[ToolCall(name="f", arguments={"rows": big}, result=big)], result=big)
    capped = trace.capped()
    size = len(json.dumps(big))
    assert capped.params["small"] == 1
    for value in (capped.params["big"], capped.calls[0].arguments["rows"], capped.calls[0].result, capped.result):
        assert value["truncated"] is True and value["original_bytes"] == size
    assert trace.params["big"] is big  # the original is untouched


def test_cli_run_usage_errors_record_nothing_and_no_record_mirrors_record_false(stocked, tmp_path):
    lib = stocked.path
    tools_file = tmp_path / "stock_tools.py"
    tools_file.write_text(TOOLS_MODULE)
    code, out = invoke("run", "reserve_item", "--args", '{"item": "apple", "quantity": 1}', lib=lib)
    assert code == 1 and "needs the tool(s) check_stock, reserve" in " ".join(out.split())
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"item": "apple", "quantity": 2}))
    code, out = invoke("run", "reserve_item", "--args", f"@{args_file}", "--tools", str(tools_file),
                       "--no-record", lib=lib)
    assert code == 0 and "not recorded" in out
    assert counts(stocked) == (0, 0) and stocked.traces("reserve_item") == []
    code, out = invoke("run", "reserve_item", "--args", f"@{args_file}", "--tools", str(tools_file),
                       "--max-tool-calls", "1", lib=lib)
    assert code == 4 and "tool_calls" in out
    trace_id = out.split("trace ")[-1].split()[0]
    assert stocked.trace(trace_id).source == "skill:reserve_item@1"
    code, out = invoke("feedback", "reserve_item", "--success", "--trace-id", trace_id, "--json", lib=lib)
    assert code == 0 and json.loads(out)["successes"] == 1
    code, out = invoke("run", "reserve_item", "--args", "@" + str(tmp_path / "none.json"), lib=lib)
    assert code == 1 and "--args: cannot read" in out


def _loop_trace(n: int) -> Trace:
    ids = [f"i{k}" for k in range(n)]
    calls = [ToolCall(name="list_items", arguments={"shelf": "a"}, result=ids)]
    calls += [ToolCall(name="label", arguments={"item_id": i}, result="ok") for i in ids]
    return Trace(task="label every item on shelf a", params={"shelf": "a"}, calls=calls,
                 outcome=Outcome(success=True, verifier="shelf-audit"))


def test_learn_takes_limits_for_a_long_trace(library):
    trace = _loop_trace(250)
    refused = library.learn(trace)
    assert refused.status == "rejected" and "tool_calls" in " ".join(refused.reasons)
    learned = library.learn(trace, limits=Limits(max_tool_calls=300))
    assert learned.status == "saved", learned.reasons


def test_cli_learn_takes_max_tool_calls(tmp_path, embedder):
    path = tmp_path / "trace.json"
    path.write_text(_loop_trace(250).model_dump_json())
    lib = tmp_path / "lib"
    code, out = invoke("learn", str(path), "--create", lib=lib)
    assert code == 3 and "tool_calls" in out
    code, out = invoke("learn", str(path), "--max-tool-calls", "300", "--json", lib=lib)
    assert code == 0 and json.loads(out)["status"] == "saved", out
