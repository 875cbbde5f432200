"""An offline agent that replays a task's gold actions: the primitive-step baseline.

Without a library it makes exactly the gold calls; its verified traces are what the
library learns from. With a library it first fetches skills for the instruction and runs those
that fit: the skill's parameters bind by name to the task's params, and its ``when`` text
filled with those params occurs in the instruction (so a return skill never runs for an
exchange, and a two-part instruction can run two skills). Then it replays only the gold
actions the skills did not already perform. A failed skill leaves its completed calls in
place and the rest of the gold actions are replayed.

``fit="top"`` (``--agent-opt fit=top``) trusts retrieval instead: the library learns from the
gold traces only (the agent uses no skills while it learns) and, with a frozen library (the
test phase), the agent runs the top fetched skill whose parameters bind by name, whatever its
``when`` says, then replays the gold actions it did not perform. A skill of the wrong
workflow can then change the world in ways the gold actions do not undo: that is what the
harness's "made worse" list shows.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from benchmarks.agents.base import Agent, BudgetExceeded, Episode, Session, bind_by_name
from benchmarks.worlds.base import Task, World

if TYPE_CHECKING:
    from skill_library import SkillLibrary


def _key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, arguments], sort_keys=True)


class ReplayAgent(Agent):
    """Replays gold actions; with skills, lets fitting skills do their part first."""

    name = "replay"
    worlds = None

    FITS = ("when", "top")

    def __init__(
        self, *, k: int = 6, min_similarity: float = 0.3, max_tool_calls: int = 400, fit: str = "when"
    ) -> None:
        if fit not in self.FITS:
            raise ValueError(f"fit must be one of {', '.join(self.FITS)}, got {fit!r}")
        self.k = k
        self.min_similarity = min_similarity
        self.max_tool_calls = max_tool_calls
        # "when": run the fetched skills whose filled `when` occurs in the instruction (in
        # train and test); "top": learn from the gold traces only (no skills while the
        # library learns) and, with a frozen library (test), trust retrieval: run the top
        # fetched skill whose parameters bind by name, then replay what it did not do
        self.fit = fit

    def supports(self, world: World) -> bool:
        return True  # any world whose tasks carry gold actions

    def solve(self, task: Task, world: World, library: "SkillLibrary | None" = None) -> Episode:
        s = Session(task, world, library, agent=self.name, max_tool_calls=self.max_tool_calls)
        if task.gold is None:
            return s.finish(stopped="task has no gold actions to replay")
        remaining = [(a.name, dict(a.arguments)) for a in task.gold]
        stopped = None
        try:
            if library is not None and (self.fit == "when" or getattr(library, "frozen", False)):
                done = self._use_skills(s, task) if self.fit == "when" else self._use_top_skill(s, task)
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

    def _use_top_skill(self, s: Session, task: Task) -> Counter[str]:
        """Run the top fetched skill when its parameters bind by name; return its completed calls."""
        done: Counter[str] = Counter()
        matches = s.fetch(task.instruction, k=1)
        if not matches or matches[0].similarity < self.min_similarity:
            return done
        arguments = bind_by_name(matches[0].skill, task.params)
        if arguments is None:
            return done
        s.hit()
        s.run_skill(matches[0].skill, arguments, text=task.instruction)
        done.update(_key(c.name, c.arguments) for c in s.last_inner if c.ok)
        return done

    def _use_skills(self, s: Session, task: Task) -> Counter[str]:
        """Run the fitting skills; return the calls they completed.

        A fetched skill fits when its parameters bind by name to the task's params and its
        ``when`` text, filled with those params, occurs in the instruction. Of skills whose
        texts overlap the longest wins, so a two-part instruction can run two skills.
        """
        text = _normal(task.instruction)
        candidates = []
        for rank, match in enumerate(s.fetch(task.instruction, k=self.k)):
            if match.similarity < self.min_similarity:
                continue
            arguments = bind_by_name(match.skill, task.params)
            if arguments is None:
                continue
            # the when, or one of the skill's masked examples (a learned when names its
            # inputs in words; the examples keep the users' words with placeholders)
            examples = getattr(s.library, "examples", None)
            templates = [match.skill.when] + ([e.text for e in examples(match.skill.name)] if examples else [])
            found = None
            for template in templates:
                found = _occurs(template, task.params, text)
                if found is not None:
                    break
            if found is None:
                continue
            candidates.append((found[0], found[1], rank, match, arguments))
        chosen: list[tuple[int, int, Any, dict[str, Any]]] = []
        for start, end, _rank, match, arguments in sorted(candidates, key=lambda c: (c[0] - c[1], c[2])):
            if all(end <= a or start >= b for a, b, _, _ in chosen):
                chosen.append((start, end, match, arguments))
        done: Counter[str] = Counter()
        if chosen:
            s.hit()
        for _start, _end, match, arguments in sorted(chosen, key=lambda c: c[0]):
            s.run_skill(match.skill, arguments, text=task.instruction)
            done.update(_key(c.name, c.arguments) for c in s.last_inner if c.ok)
        return done


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_value(value: Any) -> str:
    """How a param value is written in an instruction (lists comma-separated)."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def fill_when(when: str, params: dict[str, Any]) -> str | None:
    """``when`` with every ``{param}`` replaced by its value; None when one is missing."""
    missing = [name for name in _PLACEHOLDER.findall(when) if name not in params]
    if missing:
        return None
    return _PLACEHOLDER.sub(lambda m: render_value(params[m.group(1)]), when)


def _occurs(template: str, params: dict[str, Any], text: str) -> tuple[int, int] | None:
    """Where ``template`` filled with ``params`` occurs in ``text`` (normalized): each of its
    sentences in order, the span from the first to the last; None when one does not occur."""
    filled = fill_when(template, params)
    if filled is None or not _PLACEHOLDER.search(template):
        return None
    start = end = -1
    for sentence in re.split(r"(?<=[.!?])\s+", filled):
        piece = _normal(sentence).rstrip(".!?")
        if not piece:
            continue
        at = text.find(piece, max(end, 0))
        if at < 0:
            return None
        start = at if start < 0 else start
        end = at + len(piece)
    return (start, end) if start >= 0 else None


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()
