"""An offline agent for the crafting world that learns nothing by itself: trial and error.

To obtain an item it tries a tool and reads the error: ``craft(goal)`` -> "need 3 planks,
have 1" -> obtain planks (recursively) -> retry; ``mine(iron_ore)`` -> "needs a
stone_pickaxe or better" -> obtain a stone_pickaxe -> retry; "iron_ingot cannot be
crafted; it is made with smelt" -> switch tools. Within one episode it remembers which
tool makes which item; across episodes it remembers nothing, so its cost is honest steps.

With a skill library it first fetches a skill for the task and runs it when the skill's
``when`` text binds to the task (``"Smelt {count} iron ingots from ore"`` binds count=3 in
``"Smelt 3 iron ingots from ore"``). While exploring it fetches a skill for each sub-goal
too (worded the way tasks are), so a skill learned for an iron pickaxe calls the skills
it used for its sub-goals (in the demo: the crafting table and the iron ingots). A failing
skill is never retried in the episode; the agent falls back to exploring from wherever the
skill left the world.

An episode has a budget of decisions (default 40, like an LLM agent's turn limit); the
deepest items (enchanting table, clock, two goals at once) take more than that to explore
from scratch, so without skills those tasks fail.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from benchmarks.agents.base import Agent, BudgetExceeded, Episode, Session, bind_from_text
from benchmarks.worlds.base import Task, World
from benchmarks.worlds.crafting import phrase

if TYPE_CHECKING:
    from skill_library import SkillLibrary

_NEED = re.compile(r"need (\d+) ([a-z_]+)(?: as fuel)?, have (\d+)")
_NEEDS_IN_INVENTORY = re.compile(r"needs a ([a-z_]+) in the inventory")
_NEEDS_TIER = re.compile(r"needs a ([a-z_]+) or better")
_MADE_WITH = re.compile(r"it is made with (mine|craft|smelt)")
_ARG = {"mine": "block", "craft": "item", "smelt": "item"}
# Like an LLM agent's turn limit: an episode may take this many decisions (primitive calls
# plus skill invocations; the calls a skill makes inside are not decisions). Exploring
# the deepest items from scratch takes more than this, so success depends on skills.
DEFAULT_MAX_DECISIONS = 40


class ExplorerAgent(Agent):
    """Trial and error on tool errors, optionally reusing library skills for (sub-)goals."""

    name = "explorer"
    worlds = ("crafting",)

    def __init__(
        self,
        *,
        k: int = 3,
        subgoal_skills: bool = True,
        max_tool_calls: int = 1000,
        max_decisions: int | None = DEFAULT_MAX_DECISIONS,
        max_depth: int = 12,
    ) -> None:
        self.k = k
        self.subgoal_skills = subgoal_skills
        self.max_tool_calls = max_tool_calls
        self.max_decisions = max_decisions
        self.max_depth = max_depth

    def solve(self, task: Task, world: World, library: "SkillLibrary | None" = None) -> Episode:
        session = Session(
            task, world, library, agent=self.name,
            max_tool_calls=self.max_tool_calls, max_decisions=self.max_decisions,
        )
        run = _Run(self, session)
        return run.solve()


class _Run:
    """One episode of exploration (its memory is the episode's)."""

    def __init__(self, agent: ExplorerAgent, session: Session) -> None:
        self.agent = agent
        self.s = session
        self.inventory: dict[str, int] = {}  # believed; every tool result refreshes it
        self.known: dict[str, str] = {}  # item -> tool that makes it, learned this episode
        self.failed_skills: set[str] = set()
        self.fetched: set[str] = set()

    def solve(self) -> Episode:
        goal: dict[str, int] = self.s.task.goal.get("items", {})
        stopped = None
        try:
            if self.s.library is not None:
                self.try_skill(
                    self.s.task.instruction,
                    done=lambda: all(self.have(i) >= n for i, n in goal.items()),
                )
            for _ in range(3):  # goals may consume each other's items; re-check
                for item, count in goal.items():
                    self.obtain(item, count, ())
                if all(self.have(i) >= n for i, n in goal.items()):
                    break
            else:
                stopped = "could not reach the goal"
        except BudgetExceeded as exc:
            stopped = str(exc)
        return self.s.finish(result=dict(self.inventory), stopped=stopped)

    def have(self, item: str) -> int:
        return self.inventory.get(item, 0)

    # -- skills ----------------------------------------------------------------------------

    def try_skill(self, text: str, done) -> bool:
        """Fetch skills for ``text`` and run the first whose ``when`` binds; True if one ran.

        ``done()`` checks the skill's post-condition on the refreshed inventory; its answer
        is recorded as the run's verified outcome (reported to the library in training).
        """
        if text in self.fetched:
            return False
        self.fetched.add(text)
        for match in self.s.fetch(text, k=self.agent.k):
            skill = match.skill
            if skill.name in self.failed_skills:
                continue
            examples = getattr(self.s.library, "examples", None)  # a scripted stand-in has none
            templates = [e.text for e in examples(skill.name)] if examples is not None else []
            arguments = bind_from_text(skill, text, templates)
            if arguments is None:
                continue
            self.s.hit()
            use = self.s.run_skill(skill, arguments, text=text)
            self.refresh()
            if use.ok:
                use.verified = bool(done())
            else:
                self.failed_skills.add(skill.name)
            return use.ok
        return False

    def refresh(self) -> None:
        result, error = self.s.call("inventory")
        if error is None and isinstance(result, dict):
            self.inventory = dict(result)

    # -- exploration -----------------------------------------------------------------------

    def obtain(self, item: str, count: int, stack: tuple[str, ...]) -> bool:
        """Make the inventory hold at least ``count`` of ``item``; False if it cannot."""
        if self.have(item) >= count:
            return True
        if item in stack or len(stack) > self.agent.max_depth:
            return False
        stack = stack + (item,)
        if self.s.library is not None and (self.agent.subgoal_skills or len(stack) == 1):
            text = phrase(item, count - self.have(item))
            if self.try_skill(text, done=lambda: self.have(item) >= count) and self.have(item) >= count:
                return True
        tool = self.known.get(item, "craft")
        for _ in range(12):
            need = count - self.have(item)
            if need <= 0:
                return True
            result, error = self.s.call(tool, {_ARG[tool]: item, "count": need})
            if error is None:
                self.inventory = dict(result["inventory"])
                continue
            made_with = _MADE_WITH.search(error)
            if made_with:
                tool = self.known[item] = made_with.group(1)
                continue
            if not self.resolve(error, stack):
                return False
        return self.have(item) >= count

    def resolve(self, error: str, stack: tuple[str, ...]) -> bool:
        """Obtain what ``error`` says is missing; False when nothing could be done."""
        wants: list[tuple[str, int]] = []
        wants += [(m.group(1), 1) for m in _NEEDS_TIER.finditer(error)]
        wants += [(m.group(1), 1) for m in _NEEDS_IN_INVENTORY.finditer(error)]
        wants += [(m.group(2), int(m.group(1))) for m in _NEED.finditer(error)]
        if not wants:
            return False
        return all(self.obtain(item, n, stack) for item, n in wants)
