"""What the `skills` process imports: nothing from the working directory but the --tools
module (issue 16), and no torch or sentence-transformers for commands that embed nothing
(issue 14 item 11). Real subprocesses of the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SKILLS = str(Path(sys.executable).with_name("skills"))

HOSTILE = "raise SystemExit('hostile {name}.py in the working directory was imported')\n"


def skills(*args: str, cwd: Path, lib: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SKILLS_DIR=str(lib))
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [SKILLS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def workdir(tmp_path):
    """A working directory full of modules named like what the CLI imports."""
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("json", "typer", "rich", "sqlalchemy", "pydantic", "sandbox", "skill_library",
                 "importlib_metadata", "numpy"):
        (folder / f"{name}.py").write_text(HOSTILE.format(name=name))
    (folder / "garden_tools.py").write_text(
        "def pour(bed: str, litres: int) -> dict:\n    return {'bed': bed, 'poured': litres}\n"
    )
    (folder / "water.py").write_text(
        "def water_bed(bed: str) -> dict:\n    return pour(bed=bed, litres=2)\n"
    )
    return folder


@pytest.mark.slow
def test_hostile_modules_in_the_working_directory_change_nothing(workdir, tmp_path):
    lib = tmp_path / "lib"
    done = skills("add", "water.py", "--when", "water one garden bed", "--json", "--create",
                  cwd=workdir, lib=lib)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["skill"]["tools"] == ["pour"]
    # the --tools module is found in the working directory by name, loaded by path
    done = skills("run", "water_bed", "--args", '{"bed": "roses"}', "--tools", "garden_tools",
                  "--json", cwd=workdir, lib=lib)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == {"bed": "roses", "poured": 2}
    assert "hostile" not in done.stderr


#: commands that need no embedding, with the arguments they take
NO_EMBEDDING = [
    ("list",),
    ("show", "water_bed"),
    ("history", "water_bed"),
    ("outcomes", "water_bed"),
    ("traces", "water_bed"),
    ("feedback", "water_bed", "--success"),
    ("retire", "water_bed"),
]

PROBE = """
import sys
from skill_library.cli import app
codes = []
for args in {commands!r}:
    try:
        app(args, prog_name="skills")
    except SystemExit as exc:
        codes.append(exc.code)
    else:
        codes.append(0)
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers", "chromadb") if m in sys.modules)
print("PROBE", codes, heavy, file=sys.stderr)
"""


def probe(commands: list[list[str]], cwd: Path, lib: Path) -> tuple[list[int], list[str], str]:
    """Run CLI commands in one fresh interpreter; their exit codes, the heavy modules it
    imported and what it wrote to stderr."""
    env = dict(os.environ, SKILLS_DIR=str(lib))
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(commands=commands)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE")]
    assert line, done.stderr
    codes, heavy = line[0].removeprefix("PROBE ").split("] [")
    return json.loads(codes + "]"), json.loads(("[" + heavy).replace("'", '"')), done.stderr


def add_as_the_cli_does(lib: Path, file: Path, when: str, embedder) -> None:
    """What `skills add FILE --when WHEN --create` does (skill_library/cli/skills.py), in this
    process with the session's model: a setup step, not what is tested, that would otherwise
    cost a process importing torch and loading the model (about 7 CPU seconds)."""
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    with SkillLibrary(lib, create=True, embedder=embedder) as library:
        assert library.add(Skill.from_function(file.read_text(), when=when, infer_tools=True)).added


@pytest.mark.slow
def test_commands_that_embed_nothing_never_import_torch(workdir, tmp_path, embedder):
    lib = tmp_path / "lib"
    add_as_the_cli_does(lib, workdir / "water.py", "water one garden bed", embedder)
    records_only = [list(c) for c in NO_EMBEDDING if c[0] != "retire"]
    codes, heavy, _ = probe(records_only, tmp_path, lib)
    assert codes == [0] * len(records_only)
    assert heavy == [], f"{heavy} imported by one of {records_only}"  # not even chromadb
    codes, heavy, _ = probe([list(c) for c in NO_EMBEDDING], tmp_path, lib)
    assert codes == [0] * len(NO_EMBEDDING)
    # retire leaves its index change to the index's next open (index_sync, deferring)
    assert heavy == [], f"{heavy} imported by one of {NO_EMBEDDING}"
    # a command that embeds does load the model (the probe can see it), and loading it prints
    # no third-party progress bar (embeddings._quiet_third_party, for every caller)
    codes, heavy, stderr = probe([["fetch", "water the roses"]], tmp_path, lib)
    assert codes == [0] and "torch" in heavy
    assert "Loading weights" not in stderr and "it/s" not in stderr, stderr[-500:]


#: what neither `import skill_library.cli` nor any `--help` may import: the record store,
#: governance, the embedding model and the index (issue 25, fast paths)
HEAVY = ("sqlalchemy", "skill_library.governance", "skill_library.library", "torch",
         "sentence_transformers", "chromadb")

HELP_PROBE = """
import sys
import skill_library.cli
print("IMPORT", sorted(m for m in {heavy!r} if m in sys.modules))
from skill_library.cli import app
import typer.main
names = []
group = typer.main.get_command(app)
for name, sub in group.commands.items():
    names.append([name])
    for inner in getattr(sub, "commands", {{}}):
        names.append([name, inner])
for args in [[], *names]:
    try:
        app([*args, "--help"], prog_name="skills")
    except SystemExit as exc:
        assert exc.code in (0, None), (args, exc.code)
print("HELP", len(names), sorted(m for m in {heavy!r} if m in sys.modules))
"""


def test_importing_the_cli_and_every_help_pull_in_no_record_store_governance_or_model(tmp_path):
    done = subprocess.run([sys.executable, "-c", HELP_PROBE.format(heavy=HEAVY)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = {line.split(" ", 1)[0]: line for line in done.stdout.splitlines()
             if line.startswith(("IMPORT", "HELP"))}
    assert lines["IMPORT"] == "IMPORT []"
    count, heavy = lines["HELP"].removeprefix("HELP ").split(" ", 1)
    assert int(count) > 40 and heavy == "[]", lines["HELP"]  # every command and subcommand


def test_the_clis_copies_of_library_constants_match_them():
    """The CLI names a few of the library's constants without importing their modules."""
    from typing import get_args

    from skill_library.cli import _common, memory
    from skill_library.models import SkillStatus
    from skill_library.procedures import core

    assert _common.SKILL_STATUSES == get_args(SkillStatus)
    assert (memory.DEFAULT_CONFIDENCE, memory.PROMPT_THRESHOLD, memory.PROMPT_LIMIT) == (
        core.DEFAULT_CONFIDENCE, core.PROMPT_THRESHOLD, core.PROMPT_LIMIT)
