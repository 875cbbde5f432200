"""How the look-alike, paraphrase and misuse suites use the library: as a new user would.

Only the public API: a library opened for a world (its tools declared with their side
effects), verified gold traces learned with ``learn_many``, ``fetch`` read the way an agent
reads it, skills run with their arguments bound by name. The flags the library may put on a
fetch result (``ambiguous``: too close to call between look-alikes; ``abstained``: no skill
covers the task) are read with ``getattr`` from the result list and from its matches, so the
suites run the same on a library that has no such flags yet (then only an empty result
abstains).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from benchmarks.agents.base import bind_by_name
from benchmarks.harness import SKILL_STATUSES, train_order
from benchmarks.worlds.base import Task, World
from skill_library.models import Outcome, ToolCall, Trace

if TYPE_CHECKING:
    from skill_library import LearnResult, Match, SkillLibrary

#: the flags a fetch result (or its top match) may carry that tell an agent not to run it
FLAG_NAMES = ("abstained", "ambiguous")
__all__ = ["FLAG_NAMES", "Learned", "bind_by_name", "flags_of", "gold_trace", "learn_gold", "learned_libraries",
           "open_library", "outcome_kind", "skill_workflows", "statuses", "train_order", "write_results"]



def open_library(path: Path, world: World, *, embedder: Any, min_reliability: float = 0.6) -> "SkillLibrary":
    """A fresh library in ``path`` (removed first) for ``world``: its read-only tools named, every
    tool declared with its schema and side effects, learned skills approved automatically (the
    suites measure skills, so they must activate)."""
    from skill_library import SkillLibrary
    from skill_library.governance import Policy

    if path.exists():
        shutil.rmtree(path)
    library = SkillLibrary(path, embedder=embedder, min_reliability=min_reliability,
                           read_only_tools=world.read_only_tools(), policy=Policy(auto_approve="all"),
                           trusted_output_tools=world.trusted_output_tools())
    library.register_tools(world.tool_specs())
    return library


def gold_trace(world: World, task: Task) -> Trace:
    """The task's gold actions replayed on a fresh world as a verified trace (raises if they
    do not verify: a suite's data must be right)."""
    world.reset(task.seed, task)
    calls = []
    for action in task.gold or []:
        result = world.call(action.name, dict(action.arguments))
        calls.append(ToolCall(name=action.name, arguments=dict(action.arguments), result=result))
    verdict = world.verify(task)
    if not verdict.success:
        raise ValueError(f"the gold actions of {task.id} do not verify: {verdict.evidence}")
    outcome = Outcome(success=True, verifier=f"{world.name}.verify", evidence=verdict.evidence)
    return Trace(task=task.instruction, params=dict(task.params), calls=calls, result=calls[-1].result if calls
                 else None, outcome=outcome, source="gold")


def learn_gold(library: "SkillLibrary", world: World, tasks: Sequence[Task]) -> list["LearnResult"]:
    """Learn the gold traces of ``tasks`` in order with the offline dataflow generalizer."""
    from skill_library.induction import DataflowGeneralizer

    traces = [gold_trace(world, task) for task in tasks]
    return library.learn_many(traces, generalizer=DataflowGeneralizer())


def skill_workflows(tasks: Sequence[Task], results: Sequence["LearnResult"]) -> dict[str, set[str]]:
    """Skill name -> the workflows of the traces learned into it (or found duplicate of it)."""
    found: dict[str, set[str]] = {}
    for task, result in zip(tasks, results):
        if result.status in SKILL_STATUSES and result.skill is not None:
            found.setdefault(result.skill.name, set()).add(task.workflow)
    return found


def flags_of(matches: Sequence["Match"]) -> list[str]:
    """Why an agent must not run the top match: the result's or the top match's flags, and
    ``abstained`` for an empty result."""
    if not matches:
        return ["abstained"]
    found = [name for name in FLAG_NAMES if getattr(matches, name, False)]
    return found + [name for name in FLAG_NAMES if name not in found and getattr(matches[0], name, False)]


def outcome_kind(run: Any) -> str | None:
    """The run's outcome kind where the library reports one (success, misuse, not_applicable...)."""
    for name in ("outcome_kind", "outcome", "kind"):
        value = getattr(run, name, None)
        if isinstance(value, str):
            return value
        if value is not None and isinstance(getattr(value, "kind", None), str):
            return value.kind
    return None


def statuses(results: Iterable["LearnResult"]) -> dict[str, int]:
    """How many learn results had each status."""
    out: dict[str, int] = {}
    for result in results:
        out[result.status] = out.get(result.status, 0) + 1
    return dict(sorted(out.items()))


def write_results(results: dict[str, Any], out: Path, markdown: Callable[[dict[str, Any]], str]) -> str:
    """Write ``results.json`` and ``results.md`` (``markdown(results)``) into ``out``; return the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str),
                                      encoding="utf-8")
    text = markdown(results)
    (out / "results.md").write_text(text, encoding="utf-8")
    return text


@dataclass
class Learned:
    """One seed's library after learning: the train order, the learn results, skill -> workflows."""

    seed: int
    library: "SkillLibrary"
    order: list[Task]
    results: list["LearnResult"]
    workflows: dict[str, set[str]]


def learned_libraries(out: Path, world: World, train: Sequence[Task], seeds: int, *, embedder: Any,
                      min_reliability: float = 0.6) -> Iterator[Learned]:
    """For each seed: a fresh library in ``out/libraries/seed<N>`` that learned ``train`` in
    the seed's order (closed when the caller moves on)."""
    for seed in range(seeds):
        library = open_library(out / "libraries" / f"seed{seed}", world, embedder=embedder,
                               min_reliability=min_reliability)
        try:
            order = train_order(train, seed)
            results = learn_gold(library, world, order)
            yield Learned(seed, library, order, results, skill_workflows(order, results))
        finally:
            library.close()
