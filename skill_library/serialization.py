"""One JSON shape for a match, a skill and a run, shared by the CLI, MCP and OpenAI tools.

Every function returns a JSON-safe dict (strings, numbers, booleans, None, lists, dicts):
values a skill returned that JSON cannot hold are turned into strings.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from skill_library.models import Match, Skill, SkillRun

__all__ = ["jsonable", "match_to_dict", "run_to_dict", "skill_to_dict"]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types; anything JSON cannot hold becomes its ``str``."""
    return to_jsonable_python(value, fallback=str)


def skill_to_dict(skill: Skill) -> dict[str, Any]:
    """Every field of ``skill`` plus its ``reliability``."""
    data = skill.model_dump(mode="json")
    data["reliability"] = skill.reliability
    return data


def match_to_dict(match: Match) -> dict[str, Any]:
    """A fetched skill: what a planner needs to choose and call it, with its ranking numbers."""
    skill = match.skill
    return {
        "name": skill.name,
        "version": skill.version,
        "kind": skill.kind,
        "when": skill.when,
        "description": skill.description,
        "parameters": skill.parameters,
        "tools": list(skill.tools),
        "similarity": match.similarity,
        "reliability": match.reliability,
        "score": match.score,
        "successes": skill.successes,
        "failures": skill.failures,
    }


def run_to_dict(run: SkillRun) -> dict[str, Any]:
    """A sandbox run: its value or error, the tool calls it made and the id of its trace."""
    return {
        "name": run.name,
        "version": run.version,
        "ok": run.ok,
        "value": jsonable(run.value),
        "error": run.error,
        "limit": run.limit,
        "stdout": run.stdout,
        "duration_ms": run.duration_ms,
        "trace_id": run.trace.id,
        "calls": [
            {
                "name": c.name,
                "arguments": jsonable(c.arguments),
                "result": jsonable(c.result),
                "error": c.error,
            }
            for c in run.trace.calls
        ],
    }
