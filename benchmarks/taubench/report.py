"""Summaries, the table, results.json / results.md and the plot of a τ-bench run.

Results hold task ids, skill names and numbers only (no task text, no argument value)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Sequence

SHAPES = ("single", "repeat", "mixed")


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Solve rates over the tasks whose gold hits no tool error; those are counted apart."""
    erred = [r for r in records if r["gold_tool_error"]]
    rows = [r for r in records if not r["gold_tool_error"]]
    n = len(rows)
    out: dict[str, Any] = {
        "tasks": n,
        "solved_at_1": _rate(sum(r["solved_at_1"] for r in rows), n),
        "solved_at_k": _rate(sum(r["solved_at_k"] for r in rows), n),
        # results written before the measure existed have no right_first: None, not 0
        "right_first": (_rate(sum(r["right_first"] for r in rows), n)
                        if rows and all("right_first" in r for r in rows) else None),
        "gold_tool_error_tasks": len(erred),
        "gold_tool_error_solved_at_k": sum(r["solved_at_k"] for r in erred),
    }
    if any("solvers" in r for r in rows):
        out["oracle"] = _rate(sum(bool(r.get("solvers")) for r in rows), n)
        retrieval = [r for r in rows if r.get("miss") == "retrieval"]
        ranks = [r["solver_rank"] for r in retrieval if r.get("solver_rank")]
        out["misses"] = {"retrieval": len(retrieval), "generalization": sum(r.get("miss") == "generalization"
                                                                             for r in rows),
                         "retrieval_median_rank": statistics.median(ranks) if ranks else None}
    if any("args" in r for r in rows):
        out["args"] = {"solved_at_1": _rate(sum(r["args"]["solved_at_1"] for r in rows), n),
                       "solved_at_k": _rate(sum(r["args"]["solved_at_k"] for r in rows), n)}
    plans = [a for r in rows for a in r["attempts"] if a["kind"] == "plan"]
    out["plan_attempts"] = len(plans)
    out["plan_solved"] = sum(a["solved"] for a in plans)
    out["by_shape"] = {}
    for shape in SHAPES:
        part = [r for r in rows if r["shape"] == shape]
        entry: dict[str, Any] = {"tasks": len(part),
                                 "solved_at_1": _rate(sum(r["solved_at_1"] for r in part), len(part)),
                                 "solved_at_k": _rate(sum(r["solved_at_k"] for r in part), len(part))}
        if any("solvers" in r for r in part):
            entry["oracle"] = _rate(sum(bool(r.get("solvers")) for r in part), len(part))
        part_plans = [a for r in part for a in r["attempts"] if a["kind"] == "plan"]
        entry["plan_attempts"], entry["plan_solved"] = len(part_plans), sum(a["solved"] for a in part_plans)
        out["by_shape"][shape] = entry
    return out


def examples(records: Sequence[dict[str, Any]], n: int = 4) -> dict[str, list[dict[str, Any]]]:
    """A few misses of each kind: ids and skill names."""
    retrieval = [{"task_id": r["task_id"], "fetched": r["fetched"], "solver": r.get("best_solver"),
                  "solver_rank": r.get("solver_rank")} for r in records if r.get("miss") == "retrieval"]
    general = [{"task_id": r["task_id"], "shape": r["shape"], "write_tools": r["write_tools"],
                "fetched": r["fetched"]} for r in records if r.get("miss") == "generalization"]
    return {"retrieval": retrieval[:n], "generalization": general[:n]}


def library_summary(skills: Sequence[dict[str, Any]], learned: dict[str, Any]) -> dict[str, Any]:
    numbered = [int(p.rsplit("_", 1)[1]) for s in skills for p in s["params"]
                if "_" in p and p.rsplit("_", 1)[1].isdigit()]
    return {"skills_stored": len(skills), "active": sum(s["status"] == "active" for s in skills),
            "distinct_code_shapes": len({s["shape"] for s in skills}),
            "single_trace_skills": sum(s["traces"] <= 1 for s in skills),
            "max_numbered_param": max(numbered) if numbered else None,
            "biggest": sorted(({"name": s["name"], "traces": s["traces"]} for s in skills),
                              key=lambda e: -e["traces"])[:5],
            "learn_s": learned["learn_s"], "traces": learned["traces"], "traces_per_s": learned["traces_per_s"],
            "statuses": learned["statuses"]}


def build(config: Any, cv: dict[str, Any] | None, dev: dict[str, Any] | None,
          machine: dict[str, Any]) -> dict[str, Any]:
    """results.json: config, machine, per fold and overall summaries, dev, records."""
    results: dict[str, Any] = {"config": config.to_json(), "machine": machine}
    if cv is not None:
        folds = {}
        pooled: list[dict[str, Any]] = []
        for f, fold in cv["folds"].items():
            pooled += fold["records"]
            folds[f] = {"summary": summarize(fold["records"]),
                        "library": library_summary(fold["skills"], fold["learn"]),
                        "solve_s": fold["solve_s"], "fetch_args": fold["fetch_args"], "plan": fold["plan"]}
        libs = [v["library"] for v in folds.values()]
        results["cv"] = {
            "folds_done": sorted(cv["folds"], key=int), "overall": summarize(pooled), "per_fold": folds,
            "mean_skills_stored": round(statistics.mean(x["skills_stored"] for x in libs), 1) if libs else None,
            "mean_code_shapes": round(statistics.mean(x["distinct_code_shapes"] for x in libs), 1) if libs else None,
            "examples": examples(pooled),
            "skills": {f: fold["skills"] for f, fold in cv["folds"].items()},
            "records": pooled}
    if dev is not None:
        results["dev"] = {"library": library_summary(dev["skills"], dev["learn"]),
                          "fetch_args": dev["fetch_args"], "plan": dev["plan"], "solve_s": dev["solve_s"],
                          "gold": summarize(dev["records"]["gold"]), "text": summarize(dev["records"]["text"]),
                          "examples": {m: examples(dev["records"][m]) for m in ("gold", "text")},
                          "skills": dev["skills"], "records": dev["records"]}
    return results


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def _row(label: str, s: dict[str, Any], lib: dict[str, Any] | None) -> str:
    miss = s.get("misses") or {}
    args = s.get("args")
    return (f"| {label} | {s['tasks']} | {_pct(s.get('right_first'))} | {_pct(s['solved_at_1'])} | "
            f"{_pct(s['solved_at_k'])} | "
            f"{(_pct(args['solved_at_1']) + ' / ' + _pct(args['solved_at_k'])) if args else 'n/a'} | "
            f"{_pct(s.get('oracle'))} | {miss.get('retrieval', '–')} (rank {miss.get('retrieval_median_rank', '–')}) | "
            f"{miss.get('generalization', '–')} | {lib['skills_stored'] if lib else '–'} | "
            f"{lib['distinct_code_shapes'] if lib else '–'} | {s['gold_tool_error_tasks']} |")


HEADER = ["| slice | tasks | right workflow first | solved@1 | solved@3 | with args= @1 / @3 | oracle | "
          "retrieval misses (median rank) | generalization misses | skills stored | code shapes | "
          "gold tool error (apart) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]


def markdown(results: dict[str, Any]) -> str:
    cfg, machine = results["config"], results["machine"]
    lines = ["# τ-bench retail", "", f"command: `{cfg.get('command')}`", "",
             f"measured {machine['finished']} on {machine['host']} ({machine['cores']} cores, load "
             f"{machine['load']}), commit {machine['commit']}; {machine['elapsed_s']} s", ""]
    if "cv" in results:
        cv = results["cv"]
        lines += [f"## Cross-validation on train (folds done: {', '.join(cv['folds_done'])}; k = {cfg['k']}, "
                  "fetch from the task text, gold write binding)", ""] + HEADER
        lines.append(_row("all folds", cv["overall"], None))
        for f, fold in cv["per_fold"].items():
            lines.append(_row(f"fold {f}", fold["summary"], fold["library"]))
        lines += ["", "By gold shape (all folds): single = one write, repeat = one tool several times, "
                  "mixed = several tools", "", "| shape | tasks | solved@1 | solved@3 | oracle | plan attempts "
                  "(solved) |", "|---|---|---|---|---|---|"]
        for shape, s in cv["overall"]["by_shape"].items():
            lines.append(f"| {shape} | {s['tasks']} | {_pct(s['solved_at_1'])} | {_pct(s['solved_at_k'])} | "
                         f"{_pct(s.get('oracle'))} | {s['plan_attempts']} ({s['plan_solved']}) |")
        lines += ["", "Per fold, by shape (solved@1 / solved@3 / oracle; plan attempts solved):", "",
                  "| fold | " + " | ".join(SHAPES) + " |", "|---|" + "---|" * len(SHAPES)]
        for f, fold in cv["per_fold"].items():
            cells = []
            for shape in SHAPES:
                s = fold["summary"]["by_shape"][shape]
                cells.append(f"{s['tasks']}: {_pct(s['solved_at_1'])} / {_pct(s['solved_at_k'])} / "
                             f"{_pct(s.get('oracle'))}; plan {s['plan_solved']}/{s['plan_attempts']}")
            lines.append(f"| {f} | " + " | ".join(cells) + " |")
        lines += ["", "Learning per fold:", "", "| fold | traces | learn s | traces/s | skills | single-trace skills "
                  "| max numbered param | statuses |", "|---|---|---|---|---|---|---|---|"]
        for f, fold in cv["per_fold"].items():
            lib = fold["library"]
            lines.append(f"| {f} | {lib['traces']} | {lib['learn_s']} | {lib['traces_per_s']} | {lib['skills_stored']}"
                         f" | {lib['single_trace_skills']} | {lib['max_numbered_param']} | {lib['statuses']} |")
        lines += ["", "Miss examples:", "", "```", json.dumps(cv["examples"], indent=1), "```"]
    if "dev" in results:
        dev = results["dev"]
        lines += ["", f"## Dev (learn all train, {dev['library']['traces']} traces; solve the dev tasks)", ""] + HEADER
        lines.append(_row("dev, gold binding", dev["gold"], dev["library"]))
        lines.append(_row("dev, text binding", dev["text"], dev["library"]))
        lines += ["", "Miss examples:", "", "```", json.dumps(dev["examples"], indent=1), "```"]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> Path | None:
    """Bars of solved@1, solved@3 and oracle by slice; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    slices: list[tuple[str, dict[str, Any]]] = []
    if "cv" in results:
        slices.append(("cv all", results["cv"]["overall"]))
        for shape, s in results["cv"]["overall"]["by_shape"].items():
            slices.append((f"cv {shape}", s))
    if "dev" in results:
        slices += [("dev gold", results["dev"]["gold"]), ("dev text", results["dev"]["text"])]
    if not slices:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(slices)), 3.6))
    width = 0.26
    for i, (key, label) in enumerate((("solved_at_1", "solved@1"), ("solved_at_k", "solved@3"),
                                      ("oracle", "oracle"))):
        ax.bar([x + (i - 1) * width for x in range(len(slices))], [s.get(key) or 0 for _, s in slices], width,
               label=label)
    ax.set_xticks(range(len(slices)), [name for name, _ in slices])
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of state-changing tasks")
    ax.set_title("τ-bench retail: skills fetched from the task text")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def table(results: dict[str, Any]) -> str:
    """The stdout table (the markdown's tables)."""
    return markdown(results)
