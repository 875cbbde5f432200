"""Instruction procedures: confidence, the system prompt, fetch by confidence (issue 11)."""

from __future__ import annotations

import pytest

from skill_library.errors import SkillLibraryError
from skill_library.models import Skill
from skill_library.procedures import HEADING

BASE = "You are a careful financial assistant."


def pinned(library):
    a = library.add_procedure("Quantify the worst case", "When the user asks about an investment",
                              "Before recommending an investment, state the worst plausible loss in money.",
                              actor=None)  # the local administrator
    b = library.add_procedure("Push equity", "When the user has a long horizon",
                              "Recommend a high equity allocation.")
    path_a = [library.procedures.get(a.name).confidence]
    for positive in (True, True, False, True, True):
        library.record_procedure_outcome(a.name, positive)
        path_a.append(library.procedures.get(a.name).confidence)
    path_b = [library.procedures.get(b.name).confidence]
    for positive in (False, False):
        library.record_procedure_outcome(b.name, positive)
        path_b.append(library.procedures.get(b.name).confidence)
    return a, b, path_a, path_b


def test_the_pinned_example(library):
    a, b, path_a, path_b = pinned(library)
    assert path_a == [0.60, 0.68, 0.76, 0.61, 0.69, 0.77]
    assert path_b == [0.60, 0.45, 0.30]
    assert library.procedures.confidence_path(a.name) == path_a
    prompt = library.build_system_prompt(BASE)
    assert prompt == (
        f"{BASE}\n\n{HEADING}\n"
        "1. Quantify the worst case\n"
        "   Trigger: When the user asks about an investment\n"
        "   Before recommending an investment, state the worst plausible loss in money."
    )
    assert "Push equity" not in prompt
    stored = library.get(a.name)
    assert (stored.kind, stored.status, stored.successes, stored.failures) == ("instruction", "active", 4, 1)
    assert stored.provenance.created_by == library.resolve_actor(None).id  # the registered actor who added it


def test_confidence_is_clamped(library):
    p = library.add_procedure("Cite sources", "When stating a figure", "Name the source of every figure.",
                              confidence=0.97)
    library.record_procedure_outcome(p.name, True)
    assert library.procedures.get(p.name).confidence == 1.0
    q = library.add_procedure("Hedge", "When unsure", "Say how sure you are.", confidence=0.1)
    library.record_procedure_outcome(q.name, False)
    assert library.procedures.get(q.name).confidence == 0.0


def test_prompt_orders_by_confidence_limits_and_filters_by_task(library):
    library.add_procedure("Quantify the worst case", "When the user asks about an investment",
                          "State the worst plausible loss.", confidence=0.7)
    library.add_procedure("Greet by name", "When a conversation starts", "Greet the user by name.",
                          confidence=0.9)
    assert library.build_system_prompt(BASE) == library.build_system_prompt(BASE + "\n\n")
    everything = library.build_system_prompt(BASE)
    assert everything.index("1. Greet by name") < everything.index("2. Quantify the worst case")
    assert "2." not in library.build_system_prompt(BASE, limit=1)
    assert library.build_system_prompt(BASE, threshold=0.95) == BASE
    on_task = library.build_system_prompt(BASE, task="Is investing in gold a good idea?")
    assert "Quantify the worst case" in on_task and "Greet by name" not in on_task
    assert library.build_system_prompt(BASE, task="What is the weather in Paris?") == BASE


def test_a_new_version_keeps_the_name_and_restarts_confidence(library):
    first = library.add_procedure("Quantify the worst case", "When investing", "State the worst loss.")
    library.record_procedure_outcome(first.name, False)
    second = library.add_procedure("Quantify the worst case", "When investing", "State the worst loss in money.",
                                   confidence=0.7)
    assert (second.name, second.version) == (first.name, 2)
    assert library.procedures.get(first.name).confidence == 0.7
    assert library.procedures.get(first.name, 1).confidence == 0.45


def test_feedback_on_a_procedure_is_record_procedure_outcome(library):
    p = library.add_procedure("Cite sources", "When stating a figure", "Name the source of every figure.")
    library.feedback(p.name, True)
    assert library.procedures.get(p.name).confidence == 0.68


def test_fetch_filters_procedures_by_confidence(library):
    p = library.add_procedure("Quantify the worst case", "When the user asks about an investment",
                              "State the worst plausible loss.")
    task = "the user asks about an investment in bonds"
    assert [m.skill.name for m in library.fetch(task, kinds=["instruction"])] == [p.name]
    library.record_procedure_outcome(p.name, False)  # 0.45: below the fetch floor, Laplace says 0.33
    assert library.fetch(task, kinds=["instruction"]) == []


def test_errors_name_the_problem(library):
    with pytest.raises(ValueError, match="trigger: a procedure needs a non-empty trigger"):
        library.add_procedure("Title", " ", "Do it.")
    with pytest.raises(ValueError, match="confidence must be within"):
        library.add_procedure("Title", "When", "Do it.", confidence=1.5)
    library.add(Skill.from_function("def double(x: int) -> int:\n    return 2 * x\n", when="double a number"))
    with pytest.raises(SkillLibraryError, match="'double' is a code skill, not a procedure"):
        library.add_procedure("Double", "When", "Do it.")
    with pytest.raises(SkillLibraryError, match="is a code skill, not a procedure"):
        library.record_procedure_outcome("double", True)


def test_an_instruction_skill_added_directly_starts_at_the_default_confidence(library):
    library.add(Skill(name="cite_sources", kind="instruction", when="When stating a figure",
                      description="Name the source of every figure."))
    library.record_procedure_outcome("cite_sources", False)
    procedure = library.procedures.get("cite_sources")
    assert (procedure.confidence, procedure.failures) == (0.45, 1)
    assert library.procedures.confidence_path("cite_sources") == [0.6, 0.45]
