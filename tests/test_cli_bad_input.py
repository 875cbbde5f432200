"""Bad input to every CLI command is one line naming what to do, never a traceback (issue 25):
each command is run with no arguments, with every argument (and required option) empty, and
with an option it does not have, on a real library folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()


def _leaves(command, path):
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _leaves(sub, [*path, name])
    else:
        yield path, command


COMMANDS = {" ".join(path): command for path, command in _leaves(typer.main.get_command(app), [])}

def _arguments(command):
    return [p for p in command.params if getattr(p, "param_type_name", "") == "argument"]


def _required_options(command):
    return [p for p in command.params if getattr(p, "param_type_name", "") == "option" and p.required]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    lib = tmp_path_factory.mktemp("bad-input") / "lib"
    assert runner.invoke(app, ["init"], env={"SKILLS_DIR": str(lib)}).exit_code == 0
    return lib


def run(folder: Path, argv: list[str]):
    result = runner.invoke(app, argv, env={"SKILLS_DIR": str(folder)}, input="", prog_name="skills")
    unexpected = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not unexpected and "Traceback" not in result.output, (argv, result.output[-1500:])
    return result


def one_line(result, argv) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(("error: ", "Aborted.")), (argv, result.stderr)
    return lines[0]


def test_every_command_is_covered():
    assert len(COMMANDS) > 40 and {"fetch", "approve", "procedures add", "tools register"} <= set(COMMANDS)


# (a command that takes no argument and needs no option has no empty argument to give)
@pytest.mark.parametrize("name", sorted(n for n, c in COMMANDS.items() if _arguments(c) or _required_options(c)))
def test_a_command_with_empty_arguments_says_what_to_do(folder, name):
    command = COMMANDS[name]
    arguments, options = _arguments(command), _required_options(command)
    argv = [*name.split(), *("" for _ in arguments), *(x for o in options for x in (o.opts[0], ""))]
    result = run(folder, argv)
    assert result.exit_code != 0, (argv, result.output)
    one_line(result, argv)


@pytest.mark.parametrize("name", sorted(n for n, c in COMMANDS.items() if _arguments(c) and any(
    a.required for a in _arguments(c)) or _required_options(c)))
def test_a_command_missing_its_arguments_names_them_and_its_usage(folder, name):
    argv = name.split()
    result = run(folder, argv)
    assert result.exit_code != 0
    line = one_line(result, argv)
    assert "skills " + name in line or "skills approve" in line or "skills promote" in line, line


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_option_a_command_does_not_have_is_one_line(folder, name):
    argv = [*name.split(), "--no-such-option"]
    result = run(folder, argv)
    assert result.exit_code == 2
    line = one_line(result, argv)
    assert "No such option: --no-such-option" in line and f"`skills {name} --help`" in line, line


def test_fetch_with_an_empty_task_is_one_line(folder):
    """The report's case: `skills fetch ""` printed a traceback."""
    result = run(folder, ["fetch", ""])
    assert result.exit_code == 1 and one_line(result, ["fetch", ""]) == "error: task must be a non-empty string"


def test_migrate_to_a_record_store_url_that_cannot_be_parsed_is_one_line(folder):
    argv = ["migrate", "--to", "not a url at all"]
    result = run(folder, argv)
    assert result.exit_code != 0
    line = one_line(result, argv)
    assert line.startswith("error: --to: Could not parse") and "postgresql+psycopg://" in line, line
