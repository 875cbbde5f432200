"""The read commands' light path (skill_library/cli/light.py, storage/light_reads.py): `skills
list`, `history`, `outcomes` and `traces` read a folder's SQLite records without SQLAlchemy,
and print exactly what the full path (the opened library) prints, on a real store with
learned, hand-written, proposed and run skills; whatever the light path cannot read as the
full path would (another schema version, a tenant never opened, an unknown name) falls back."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.cli import skills as skill_commands
from skill_library.storage import layout, light_reads

runner = CliRunner()

LONG_NAME = "reserve_every_item_on_the_market_stall_shelf_for_the_weekend_crowd"
LONG_CODE = (
    f"def {LONG_NAME}(shelf: str, quantity: int = 1) -> list:\n"
    '    """Reserve every item of one shelf."""\n'
    "    return [reserve(item=item, quantity=quantity) for item in list_items(shelf=shelf)]\n"
)
TOOLS = (
    "def list_items(shelf: str) -> list:\n    return ['apple', 'pear']\n"
    "def reserve(item: str, quantity: int, note: str = '') -> dict:\n"
    "    return {'item': item, 'reserved': quantity}\n"
)
MESSAGES = [
    {"role": "user", "content": "reserve 3 apple"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "reserve", "arguments": '{"item": "apple", "quantity": 3}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"reserved": 3}'},
]


def invoke(*args: str, lib: Path) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(lib)})
    return result.exit_code, result.output


class Spy:
    """Counts the light path's answers (None: it declined)."""

    def __init__(self, monkeypatch, *, off: bool = False) -> None:
        self.answered = 0
        self.declined = 0
        real = skill_commands.light_read

        def read(directory, query):
            found = None if off else real(directory, query)
            if found is None:
                self.declined += 1
            else:
                self.answered += 1
            return found

        monkeypatch.setattr(skill_commands, "light_read", read)


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    """A library with a learned skill (a trace behind it), a hand-written one with a long name
    that ran (a run trace) and got feedback (one with a trace, one failure with a reason), a
    proposed second version of it (history of two), and a retired skill."""
    tmp = tmp_path_factory.mktemp("light")
    lib = tmp / "lib"
    assert invoke("init", "--auto-approve", "all", lib=lib)[0] == 0
    (tmp / "shelf.py").write_text(LONG_CODE)
    (tmp / "shelf_tools.py").write_text(TOOLS)
    (tmp / "messages.json").write_text(json.dumps(MESSAGES))
    (tmp / "count.py").write_text("def count_items(items: list) -> int:\n    return len(items)\n")
    steps = [
        ("add", str(tmp / "shelf.py"), "--when", "reserve the items of a shelf"),
        ("learn", str(tmp / "messages.json"), "--task", "reserve 3 apple", "--verifier", "stock-audit",
         "--params", '{"item": "apple", "quantity": 3}'),
        ("add", str(tmp / "count.py"), "--when", "count the items of a list"),
        ("retire", "count_items"),
    ]
    for step in steps:
        code, out = invoke(*step, lib=lib)
        assert code == 0, (step, out)
    code, out = invoke("run", LONG_NAME, "--args", '{"shelf": "a"}', "--tools", str(tmp / "shelf_tools.py"),
                       "--json", lib=lib)
    assert code == 0, out
    trace_id = json.loads(out)["trace"]["id"]
    for step in (("feedback", LONG_NAME, "--success", "--trace-id", trace_id),
                 ("feedback", LONG_NAME, "--failure", "--reason", "[b]dry")):
        assert invoke(*step, lib=lib)[0] == 0, step
    (tmp / "shelf2.py").write_text(LONG_CODE.replace("quantity: int = 1", "quantity: int = 2"))
    code, out = invoke("propose", str(tmp / "shelf2.py"), "--when", "reserve the items of a shelf", lib=lib)
    assert code == 0, out
    learned = json.loads(invoke("list", "--json", lib=lib)[1])
    return {"lib": lib, "trace_id": trace_id, "names": [s["name"] for s in learned]}


def test_the_light_path_prints_what_the_full_path_prints(store, monkeypatch):
    lib, names = store["lib"], store["names"]
    assert LONG_NAME in names and "count_items" in names and len(names) == 3
    learned = next(n for n in names if n not in (LONG_NAME, "count_items"))
    commands = [["list"], ["list", "--status", "active"], ["list", "--status", "retired"],
                ["list", "--status", "draft"]]
    for name in (LONG_NAME, learned, "count_items"):
        commands += [["history", name], ["outcomes", name], ["traces", name]]
    commands += [[*c, "--json"] for c in commands]  # the JSON forms: the same Skill, Trace, outcome
    commands += [["traces", LONG_NAME, "--id", store["trace_id"]], ["traces", LONG_NAME, "--id", store["trace_id"],
                                                                    "--json"]]
    light = Spy(monkeypatch)
    seen = {tuple(c): invoke(*c, lib=lib) for c in commands}
    assert light.answered == len(commands) and light.declined == 0
    full = Spy(monkeypatch, off=True)
    for command in commands:
        assert invoke(*command, lib=lib) == seen[tuple(command)], command
    assert full.declined == len(commands)
    # what the rows hold: both versions, the run trace and the learned one, the literal reason
    assert seen[("history", LONG_NAME)][1].count("hand-written") == 2
    assert store["trace_id"] in seen[("traces", LONG_NAME)][1]
    assert "[b]dry" in seen[("outcomes", LONG_NAME)][1]
    assert "dataflow" in seen[("history", learned)][1]
    assert "no outcomes recorded for count_items" in seen[("outcomes", "count_items")][1]
    assert len(json.loads(seen[("list", "--json")][1])) == 3
    assert json.loads(seen[("traces", LONG_NAME, "--json")][1])[0]["id"] == store["trace_id"]


def test_an_unknown_name_or_trace_and_an_unopened_tenant_take_the_full_path(store, monkeypatch):
    lib = store["lib"]
    spy = Spy(monkeypatch)
    code, out = invoke("history", "ghost", lib=lib)
    assert code == 1 and "no skill named 'ghost'" in out and spy.declined == 1
    code, out = invoke("--tenant", "acme", "list", lib=lib)  # opening seeds the tenant: the full path
    assert code == 0 and spy.declined == 2
    code, out = invoke("--tenant", "acme", "list", lib=lib)  # now opened: light, and the same (empty)
    assert code == 0 and spy.answered == 1
    code, out = invoke("traces", LONG_NAME, "--id", "nope", lib=lib)
    assert code == 1 and out.strip() == "error: no trace with id 'nope'" and spy.declined == 3


def test_a_store_of_another_schema_version_is_left_to_the_full_path(tmp_path, store, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    source = sqlite3.connect(store["lib"] / layout.RECORDS_FILE)
    target = sqlite3.connect(lib / layout.RECORDS_FILE)
    source.backup(target)
    source.close()
    with target:
        target.execute("UPDATE library_meta SET value = ? WHERE key = 'schema_version'",
                       (str(layout.SCHEMA_VERSION + 1),))
    target.close()
    with light_reads.open_reader(lib, "default") as reader:
        assert reader is None
    spy = Spy(monkeypatch)
    code, out = invoke("list", lib=lib)
    assert code == 2 and "upgrade skill-library" in out and spy.declined == 1
    with light_reads.open_reader(store["lib"], "default") as reader:
        assert reader is not None and len(reader.current_versions()) == 3
    with light_reads.open_reader(tmp_path / "nothing", "default") as reader:
        assert reader is None


def test_the_schema_version_has_one_home():
    from skill_library import migrations
    from skill_library.storage import tables

    assert layout.SCHEMA_VERSION == tables.SCHEMA_VERSION == len(migrations.MIGRATIONS)


LIGHT_PROBE = """
import sys
from skill_library.cli import app
for args in {commands!r}:
    try:
        app(args, prog_name="skills")
    except SystemExit as exc:
        assert exc.code in (0, None), (args, exc.code)
print("HEAVY", sorted(m for m in ("sqlalchemy", "skill_library.library", "skill_library.governance",
                                   {models!r}, "chromadb", "torch") if m in sys.modules))
"""


def test_the_light_read_commands_import_no_record_store_models_or_governance(store, tmp_path):
    commands = [["list"], ["history", LONG_NAME], ["outcomes", LONG_NAME], ["traces", LONG_NAME]]
    env = dict(os.environ, SKILLS_DIR=str(store["lib"]))
    # the text forms import not even the models; the JSON forms the models, for the same JSON
    for forms, models in ((commands, "skill_library.models"), ([[*c, "--json"] for c in commands], "")):
        done = subprocess.run([sys.executable, "-c", LIGHT_PROBE.format(commands=forms, models=models)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "HEAVY []", forms
