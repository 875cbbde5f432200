"""Agents: ``get_agent("explorer")``, ``get_agent("replay")``, ``get_agent("llm")``; see ``base.Agent``.

An agent class registers itself in ``AGENTS`` by name (``"module:Class"``); it implements
``solve(task, world, library) -> Episode``. An agent runs under the benchmark conditions
``none`` and ``skills`` unless ``AGENT_CONDITIONS`` lists others for it
(:func:`conditions_for`). An agent whose behaviour depends on the condition (the LLM agent:
skills in the prompt, or also as tools) registers a factory in ``CONDITION_FACTORIES``
taking ``(condition, **options)``; ``agent_for_condition`` uses it, and the plain class
otherwise.
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
CONDITION_FACTORIES: dict[str, str] = {
    "llm": "benchmarks.agents.llm:make_llm_agent",
}
# the benchmark conditions an agent runs under, when not DEFAULT_CONDITIONS (kept here so
# that listing them does not import the agent; llm.CONDITIONS must agree)
DEFAULT_CONDITIONS: tuple[str, ...] = ("none", "skills")
AGENT_CONDITIONS: dict[str, tuple[str, ...]] = {
    "llm": ("none", "prompt", "tools"),
}

__all__ = [
    "AGENTS",
    "AGENT_CONDITIONS",
    "CONDITION_FACTORIES",
    "DEFAULT_CONDITIONS",
    "Agent",
    "Episode",
    "Session",
    "SkillUse",
    "agent_for_condition",
    "bind_by_name",
    "bind_from_text",
    "conditions_for",
    "get_agent",
]


def _load(target: str, agent: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise KeyError(f"agent {agent!r} is not installed yet ({module_name} is missing)") from None
        raise
    return getattr(module, attribute)


def conditions_for(name: str) -> tuple[str, ...]:
    """The benchmark conditions agent ``name`` runs under (also the harness's default)."""
    return AGENT_CONDITIONS.get(name, DEFAULT_CONDITIONS)


def get_agent(name: str, **options: Any) -> Agent:
    """A new agent called ``name`` (options go to its constructor)."""
    if name not in AGENTS:
        raise KeyError(f"unknown agent {name!r}; agents are: {', '.join(AGENTS)}")
    return _load(AGENTS[name], name)(**options)


def agent_for_condition(name: str, condition: str, **options: Any) -> Agent:
    """The agent ``name`` as it runs under benchmark ``condition``."""
    if name in CONDITION_FACTORIES:
        return _load(CONDITION_FACTORIES[name], name)(condition, **options)
    return get_agent(name, **options)
