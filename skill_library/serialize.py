"""One JSON shape per result type, shared by the CLI and the integrations.

Each function returns plain JSON-ready data (``json.dumps`` needs no ``default``).
"""

from __future__ import annotations

from typing import Any

from skill_library.models import Match, Skill, SkillRun, Trace


def skill_json(skill: Skill) -> dict[str, Any]:
    """Every field of ``skill`` plus its ``reliability``."""
    data = skill.model_dump(mode="json")
    data["reliability"] = skill.reliability
    return data


def match_json(match: Match) -> dict[str, Any]:
    """A fetched skill: what an agent needs to choose and call it, and why it ranked."""
    return {
        "name": match.skill.name,
        "version": match.skill.version,
        "similarity": match.similarity,
        "reliability": match.reliability,
        "score": match.score,
        "when": match.skill.when,
        "description": match.skill.description,
        "parameters": match.skill.parameters,
        "tools": list(match.skill.tools),
    }


def run_json(run: SkillRun) -> dict[str, Any]:
    """A skill run with its trace (the trace id is ``trace.id``)."""
    return run.model_dump(mode="json")


def trace_json(trace: Trace) -> dict[str, Any]:
    """A stored trace."""
    return trace.model_dump(mode="json")


def outcome_json(outcome: dict[str, Any]) -> dict[str, Any]:
    """One entry of an outcome log (``recorded_at`` as ISO 8601)."""
    data = dict(outcome)
    recorded = data.get("recorded_at")
    if recorded is not None and hasattr(recorded, "isoformat"):
        data["recorded_at"] = recorded.isoformat()
    return data
