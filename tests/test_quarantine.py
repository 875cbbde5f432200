"""Drift-aware reliability (issue 11): a failure burst quarantines a skill with a long
success record; merging evidence never lifts it; a passing re-verification or an approver does."""

from __future__ import annotations

import pytest

from skill_library.errors import PermissionDenied, SkillLibraryError
from skill_library.governance import Actor
from skill_library.models import Outcome, ToolCall, Trace
from skill_library.patterns.reliability import (
    QUARANTINE_FAILURES,
    QUARANTINE_MIN_OUTCOMES,
    QUARANTINE_WINDOW,
    events,
)

SHELF: dict[str, int] = {}


def restock(item: str, count: int) -> dict:
    SHELF[item] = SHELF.get(item, 0) + count
    return {"item": item, "stock": SHELF[item]}


TOOLS = {"restock": restock}
TASK = "restock {n} pears on the fruit shelf"


def trace(n: int) -> Trace:
    return Trace(task=TASK.format(n=n), params={"count": n},
                 calls=[ToolCall(name="restock", arguments={"item": "pear", "count": n},
                                 result={"item": "pear", "stock": n})],
                 outcome=Outcome(success=True, verifier="shelf-audit"))


def burst(library, name: str) -> None:
    """A long success record, then failures until the rule fires."""
    for _ in range(QUARANTINE_MIN_OUTCOMES):
        library.feedback(name, True)
    for _ in range(QUARANTINE_FAILURES - 1):
        assert library.feedback(name, False).status == "active"
    assert library.feedback(name, False).status == "quarantined"


def test_a_failure_burst_quarantines_and_a_passing_reverification_lifts(library):
    name = library.learn(trace(3)).skill.name
    burst(library, name)
    skill = library.get(name)
    assert skill.reliability > library.min_reliability  # Laplace over its whole history still trusts it
    assert library.fetch("restock 5 pears on the fruit shelf") == []
    assert name not in library.index.entries()
    with pytest.raises(SkillLibraryError, match="is quarantined; only active skills run"):
        library.run(name, {"count": 1}, TOOLS)
    # evidence that is not a run of the skill never lifts it
    assert library.feedback(name, True).status == "quarantined"
    merged = library.learn(trace(4))
    assert merged.status == "merged" and merged.skill.name == name
    assert library.get(name).status == "quarantined"
    # a failing re-verification keeps it quarantined; a passing one lifts it
    assert not library.reverify(name, {"count": 2}, TOOLS, verifier=lambda r: False).trace.outcome.success
    assert library.get(name).status == "quarantined"
    run = library.reverify(name, {"count": 2}, TOOLS, verifier=lambda r: r.value["stock"] >= 2)
    assert run.ok and library.get(name).status == "active"
    assert [(e["event"], e["actor"]) for e in events(library.context.store, name)] == [
        ("quarantined", "library"), ("lifted", "library")]
    assert "5 of its last 6 outcomes failed" in events(library.context.store, name)[0]["reason"]
    assert [m.skill.name for m in library.fetch("restock 5 pears on the fruit shelf")] == [name]


def test_an_approver_lifts_a_quarantine(library):
    name = library.learn(trace(3)).skill.name
    burst(library, name)
    with pytest.raises(PermissionDenied, match="'approver' is not registered"):
        library.lift_quarantine(name, actor="approver")
    library.actors.add(Actor(id="viewer", kind="user", permissions=frozenset({"skill.propose"})))
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.approve'"):
        library.lift_quarantine(name, actor="viewer")
    library.actors.add(Actor(id="approver", kind="user", permissions=frozenset({"skill.approve"})))
    assert library.lift_quarantine(name, actor="approver").status == "active"
    assert [(e["event"], e["actor"]) for e in events(library.context.store, name)][-1] == ("lifted", "approver")
    assert [m.skill.name for m in library.fetch("restock 5 pears on the fruit shelf")] == [name]
    with pytest.raises(SkillLibraryError, match="is active, not quarantined"):
        library.lift_quarantine(name)


def test_a_short_record_is_left_to_laplace(library):
    name = library.learn(trace(3)).skill.name
    for _ in range(QUARANTINE_WINDOW):
        library.feedback(name, False)
    assert library.get(name).status == "active"  # 7 outcomes < QUARANTINE_MIN_OUTCOMES
    assert library.fetch("restock 5 pears on the fruit shelf") == []  # Laplace drops it


def test_a_new_version_is_not_judged_by_its_predecessors_failures(library):
    from skill_library.models import Skill

    code = "def shout(text: str) -> str:\n    return text.upper()\n"
    library.add(Skill.from_function(code, when="shout a text"), verified=True)
    for _ in range(QUARANTINE_MIN_OUTCOMES):
        library.feedback("shout", True)
    for _ in range(QUARANTINE_FAILURES - 1):
        library.feedback("shout", False)
    library.add(Skill.from_function(code.replace("upper()", "upper() + '!'"), when="shout a text"))
    assert library.feedback("shout", False).status == "active"  # v2 has one outcome


def test_the_rule_reads_only_the_recent_window_of_the_active_version(library):
    """recent_outcomes: the last ``limit`` outcomes of one version, oldest first, so a skill
    with a long history costs the same to check after each failure."""
    name = library.learn(trace(1)).skill.name
    pattern = [True, False, True, True, False, False, True, False]
    for ok in pattern:
        library.feedback(name, ok)
    version = library.get(name).version
    assert library.context.store.recent_outcomes(name, version, 3) == pattern[-3:]
    assert library.context.store.recent_outcomes(name, version, 100) == [True, *pattern]  # the learned trace first
    assert library.context.store.recent_outcomes(name, version + 1, 5) == []
    assert library.for_tenant("acme").context.store.recent_outcomes(name, version, 5) == []
