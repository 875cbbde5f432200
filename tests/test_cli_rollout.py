"""`skills evaluate`, `canary`, `canaries` and `promote` (issue 10): a round trip."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.library import SkillLibrary
from skill_library.models import Skill
from tests.governance_world import V1, V2, V3, WHEN, actors

runner = CliRunner()
WORLD = f"{Path(__file__).with_name('governance_world.py')}:factory"
SUITE = """\
id: shelf
tasks:
  - id: pear-3
    instruction: restock 3 pear
    params: {item: pear, count: 3}
    goal: {pear: 3}
    critical: true
  - id: apple-4
    instruction: restock 4 apple
    params: {item: apple, count: 4}
    goal: {apple: 4}
"""


def invoke(folder, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(folder)})
    return result.exit_code, result.output


def test_evaluate_canary_canaries_promote_round_trip(tmp_path, embedder):
    folder = tmp_path / "lib"
    suite = tmp_path / "shelf.yaml"
    suite.write_text(SUITE)
    with SkillLibrary(folder, embedder=embedder) as lib:
        proposer, _ = actors(lib)
        lib.add(Skill.from_function(V1, when=WHEN, tools=["restock"]), verified=True)
        bad = lib.propose(Skill.from_function(V2, when=WHEN, tools=["restock"]), actor=proposer).version
        good = lib.propose(Skill.from_function(V3, when=WHEN, tools=["restock"]), actor=proposer).version

    code, out = invoke(folder, "evaluate", "stock_item", str(bad), "--suite", str(suite), "--world", WORLD,
                       "--actor", "pat")
    assert code == 3 and "FAILED" in out and "critical task 'pear-3' regressed" in out
    code, out = invoke(folder, "evaluate", "stock_item", str(good), "--suite", str(suite), "--world", WORLD,
                       "--actor", "pat", "--json")
    assert code == 0, out
    stored = json.loads(out)
    assert stored["passed"] and stored["suite_id"] == "shelf" and len(stored["results"]) == 2
    assert stored["results"][1]["candidate"]["calls"] == [
        {"name": "restock", "arguments": {"item": "apple", "count": 4}, "error": None, "denied": False}
    ]
    with SkillLibrary(folder, embedder=embedder) as lib:
        assert [e.id for e in lib.evaluations("stock_item", good)] == [stored["id"]]
        lib.approve("stock_item", good, actor="rita")

    code, out = invoke(folder, "canary", "stock_item", str(good), "--share", "0.3", "--actor", "rita")
    assert code == 0 and "canary for 30% of sessions" in out, out
    code, out = invoke(folder, "canaries", "--json")
    [state] = json.loads(out)
    assert (state["name"], state["version"], state["share"]) == ("stock_item", good, 0.3)
    assert state["decision"] == "collecting" and state["active_version"] == 1
    code, out = invoke(folder, "canaries")
    assert "stock_item v3 (30%) against v1" in out
    # a session keeps its version across processes: the route is a hash of the session id
    from skill_library.governance.canary import session_bucket

    tools = tmp_path / "shelf_tools.py"
    tools.write_text("def restock(item: str, count: int) -> dict:\n    return {'item': item, 'stock': count}\n")
    inside = next(f"s{i}" for i in range(1000) if session_bucket("stock_item", f"s{i}") < 0.3)
    outside = next(f"s{i}" for i in range(1000) if session_bucket("stock_item", f"s{i}") >= 0.3)
    for session, expected in ((inside, good), (outside, 1)):
        code, out = invoke(folder, "run", "stock_item", "--args", '{"item": "fig", "count": 2}',
                           "--tools", str(tools), "--session", session, "--json")
        assert code == 0 and json.loads(out)["version"] == expected, out
        code, out = invoke(folder, "feedback", "stock_item", "--success", "--session", session, "--json")
        assert code == 0 and json.loads(out)["version"] == expected, out
    code, out = invoke(folder, "promote", "stock_item", str(good), "--actor", "rita")
    assert code == 0 and f"stock_item v{good} is active" in out
    assert "no canaries" in invoke(folder, "canaries")[1]


def test_bad_world_and_suite_are_one_line_errors(tmp_path, embedder):
    folder = tmp_path / "lib"
    assert invoke(folder, "init")[0] == 0
    suite = tmp_path / "s.json"
    suite.write_text('{"tasks": [{"id": "a", "instruction": "x"}]}')
    for world, message in (("nocolon", "MODULE:NAME"), ("no_such_module_x:f", "cannot import"),
                           (f"{tmp_path}/missing.py:f", "no such file"), ("json:nothing_here", "no callable")):
        code, out = invoke(folder, "evaluate", "stock_item", "1", "--suite", str(suite), "--world", world)
        assert code == 1 and message in out and out.count("\n") == 1, out
    suite.write_text("{oops")
    code, out = invoke(folder, "evaluate", "stock_item", "1", "--suite", str(suite), "--world", "json:loads")
    assert code == 1 and "not valid json" in out
