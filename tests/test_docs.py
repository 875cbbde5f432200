"""Every CLI command has help and is documented in the README's CLI section (issue 16)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from skill_library.cli import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def cli_section() -> str:
    match = re.search(r"^### CLI\n(.*?)(?=^## |^### )", README, re.S | re.M)
    assert match, "README has no '### CLI' section"
    return match.group(1)


def test_the_registry_is_complete():
    assert {"init", "add", "list", "show", "history", "retire", "outcomes", "traces",
            "learn", "fetch", "run", "feedback", "reindex"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_and_is_documented(name):
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0, result.output
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    assert (command.help or "").strip(), f"`skills {name}` has no help text"
    assert re.search(rf"skills {name}\b", cli_section()), f"`skills {name}` is not in the README's CLI section"


def _help_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        paths += _help_paths(sub, (*path, name))
    return paths


@pytest.mark.parametrize("path", _help_paths(typer.main.get_command(app)), ids=lambda p: " ".join(p) or "skills")
def test_every_help_page_renders(path):
    """The root, every group and every command print their help (a help text holding rich
    markup, as ``[/COLLECTION]`` once did, made ``skills --help`` crash for every new user)."""
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
