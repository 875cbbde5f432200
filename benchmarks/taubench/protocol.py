"""The τ-bench retail protocols: cross-validation on train (``cv``), learn-train-solve-dev (``dev``).

Learning: each state-changing train task's gold actions are replayed on a fresh database and
recorded as a verified trace (each call with its arguments and result string; a result that
starts with ``Error:`` is a failed call, ``ToolCall.error``), the instruction as the task
text, the write arguments as numbered params (:func:`binding.trace_params`). Every tool is
declared first (schema, read-only or not). ``learn_many`` learns them with the offline
dataflow generalizer.

Solving a held-out state-changing task: ``fetch(instruction, k)`` (task text only); each
fetched skill is bound (gold write arguments by name, or, under text binding, values written
in the instruction) after selection and run on a fresh database with ``record=False`` (the
evaluation feeds nothing back); solved when the final state hash equals the gold replay's.
When the library has ``plan``, a plan of >= 2 steps is the first of the k attempts. The
oracle runs every learned skill that calls all of the task's write tools and binds, to tell
retrieval misses (a solver exists; its rank in the full fetch order) from generalization
misses (none).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.taubench import binding
from benchmarks.taubench.data import FOLDS, Retail, Task, env_tools, fold_of, is_read_only

FETCH_K = 3
PLAN_K = 8
Progress = Callable[[str, int, int], None]


@dataclass
class TauConfig:
    """One run: the protocol, the slice, where results go."""

    data: Path | None = None
    protocol: str = "cv"  # cv | dev | all
    folds: int = FOLDS
    fold: int | None = None  # only this fold (cv)
    limit: int | None = None  # only the first N train tasks
    k: int = FETCH_K
    out: Path = Path("benchmarks/results/taubench")
    command: str | None = None
    oracle: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "folds": self.folds, "fold": self.fold, "limit": self.limit, "k": self.k,
                "out": str(self.out), "command": self.command, "oracle": self.oracle}


# -- traces --------------------------------------------------------------------------------------


def ok_writes(task: Task) -> list[binding.Call]:
    """The gold write calls that did not fail in the gold replay, in call order."""
    failed = {e["index"] for e in task.gold_errors}
    return [a for i, a in enumerate(task.actions) if i not in failed and not is_read_only(a.name)]


def gold_trace(retail: Retail, task: Task) -> Any:
    """The task's gold replayed on a fresh database as a verified Trace (raises if its final
    state differs from the gold replay's hash)."""
    from skill_library.models import Outcome, ToolCall, Trace

    env = retail.new_env()
    calls = []
    for action in task.actions:
        result = env.call(action.name, **action.kwargs)
        if isinstance(result, str) and result.startswith("Error:"):
            calls.append(ToolCall(name=action.name, arguments=dict(action.kwargs), error=result))
        else:
            calls.append(ToolCall(name=action.name, arguments=dict(action.kwargs), result=result))
    if env.state_hash() != task.gold_hash:
        raise ValueError(f"the gold of {task.id} does not reach its gold_replay state hash")
    last = next((c.result for c in reversed(calls) if c.ok), None)
    return Trace(task=task.instruction, params=binding.trace_params(ok_writes(task)), calls=calls, result=last,
                 outcome=Outcome(success=True, verifier="taubench.state_hash"), source="gold")


def open_library(path: Path, retail: Retail, embedder: Any) -> Any:
    """A fresh library at ``path`` with every tool declared, learned skills approved automatically."""
    from skill_library import SkillLibrary
    from skill_library.governance import Policy

    library = SkillLibrary(path, embedder=embedder, read_only_tools=retail.read_only_tools(),
                           policy=Policy(auto_approve="all"))
    library.register_tools(retail.tool_specs())
    return library


def learn(library: Any, retail: Retail, tasks: Sequence[Task]) -> dict[str, Any]:
    """Learn the gold traces of the state-changing ``tasks``; statuses, time, skill -> trace count."""
    chosen = [t for t in tasks if t.changes_state]
    traces = [gold_trace(retail, t) for t in chosen]
    start = time.perf_counter()
    results = library.learn_many(traces, generalizer="dataflow")
    elapsed = time.perf_counter() - start
    statuses: dict[str, int] = {}
    evidence: dict[str, int] = {}
    for result in results:
        statuses[result.status] = statuses.get(result.status, 0) + 1
        if result.skill is not None and result.status in ("saved", "merged", "revised", "duplicate", "held"):
            evidence[result.skill.name] = evidence.get(result.skill.name, 0) + 1
    return {"traces": len(traces), "learn_s": round(elapsed, 1),
            "traces_per_s": round(len(traces) / elapsed, 2) if elapsed else None,
            "statuses": dict(sorted(statuses.items())), "traces_per_skill": evidence}


# -- skills ------------------------------------------------------------------------------------


class _Shape(ast.NodeTransformer):
    def __init__(self, tools: set[str]) -> None:
        self.tools = tools

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=node.id if node.id in self.tools else "v", ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(arg="v"), node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        keep = isinstance(node.value, str) and node.value in self.tools
        return ast.copy_location(ast.Constant(value=node.value if keep else type(node.value).__name__), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.name = "f"
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            node.body = node.body[1:] or [ast.Pass()]
        return node


def code_shape(code: str | None, tools: Sequence[str]) -> str:
    """A digest of a skill's code with names, constants and the docstring abstracted (tool names kept):
    two skills with the same shape make the same calls in the same structure."""
    if not code:
        return "none"
    try:
        tree = _Shape(set(tools)).visit(ast.parse(code))
    except SyntaxError:
        return "unparsed"
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:12]


def describe_skills(library: Any, evidence: dict[str, int]) -> list[dict[str, Any]]:
    """Name, version, status, tools, parameter names, shape and traces of every stored skill (no texts)."""
    out = []
    for skill in library.list():
        params = list(((skill.parameters or {}).get("properties") or {}).keys())
        out.append({"name": skill.name, "version": skill.version, "status": skill.status, "tools": list(skill.tools),
                    "params": params, "shape": code_shape(skill.code, skill.tools),
                    "traces": evidence.get(skill.name, 0)})
    return out


# -- solving -----------------------------------------------------------------------------------


class Binder:
    """Binding of a skill (or a plan's steps) for one task: ``gold`` or ``text``."""

    def __init__(self, mode: str, task: Task) -> None:
        self.mode, self.task = mode, task

    def bind(self, parameters: dict[str, Any] | None) -> dict[str, Any] | None:
        if self.mode == "gold":
            return binding.bind_gold(parameters, ok_writes(self.task))
        return binding.bind_text(parameters, self.task.instruction)

    def bind_steps(self, steps: Sequence[tuple[dict[str, Any] | None, Sequence[str]]]) -> list[dict[str, Any] | None]:
        if self.mode == "gold":
            return binding.bind_plan_steps(steps, ok_writes(self.task))
        return [self.bind(parameters) for parameters, _tools in steps]


def run_skill(library: Any, retail: Retail, env: Any, name: str, args: dict[str, Any],
              version: int | None = None) -> dict[str, Any]:
    """Run one skill on ``env`` without recording anything; ok, error kind."""
    try:
        run = library.run(name, args, env_tools(env, retail.tool_names()), version=version,
                          tool_schemas=retail.tool_schemas(), record=False)
    except Exception as exc:  # refused before running (nothing ran): a finding, not a crash
        return {"ran": False, "ok": False, "error": f"refused: {type(exc).__name__}"}
    error = getattr(run.error, "type", None) if run.error is not None else None
    return {"ran": True, "ok": bool(run.ok), "error": error if error is None else str(error),
            "limit": run.limit}


def try_skill(library: Any, retail: Retail, task: Task, skill: Any, binder: Binder) -> dict[str, Any]:
    """One attempt: bind ``skill``, run it on a fresh database, compare the state hash."""
    record: dict[str, Any] = {"kind": "skill", "skills": [skill.name], "bound": False, "ran": False,
                              "solved": False}
    args = binder.bind(skill.parameters)
    if args is None:
        return record
    env = retail.new_env()
    record.update(bound=True, **run_skill(library, retail, env, skill.name, args, version=skill.version))
    record["solved"] = env.state_hash() == task.gold_hash
    return record


def try_plan(library: Any, retail: Retail, task: Task, plan: Any, binder: Binder) -> dict[str, Any]:
    """The plan as one attempt: its steps in order on one fresh database, each step bound from
    the gold write calls of the tools its skill calls (values consumed in call order across steps)."""
    steps = list(plan.steps)
    record: dict[str, Any] = {"kind": "plan", "skills": [s.name for s in steps], "bound": False, "ran": False,
                              "solved": False}
    skills = []
    for step in steps:
        try:
            skills.append(library.get(step.name, step.version))
        except Exception:  # noqa: BLE001 - a plan naming a skill the library lacks is a finding
            record["error"] = "unknown step skill"
            return record
    bound = binder.bind_steps([(s.parameters, list(s.tools)) for s in skills])
    if any(args is None for args in bound):
        record["unbound_steps"] = [i for i, args in enumerate(bound) if args is None]
        return record
    env = retail.new_env()
    record["bound"] = True
    for skill, args in zip(skills, bound):
        assert args is not None
        step = run_skill(library, retail, env, skill.name, args, version=skill.version)
        record["ran"] = record["ran"] or step["ran"]
        if not step["ok"]:
            record.update(ok=False, error=step["error"], failed_step=skill.name)
            break
    else:
        record["ok"] = True
    record["solved"] = env.state_hash() == task.gold_hash
    return record


def fetch_supports_args(library: Any) -> bool:
    """Whether ``library.fetch`` takes ``args=``."""
    try:
        return "args" in inspect.signature(library.fetch).parameters
    except (TypeError, ValueError):
        return False


def attempts_for(library: Any, retail: Retail, task: Task, binder: Binder, k: int,
                 fetch_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fetch k, build the attempts (a plan of >= 2 steps first, when the library plans), run each."""
    if fetch_args is None:
        matches = list(library.fetch(task.instruction, k=k))
    else:
        matches = list(library.fetch(task.instruction, k=k, args=fetch_args))
    queue: list[tuple[str, Any]] = []
    plan_steps: int | str | None = None
    if hasattr(library, "plan"):
        try:
            plan = library.plan(task.instruction, k=PLAN_K)
        except Exception as exc:  # noqa: BLE001 - a plan that fails is reported, the singles still run
            plan, plan_steps = None, f"error: {type(exc).__name__}"
        if plan is not None:
            plan_steps = len(plan.steps)
            if len(plan.steps) >= 2:
                queue.append(("plan", plan))
    queue += [("skill", m.skill) for m in matches]
    runs = []
    for kind, item in queue[:k]:
        runs.append(try_plan(library, retail, task, item, binder) if kind == "plan"
                    else try_skill(library, retail, task, item, binder))
    read_only = set(retail.read_only_tools())
    # the right workflow fetched first: the top match changes state with exactly the task's
    # write tools (however it binds; a plan is not counted here)
    right_first = bool(matches) and set(matches[0].skill.tools) - read_only == set(task.write_tools)
    return {"fetched": [m.skill.name for m in matches], "plan_steps": plan_steps, "attempts": runs,
            "right_first": right_first,
            "solved_at_1": bool(runs and runs[0]["solved"]), "solved_at_k": any(r["solved"] for r in runs)}


def oracle(library: Any, retail: Retail, task: Task, skills: Sequence[Any], binder: Binder,
           known: dict[str, bool]) -> list[str]:
    """The learned skills that solve ``task`` under ``binder``: every skill calling all the
    task's write tools that binds is run (``known``: results of skills already run)."""
    need = set(task.write_tools)
    solvers = []
    for skill in skills:
        if skill.kind != "code" or not need <= set(skill.tools):
            continue
        if skill.name in known:
            solved = known[skill.name]
        else:
            solved = try_skill(library, retail, task, skill, binder)["solved"]
        if solved:
            solvers.append(skill.name)
    return solvers


def solve_task(library: Any, retail: Retail, task: Task, binder: Binder, k: int, skills: Sequence[Any], *,
               with_oracle: bool = True, with_args: bool = False) -> dict[str, Any]:
    """Everything measured on one held-out task under one binding."""
    record: dict[str, Any] = {"task_id": task.id, "shape": task.shape, "write_tools": task.write_tools,
                              "gold_tool_error": bool(task.gold_errors), "binding": binder.mode}
    record.update(attempts_for(library, retail, task, binder, k))
    if with_args:
        given = binding.trace_params(ok_writes(task)) if binder.mode == "gold" else \
            {n: v[0] for n, v in binding.text_values(task.instruction).items()}
        with_a = attempts_for(library, retail, task, binder, k, fetch_args=given)
        record["args"] = {"fetched": with_a["fetched"], "solved_at_1": with_a["solved_at_1"],
                          "solved_at_k": with_a["solved_at_k"]}
    if with_oracle:
        known = {a["skills"][0]: a["solved"] for a in record["attempts"] if a["kind"] == "skill"}
        solvers = oracle(library, retail, task, skills, binder, known)
        record["solvers"] = solvers
        if not record["solved_at_k"]:
            if solvers:
                ranked = [m.skill.name for m in library.fetch(task.instruction, k=max(1, len(skills)),
                                                              min_similarity=-1, min_reliability=0.0)]
                ranks = [ranked.index(s) + 1 for s in solvers if s in ranked]
                record.update(miss="retrieval", solver_rank=min(ranks) if ranks else None,
                              best_solver=solvers[0] if not ranks else ranked[min(ranks) - 1])
            else:
                record["miss"] = "generalization"
    return record


# -- the protocols -----------------------------------------------------------------------------


def _solve_all(library: Any, retail: Retail, tests: Sequence[Task], mode: str, config: TauConfig, label: str,
               progress: Progress | None) -> list[dict[str, Any]]:
    skills = [s for s in library.list() if s.status == "active"]
    with_args = fetch_supports_args(library)
    records = []
    for n, task in enumerate(tests):
        if progress:
            progress(f"{label} solve ({mode})", n, len(tests))
        records.append(solve_task(library, retail, task, Binder(mode, task), config.k, skills,
                                  with_oracle=config.oracle, with_args=with_args))
    return records


def run_cv(config: TauConfig, retail: Retail, embedder: Any, progress: Progress | None = None,
           on_fold: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Cross-validation on train; ``on_fold`` gets the results so far after each fold."""
    train = retail.split("train")[: config.limit]
    folds = [config.fold] if config.fold is not None else list(range(config.folds))
    out: dict[str, Any] = {"folds": {}}
    for f in folds:
        learn_tasks = [t for t in train if fold_of(t.id, config.folds) != f]
        tests = [t for t in train if fold_of(t.id, config.folds) == f and t.changes_state]
        with tempfile.TemporaryDirectory(prefix=f"taubench-fold{f}-") as tmp:
            library = open_library(Path(tmp) / "library", retail, embedder)
            try:
                if progress:
                    progress(f"fold {f} learn", 0, len(learn_tasks))
                learned = learn(library, retail, learn_tasks)
                start = time.perf_counter()
                records = _solve_all(library, retail, tests, "gold", config, f"fold {f}", progress)
                for record in records:
                    record["fold"] = f
                out["folds"][str(f)] = {
                    "learn": learned, "solve_s": round(time.perf_counter() - start, 1),
                    "skills": describe_skills(library, learned["traces_per_skill"]),
                    "fetch_args": fetch_supports_args(library), "plan": hasattr(library, "plan"),
                    "records": records}
            finally:
                library.close()
        if on_fold:
            on_fold(out)
    return out


def run_dev(config: TauConfig, retail: Retail, embedder: Any, progress: Progress | None = None) -> dict[str, Any]:
    """Learn all of train (``--limit``), solve the dev tasks under gold and under text binding."""
    train = retail.split("train")[: config.limit]
    tests = [t for t in retail.split("dev") if t.changes_state]
    with tempfile.TemporaryDirectory(prefix="taubench-dev-") as tmp:
        library = open_library(Path(tmp) / "library", retail, embedder)
        try:
            learned = learn(library, retail, train)
            start = time.perf_counter()
            records = {mode: _solve_all(library, retail, tests, mode, config, "dev", progress)
                       for mode in ("gold", "text")}
            return {"learn": learned, "solve_s": round(time.perf_counter() - start, 1),
                    "skills": describe_skills(library, learned["traces_per_skill"]),
                    "fetch_args": fetch_supports_args(library), "plan": hasattr(library, "plan"),
                    "records": records}
        finally:
            library.close()


def json_safe(results: dict[str, Any]) -> str:
    return json.dumps(results, indent=1, ensure_ascii=False, default=str)
