"""`skills learn TRACE.json` and `skills run NAME --args JSON --tools MODULE` end to end."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()

TOOLS_MODULE = '''
STOCK = {"apple": 5, "pear": 2}
LOG = []

def check_stock(item: str) -> dict:
    return {"item": item, "available": STOCK[item]}

def reserve(item: str, quantity: int) -> dict:
    LOG.append((item, quantity))
    return {"reserved": quantity, "item": item}
'''

TRACE = {
    "task": "reserve 3 apple for the market stall",
    "params": {"item": "apple", "quantity": 3},
    "calls": [
        {"name": "check_stock", "arguments": {"item": "apple"}, "result": {"item": "apple", "available": 5}},
        {"name": "reserve", "arguments": {"item": "apple", "quantity": 3}, "result": {"reserved": 3, "item": "apple"}},
    ],
    "outcome": {"success": True, "verifier": "stock-audit"},
}


def invoke(*args: str, lib) -> tuple[int, str]:
    if "--create" in args and not (lib / "records.db").exists():
        # these tests learn skills that must activate: the library opts in to auto-approval
        runner.invoke(app, ["init", "--auto-approve", "all"], env={"SKILLS_DIR": str(lib)})
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(lib)})
    return result.exit_code, result.output


def test_learn_then_run_with_new_arguments(tmp_path, embedder):
    lib = tmp_path / "lib"
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(TRACE))
    tools_file = tmp_path / "stall_tools.py"
    tools_file.write_text(TOOLS_MODULE)

    code, out = invoke("learn", str(trace_file), "--json", "--create", lib=lib)
    assert code == 0, out
    learned = json.loads(out)
    assert learned["status"] == "saved"
    skill = learned["skill"]
    assert set(skill["parameters"]["properties"]) == {"item", "quantity"}
    assert skill["when"] == "Reserve (after: check stock). Needs the item and the quantity."

    code, out = invoke("run", skill["name"], "--args", '{"item": "pear", "quantity": 2}',
                       "--tools", str(tools_file), "--json", lib=lib)
    assert code == 0, out
    run = json.loads(out)
    assert run["ok"] and run["value"] == {"reserved": 2, "item": "pear"}
    assert [(c["name"], c["arguments"]) for c in run["trace"]["calls"]] == [
        ("check_stock", {"item": "pear"}),
        ("reserve", {"item": "pear", "quantity": 2}),
    ]

    # a failing run exits non-zero and is recorded as a failure
    code, out = invoke("run", skill["name"], "--args", '{"item": "plum", "quantity": 1}',
                       "--tools", str(tools_file), lib=lib)
    assert code == 4 and "plum" in out and "trace " in out
    code, out = invoke("show", skill["name"], "--json", lib=lib)
    assert json.loads(out)["failures"] == 1


def test_learn_rejects_unverified_and_malformed_traces(tmp_path, embedder):
    lib = tmp_path / "lib"
    unverified = dict(TRACE, outcome={"success": True})
    path = tmp_path / "unverified.json"
    path.write_text(json.dumps(unverified))
    code, out = invoke("learn", str(path), "--create", lib=lib)
    assert code == 3 and "verifier" in out
    code, out = invoke("list", "--json", lib=lib)
    assert json.loads(out) == []

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, out = invoke("learn", str(broken), lib=lib)
    assert code == 1 and "is not JSON" in out

    no_task = tmp_path / "no_task.json"
    no_task.write_text(json.dumps({"calls": []}))
    code, out = invoke("learn", str(no_task), lib=lib)
    assert code == 3 and "task" in out


def test_run_argument_errors(tmp_path, embedder):
    lib = tmp_path / "lib"
    assert invoke("init", lib=lib)[0] == 0
    code, out = invoke("run", "ghost", "--args", "[1]", lib=lib)
    assert code == 1 and "--args must be a JSON object" in out
    code, out = invoke("run", "ghost", "--args", "{}", lib=lib)
    assert code == 1 and "no skill named 'ghost'" in out


def test_learn_many_files_and_jsonl_in_one_call(tmp_path, embedder):
    lib = tmp_path / "lib"
    traces = []
    for n, (item, qty) in enumerate([("apple", 3), ("pear", 2), ("apple", 1)]):
        trace = json.loads(json.dumps(TRACE).replace('"apple"', f'"{item}"').replace(": 3", f": {qty}"))
        trace["task"] = f"reserve {qty} {item} for the market stall"
        traces.append(trace)
    jsonl = tmp_path / "traces.jsonl"
    jsonl.write_text("\n".join(json.dumps(t) for t in traces[1:]) + "\n\n")
    first = tmp_path / "first.json"
    first.write_text(json.dumps(traces[0]))
    code, out = invoke("learn", str(first), str(jsonl), "--create", "--json", lib=lib)
    assert code == 0, out
    assert [r["status"] for r in json.loads(out)] == ["saved", "merged", "merged"]
    code, out = invoke("show", "reserve_after_check_stock", "--json", lib=lib)
    successes = json.loads(out)["successes"]
    # learning is idempotent: the same file again adds nothing and says so for each trace
    code, out = invoke("learn", str(jsonl), lib=lib)
    assert code == 0 and "2 trace(s): 2 duplicate (2 learned before: nothing added)" in out
    code, out = invoke("show", "reserve_after_check_stock", "--json", lib=lib)
    assert json.loads(out)["successes"] == successes == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "x"}\nnot json\n')
    code, out = invoke("learn", str(bad), lib=lib)
    assert code == 1 and "bad.jsonl line 2 is not JSON" in out
    code, out = invoke("fetch", "reserve 5 pear for the stall", "--tools", "reserve", "--json", lib=lib)
    assert code == 0 and json.loads(out) == []  # the skill also needs check_stock
    code, out = invoke("fetch", "reserve 5 pear for the stall", "--tools", "reserve,check_stock", "--json", lib=lib)
    assert [m["name"] for m in json.loads(out)] == ["reserve_after_check_stock"]


def test_show_says_how_much_evidence_a_learned_skill_has(tmp_path, embedder):
    lib = tmp_path / "lib"
    one = tmp_path / "one.json"
    one.write_text(json.dumps(TRACE))
    assert invoke("learn", str(one), "--create", lib=lib)[0] == 0
    code, out = invoke("show", "reserve_after_check_stock", lib=lib)
    assert code == 0 and "# evidence: 1 example trace(s)" in out and "not yet seen on other cases" in out
    compile(out, "shown.py", "exec")
    other = dict(TRACE, task="reserve 2 pear for the market stall", params={"item": "pear", "quantity": 2})
    other["calls"] = [{"name": "check_stock", "arguments": {"item": "pear"}, "result": {"item": "pear", "available": 2}},
                      {"name": "reserve", "arguments": {"item": "pear", "quantity": 2},
                       "result": {"reserved": 2, "item": "pear"}}]
    two = tmp_path / "two.json"
    two.write_text(json.dumps(other))
    code, out = invoke("learn", str(two), lib=lib)
    assert code == 0 and out.startswith("merged reserve_after_check_stock v1")
    code, out = invoke("show", "reserve_after_check_stock", lib=lib)
    assert "# evidence: 2 example trace(s)" in out and "not yet seen" not in out
    assert "# example: Reserve {quantity} {item} for the market stall." in out
    code, out = invoke("show", "reserve_after_check_stock", "--json", lib=lib)
    assert [e["text"] for e in json.loads(out)["examples"]][0] == "Reserve {quantity} {item} for the market stall."
