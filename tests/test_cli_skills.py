"""`skills add`, `show`, the tables, `outcomes` and `traces`, and the JSON `learn` reads
(issue 14 items 12-15)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()

LONG_NAME = "reserve_every_item_on_the_market_stall_shelf_for_the_weekend_crowd"
LONG_CODE = (
    f"def {LONG_NAME}(shelf: str, quantity: int = 1) -> list:\n"
    '    """Reserve every item of one shelf."""\n'
    "    reserved = [reserve(item=item, quantity=quantity, note='a deliberately long line of code that goes on past eighty columns') for item in list_items(shelf=shelf)]\n"
    "    return reserved\n"
)
TOOLS = (
    "def list_items(shelf: str) -> list:\n    return ['apple', 'pear']\n"
    "def reserve(item: str, quantity: int, note: str = '') -> dict:\n"
    "    return {'item': item, 'reserved': quantity}\n"
)


def invoke(*args: str, lib) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(lib)})
    return result.exit_code, result.output


@pytest.fixture
def lib(tmp_path, embedder):
    folder = tmp_path / "lib"
    # opts in to auto-approval: tests here learn skills that must activate
    assert invoke("init", "--auto-approve", "all", lib=folder)[0] == 0
    return folder


@pytest.fixture
def shelf(tmp_path, lib):
    """A library with the long-named skill added from a file, tools inferred."""
    path = tmp_path / "shelf.py"
    path.write_text(LONG_CODE)
    code, out = invoke("add", str(path), "--when", "reserve the items of a shelf", "--json", lib=lib)
    assert code == 0, out
    return lib


def test_add_infers_tools_from_the_names_the_code_calls(shelf):
    code, out = invoke("show", LONG_NAME, "--json", lib=shelf)
    assert json.loads(out)["tools"] == ["reserve", "list_items"]


def test_add_tools_option_overrides_the_inference(tmp_path, lib):
    path = tmp_path / "s.py"
    path.write_text("import math\n\ndef root(x: float) -> float:\n    return helper(math.sqrt(abs(x)))\n")
    code, out = invoke("add", str(path), "--when", "a root", "--json", lib=lib)
    assert json.loads(out)["skill"]["tools"] == ["helper"]  # not abs (builtin), not math
    code, out = invoke("add", str(path), "--when", "a root", "--tools", "helper,other", "--json", lib=lib)
    assert json.loads(out)["skill"]["tools"] == ["helper", "other"]


def test_add_checks_the_sandbox_policy_at_add_time(tmp_path, lib, library):
    path = tmp_path / "bad.py"
    path.write_text("import os\n\ndef leak() -> list:\n    return os.listdir('/')\n")
    code, out = invoke("add", str(path), "--when", "list the root folder", lib=lib)
    assert code == 1 and len(out.strip().splitlines()) == 1
    assert "breaks the sandbox policy" in out and '"os" is not allowed' in out
    code, out = invoke("list", "--json", lib=lib)
    assert json.loads(out) == []
    from skill_library.errors import SkillPolicyError
    from skill_library.models import Skill

    with pytest.raises(SkillPolicyError, match='"os" is not allowed'):
        library.add(Skill.from_function(path.read_text(), when="list the root folder"))


def test_add_name_picks_one_function_of_several(tmp_path, lib):
    path = tmp_path / "two.py"
    path.write_text("def first() -> int:\n    return 1\n\ndef second() -> int:\n    return 2\n")
    code, out = invoke("add", str(path), "--when", "count to two", lib=lib)
    assert code == 1 and "found 2 (first, second)" in out and "--name" in out
    code, out = invoke("add", str(path), "--when", "count to two", "--name", "second", "--json", lib=lib)
    assert code == 0 and json.loads(out)["skill"]["name"] == "second"


def test_add_bad_name_is_one_line_not_a_pydantic_dump(tmp_path, lib):
    path = tmp_path / "bad_name.py"
    path.write_text("def BadName() -> int:\n    return 1\n")
    code, out = invoke("add", str(path), "--when", "anything", lib=lib)
    assert code == 1
    assert out.strip() == "error: name: 'BadName' is not a snake_case Python identifier"


def test_show_prints_code_unwrapped_as_valid_python(shelf):
    code, out = invoke("show", LONG_NAME, lib=shelf)
    assert code == 0
    compile(out, "shown.py", "exec")  # the facts are comments, the code is intact
    assert LONG_CODE in out


def test_tables_never_cut_names(shelf):
    for args in (["list"], ["fetch", "reserve the items of a shelf", "--min-reliability", "0"]):
        code, out = invoke(*args, lib=shelf)
        assert code == 0 and LONG_NAME in out, out


def test_outcomes_and_traces_views(shelf, tmp_path):
    tools = tmp_path / "shelf_tools.py"
    tools.write_text(TOOLS)
    code, out = invoke("run", LONG_NAME, "--args", '{"shelf": "a"}', "--tools", str(tools), "--json", lib=shelf)
    assert code == 0, out
    trace_id = json.loads(out)["trace"]["id"]
    assert invoke("feedback", LONG_NAME, "--success", "--trace-id", trace_id, lib=shelf)[0] == 0
    assert invoke("feedback", LONG_NAME, "--failure", lib=shelf)[0] == 0

    code, out = invoke("outcomes", LONG_NAME, "--json", lib=shelf)
    log = json.loads(out)
    assert [(o["version"], o["success"], o["trace_id"]) for o in log] == [(1, True, trace_id), (1, False, None)]
    code, out = invoke("outcomes", LONG_NAME, lib=shelf)
    assert code == 0 and trace_id in out and "failure" in out

    code, out = invoke("traces", LONG_NAME, "--json", lib=shelf)
    traces = json.loads(out)
    assert [t["id"] for t in traces] == [trace_id]
    assert [c["name"] for c in traces[0]["calls"]] == ["list_items", "reserve", "reserve"]
    code, out = invoke("traces", LONG_NAME, lib=shelf)
    assert code == 0 and trace_id in out
    code, out = invoke("traces", LONG_NAME, "--id", trace_id, lib=shelf)
    assert code == 0 and json.loads(out)["source"] == f"skill:{LONG_NAME}@1"
    code, out = invoke("traces", LONG_NAME, "--id", "nope", lib=shelf)
    assert code == 1 and out.strip() == "error: no trace with id 'nope'"
    code, out = invoke("outcomes", "ghost", lib=shelf)
    assert code == 1 and "no skill named 'ghost'" in out


MESSAGES = [
    {"role": "user", "content": "reserve 3 apple"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "reserve", "arguments": '{"item": "apple", "quantity": 3}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"reserved": 3}'},
]


def test_learn_reads_a_plain_messages_array_with_task_and_verifier(tmp_path, lib):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(MESSAGES))
    code, out = invoke("learn", str(path), lib=lib)
    assert code == 1 and "needs --task and --verifier" in out
    code, out = invoke("learn", str(path), "--task", "reserve 3 apple", "--verifier", "stock-audit",
                       "--params", '{"item": "apple", "quantity": 3}', "--json", lib=lib)
    assert code == 0, out
    skill = json.loads(out)["skill"]
    assert set(skill["parameters"]["properties"]) == {"item", "quantity"}
    assert skill["provenance"]["trace_ids"]


def test_learn_help_documents_the_json(lib):
    code, out = invoke("learn", "--help", lib=lib)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0
    for piece in ('"calls"', '"outcome"', '"messages"', "messages array", "--task", "--verifier"):
        assert piece in text, piece


def test_learn_errors_do_not_echo_a_large_trace(tmp_path, lib):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"task": "t", "calls": [{"name": "", "arguments": {"x": "y" * 200_000}}]}))
    code, out = invoke("learn", str(path), lib=lib)
    assert code == 3 and len(out) < 2_000


def test_an_index_rebuild_is_a_one_line_notice_not_a_raw_warning(shelf):
    import shutil

    code, out = invoke("feedback", LONG_NAME, "--success", lib=shelf)
    assert code == 0
    shutil.rmtree(shelf / "chroma")
    code, out = invoke("fetch", "reserve the items of a shelf", "--json", lib=shelf)
    assert code == 0
    notices = [line for line in out.splitlines() if line.startswith("notice:")]
    assert len(notices) == 1 and "rebuilding it from 1 skill record(s)" in notices[0]
    assert "IndexRebuiltWarning" not in out and "warnings.warn" not in out
    data = "\n".join(line for line in out.splitlines() if not line.startswith("notice:"))
    assert json.loads(data)[0]["name"] == LONG_NAME


def test_output_holding_brackets_prints_literally(tmp_path, lib):
    """User text (a `when`, a name in an error) is printed as it is, never read as rich
    markup: a closing tag in it once crashed the command after it had stored the skill."""
    path = tmp_path / "b.py"
    path.write_text("def bracketed(x: int) -> int:\n    return x\n")
    when = "copy [/x] and [bold]x[/bold] as written"
    code, out = invoke("add", str(path), "--when", when, lib=lib)
    assert code == 0, out
    code, out = invoke("show", "bracketed", lib=lib)
    assert code == 0 and when in out, out
    code, out = invoke("show", "no_[/such]_skill", lib=lib)
    assert code == 1 and "error: " in out and "no_[/such]_skill" in out, out
