"""Agents: ``get_agent("explorer")`` / ``get_agent("replay")``; see ``base.Agent``.

An agent class registers itself here by name; the LLM agent plugs in the same way
(``AGENTS["llm"] = "benchmarks.agents.llm:LLMAgent"``): ``solve(task, world, library)``
returning an :class:`Episode`.
"""

from __future__ import annotations

import importlib
from typing import Any

from benchmarks.agents.base import Agent, Episode, Session, SkillUse, bind_by_name, bind_from_text

AGENTS: dict[str, str] = {
    "explorer": "benchmarks.agents.explorer:ExplorerAgent",
    "replay": "benchmarks.agents.replay:ReplayAgent",
    "llm": "benchmarks.agents.llm:LLMAgent",
}

__all__ = ["AGENTS", "Agent", "Episode", "Session", "SkillUse", "bind_by_name", "bind_from_text", "get_agent"]


def get_agent(name: str, **options: Any) -> Agent:
    """A new agent called ``name`` (options go to its constructor)."""
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r}; agents are: {', '.join(AGENTS)}")
    module_name, _, class_name = AGENTS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise KeyError(f"agent {name!r} is not installed yet ({module_name} is missing)") from None
        raise
    return getattr(module, class_name)(**options)
