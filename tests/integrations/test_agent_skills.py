"""Agent Skills folders: export, import as drafts, and one test per rule of the validator."""

from __future__ import annotations

import pytest
import yaml

from skill_library.integrations.agent_skills import (
    ALLOWED_KEYS,
    SkillFolderError,
    export_library,
    import_folders,
    read_skill_folder,
)
from skill_library.library import SkillLibrary


def _frontmatter(folder):
    text = (folder / "SKILL.md").read_text()
    return yaml.safe_load(text.split("---\n")[1]), text.split("---\n", 2)[2]


def test_export_writes_one_spec_folder_per_active_skill(desk, tmp_path):
    desk.retire("count_orders")
    result = export_library(desk, tmp_path / "out", license="MIT")
    assert [p.name for p in result.written] == ["cancel-every-order"]
    folder = tmp_path / "out" / "cancel-every-order"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "SKILL.md", "references", "references/evidence.json", "scripts", "scripts/cancel_every_order.py",
    ]
    front, body = _frontmatter(folder)
    assert set(front) <= ALLOWED_KEYS and front["name"] == "cancel-every-order"
    assert front["description"] == (
        "Cancel all pending orders of a customer. Use when: cancel every order of a customer by email"
    )
    assert front["license"] == "MIT" and len(front["compatibility"]) <= 500
    assert front["allowed-tools"] == "find_user list_orders cancel_order"
    meta = front["metadata"]
    assert all(isinstance(v, str) for v in meta.values())
    assert {k: meta[k] for k in ("version", "reliability", "successes", "failures", "tools")} == {
        "version": "1", "reliability": "0.6667", "successes": "1", "failures": "0",
        "tools": "find_user,list_orders,cancel_order",
    }
    assert meta["source"].startswith("skill-library cancel_every_order v1")
    assert "## Usage" in body and "cancel_every_order(email='<email>')" in body
    assert "| `email` | string | yes |" in body


def test_round_trip_imports_drafts_that_are_not_fetched(desk, tmp_path, embedder):
    export_library(desk, tmp_path / "out")
    with SkillLibrary(tmp_path / "other", embedder=embedder) as other:
        results = import_folders(other, tmp_path / "out")
        assert [(r.folder.name, r.status, r.problems) for r in results] == [
            ("cancel-every-order", "draft", []), ("count-orders", "draft", []),
        ]
        for original in desk.list():
            copy = other.get(original.name)
            fields = ("name", "kind", "when", "description", "code", "parameters", "tools", "depends_on")
            assert {f: getattr(copy, f) for f in fields} == {f: getattr(original, f) for f in fields}
            assert (copy.status, copy.outcomes, copy.provenance.generalizer) == (
                "draft", 0, "agent-skills-import"
            )
        assert other.fetch("cancel every order of a customer by email", k=2, min_reliability=0) == []
        assert other.index.count() == 0 and other.reindex() == 0
        with pytest.raises(Exception, match="is draft; only active skills run"):
            other.run("cancel_every_order", {"email": "bob@example.com"}, {})
        # accepted after a check: added as an active version, it is fetched from then on
        draft = other.get("cancel_every_order")
        accepted = other.add(draft.model_copy(update={"status": "active"}), verified=True).skill
        assert (accepted.version, accepted.status) == (2, "active")
        found = other.fetch("cancel every order of a customer by email", k=2)
        assert [(m.skill.name, m.skill.version) for m in found] == [("cancel_every_order", 2)]


def test_a_description_other_than_the_docstring_survives_the_round_trip(library, tmp_path, embedder):
    from desk_tools import COUNT_CODE

    from skill_library.models import Skill

    library.add(Skill.from_function(COUNT_CODE, when="count how many orders a customer has",
                                    description="Counts orders; pending ones by default.",
                                    tools=["find_user", "list_orders"]))
    export_library(library, tmp_path / "out")
    with SkillLibrary(tmp_path / "other", embedder=embedder) as other:
        [result] = import_folders(other, tmp_path / "out")
        assert result.skill.description == "Counts orders; pending ones by default."


def test_a_draft_of_an_existing_skill_leaves_the_active_version_current(desk, tmp_path):
    export_library(desk, tmp_path / "out")
    skill_md = tmp_path / "out" / "count-orders" / "SKILL.md"
    original = skill_md.read_text()
    assert "  when: count how many orders a customer has\n" in original
    skill_md.write_text(original.replace("  when: count how many orders a customer has\n",
                                         "  when: count the orders a customer placed\n"))
    [result] = import_folders(desk, tmp_path / "out" / "count-orders")
    assert (result.skill.version, result.skill.status) == (2, "draft")
    assert desk.get("count_orders").version == 1 and desk.get("count_orders").status == "active"
    assert [s.status for s in desk.history("count_orders")] == ["active", "draft"]
    assert [m.skill.version for m in desk.fetch("count how many orders a customer has", k=1)] == [1]


def test_importing_an_identical_folder_again_is_a_duplicate_not_a_new_draft(desk, tmp_path, embedder):
    export_library(desk, tmp_path / "out")
    [again] = import_folders(desk, tmp_path / "out" / "count-orders")  # the active version itself
    assert (again.status, again.skill.version, again.skill.status) == ("duplicate", 1, "active")
    with SkillLibrary(tmp_path / "other", embedder=embedder) as other:
        first = import_folders(other, tmp_path / "out")
        second = import_folders(other, tmp_path / "out")
        assert [r.status for r in first] == ["draft", "draft"]
        assert [(r.status, r.skill.version) for r in second] == [("duplicate", 1), ("duplicate", 1)]
        assert [len(other.history(r.skill.name)) for r in second] == [1, 1]


def test_the_example_tasks_travel_masked_and_are_restored(desk, tmp_path, embedder):
    """The masked example tasks (their values as shape stand-ins), the outcome counts and the
    preconditions travel in references/evidence.json; import restores the examples, so the
    skill, once active, is fetched by them as it was."""
    import json

    from skill_library.models import Example

    examples = [Example(trace_id="t1", text="cancel every order of {email}", params={"email": "ann@corp.example"}),
                Example(trace_id="t2", text="please cancel all the orders of {email}",
                        params={"email": "bo@mail.example"}, indexed=False)]
    desk.context.store.save_evidence("cancel_every_order", examples=examples)  # as learning keeps them
    export_library(desk, tmp_path / "out")
    evidence = json.loads((tmp_path / "out" / "cancel-every-order" / "references" / "evidence.json").read_text())
    assert evidence["format"] == "skill-library evidence 1" and evidence["skill"] == "cancel_every_order"
    assert [e["text"] for e in evidence["examples"]] == [e.text for e in examples]
    assert evidence["evidence"] == {"successes": 1, "failures": 0, "reliability": 0.6667}
    shown = json.dumps(evidence["examples"])
    for example in examples:
        for value in example.params.values():
            if isinstance(value, str) and value:
                assert value not in shown, f"{value!r} left the library in an export"
    with SkillLibrary(tmp_path / "other", embedder=embedder) as other:
        results = {r.folder.name: r for r in import_folders(other, tmp_path / "out")}
        assert results["cancel-every-order"].examples == len(examples)
        restored = other.examples("cancel_every_order")
        assert [(e.trace_id, e.text, e.indexed) for e in restored] == [
            (e.trace_id, e.text, e.indexed) for e in examples]
        assert [set(e.params) for e in restored] == [set(e.params) for e in examples]


def test_a_broken_evidence_file_is_one_line(tmp_path, library):
    path = _foreign(tmp_path)
    (path / "references").mkdir()
    (path / "references" / "evidence.json").write_text("{not json")
    [result] = import_folders(library, path.parent)
    assert result.status == "invalid" and result.problems == [
        "references/evidence.json: not JSON (Expecting property name enclosed in double quotes at line 1)"]


FOREIGN = """\
---
name: order-total
description: Sum the totals of a customer's orders. Use when asked what a customer spent.
metadata:
  author: someone
---
# Order total
Call `main(user_id)`.
"""
SCRIPT = 'def main(user_id: str) -> float:\n    return sum(o["total"] for o in list_orders(user_id=user_id))\n'


def _foreign(tmp_path, skill_md=FOREIGN, script=SCRIPT, folder="order-total"):
    path = tmp_path / "in" / folder
    (path / "scripts").mkdir(parents=True)
    (path / "SKILL.md").write_text(skill_md)
    if script is not None:
        (path / "scripts" / "total.py").write_text(script)
    return path


def test_someone_elses_folder_with_one_function_imports(tmp_path, library):
    path = _foreign(tmp_path, FOREIGN.replace("metadata:\n  author: someone\n", "allowed-tools: list_orders\n"))
    [result] = import_folders(library, path)
    skill = result.skill
    assert (skill.name, skill.status, skill.tools) == ("order_total", "draft", ["list_orders"])
    assert skill.code.startswith("def order_total(user_id: str)")
    assert skill.when == "Sum the totals of a customer's orders. Use when asked what a customer spent."
    assert skill.parameters == {"type": "object", "properties": {"user_id": {"type": "string"}},
                                "required": ["user_id"]}


# each case breaks one rule: (what to change in SKILL.md / the script / the folder, the one error)
RULES = {
    "no SKILL.md": (dict(skill_md=None), "SKILL.md: missing"),
    "no frontmatter": (dict(skill_md="# Order total\n"), "SKILL.md: must start with YAML frontmatter between --- lines"),
    "not YAML": (dict(skill_md=FOREIGN.replace("author: someone", "author: [someone")), "SKILL.md: frontmatter is not YAML at line"),
    "unknown key": (dict(skill_md=FOREIGN.replace("metadata:", "version: 1\nmetadata:")),
                    "frontmatter: key(s) version not allowed (only allowed-tools, compatibility, description, license, metadata, name)"),
    "no name": (dict(skill_md=FOREIGN.replace("name: order-total\n", "")), "name: required, a string of 1-64 characters"),
    "name too long": (dict(skill_md=FOREIGN.replace("order-total", "o" * 65), folder="o" * 65),
                      "name: 65 characters, at most 64 allowed"),
    "uppercase name": (dict(skill_md=FOREIGN.replace("order-total", "Order-total"), folder="Order-total"),
                       "name: 'Order-total' may hold only lowercase letters, digits and hyphens"),
    "leading hyphen": (dict(skill_md=FOREIGN.replace("order-total", "-order-total"), folder="-order-total"),
                       "name: '-order-total' may not start or end with a hyphen"),
    "double hyphen": (dict(skill_md=FOREIGN.replace("order-total", "order--total"), folder="order--total"),
                      "name: 'order--total' may not hold consecutive hyphens"),
    "name is not the folder": (dict(folder="totals"), "name: 'order-total' must equal the folder's name 'totals'"),
    "no description": (dict(skill_md="\n".join(l for l in FOREIGN.splitlines() if not l.startswith("description:"))),
                       "description: required, a non-empty string"),
    "description too long": (dict(skill_md=FOREIGN.replace("Sum the totals", "S" * 1025)),
                             "description: 1087 characters, at most 1024 allowed"),
    "compatibility too long": (dict(skill_md=FOREIGN.replace("metadata:", "compatibility: " + "c" * 501 + "\nmetadata:")),
                               "compatibility: 501 characters, at most 500 allowed"),
    "metadata not strings": (dict(skill_md=FOREIGN.replace("author: someone", "version: 2")),
                             'metadata: must map strings to strings (quote numbers: version: "1")'),
    "license not a string": (dict(skill_md=FOREIGN.replace("metadata:", "license: [MIT]\nmetadata:")), "license: must be a string"),
    "no script": (dict(script=None), "scripts/: must hold exactly one Python file with the skill's function (found none)"),
    "two functions": (dict(script=SCRIPT + "\ndef helper():\n    return 1\n"),
                      "scripts/total.py: must define exactly one top-level function, found 2"),
    "not Python": (dict(script="def main(:\n"), "scripts/total.py: syntax error at line 1"),
    "name is no identifier": (dict(skill_md=FOREIGN.replace("order-total", "3d-print"), folder="3d-print"),
                              "name: '3d_print' is not a snake_case Python identifier"),
}


@pytest.mark.parametrize("case", list(RULES))
def test_each_rule_broken_once_gives_its_one_line_error(tmp_path, library, case):
    options, error = RULES[case]
    skill_md = options.get("skill_md", FOREIGN)
    path = _foreign(tmp_path, skill_md or FOREIGN, options.get("script", SCRIPT), options.get("folder", "order-total"))
    if skill_md is None:
        (path / "SKILL.md").unlink()
    with pytest.raises(SkillFolderError) as raised:
        read_skill_folder(path)
    assert len(raised.value.problems) == 1, raised.value.problems
    assert raised.value.problems[0].startswith(error), raised.value.problems
    assert "\n" not in raised.value.problems[0]
    [result] = import_folders(library, path.parent)
    assert result.status == "invalid" and library.list() == []
