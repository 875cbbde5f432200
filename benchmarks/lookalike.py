"""The look-alike suite: ``python -m benchmarks lookalike --seeds 3``.

Does the library run the right workflow of a look-alike pair, abstain on requests no
workflow covers, and never change the world with the wrong skill? On the helpdesk world's
suite (``benchmarks/tasks/helpdesk.py``), for every seed:

1. a fresh library for the helpdesk world (tools declared with their side effects) learns
   the verified gold traces of the train tickets through ``learn_many`` (seed 0 in file
   order, seed s in a ``random.Random(s)`` shuffle); skill -> workflows comes from the
   learn results;
2. frozen (runs record nothing), for every test ticket, in-scope and out-of-scope, the
   world is reset and an agent that trusts the library acts: ``fetch(ticket, k=3)``; when a
   skill comes back and neither the result nor its top match is flagged ``ambiguous`` or
   ``abstained`` (read with getattr, see :mod:`benchmarks.suite_library`), it runs the top
   skill with its arguments bound by name from the ticket's params; then it finishes by hand
   (replays the gold actions the skill did not complete) and the world's verifier judges
   the final state;
3. the privacy check (:mod:`benchmarks.privacy`) over everything the library stores or shows.

Measured, per seed and overall (targets from issue 21):

* **wrong-workflow changes**: runs of a skill not learned from the ticket's workflow alone
  (or any skill on an out-of-scope ticket) that changed the directory (target 0);
* **made worse**: tickets whose final state fails the verifier (the gold actions alone
  solve every one, checked on every run), target 0;
* **out-of-scope given a skill**: out-of-scope tickets for which fetch returned an
  unflagged skill (target <= 10%);
* **in-scope fetch@1**: the top match is a skill learned from the ticket's workflow and no
  other (target >= 90%);
* **in-scope flagged**: in-scope tickets whose result was empty or flagged (target <= 10%).

A skill learned from traces of two workflows counts as the right workflow for neither.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.frozen_library import FrozenLibrary
from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, explain_subjects, markdown_lines
from benchmarks.suite_library import (
    bind_by_name,
    flags_of,
    gold_trace,
    learned_libraries,
    outcome_kind,
    statuses,
    write_results,
)
from benchmarks.tasks.helpdesk import LOOKALIKES, is_out_of_scope
from benchmarks.worlds import Task, ToolError, World, get_world, load_tasks

WORLD = "helpdesk"
FETCH_K = 3
DEFAULT_SEEDS = 3

#: metric -> (target, "max" or "min", what it is)
TARGETS: dict[str, tuple[float, str, str]] = {
    "wrong_workflow_changes": (0, "max", "runs that changed state with the wrong workflow"),
    "made_worse": (0, "max", "tickets made worse (final state fails the verifier)"),
    "oos_given_skill": (0.10, "max", "out-of-scope tickets given an unflagged skill"),
    "in_scope_fetch_at_1": (0.90, "min", "in-scope fetch@1 of the right workflow"),
    "in_scope_flagged": (0.10, "max", "in-scope tickets abstained or flagged ambiguous"),
}


@dataclass
class LookalikeConfig:
    """One run of the look-alike protocol."""

    seeds: int = DEFAULT_SEEDS
    out: Path = Path("bench-output/lookalike")
    max_train: int | None = None
    max_test: int | None = None
    min_reliability: float = 0.6
    #: the agent passes the ticket's values and the world's read-only tools to fetch, which
    #: checks the top candidates' preconditions (issue 21 item 3)
    probe: bool = False
    command: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"world": WORLD, "seeds": self.seeds, "out": str(self.out), "max_train": self.max_train,
                "max_test": self.max_test, "min_reliability": self.min_reliability, "fetch_k": FETCH_K,
                "probe": self.probe, "command": self.command}


Progress = Callable[[str, int, int], None]


def run_lookalike(config: LookalikeConfig, *, tasks: Sequence[Task] | None = None, embedder: Any = None,
                  progress: Progress | None = None) -> dict[str, Any]:
    """Run the protocol; return the results (what ``results.json`` holds), redacted."""
    started = time.perf_counter()
    world = get_world(WORLD)
    all_tasks = list(tasks) if tasks is not None else load_tasks(WORLD)
    train = [t for t in all_tasks if t.split == "train"][: config.max_train]
    test = _test_slice([t for t in all_tasks if t.split == "test"], config.max_test)
    if not train or not test:
        raise ValueError("the look-alike protocol needs train and test tickets")
    for task in test:  # the baseline: the gold actions alone solve every ticket
        gold_trace(world, task)
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    scanner = ValueScanner(world.personal_values(all_tasks))
    out = Path(config.out)
    records: list[dict[str, Any]] = []
    libraries: dict[str, Any] = {}
    privacy = PrivacyReport(values=len(scanner))
    total, done = config.seeds * (len(train) + len(test)), 0
    for seat in learned_libraries(out, world, train, config.seeds, embedder=embedder,
                                  min_reliability=config.min_reliability):
        seed, label = seat.seed, f"seed{seat.seed}"
        done += len(train)
        frozen = FrozenLibrary(seat.library)
        for task in test:
            if progress:
                progress(f"seed {seed} test {task.id}", done, total)
            record = try_ticket(frozen, world, task, seat.workflows, probe=config.probe)
            record["seed"] = seed
            records.append(record)
            done += 1
        libraries[label] = describe(seat.library, seat.workflows, statuses(seat.results))
        privacy.add(check_library(seat.library, scanner, label=f"{WORLD} {label}",
                                  queries=[t.instruction for t in test],
                                  subjects=explain_subjects(train, scanner)))
    if progress:
        progress("done", done, total)
    results = {
        "config": config.to_json(),
        "tasks": {"train": len(train), "test_in_scope": sum(not is_out_of_scope(t) for t in test),
                  "test_out_of_scope": sum(is_out_of_scope(t) for t in test)},
        "lookalikes": [list(p) for p in LOOKALIKES],
        "records": records,
        "summary": summarize(records, config.seeds),
        "by_workflow": by_workflow(records),
        "confusions": confusions(records),
        "libraries": libraries,
        "privacy": privacy.to_json(),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    return scanner.redact_json(results)


def _test_slice(test: list[Task], n: int | None) -> list[Task]:
    """The first ``n`` test tickets, in-scope and out-of-scope alike (``n`` of each)."""
    if n is None:
        return test
    return [t for t in test if not is_out_of_scope(t)][:n] + [t for t in test if is_out_of_scope(t)][:n]


def _key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, arguments], sort_keys=True)


def try_ticket(library: Any, world: World, task: Task, workflows: dict[str, set[str]], *,
               probe: bool = False) -> dict[str, Any]:
    """One ticket as an agent that trusts the library handles it (see the module doc);
    ``probe``: fetch checks the top candidates' preconditions with the ticket's values and
    the world's read-only tools."""
    world.reset(task.seed, task)
    before = world.state()
    if probe:
        reads = {name: fn for name, fn in world.tools().items() if name in world.read_only_tools()}
        matches = library.fetch(task.instruction, k=FETCH_K, args=dict(task.params), read_tools=reads)
    else:
        matches = library.fetch(task.instruction, k=FETCH_K)
    flags = flags_of(matches)
    top = matches[0] if matches else None
    top_workflows = sorted(workflows.get(top.skill.name, set())) if top is not None else []
    oos = is_out_of_scope(task)
    record: dict[str, Any] = {
        "task_id": task.id, "workflow": task.workflow, "scope": "out" if oos else "in",
        "fetched": [m.skill.name for m in matches], "similarities": [round(m.similarity, 4) for m in matches],
        "top": top.skill.name if top is not None else None, "top_workflows": top_workflows,
        "right_top": (not oos) and top_workflows == [task.workflow], "flags": flags,
        "reason": _short(getattr(matches, "reason", "") or None, 300),
        "given": top is not None and not flags, "bound": None, "ran": False, "run_ok": None, "run_error": None,
        "changed_state": False, "wrong_workflow": False, "wrong_change": False,
        "solved_by_skill": False, "success": False, "made_worse": False,
    }
    done: Counter[str] = Counter()
    if record["given"]:
        assert top is not None
        arguments = bind_by_name(top.skill, task.params)
        record["bound"] = arguments is not None
        if arguments is not None:
            try:
                run = library.run(top.skill.name, arguments, world.tools(), tool_schemas=world.tool_schemas())
            except Exception as exc:  # the library refused to run it (nothing ran): a finding, not a crash
                record["run_error"] = _short(f"refused: {type(exc).__name__}: {exc}")
            else:
                record.update(ran=True, run_ok=run.ok, run_error=_short(run.error), run_calls=len(run.trace.calls),
                              run_outcome=outcome_kind(run))
                done.update(_key(c.name, c.arguments) for c in run.trace.calls if c.ok and c.kind == "tool")
    record["changed_state"] = world.state() != before
    record["wrong_workflow"] = record["ran"] and top_workflows != [task.workflow]
    record["wrong_change"] = record["wrong_workflow"] and record["changed_state"]
    record["solved_by_skill"] = record["ran"] and world.verify(task).success
    for action in task.gold or []:  # the agent finishes by hand what the skill did not do
        key = _key(action.name, dict(action.arguments))
        if done[key] > 0:
            done[key] -= 1
            continue
        try:
            world.call(action.name, dict(action.arguments))
        except ToolError:
            pass
    verdict = world.verify(task)
    record["success"] = verdict.success
    record["made_worse"] = not verdict.success
    if not verdict.success:
        record["evidence"] = _short(json.dumps(verdict.evidence, default=str), 300)
    return record


def _rate(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    return round(sum(bool(r[key]) for r in rows) / len(rows), 4) if rows else None


def metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The five target metrics (and their counts) over ``rows``."""
    inside = [r for r in rows if r["scope"] == "in"]
    outside = [r for r in rows if r["scope"] == "out"]
    return {
        "wrong_workflow_changes": sum(r["wrong_change"] for r in rows),
        "made_worse": sum(r["made_worse"] for r in rows),
        "oos_given_skill": _rate(outside, "given"),
        "in_scope_fetch_at_1": _rate(inside, "right_top"),
        "in_scope_flagged": round(sum(bool(r["flags"]) for r in inside) / len(inside), 4) if inside else None,
        "counts": {
            "in_scope": len(inside), "out_of_scope": len(outside),
            "in_scope_right_top": sum(r["right_top"] for r in inside),
            "in_scope_flagged": sum(bool(r["flags"]) for r in inside),
            "out_of_scope_given": sum(r["given"] for r in outside),
            "out_of_scope_changed_state": sum(r["changed_state"] for r in outside),
            "skill_runs": sum(r["ran"] for r in rows),
            "in_scope_solved_by_skill": sum(r["solved_by_skill"] for r in inside),
            "wrong_workflow_runs": sum(r["wrong_workflow"] for r in rows),
        },
    }


def meets(name: str, value: float | None) -> bool | None:
    """Whether ``value`` meets the target of metric ``name`` (None without a value)."""
    if value is None:
        return None
    target, sense, _ = TARGETS[name]
    return value <= target if sense == "max" else value >= target


def summarize(records: Sequence[dict[str, Any]], seeds: int) -> dict[str, Any]:
    """Per seed and overall: the metrics and whether each target is met."""
    per_seed = {str(s): metrics([r for r in records if r["seed"] == s]) for s in range(seeds)}
    overall = metrics(records)
    overall["targets_met"] = {name: meets(name, overall[name]) for name in TARGETS}
    return {"per_seed": per_seed, "overall": overall}


def by_workflow(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per workflow (in-scope) or out-of-scope request: counts over all seeds."""
    out: dict[str, Any] = {}
    for workflow in sorted({r["workflow"] for r in records}):
        rows = [r for r in records if r["workflow"] == workflow]
        wrong = Counter(",".join(r["top_workflows"]) or "(none)" for r in rows if r["top"] and not r["right_top"])
        out[workflow] = {"tickets": len(rows), "right_top": sum(r["right_top"] for r in rows),
                         "flagged": sum(bool(r["flags"]) for r in rows), "given": sum(r["given"] for r in rows),
                         "wrong_changes": sum(r["wrong_change"] for r in rows),
                         "made_worse": sum(r["made_worse"] for r in rows), "top_instead": dict(wrong.most_common())}
    return out


def confusions(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each look-alike pair: how often each side's tickets got the other side's skill first."""
    out = []
    for a, b, differs in LOOKALIKES:
        row: dict[str, Any] = {"pair": f"{a} / {b}", "differs_by": differs}
        for x, y in ((a, b), (b, a)):
            rows = [r for r in records if r["workflow"] == x]
            row[f"{x} -> {y}"] = sum(y in r["top_workflows"] for r in rows)
            row[f"{x} tickets"] = len(rows)
        out.append(row)
    return out


def describe(library: Any, workflows: dict[str, set[str]], learned: dict[str, int]) -> dict[str, Any]:
    """The library after learning: its skills with their workflows and counters, the learn statuses."""
    skills = []
    for skill in library.list():
        skills.append({"name": skill.name, "version": skill.version, "status": skill.status, "when": skill.when,
                       "workflows": sorted(workflows.get(skill.name, set())), "successes": skill.successes,
                       "failures": skill.failures, "tools": list(skill.tools)})
    names = {w for ws in workflows.values() for w in ws}
    return {"skills": skills, "learn_statuses": learned, "skills_per_workflow":
            round(len(skills) / len(names), 2) if names else None,
            "impure_skills": sorted(n for n, ws in workflows.items() if len(ws) > 1)}


def _short(value: object, limit: int = 200) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the report ----------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _cell(name: str, value: Any) -> str:
    return str(value) if name in ("wrong_workflow_changes", "made_worse") else _pct(value)


def markdown(results: dict[str, Any]) -> str:
    """results.md: targets per seed and overall, per workflow, pairs, skills, privacy."""
    summary, config = results["summary"], results["config"]
    seeds = sorted(summary["per_seed"], key=int)
    lines = ["# Look-alike suite (helpdesk world)", "",
             f"command: `{config.get('command') or 'python -m benchmarks lookalike'}`; "
             f"{results['tasks']['train']} train tickets, {results['tasks']['test_in_scope']} in-scope and "
             f"{results['tasks']['test_out_of_scope']} out-of-scope test tickets; {len(seeds)} seed(s); "
             f"{results['elapsed_s']} s", "",
             "| metric | target | " + " | ".join(f"seed {s}" for s in seeds) + " | overall | met |",
             "|---|---|" + "---|" * len(seeds) + "---|---|"]
    overall = summary["overall"]
    for name, (target, sense, about) in TARGETS.items():
        shown_target = ("<= " if sense == "max" else ">= ") + _cell(name, target)
        cells = [_cell(name, summary["per_seed"][s][name]) for s in seeds]
        met = overall["targets_met"][name]
        lines.append(f"| {about} | {shown_target} | " + " | ".join(cells) +
                     f" | **{_cell(name, overall[name])}** | {'yes' if met else 'no' if met is False else '–'} |")
    counts = overall["counts"]
    lines += ["", f"Over all seeds: {counts['in_scope_right_top']}/{counts['in_scope']} in-scope tickets fetched "
              f"their workflow first, {counts['in_scope_flagged']} flagged or abstained, "
              f"{counts['in_scope_solved_by_skill']} solved by the skill alone; "
              f"{counts['out_of_scope_given']}/{counts['out_of_scope']} out-of-scope tickets given a skill, "
              f"{counts['out_of_scope_changed_state']} of them changed the directory; "
              f"{counts['skill_runs']} skill runs, {counts['wrong_workflow_runs']} of the wrong workflow.", "",
              "## Look-alike pairs (top match of the other side, all seeds)", "",
              "| pair | differs by | a -> b | b -> a |", "|---|---|---|---|"]
    for row in results["confusions"]:
        a, b = row["pair"].split(" / ")
        lines.append(f"| {row['pair']} | {row['differs_by']} | {row[f'{a} -> {b}']}/{row[f'{a} tickets']} | "
                     f"{row[f'{b} -> {a}']}/{row[f'{b} tickets']} |")
    lines += ["", "## By workflow (all seeds)", "",
              "| workflow | tickets | right top | flagged | given a skill | wrong changes | made worse | top instead |",
              "|---|---|---|---|---|---|---|---|"]
    for workflow, m in results["by_workflow"].items():
        instead = ", ".join(f"{k} {n}" for k, n in m["top_instead"].items()) or "–"
        lines.append(f"| {workflow} | {m['tickets']} | {m['right_top']} | {m['flagged']} | {m['given']} | "
                     f"{m['wrong_changes']} | {m['made_worse']} | {instead} |")
    first = sorted(results["libraries"])[0] if results["libraries"] else None
    if first:
        lib = results["libraries"][first]
        lines += ["", f"## Skills learned ({first}: {len(lib['skills'])}; learn statuses {lib['learn_statuses']}; "
                  f"skills from more than one workflow: {', '.join(lib['impure_skills']) or 'none'})", "",
                  "| skill | workflows | when | ok/fail |", "|---|---|---|---|"]
        for s in lib["skills"]:
            when = " ".join(s["when"].split()).replace("|", "\\|")
            lines.append(f"| `{s['name']}` | {', '.join(s['workflows']) or '–'} | {when} | "
                         f"{s['successes']}/{s['failures']} |")
    lines += ["", "## Privacy", ""] + markdown_lines(results["privacy"])
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> str:
    """Write results.json and results.md into ``out``; return the markdown."""
    return write_results(results, out, markdown)
