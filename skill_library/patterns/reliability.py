"""Drift-aware reliability: a skill whose recent runs fail is quarantined long before Laplace
over its whole history would drop it.

Rule: a skill whose active version has at least :data:`QUARANTINE_MIN_OUTCOMES` outcomes (a
long record) and whose last :data:`QUARANTINE_WINDOW` of them hold at least :data:`QUARANTINE_FAILURES` failures
(only its own outcomes, ``success`` and ``failure``: misuse, not_applicable and wrong_skill
never count, nor outside reports naming no recorded run: skill_library.outcomes)
goes from ``active`` to ``quarantined``: it leaves the index (not fetched) and does not run,
until a passing re-verification (:meth:`SkillLibrary.reverify`) or an approver lifts it
(:meth:`SkillLibrary.lift_quarantine`). Evidence that is not a run of the skill (merging a
learned trace, a success reported through feedback) never lifts it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skill_library.patterns.tables import sql_store
from skill_library.storage.patterns import PatternRows

if TYPE_CHECKING:
    from skill_library.models import Skill
    from skill_library.record_store import RecordStore

#: the recent outcomes looked at
QUARANTINE_WINDOW = 6
#: failures among them that quarantine the skill
QUARANTINE_FAILURES = 5
#: outcomes of the active version needed before the rule applies (a new version is not
#: judged by its predecessor's failures): a short record is Laplace reliability's business
QUARANTINE_MIN_OUTCOMES = 10


def quarantine_problem(store: "RecordStore", skill: "Skill") -> str | None:
    """Why ``skill`` must be quarantined now (None when it must not)."""
    if skill.status != "active" or skill.kind != "code":
        return None
    # the version's counters count its outcomes; only the window is read (never the history)
    if skill.successes + skill.failures < QUARANTINE_MIN_OUTCOMES:
        return None
    recent = store.recent_outcomes(skill.name, skill.version, QUARANTINE_WINDOW)
    failures = sum(1 for ok in recent if not ok)
    if failures >= QUARANTINE_FAILURES:
        return (f"{failures} of its last {len(recent)} outcomes failed "
                f"(threshold {QUARANTINE_FAILURES} of {QUARANTINE_WINDOW})")
    return None


def record_event(store: "RecordStore", skill: "Skill", event: str, reason: str, actor: str | None) -> None:
    """Note a quarantine (``actor`` None: the rule) or a lift, with who acted and why."""
    PatternRows(sql_store(store)).add_reliability_event(skill.name, skill.version, event, reason,
                                                         actor or "library")


def events(store: "RecordStore", name: str) -> list[dict[str, Any]]:
    """The quarantines and lifts of ``name``, oldest first."""
    return PatternRows(sql_store(store)).reliability_events(name)
