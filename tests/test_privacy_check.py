"""The harness's privacy check: ground-truth values found in every kind of stored or shown text.

The scanner is tested on its own (token matching, the capitalized-name and decimal rules);
then a value is planted in each kind of text a library stores or shows and the check must
name the place (and never print the value); then a harness run reports the check and keeps
its own results free of the world's values; the CLI exits non-zero on a leak.
"""

from __future__ import annotations

import json

import pytest

from benchmarks import __main__ as cli
from benchmarks.harness import RunConfig, run_benchmark
from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, markdown_lines
from benchmarks.worlds import PersonalValue, get_world, load_tasks
from skill_library import SkillLibrary
from skill_library.governance import Policy
from skill_library.models import Skill

PLANTED = {  # place -> a person's value planted only there
    "name": PersonalValue("Zygmunt Ołowski", "name", "p1"),
    "when": PersonalValue("zygmunt.olowski@corp.example", "email", "p1"),
    "docstring": PersonalValue("+48 601 222 333", "phone", "p1"),
    "code": PersonalValue("E77123", "employee_id", "p1"),
    "example": PersonalValue("Wiebke Hansdóttir", "name", "p2"),
    "explain": PersonalValue("wiebke@corp.example", "email", "p2"),
}


def scanner(*extra: PersonalValue) -> ValueScanner:
    return ValueScanner([*PLANTED.values(), *extra, PersonalValue("Ana", "first_name", "p3"),
                         PersonalValue("62791", "zip", "p3")])


def test_the_scanner_finds_values_whatever_separates_or_cases_their_parts():
    s = scanner()
    for text in ("Zygmunt Ołowski asked", "zygmunt_olowski", "ZYGMUNT  OŁOWSKI", "zygmunt-ołowski"):
        hits = s.find(text, identifier=True)
        assert [h.kind for h in hits] == ["name"], text
    assert [h.kind for h in s.find("mail zygmunt.olowski@corp.example now")] == ["email"]
    # accents folded on both sides: the value's own spelling and one without accents
    assert s.find("Wiebke Hansdottir") and s.find("wiebke hansdóttir")
    # a one-word name counts capitalized in prose, anywhere in an identifier, never inside a word
    assert s.find("Hi, Ana here") and not s.find("an ana-lysis of banana")
    assert s.find("hi_this_is_ana", identifier=True) and not s.find("banana", identifier=True)
    # a number-only value is not found inside a decimal number
    assert s.find("zip 62791.") and not s.find("similarity 0.62791") and not s.find("62791.5 km")
    assert not s.find("nothing personal here: {email}, <a name>, user@example.com")


def test_redaction_masks_every_value_and_keeps_the_rest():
    s = scanner()
    text = "Zygmunt Ołowski (zygmunt.olowski@corp.example, E77123) called from +48 601 222 333."
    assert s.redact(text) == "‹name› (‹email›, ‹employee_id›) called from +‹phone›."
    nested = s.redact_json({"a": [text, 3], "Ana": {"b": "Ana"}})
    assert nested == {"a": [s.redact(text), 3], "‹first_name›": {"b": "‹first_name›"}}


@pytest.fixture()
def planted(tmp_path, embedder):
    """A real library holding one skill with a value planted in its name, `when`, docstring
    and code; the two texts no hand-added skill controls (a stored example, explain's output)
    are planted through a named stand-in that changes only those two answers."""
    library = SkillLibrary(tmp_path / "lib", embedder=embedder, min_reliability=0.0,
                           policy=Policy(auto_approve="all"))
    code = (
        "def remind_zygmunt_olowski(note: str):\n"
        "    \"\"\"Text +48 601 222 333 with a note.\"\"\"\n"
        "    return call_tool('send_text', to='E77123', body=note)\n"
    )
    skill = Skill(name="remind_zygmunt_olowski", when="Remind zygmunt.olowski@corp.example of {note}",
                  description="Text +48 601 222 333 with a note.", code=code, tools=["send_text"],
                  parameters={"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]})
    assert library.add(skill).status == "added"

    class PlantedLibrary:  # a named stand-in: the real library, two answers planted
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

        def examples(self, name):
            from skill_library.models import Example

            return [Example(trace_id="t1", text="Wiebke Hansdóttir asked for this")]

        def explain(self, subject):
            return {"subject": subject, "patterns": [{"note": "seen with wiebke@corp.example"}]}

    yield PlantedLibrary(library)
    library.close()


def test_a_value_planted_in_each_kind_of_text_is_found_and_named(planted, capsys):
    report = check_library(planted, scanner(), label="planted", queries=["remind someone of the budget"],
                           subjects=["zygmunt.olowski@corp.example"])
    assert not report.ok and not report.errors
    places = set(report.by_place)
    assert {"name", "when", "docstring", "code", "example", "prompt_block", "openai_tools", "agent_skills_export",
            "fetch", "explain"} <= places, places
    wheres = {leak.where for leak in report.kept}
    assert "skill remind_zygmunt_olowski v1: when" in wheres
    assert any(w.startswith("export ") and w.endswith("SKILL.md") for w in wheres)
    # explain shows a subject their own values: only the other person's email counts there
    explained = [k for k in report.kept if k.where.startswith("explain")]
    assert [k.kind for k in explained] == ["email"] and "‹email›" in explained[0].context
    # what is printed and written names places and kinds, never a value
    shown = "\n".join(report.lines(limit=500) + markdown_lines(report.to_json(), limit=500))
    shown += json.dumps(report.to_json(), ensure_ascii=False)
    for value in PLANTED.values():
        assert value.value not in shown and "Zygmunt" not in shown and "Wiebke" not in shown


def test_a_library_without_the_values_passes(planted):
    report = check_library(planted, ValueScanner([PersonalValue("Kristófer Jónsson", "name", "x")]),
                           label="clean", queries=["remind someone"], subjects=["nobody@corp.example"])
    assert report.ok and report.texts > 10 and report.leaks == 0
    assert report.lines()[0].startswith("privacy check passed")


def test_a_check_that_cannot_finish_fails():
    class Broken:
        def list(self):
            raise RuntimeError("store is gone (zygmunt.olowski@corp.example)")

    report = check_library(Broken(), scanner(), label="broken")
    assert not report.ok and "store is gone" in report.errors[0]
    assert "zygmunt.olowski" not in report.errors[0]


def test_every_world_with_people_declares_their_values():
    for name, kinds in (("shop", {"name", "email", "user_id", "order_id", "payment_id", "address", "zip"}),
                        ("helpdesk", {"name", "email", "employee_id", "phone", "address", "asset_tag"}),
                        ("office", {"first_name", "email", "phone"})):
        world = get_world(name)
        values = world.personal_values(load_tasks(name)[:5])
        assert kinds <= {v.kind for v in values}, name
    assert get_world("crafting").personal_values(load_tasks("crafting")) == []


def test_a_harness_run_checks_privacy_and_its_results_hold_no_value(tmp_path, embedder):
    tasks = load_tasks("shop")
    train = [t for t in tasks if t.split == "train"][:3]
    test = [t for t in tasks if t.split == "test"][:2]
    config = RunConfig(world="shop", agent="replay", conditions=["none", "skills"], out=tmp_path)
    results = run_benchmark(config, tasks=train + test, embedder=embedder)
    privacy = results["privacy"]
    assert privacy["values_checked"] > 100 and privacy["texts_checked"] > 10
    assert privacy["ok"] == (privacy["leaks"] == 0 and not privacy["errors"])
    world_values = ValueScanner(get_world("shop").personal_values(train + test))
    assert world_values.find(json.dumps(results, ensure_ascii=False)) == []


def test_the_cli_exits_non_zero_when_the_check_fails(monkeypatch, tmp_path, capsys):
    failed = PrivacyReport(values=5, texts=2, leaks=1, by_place={"when": 1}, by_kind={"email": 1})
    monkeypatch.setattr(cli, "_run", lambda config, **kw: {"privacy": failed.to_json()})
    code = cli.main(["run", "--world", "shop", "--agent", "replay", "--out", str(tmp_path), "--no-progress"])
    assert code == cli.PRIVACY_FAILED
    monkeypatch.setattr(cli, "_run", lambda config, **kw: {"privacy": PrivacyReport(values=5, texts=2).to_json()})
    assert cli.main(["run", "--world", "shop", "--agent", "replay", "--out", str(tmp_path), "--no-progress"]) == 0


@pytest.mark.parametrize("world,suite,folder", [("helpdesk", None, "lookalike"), ("helpdesk", None, "misuse"),
                                                ("office", None, "paraphrase"), ("shop", "users", "users")])
def test_committed_results_carry_no_personal_value(world, suite, folder):
    from pathlib import Path

    from benchmarks.harness import suite_path

    values = ValueScanner(get_world(world).personal_values(load_tasks(world, path=suite_path(world, suite))))
    files = [p for p in (Path(__file__).parent.parent / "benchmarks" / "results" / folder).iterdir()
             if p.suffix in (".md", ".json")]
    assert files
    for path in files:
        assert values.find(path.read_text(encoding="utf-8")) == [], path
