"""An offline agent that replays a task's gold actions: the primitive-step baseline.

Without a library it makes exactly the gold calls; its verified traces are what the
library learns from. With a library it first fetches skills for the instruction, runs the
best one it can bind (task params passed to the skill's parameters by name), and then
replays only the gold actions the skill did not already perform. A failed skill leaves
its completed calls in place and the rest of the gold actions are replayed.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any
import json

from benchmarks.agents.base import Agent, BudgetExceeded, Episode, Session, bind_by_name
from benchmarks.worlds.base import Task, World

if TYPE_CHECKING:
    from skill_library import SkillLibrary


def _key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, arguments], sort_keys=True)


class ReplayAgent(Agent):
    """Replays gold actions; with skills, lets one fetched skill do what it can first."""

    name = "replay"
    worlds = None

    def __init__(self, *, k: int = 3, min_similarity: float = 0.3, max_tool_calls: int = 400) -> None:
        self.k = k
        self.min_similarity = min_similarity
        self.max_tool_calls = max_tool_calls

    def supports(self, world: World) -> bool:
        return True  # any world whose tasks carry gold actions

    def solve(self, task: Task, world: World, library: "SkillLibrary | None" = None) -> Episode:
        s = Session(task, world, library, agent=self.name, max_tool_calls=self.max_tool_calls)
        if task.gold is None:
            return s.finish(stopped="task has no gold actions to replay")
        remaining = [(a.name, dict(a.arguments)) for a in task.gold]
        stopped = None
        try:
            if library is not None:
                done = self._use_skill(s, task)
                if done:
                    left = []
                    for name, arguments in remaining:
                        key = _key(name, arguments)
                        if done[key] > 0:
                            done[key] -= 1
                        else:
                            left.append((name, arguments))
                    remaining = left
            for name, arguments in remaining:
                s.call(name, arguments)
        except BudgetExceeded as exc:
            stopped = str(exc)
        last = next((c.result for c in reversed(s.episode.calls) if c.ok), None)
        return s.finish(result=last, stopped=stopped)

    def _use_skill(self, s: Session, task: Task) -> Counter[str]:
        """Run the most specific skill that binds; return the calls it completed."""
        candidates = []
        for rank, match in enumerate(s.fetch(task.instruction, k=self.k)):
            if match.similarity < self.min_similarity:
                continue
            arguments = bind_by_name(match.skill, task.params)
            if arguments is None:
                continue
            candidates.append((-len(arguments), rank, match, arguments))
        if not candidates:
            return Counter()
        candidates.sort(key=lambda c: (c[0], c[1]))
        _, _, match, arguments = candidates[0]
        s.hit()
        s.run_skill(match.skill, arguments, text=task.instruction)
        return Counter(_key(c.name, c.arguments) for c in s.last_inner if c.ok)
