"""fetch's ranking (skill_library.ranking) on real parts: a real Chroma index and MiniLM.

Evidence (a many-trace workflow against a copy learned once), bindability (numbered
parameters a task cannot fill), specificity, and the explain breakdown adding up."""

from __future__ import annotations

import pytest

from skill_library import ranking, value_fit
from skill_library.models import Skill

TASK = "please cancel my pending order #W1234567"
# two descriptions of one workflow, close in similarity to TASK (the copy a little closer),
# far enough apart (< 0.9) to be stored as two skills
COPY_WHEN = "Cancel a pending order of the customer"
WORKFLOW_WHEN = "Cancel an order that has not shipped yet"


def skill(name: str, when: str, params: str = "order_id: str", tools: str = "") -> Skill:
    body = "".join(f"    {t}(order_id=order_id)\n" for t in tools.split()) if tools else ""
    code = f'def {name}({params}) -> dict:\n    """{when}"""\n{body}    return {{}}\n'
    return Skill.from_function(code, when=when, tools=tools.split())


def names(matches) -> list[str]:
    return [m.skill.name for m in matches]


def test_many_trace_workflow_outranks_a_one_trace_copy(library):
    assert library.add(skill("cancel_copy", COPY_WHEN), verified=True).added
    assert library.add(skill("cancel_workflow", WORKFLOW_WHEN), verified=True).added
    first = library.fetch(TASK, k=2, explain=True)
    by_name = {m.skill.name: m for m in first}
    # with equal evidence the closer text wins ...
    assert by_name["cancel_copy"].similarity > by_name["cancel_workflow"].similarity
    assert names(first) == ["cancel_copy", "cancel_workflow"]
    for _ in range(96):  # ... 97 verified successes against 1 turn it around
        library.feedback("cancel_workflow", True)
    again = library.fetch(TASK, k=2, explain=True)
    assert names(again) == ["cancel_workflow", "cancel_copy"]
    top, other = again
    assert top.explanation.evidence > other.explanation.evidence
    assert top.explanation.successes == 97 and other.explanation.successes == 1


def test_evidence_prior_is_bounded_and_breaks_an_exact_tie():
    assert ranking.evidence(0) == 0.0
    assert ranking.evidence(1) == pytest.approx(0.150, abs=1e-3)
    assert ranking.evidence(97) == pytest.approx(0.993, abs=1e-3)
    assert ranking.evidence(10_000) == 1.0  # saturates: volume cannot swamp similarity
    once = skill("copy_a", COPY_WHEN).model_copy(update={"successes": 1})
    many = skill("workflow_z", COPY_WHEN).model_copy(update={"successes": 97})
    candidates = [ranking.Candidate(skill=s, similarity=0.7, fitted=0.7, entry="when", best_cosine=0.7,
                                    by_entry={"when": 0.7}, shapes=None) for s in (once, many)]
    ranked = ranking.rank_candidates(candidates, value_fit.TaskValues.of(TASK))
    assert names(ranked) == ["workflow_z", "copy_a"]  # by name alone it would be copy_a first


def test_unbindable_numbered_parameters_rank_below_a_bindable_skill(library):
    numbered = skill("cancel_three_orders", COPY_WHEN, "order_id: str, order_id_2: str, order_id_3: str")
    assert library.add(numbered, verified=True).added
    assert library.add(skill("cancel_one_order", WORKFLOW_WHEN), verified=True).added
    matches = library.fetch(TASK, k=2, explain=True)
    by_name = {m.skill.name: m for m in matches}
    assert by_name["cancel_three_orders"].similarity > by_name["cancel_one_order"].similarity
    assert names(matches) == ["cancel_one_order", "cancel_three_orders"]
    assert by_name["cancel_three_orders"].missing == ["order_id_2", "order_id_3"]
    assert by_name["cancel_three_orders"].explanation.bindability == pytest.approx(-ranking.BINDABILITY_WEIGHT * 2 / 3)
    assert by_name["cancel_one_order"].missing == []
    # the caller has three orders: the numbered skill binds and its closer text wins again
    three = library.fetch(TASK, k=2, args={"order_id": ["#W1", "#W2", "#W3"]})
    assert names(three) == ["cancel_three_orders", "cancel_one_order"]
    assert three[0].missing == []
    # args name what the caller has: a skill needing what it lacks is a poor fit
    wrong = library.fetch(TASK, k=2, args={"email": "x@example.org"}, explain=True)
    assert {m.skill.name: m.missing for m in wrong}["cancel_one_order"] == ["order_id"]


def test_specificity_prefers_the_skill_that_does_no_more_than_the_other(library):
    library.register_tools({"cancel": _spec(True), "refund": _spec(True), "notify": _spec(True)})
    assert library.add(skill("cancel_refund_notify", WORKFLOW_WHEN, tools="cancel refund notify"),
                       verified=True).added
    assert library.add(skill("cancel_only", "Cancel an order before it ships", tools="cancel"), verified=True).added
    matches = library.fetch(TASK, k=2, explain=True)
    by_name = {m.skill.name: m for m in matches}
    assert by_name["cancel_refund_notify"].similarity > by_name["cancel_only"].similarity
    assert names(matches) == ["cancel_only", "cancel_refund_notify"]
    assert by_name["cancel_refund_notify"].explanation.acting_tools == 3
    assert by_name["cancel_only"].explanation.specificity == 0.0


def test_explain_breakdown_adds_up_to_the_score(library):
    for name, when in {"cancel_copy": COPY_WHEN, "cancel_workflow": WORKFLOW_WHEN,
                       "water_plants": "water the plants in the garden"}.items():
        assert library.add(skill(name, when), verified=True).added
    matches = library.fetch(TASK, k=3, min_similarity=-1, explain=True)
    assert len(matches) == 3
    for m in matches:
        e = m.explanation
        terms = e.similarity + e.value_fit + e.evidence + e.bindability + e.specificity + e.reliability + e.intent
        assert terms == pytest.approx(e.score) and e.score == pytest.approx(m.score)
        assert e.entry == "when" and e.by_entry == {"when": pytest.approx(m.similarity)}
        assert all(t <= 0 for t in (e.value_fit, e.evidence, e.bindability, e.specificity, e.reliability, e.intent))
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    assert all(m.explanation is None for m in library.fetch(TASK, k=3, min_similarity=-1))


def test_fetch_refuses_args_that_are_not_a_mapping(library):
    with pytest.raises(TypeError, match="args must be a mapping"):
        library.fetch(TASK, args=["order_id"])  # type: ignore[arg-type]


def _spec(side_effects: bool):
    from skill_library.governance.tools import ToolSpec

    return ToolSpec(side_effects=side_effects)


def test_parameters_of_one_shape_need_as_many_values_in_the_task():
    copy = skill("copy_access", "Give an employee the access a colleague has", "email: str, colleague_email: str")
    shapes = {"email": ["a@a"], "colleague_email": ["a@a"]}
    one = value_fit.TaskValues.of("Please add me to the design-guild list, dana@example.org")
    two = value_fit.TaskValues.of("Give dana@example.org the access of lee@example.org")
    assert ranking.missing_parameters(copy, one, shapes, None) == (["email", "colleague_email"], ["colleague_email"])
    assert ranking.missing_parameters(copy, two, shapes, None)[1] == []
    # the caller passes one of them: the task's one email is the other
    assert ranking.missing_parameters(copy, one, shapes, {"colleague_email": "lee@example.org"})[1] == []
    # the caller passes the task's one email for one of them: nothing is left for the other
    assert ranking.missing_parameters(copy, one, shapes, {"email": "dana@example.org"})[1] == ["colleague_email"]
    assert ranking.missing_parameters(copy, two, shapes, {"email": "dana@example.org"})[1] == []
    assert ranking.missing_parameters(copy, one, shapes, {"email": "dana@example.org",
                                                          "colleague_email": "lee@example.org"})[1] == []


def test_an_enumerated_value_the_task_names_is_bound_whatever_shapes_the_examples_had():
    class Hit:
        similarity = 0.7
        shapes = value_fit.encode({"email": "dana@example.org", "system": "hr_portal"})

    task = value_fit.TaskValues.of("Please remove git from dana@example.org")
    revoke = skill("revoke_access", "Remove an employee's access to one system", "email: str, system: str")
    shapes = value_fit.decode(Hit.shapes)
    assert shapes == {"email": ["a@a"], "system": ["a_a"]}
    # the examples only saw hr_portal (a_a): by shape the task's git is no system ...
    assert ranking.missing_parameters(revoke, task, shapes, None)[1] == ["system"]
    assert value_fit.score(task, Hit()) < Hit.similarity
    # ... but the tool declares system's values and the task names one: bound, not charged
    assert ranking.entry_fit(task, Hit(), ["system"]) == pytest.approx(Hit.similarity)
    candidate = ranking.Candidate(skill=revoke, similarity=0.7, fitted=0.7, entry="when", best_cosine=0.7,
                                  by_entry={"when": 0.7}, shapes=shapes)
    assert ranking.score(candidate, task, None, 0, named=["system"])[2] == []
    assert ranking.score(candidate, task, None, 0)[2] == ["system"]
