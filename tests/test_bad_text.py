"""Bad text in a trace (issue 23): a NUL or a lone surrogate anywhere in a trace is a
rejection naming where it is, never an exception; `skills learn a b c` prints a result
per file and stores the good ones."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.models import Outcome, ToolCall, Trace

OK = Outcome(success=True, verifier="stock-audit")


def restock(task: str = "restock 3 apples", result: object = "ok", **call) -> Trace:
    return Trace(task=task, params={"count": 3}, outcome=OK, calls=[
        ToolCall(name="restock", arguments=call.get("arguments", {"item": "apple", "count": 3}), result=result)])


@pytest.mark.parametrize("trace, where, what", [
    (restock(task="restock 3 apples\x00"), "task", "a NUL character (\\x00)"),
    (restock(result={"note": "ok \ud800"}), "calls[0].result['note']", "a lone surrogate (\\ud800)"),
    (restock(arguments={"item": "apple\udfff", "count": 3}), "calls[0].arguments['item']",
     "a lone surrogate (\\udfff)"),
    (restock(result={"k\x00": 1}), "calls[0].result (a key)", "a NUL character (\\x00)"),
])
def test_nul_and_lone_surrogates_are_a_rejection_naming_where(library, trace, where, what):
    result = library.learn(trace)
    assert result.status == "rejected"
    assert result.reasons == [f"trace is malformed: {where} holds {what}, which cannot be stored"]
    assert library.list() == []


def test_a_multi_file_learn_prints_each_file_and_stores_the_good_ones(tmp_path, embedder, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lib = tmp_path / "lib"
    env = {"SKILLS_DIR": str(lib)}
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--auto-approve", "all"], env=env).exit_code == 0
    good = json.loads(restock().model_dump_json())
    nul = json.loads(restock(task="restock 3 apples\x00").model_dump_json())
    pear = json.loads(restock(task="restock 3 pears", arguments={"item": "pear", "count": 3}).model_dump_json())
    files = []
    for name, body in (("a.json", good), ("b.json", nul), ("c.json", pear)):
        (tmp_path / name).write_text(json.dumps(body))
        files.append(name)
    result = runner.invoke(app, ["learn", *files], env=env)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())  # the console wraps long lines
    assert "a.json: saved restock_apple v1" in out, out
    assert "b.json: rejected: trace is malformed: task holds a NUL character (\\x00), which cannot be stored" in out
    assert "c.json: " in out
    assert "3 trace(s): " in result.output
    listed = runner.invoke(app, ["list", "--json"], env=env)
    assert len(json.loads(listed.output)) >= 1
