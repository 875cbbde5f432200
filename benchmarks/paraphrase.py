"""The paraphrase suite: ``python -m benchmarks paraphrase --seeds 3``.

Can a skill learned from one trace be found by a request that says the same thing in other
words? On the office world's suite (``benchmarks/tasks/office.py``: 32 workflows, one train
trace each, three rewordings each that share no content word with their trace, checked
mechanically), for every seed:

1. a fresh library learns the 32 verified train traces through ``learn_many`` (seed 0 in
   file order, seed s a ``random.Random(s)`` shuffle);
2. frozen, for every rewording: ``fetch(query, k=3)``; **fetch@3** = the skill learned from
   the query's workflow is among the three (target >= 90%); fetch@1 and the share of empty
   or flagged results are reported beside it;
3. the privacy check over everything the library stores or shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.frozen_library import FrozenLibrary
from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, explain_subjects, markdown_lines
from benchmarks.suite_library import flags_of, learned_libraries, statuses, write_results
from benchmarks.worlds import Task, get_world, load_tasks

WORLD = "office"
FETCH_K = 3
DEFAULT_SEEDS = 3
#: fetch@3 target (issue 21)
TARGET_FETCH_AT_3 = 0.90

Progress = Callable[[str, int, int], None]


@dataclass
class ParaphraseConfig:
    """One run of the paraphrase protocol."""

    seeds: int = DEFAULT_SEEDS
    out: Path = Path("bench-output/paraphrase")
    max_test: int | None = None
    min_reliability: float = 0.6
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"world": WORLD, "seeds": self.seeds, "out": str(self.out), "max_test": self.max_test,
                "fetch_k": FETCH_K, "command": self.command}


def run_paraphrase(config: ParaphraseConfig, *, tasks: Sequence[Task] | None = None, embedder: Any = None,
                   progress: Progress | None = None) -> dict[str, Any]:
    """Run the protocol; return the results (what ``results.json`` holds), redacted."""
    started = time.perf_counter()
    world = get_world(WORLD)
    all_tasks = list(tasks) if tasks is not None else load_tasks(WORLD)
    train = [t for t in all_tasks if t.split == "train"]
    test = [t for t in all_tasks if t.split == "test"][: config.max_test]
    if not train or not test:
        raise ValueError("the paraphrase protocol needs train traces and test queries")
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    scanner = ValueScanner(world.personal_values(all_tasks))
    privacy = PrivacyReport(values=len(scanner))
    records: list[dict[str, Any]] = []
    libraries: dict[str, Any] = {}
    total, done = config.seeds * (len(train) + len(test)), 0
    for seat in learned_libraries(Path(config.out), world, train, config.seeds, embedder=embedder,
                                  min_reliability=config.min_reliability):
        seed, label, workflows, library = seat.seed, f"seed{seat.seed}", seat.workflows, seat.library
        done += len(train)
        frozen = FrozenLibrary(library)
        for task in test:
            matches = frozen.fetch(task.instruction, k=FETCH_K)
            found = [sorted(workflows.get(m.skill.name, set())) for m in matches]
            right = [ws == [task.workflow] for ws in found]
            records.append({
                "seed": seed, "task_id": task.id, "workflow": task.workflow,
                "fetched": [m.skill.name for m in matches],
                "similarities": [round(m.similarity, 4) for m in matches],
                "fetched_workflows": found, "at_1": bool(right[:1] and right[0]), "at_3": any(right),
                "rank": right.index(True) + 1 if any(right) else None, "flags": flags_of(matches),
            })
            done += 1
            if progress:
                progress(f"seed {seed} test {task.id}", done, total)
        names = {w for ws in workflows.values() for w in ws}
        skills = library.list()
        libraries[label] = {"skills": len(skills), "workflows": len(names), "learn_statuses": statuses(seat.results),
                            "impure_skills": sorted(n for n, ws in workflows.items() if len(ws) > 1),
                            "whens": {s.name: s.when for s in skills}}
        privacy.add(check_library(library, scanner, label=f"{WORLD} {label}",
                                  queries=[t.instruction for t in test], subjects=explain_subjects(train, scanner)))
    results = {
        "config": config.to_json(), "tasks": {"train": len(train), "test": len(test)}, "records": records,
        "summary": summarize(records, config.seeds), "libraries": libraries, "privacy": privacy.to_json(),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    return scanner.redact_json(results)


def _metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {"queries": n, "fetch_at_3": round(sum(r["at_3"] for r in rows) / n, 4) if n else None,
            "fetch_at_1": round(sum(r["at_1"] for r in rows) / n, 4) if n else None,
            "flagged": round(sum(bool(r["flags"]) for r in rows) / n, 4) if n else None}


def summarize(records: Sequence[dict[str, Any]], seeds: int) -> dict[str, Any]:
    """Per seed and overall: fetch@3, fetch@1, flagged; the queries missed most."""
    overall = _metrics(records)
    overall["target_fetch_at_3"] = TARGET_FETCH_AT_3
    overall["met"] = overall["fetch_at_3"] is not None and overall["fetch_at_3"] >= TARGET_FETCH_AT_3
    missed: dict[str, int] = {}
    for r in records:
        if not r["at_3"]:
            missed[r["task_id"]] = missed.get(r["task_id"], 0) + 1
    by_workflow = {w: _metrics([r for r in records if r["workflow"] == w])
                   for w in sorted({r["workflow"] for r in records})}
    return {"per_seed": {str(s): _metrics([r for r in records if r["seed"] == s]) for s in range(seeds)},
            "overall": overall, "by_workflow": by_workflow,
            "missed": dict(sorted(missed.items(), key=lambda kv: (-kv[1], kv[0])))}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def markdown(results: dict[str, Any]) -> str:
    """results.md: fetch@3 per seed and overall, per workflow, the misses, privacy."""
    summary, config = results["summary"], results["config"]
    seeds = sorted(summary["per_seed"], key=int)
    overall = summary["overall"]
    lines = ["# Paraphrase suite (office world)", "",
             f"command: `{config.get('command') or 'python -m benchmarks paraphrase'}`; "
             f"{results['tasks']['train']} single-trace workflows, {results['tasks']['test']} rewordings sharing no "
             f"content word with their trace; {len(seeds)} seed(s); {results['elapsed_s']} s", "",
             "| metric | target | " + " | ".join(f"seed {s}" for s in seeds) + " | overall |",
             "|---|---|" + "---|" * len(seeds) + "---|"]
    for key, target in (("fetch_at_3", f">= {_pct(TARGET_FETCH_AT_3)}"), ("fetch_at_1", ""), ("flagged", "")):
        cells = [_pct(summary["per_seed"][s][key]) for s in seeds]
        lines.append(f"| {key.replace('_at_', '@')} | {target} | " + " | ".join(cells)
                     + f" | **{_pct(overall[key])}** |")
    lines += ["", f"fetch@3 target met: {'yes' if overall['met'] else 'no'}.", ""]
    for label, lib in sorted(results["libraries"].items()):
        lines.append(f"- {label}: {lib['skills']} skills for {lib['workflows']} workflows; learn statuses "
                     f"{lib['learn_statuses']}; skills from more than one workflow: "
                     f"{', '.join(lib['impure_skills']) or 'none'}")
    lines += ["", "## By workflow (all seeds)", "", "| workflow | fetch@3 | fetch@1 |", "|---|---|---|"]
    for workflow, m in summary["by_workflow"].items():
        lines.append(f"| {workflow} | {_pct(m['fetch_at_3'])} | {_pct(m['fetch_at_1'])} |")
    lines += ["", "## Privacy", ""] + markdown_lines(results["privacy"])
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> str:
    """Write results.json and results.md into ``out``; return the markdown."""
    return write_results(results, out, markdown)
