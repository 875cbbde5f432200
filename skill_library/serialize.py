"""One JSON shape per result type, shared by the CLI, the MCP server and the OpenAI tools.

Each function returns plain JSON-ready data (``json.dumps`` needs no ``default``); values a
skill returned that JSON cannot hold become their ``str``.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from skill_library.models import Match, Skill, SkillRun, Trace


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types; anything JSON cannot hold becomes its ``str``."""
    return to_jsonable_python(value, fallback=str)


def skill_json(skill: Skill) -> dict[str, Any]:
    """Every field of ``skill`` plus its ``reliability``."""
    data: dict[str, Any] = skill.model_dump(mode="json")
    data["reliability"] = skill.reliability
    return data


def match_json(match: Match) -> dict[str, Any]:
    """A fetched skill: what an agent needs to choose and call it, and why it ranked."""
    skill = match.skill
    data: dict[str, Any] = {
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
    if match.prefetch:  # added by next-skill prefetch, not matched to the task
        data["prefetch"] = True
    if match.ambiguous:  # too close to call against another match (skill_library.abstention)
        data["ambiguous"] = True
    if match.missing:  # required parameters the task cannot supply
        data["missing"] = list(match.missing)
    if match.applies is not None:  # fetch(..., read_tools=...): its preconditions checked
        data["applies"] = match.applies
        if match.applies_reason:
            data["applies_reason"] = match.applies_reason
    if match.explanation is not None:  # fetch(..., explain=True): the score's terms
        data["explanation"] = match.explanation.model_dump(mode="json")
    return data


def run_json(run: SkillRun) -> dict[str, Any]:
    """A skill run: its value or structured error, its trace (``trace_id`` for feedback)
    and, as ``calls``, the tool calls it made."""
    data: dict[str, Any] = jsonable(run.model_dump(mode="python"))
    data["trace_id"] = run.trace.id
    data["outcome_kind"] = None if run.outcome_kind is None else run.outcome_kind.value
    data["outcome_reason"] = run.outcome_reason
    data["calls"] = [
        {"name": c.name, "arguments": jsonable(c.arguments), "result": jsonable(c.result), "error": c.error}
        for c in run.trace.calls
    ]
    return data


def trace_json(trace: Trace) -> dict[str, Any]:
    """A stored trace."""
    data: dict[str, Any] = trace.model_dump(mode="json")
    return data


def outcome_json(outcome: dict[str, Any]) -> dict[str, Any]:
    """One entry of an outcome log (``recorded_at`` as ISO 8601)."""
    data = dict(outcome)
    recorded = data.get("recorded_at")
    if recorded is not None and hasattr(recorded, "isoformat"):
        data["recorded_at"] = recorded.isoformat()
    return data
