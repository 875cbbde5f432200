"""`skills export`, `skills import` and `skills serve-mcp` argument errors, through the root CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()


def test_export_then_import_as_drafts(desk, tmp_path):
    desk.close()
    out, other = tmp_path / "out", tmp_path / "other"
    done = runner.invoke(app, ["export", "--format", "agent-skills", str(out), "--dir", str(desk.path)])
    assert done.exit_code == 0, done.output
    assert "wrote 2 skill folder(s)" in done.output
    done = runner.invoke(app, ["import", str(out), "--dir", str(other), "--json"])
    assert done.exit_code == 0, done.output
    assert [(r["name"], r["status"], r["version"]) for r in json.loads(done.output)] == [
        ("cancel_every_order", "draft", 1), ("count_orders", "draft", 1),
    ]
    listed = runner.invoke(app, ["list", "--dir", str(other), "--json"])
    assert {s["status"] for s in json.loads(listed.output)} == {"draft"}
    fetched = runner.invoke(app, ["fetch", "cancel every order of a customer", "--dir", str(other), "--json"])
    assert json.loads(fetched.output) == []


def test_import_errors_are_one_line_each_and_exit_3(tmp_path):
    bad = tmp_path / "in" / "Bad--Name"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: Bad--Name\ndescription: x\n---\n")
    done = runner.invoke(app, ["import", str(tmp_path / "in"), "--dir", str(tmp_path / "lib")])
    assert done.exit_code == 3
    assert "invalid Bad--Name: name: 'Bad--Name' may hold only lowercase letters, digits and hyphens" in done.output
    assert "invalid Bad--Name: scripts/: must hold exactly one Python file" in done.output


def test_bad_options_are_refused_before_anything_starts(tmp_path):
    done = runner.invoke(app, ["export", "--format", "zip", str(tmp_path / "o"), "--dir", str(tmp_path)])
    assert done.exit_code == 2 and "error: --format must be agent-skills, got 'zip'" in done.output
    done = runner.invoke(app, ["serve-mcp", "--dir", str(tmp_path), "--http", "8080"])
    assert done.exit_code == 2 and "error: --http must be HOST:PORT, got '8080'" in done.output
    done = runner.invoke(app, ["serve-mcp", "--dir", str(tmp_path), "--http", "0.0.0.0:8080"])
    assert done.exit_code == 2 and "error: --http host '0.0.0.0' is not a loopback address" in done.output
    done = runner.invoke(app, ["serve-mcp", "--dir", str(tmp_path), "--tools", "no_such_module_here"])
    assert done.exit_code == 1 and "cannot load tools from no_such_module_here" in done.output
