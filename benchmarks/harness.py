"""Replay a world's task suite under several conditions and measure what skills buy.

Protocol, for every seed and condition:

1. a fresh library (conditions with skills) in ``<out>/libraries/<condition>-seed<seed>``;
   all libraries share one embedder, loaded once per process;
2. the train tasks, with learning on: every verified success goes through
   ``library.learn(trace, generalizer=...)`` with the run's generalizer (``dataflow``, the
   offline one, unless the config asks for ``llm``; never chosen by the environment); every skill run that
   finished without error is reported
   with ``library.feedback`` (the agent's own check of it where it made one, else the
   task's verdict), and a run that raised is recorded as a failure by ``library.run``;
3. the test tasks with the library frozen: agents see it through a ``FrozenLibrary``
   (fetch and run only; no learning, no feedback, no outcome recorded by a failing run);
4. the library alone on the test tasks (:func:`probe_fetched_skills`): the top fetched skill
   for each, run with the task's params bound by name on a fresh world, then verified;
5. the privacy check (:mod:`benchmarks.privacy`): the world's true personal values looked
   for in every text the library stores or shows (``results["privacy"]``; the CLI exits 3
   when one is found). The results themselves are redacted with the same values.

Every test outcome under a library condition is paired with the ``none`` condition's on the
same seed (``made_worse``: solved without skills, failed with them).

The world is reset before every task with the same seed in every condition. Seed 0 runs
the train tasks in file order (the suite's curriculum); seed s > 0 shuffles them with
``random.Random(s)``. Test tasks always run in file order. (Crafting ignores the seed and
shop builds its database from each task's own seed, so in these worlds seeds differ only
in the train order.)

Which conditions apply depends on the agent (``benchmarks.agents.conditions_for``): the
offline agents run under ``none`` and ``skills``, the LLM agent under ``none``, ``prompt``
and ``tools``; a run's default is all of its agent's conditions.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from benchmarks.agents import AGENTS, agent_for_condition, conditions_for
from benchmarks.agents.base import Agent, Episode
from benchmarks.frozen_library import FrozenLibrary
from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, explain_subjects
from benchmarks.worlds import Task, World, get_world, load_tasks
from skill_library.governance import Policy
from skill_library.models import Outcome

if TYPE_CHECKING:
    from skill_library import SkillLibrary


@dataclass(frozen=True)
class Condition:
    """How an agent is run: with a library or not, and whether it learns during training."""

    name: str
    skills: bool
    learn: bool
    description: str = ""


CONDITIONS: dict[str, Condition] = {
    "none": Condition("none", skills=False, learn=False, description="no skill library"),
    "skills": Condition(
        "skills", skills=True, learn=True,
        description="library learns from verified train traces, frozen for test",
    ),
    # LLM-agent variants of "skills" (see benchmarks/agents/llm.py): the same library
    # protocol; fetched skills shown in the system prompt, or also offered as callable tools
    "prompt": Condition(
        "prompt", skills=True, learn=True,
        description="like skills, with the fetched skills shown in the llm agent's system prompt",
    ),
    "tools": Condition(
        "tools", skills=True, learn=True,
        description="like prompt, with the fetched code skills also offered as callable tools",
    ),
}


@dataclass
class RunConfig:
    """One benchmark run; ``conditions`` defaults to every condition of the agent."""

    world: str
    agent: str
    conditions: list[str] | None = None
    # a named task suite of the world: benchmarks/tasks/<world>_<suite>.jsonl (None: <world>.jsonl)
    suite: str | None = None
    seeds: int = 1
    out: Path = Path("bench-output")
    min_reliability: float = 0.6
    max_train: int | None = None
    max_test: int | None = None
    agent_options: dict[str, Any] = field(default_factory=dict)
    # how skills are learned: "dataflow" (offline, deterministic) or "llm" (the library's
    # LLMGeneralizer, configured from OPENAI_BASE_URL / OPENAI_API_KEY / SKILL_LIBRARY_MODEL)
    generalizer: str = "dataflow"
    # how the run was started (the CLI sets it), printed in the report
    command: str | None = None

    def __post_init__(self) -> None:
        if self.conditions is None:
            self.conditions = list(conditions_for(self.agent))

    @property
    def chosen_conditions(self) -> list[str]:
        """``conditions`` after defaulting (never None)."""
        assert self.conditions is not None
        return self.conditions

    def to_json(self) -> dict[str, Any]:
        return {
            "world": self.world,
            "suite": self.suite,
            "agent": self.agent,
            "conditions": list(self.chosen_conditions),
            "seeds": self.seeds,
            "out": str(self.out),
            "min_reliability": self.min_reliability,
            "max_train": self.max_train,
            "max_test": self.max_test,
            "agent_options": dict(self.agent_options),
            "generalizer": self.generalizer,
            "command": self.command,
        }


def suite_path(world: str, suite: str | None = None) -> Path:
    """The task file of ``world``'s ``suite`` (None: the world's own suite)."""
    from benchmarks.worlds.base import TASKS_DIR

    path = TASKS_DIR / (f"{world}_{suite}.jsonl" if suite else f"{world}.jsonl")
    if not path.exists():
        found = sorted(p.stem[len(world) + 1:] for p in TASKS_DIR.glob(f"{world}_*.jsonl"))
        raise ValueError(
            f"world {world!r} has no suite {suite!r} ({path.name} does not exist); its suites are: "
            + ", ".join(["(default)"] + found)
        )
    return path


def suites(world: str) -> list[str | None]:
    """The suites of ``world``: None (its own file) and every ``<world>_<suite>.jsonl``."""
    from benchmarks.worlds.base import TASKS_DIR

    return [None] + sorted(p.stem[len(world) + 1:] for p in TASKS_DIR.glob(f"{world}_*.jsonl"))


def train_order(tasks: Sequence[Task], seed: int) -> list[Task]:
    """Seed 0: file order; otherwise a ``random.Random(seed)`` shuffle."""
    tasks = list(tasks)
    if seed:
        random.Random(seed).shuffle(tasks)
    return tasks


GENERALIZERS = ("dataflow", "llm")


def make_generalizer(name: str) -> Any:
    """The generalizer ``library.learn`` uses in a run, chosen by name, never by the environment.

    (``SkillLibrary.learn`` without one picks the LLM generalizer whenever an endpoint is
    configured, which would make an offline run depend on the shell it starts in, and add
    model calls to the skills conditions that no agent metric counts.)
    """
    from skill_library.induction import DataflowGeneralizer, LLMGeneralizer

    if name == "dataflow":
        return DataflowGeneralizer()
    if name == "llm":
        generalizer = LLMGeneralizer.from_env()
        if generalizer is None:
            raise ValueError(
                "the llm generalizer needs an endpoint: set OPENAI_BASE_URL or OPENAI_API_KEY "
                "(and SKILL_LIBRARY_MODEL)"
            )
        return generalizer
    raise ValueError(f"unknown generalizer {name!r}; generalizers are: {', '.join(GENERALIZERS)}")


def _library_class():
    from skill_library.library import SkillLibrary

    return SkillLibrary


def default_embedder():
    """The packaged all-MiniLM-L6-v2 on one CPU thread (one per process)."""
    from skill_library.embeddings import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(threads=1)
    embedder.embed(["warm up"])
    return embedder


Progress = Callable[[str, int, int], None]  # (label, done, total)


def run_benchmark(
    config: RunConfig,
    *,
    tasks: Sequence[Task] | None = None,
    embedder: Any = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run ``config``; return the results (also what ``results.json`` holds)."""
    started = time.perf_counter()
    check_conditions(config.agent, config.chosen_conditions)
    if config.generalizer not in GENERALIZERS:
        raise ValueError(f"unknown generalizer {config.generalizer!r}; generalizers are: {', '.join(GENERALIZERS)}")
    world = get_world(config.world)
    agents = {c: agent_for_condition(config.agent, c, **config.agent_options) for c in config.chosen_conditions}
    for agent in agents.values():
        if not agent.supports(world):
            raise ValueError(f"agent {config.agent!r} does not work in world {config.world!r}")
    all_tasks = (
        list(tasks) if tasks is not None
        else load_tasks(config.world, path=suite_path(config.world, config.suite))
    )
    train = [t for t in all_tasks if t.split == "train"][: config.max_train]
    test = [t for t in all_tasks if t.split == "test"][: config.max_test]
    if not train and not test:
        raise ValueError("no tasks to run")
    needs_library = any(CONDITIONS[c].skills for c in config.chosen_conditions)
    generalizer = make_generalizer(config.generalizer) if needs_library else None
    if needs_library and embedder is None:
        embedder = default_embedder()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    # the privacy check: the world's true personal values, looked for in every library's texts
    scanner = ValueScanner(world.personal_values(all_tasks) if needs_library else [])
    privacy = PrivacyReport(values=len(scanner))

    records: list[dict[str, Any]] = []
    probes: list[dict[str, Any]] = []
    libraries: dict[str, Any] = {}
    total = config.seeds * len(config.chosen_conditions) * (len(train) + len(test))
    done = 0
    for seed in range(config.seeds):
        for cname in config.chosen_conditions:
            condition = CONDITIONS[cname]
            library = None
            lib_key = f"{cname}-seed{seed}"
            if condition.skills:
                lib_path = out / "libraries" / lib_key
                if lib_path.exists():
                    shutil.rmtree(lib_path)
                # the harness opts in to auto-approval (Policy(auto_approve="all")): the skills
                # it learns call the world's side-effect tools and must activate to be measured
                library = _library_class()(lib_path, embedder=embedder, min_reliability=config.min_reliability,
                                           read_only_tools=world.read_only_tools(),
                                           trusted_output_tools=world.trusted_output_tools(),
                                           policy=Policy(auto_approve="all"))
            try:
                phases = [("train", train_order(train, seed)), ("test", test)]
                for phase, phase_tasks in phases:
                    learning = phase == "train" and condition.learn
                    for index, task in enumerate(phase_tasks):
                        if progress:
                            progress(f"{cname} seed {seed} {phase} {task.id}", done, total)
                        # a FrozenLibrary is a read-only stand-in with the same interface
                        view = library if library is None or learning else FrozenLibrary(library)
                        record = run_task(
                            agents[cname], world, task, view,  # type: ignore[arg-type]
                            seed=seed, learning=learning, generalizer=generalizer,
                        )
                        record.update(seed=seed, condition=cname, phase=phase, index=index)
                        records.append(record)
                        done += 1
                if library is not None:
                    libraries[lib_key] = describe_library(library)
                    if test:
                        workflows = skill_workflows(
                            r for r in records
                            if r["condition"] == cname and r["seed"] == seed and r["phase"] == "train"
                        )
                        for probe in probe_fetched_skills(FrozenLibrary(library), world, test, workflows, seed=seed):
                            probe.update(seed=seed, condition=cname)
                            probes.append(probe)
                    privacy.add(check_library(library, scanner, label=f"{config.world} {lib_key}",
                                              queries=[t.instruction for t in test],
                                              subjects=explain_subjects(train, scanner)))
            finally:
                if library is not None:
                    library.close()
    if progress:
        progress("done", done, total)
    from benchmarks.report import paired, skill_quality, summarize

    train_workflows = sorted({t.workflow or t.id for t in train})
    pairs = paired(records, config.chosen_conditions)
    results = {
        "config": config.to_json(),
        "tasks": {"train": [t.id for t in train], "test": [t.id for t in test]},
        "train_workflows": train_workflows,
        "records": records,
        "probes": probes,
        "libraries": libraries,
        "summary": summarize(records, config.chosen_conditions),
        "skill_quality": skill_quality(probes, libraries, records, config.chosen_conditions, len(train_workflows)),
        "paired": pairs,
        # test tasks solved without skills and failed with them (same seed), per condition
        "made_worse": {c: p["made_worse"] for c, p in pairs.items()},
        "privacy": privacy.to_json(),
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    # the harness's own outputs (whens, arguments, verifier evidence) carry no personal value
    return scanner.redact_json(results)


def check_conditions(agent: str, conditions: Sequence[str]) -> None:
    """Raise (naming the valid ones) unless ``agent`` runs under every one of ``conditions``."""
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown condition(s) {', '.join(unknown)}; conditions are: {', '.join(CONDITIONS)}")
    if agent not in AGENTS:
        raise KeyError(f"unknown agent {agent!r}; agents are: {', '.join(AGENTS)}")
    valid = conditions_for(agent)
    wrong = [c for c in conditions if c not in valid]
    if wrong:
        raise ValueError(
            f"the {agent} agent does not run under condition(s) {', '.join(wrong)}; its conditions "
            f"are: {', '.join(valid)} ("
            + "; ".join(f"{c}: {CONDITIONS[c].description}" for c in valid)
            + ")"
        )
    if not conditions:
        raise ValueError(f"no conditions given; the {agent} agent's are: {', '.join(valid)}")


def run_task(
    agent: Agent,
    world: World,
    task: Task,
    library: "SkillLibrary | None",
    *,
    seed: int,
    learning: bool,
    generalizer: Any = None,
) -> dict[str, Any]:
    """Reset, solve, verify, and (when learning) learn and give feedback; one record.

    ``generalizer`` is passed to ``library.learn`` (None: the offline dataflow one). The
    model tokens a generalizer reports for a saved skill are recorded as ``learn_tokens``.
    """
    world.reset(seed, task)
    start = time.perf_counter()
    try:
        episode = agent.solve(task, world, library)
    except Exception as exc:  # an agent bug must not sink the whole run; it is recorded
        episode = Episode(task_id=task.id, agent=agent.name, stopped=f"agent crashed: {type(exc).__name__}: {exc}")
    solve_ms = (time.perf_counter() - start) * 1000
    verdict = world.verify(task)
    record: dict[str, Any] = {
        "task_id": task.id,
        "workflow": task.workflow,
        "success": verdict.success,
        "tool_calls": episode.tool_calls,
        "decisions": episode.decisions,
        "skill_invocations": episode.skill_invocations,
        "skill_successes": episode.skill_successes,
        "fetches": episode.fetches,
        "fetch_hits": episode.fetch_hits,
        "llm_calls": episode.llm_calls,
        "prompt_tokens": episode.prompt_tokens,
        "completion_tokens": episode.completion_tokens,
        "tokens": episode.prompt_tokens + episode.completion_tokens,
        "wall_ms": round(solve_ms, 2),
        "stopped": episode.stopped,
        "skills_used": [
            {"name": u.name, "version": u.version, "ok": u.ok, "verified": u.verified,
             "arguments": u.arguments, "tool_calls": u.tool_calls, "error": _short(u.error)}
            for u in episode.skill_uses
        ],
        "learn": None,
        "learn_ms": 0.0,
        "learn_tokens": 0,
    }
    if not verdict.success:
        record["evidence"] = _short(json.dumps(verdict.evidence, default=str), 400)
    if library is not None and learning:
        start = time.perf_counter()
        for use in episode.skill_uses:
            if use.ok:
                ok = use.verified if use.verified is not None else verdict.success
                library.feedback(use.name, bool(ok), version=use.version)
        if verdict.success:
            outcome = Outcome(success=True, verifier=f"{world.name}.verify", evidence=verdict.evidence)
            try:
                result = library.learn(
                    episode.to_trace(task, outcome), generalizer=generalizer or make_generalizer("dataflow")
                )
                usage = dict(result.skill.provenance.usage) if result.skill is not None else {}
                record["learn_tokens"] = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
                record["learn"] = {
                    "status": result.status,
                    "skill": result.skill.name if result.skill else None,
                    "duplicate_of": getattr(result, "duplicate_of", None),
                    "reasons": [_short(r) for r in result.reasons][:3],
                }
            except Exception as exc:  # a library error is a finding, not a crash
                reasons = [_short(f"{type(exc).__name__}: {exc}")]
                record["learn"] = {"status": "error", "skill": None, "reasons": reasons}
        record["learn_ms"] = round((time.perf_counter() - start) * 1000, 2)
    return record


# LearnResult statuses whose ``result.skill`` is the skill the trace now belongs to (a new
# skill, evidence merged into one, a revised version, or an existing equivalent); "held"
# (waiting for approval) and "rejected" attach the trace to no fetchable skill.
SKILL_STATUSES = frozenset({"saved", "merged", "revised", "duplicate"})


def skill_workflows(train_records: Iterable[dict[str, Any]]) -> dict[str, set[str]]:
    """Skill name -> the workflows of the train traces it was learned from or merged with."""
    found: dict[str, set[str]] = {}
    for r in train_records:
        learn = r.get("learn") or {}
        if learn.get("status") in SKILL_STATUSES and learn.get("skill"):
            found.setdefault(learn["skill"], set()).add(r["workflow"] or r["task_id"])
    return found


def right_workflow(workflow: str, skill_workflows: set[str]) -> bool:
    """A skill is of the right workflow when a trace of it was learned into the skill; for a
    combined test workflow (``a+b``) a skill of either part counts."""
    return bool({workflow, *workflow.split("+")} & skill_workflows)


def probe_fetched_skills(
    library: Any,
    world: World,
    tasks: Sequence[Task],
    workflows: dict[str, set[str]],
    *,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The library alone on each test task: the top skill of ``fetch(instruction, k=1)``, run
    with arguments bound by name from the task's params on a fresh world, then verified.

    This measures retrieval and generalization without any agent: fetch@1 of the right
    workflow (``workflows``: skill name -> workflows of its train traces) and the fetched
    skill's success. A skill parameter the task's params do not have is a failure (unbound).
    """
    out = []
    for task in tasks:
        world.reset(seed, task)
        probe: dict[str, Any] = {
            "task_id": task.id, "workflow": task.workflow, "skill": None, "skill_workflows": [],
            "right_workflow": False, "bound": False, "ran_ok": False, "success": False,
            "tool_calls": 0, "error": None,
        }
        out.append(probe)
        matches = library.fetch(task.instruction, k=1)
        if not matches:
            probe["error"] = "fetch returned no skill"
            continue
        skill = matches[0].skill
        learned_from = workflows.get(skill.name, set())
        probe.update(skill=skill.name, similarity=round(matches[0].similarity, 4),
                     skill_workflows=sorted(learned_from),
                     right_workflow=right_workflow(task.workflow or task.id, learned_from))
        names = list((skill.parameters or {}).get("properties", {}))
        missing = [n for n in names if n not in task.params]
        if missing:
            probe["error"] = f"skill parameter(s) not in the task's params: {', '.join(missing)}"
            continue
        probe["bound"] = True
        try:
            run = library.run(skill.name, {n: task.params[n] for n in names}, world.tools(),
                              tool_schemas=world.tool_schemas())
        except Exception as exc:  # the library refused to run it
            probe["error"] = _short(f"{type(exc).__name__}: {exc}")
            continue
        probe.update(ran_ok=run.ok, error=_short(run.error), tool_calls=len(run.trace.calls))
        probe["success"] = bool(world.verify(task).success)
    return out


def describe_library(library: "SkillLibrary") -> dict[str, Any]:
    """The library's skills after a run: names, when, dependencies and outcome counts."""
    skills = []
    for skill in library.list():
        skills.append(
            {
                "name": skill.name,
                "version": skill.version,
                "status": skill.status,
                "when": skill.when,
                "parameters": sorted((skill.parameters or {}).get("properties", {})),
                "depends_on": list(skill.depends_on),
                "tools": list(skill.tools),
                "successes": skill.successes,
                "failures": skill.failures,
                "reliability": round(skill.reliability, 3),
            }
        )
    return {"path": str(library.path), "skills": skills}


def _short(value: object, limit: int = 200) -> str | None:
    """``value`` as text (a RunError reads as "Type: message (line N)"), cut to ``limit``."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
