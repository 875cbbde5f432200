"""The `skills` CLI: each command mirrors one library call; --json round trips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()


def invoke(*args: str, env_dir: Path) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(env_dir)})
    return result.exit_code, result.output


def as_json(output: str):
    return json.loads(output)


def plain(output: str) -> str:
    """Output with rich's box characters and line breaks removed."""
    return " ".join(output.replace("│", " ").split())


@pytest.fixture
def skill_file(tmp_path):
    path = tmp_path / "water.py"
    path.write_text(
        'def water_plants(bed: str, litres: int = 2) -> str:\n'
        '    """Water one garden bed."""\n'
        '    return pour(bed=bed, litres=litres)\n'
    )
    return path


def test_cli_round_trip(tmp_path, skill_file, embedder):
    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0
    code, out = invoke(
        "add", str(skill_file), "--when", "water the plants in a garden bed", "--tools", "pour",
        "--json", env_dir=lib,
    )
    assert code == 0, out
    added = as_json(out)
    assert added["status"] == "added" and added["skill"]["version"] == 1
    assert added["skill"]["parameters"]["required"] == ["bed"]

    code, out = invoke("fetch", "water the roses", "-k", "2", "--json", env_dir=lib)
    assert code == 0 and as_json(out) == []  # hand-written: reliability 0.5 < 0.6

    code, out = invoke("feedback", "water_plants", "--success", "--json", env_dir=lib)
    assert code == 0 and as_json(out)["reliability"] == pytest.approx(2 / 3)

    code, out = invoke("fetch", "water the roses", "-k", "2", "--json", env_dir=lib)
    fetched = as_json(out)
    assert [m["name"] for m in fetched] == ["water_plants"] and fetched[0]["similarity"] > 0.3

    code, out = invoke("feedback", "water_plants", "--failure", "--json", env_dir=lib)
    assert as_json(out)["failures"] == 1

    code, out = invoke("list", "--json", env_dir=lib)
    listed = as_json(out)
    assert [(s["name"], s["successes"], s["failures"]) for s in listed] == [("water_plants", 1, 1)]

    code, out = invoke("show", "water_plants", "--json", env_dir=lib)
    assert as_json(out)["tools"] == ["pour"]

    code, out = invoke("add", str(skill_file), "--when", "water every bed twice", "--json", env_dir=lib)
    assert as_json(out)["skill"]["version"] == 2
    code, out = invoke("history", "water_plants", "--json", env_dir=lib)
    assert [(v["version"], v["status"]) for v in as_json(out)] == [(1, "superseded"), (2, "active")]

    code, out = invoke("reindex", "--json", env_dir=lib)
    assert as_json(out) == {"indexed": 1}

    code, out = invoke("retire", "water_plants", "--json", env_dir=lib)
    assert as_json(out)["status"] == "retired"
    code, out = invoke("fetch", "water the roses", "--min-reliability", "0", "--json", env_dir=lib)
    assert as_json(out) == []


def test_cli_errors_are_one_line_messages(tmp_path, skill_file, embedder):
    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0
    code, out = invoke("show", "ghost", env_dir=lib)
    assert code == 1 and out.strip() == "error: no skill named 'ghost' (`skills list` shows the names)"
    code, out = invoke("fetch", "x", "-k", "0", env_dir=lib)
    assert code == 2 and "greater than or equal to 1" in " ".join(out.split())
    bad = tmp_path / "bad.py"
    bad.write_text("def a():\n    pass\n\ndef b():\n    pass\n")
    code, out = invoke("add", str(bad), "--when", "w", env_dir=lib)
    assert code == 1 and "exactly one top-level function, found 2 (a, b)" in out
    assert "--name" in out


def test_a_bug_is_not_turned_into_a_one_line_message(tmp_path, monkeypatch):
    """Only the library's own errors are mapped: a KeyError from a bug shows as itself."""
    from skill_library.library import SkillLibrary

    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0

    def broken(self, *args, **kwargs):
        raise KeyError("a bug")

    # show opens the library (list and the other reads may not: skill_library/cli/light.py)
    monkeypatch.setattr(SkillLibrary, "get", broken)
    result = runner.invoke(app, ["show", "water_bed"], env={"SKILLS_DIR": str(lib)})
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)
    assert "error:" not in result.output


def test_list_status_is_checked_against_the_real_statuses(tmp_path):
    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0
    code, out = invoke("list", "--status", "actve", env_dir=lib)
    assert code == 2 and "'actve' is not one of 'draft', 'evaluated', 'approved'" in plain(out)
    code, out = invoke("list", "--status", "retired", "--json", env_dir=lib)
    assert code == 0 and as_json(out) == []
    from skill_library.library import SkillLibrary

    with SkillLibrary(lib) as library, pytest.raises(ValueError, match="status must be one of"):
        library.list(status="actve")  # type: ignore[arg-type]


def test_console_script_is_installed(tmp_path):
    env = dict(os.environ, SKILLS_DIR=str(tmp_path / "lib"))
    script = Path(sys.executable).with_name("skills")
    done = subprocess.run([str(script), "init"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([str(script), "list", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_tools_that_cannot_be_loaded_are_one_line_errors(tmp_path):
    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0
    code, out = invoke("run", "ghost", "--tools", "no_such_tools_module_xyz", env_dir=lib)
    assert code == 1 and "cannot load tools from no_such_tools_module_xyz" in " ".join(out.split())
    code, out = invoke("run", "ghost", "--tools", str(tmp_path / "missing.py"), env_dir=lib)
    assert code == 1 and "missing.py: no such file" in " ".join(out.split())
    broken = tmp_path / "broken_tools.py"
    broken.write_text("def pour(:\n")
    code, out = invoke("run", "ghost", "--tools", str(broken), env_dir=lib)
    assert code == 1 and "SyntaxError" in out


def test_learn_reads_an_openai_transcript(tmp_path, embedder):
    lib = tmp_path / "lib"
    transcript = {
        "task": "water the tomato bed with 20 litres",
        "outcome": {"success": True, "verifier": "garden-check"},
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "pour", "arguments": '{"bed": "tomato", "litres": 20}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"poured": 20}'},
        ],
    }
    path = tmp_path / "transcript.json"
    path.write_text(json.dumps(transcript))
    assert invoke("init", "--auto-approve", "all", env_dir=lib)[0] == 0  # the skill must activate
    code, out = invoke("learn", str(path), "--json", "--create", env_dir=lib)
    assert code == 0, out
    assert as_json(out)["status"] == "saved" and as_json(out)["skill"]["tools"] == ["pour"]
    del transcript["messages"][1]
    path.write_text(json.dumps(transcript))
    code, out = invoke("learn", str(path), env_dir=lib)
    assert code == 3 and "has no tool message answering it" in " ".join(out.split())
