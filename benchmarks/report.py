"""Aggregate benchmark records into a summary, a markdown report and PNG plots.

Every per-task number is averaged over the tasks of a phase and then over seeds; rates
are pooled over all tasks (or fetches, or skill runs) of all seeds.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import mean, pstdev
from typing import Any, Iterable, Sequence

PHASES = ("train", "test")
# what SkillLibrary.learn may answer (LearnResult.status); the report assumes none in particular
LEARN_STATUSES = ("saved", "merged", "revised", "held", "duplicate", "rejected")


def _rate(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {"tasks": 0}
    seeds = sorted({r["seed"] for r in rows})
    per_seed_success = [mean(r["success"] for r in rows if r["seed"] == s) for s in seeds]
    invocations = sum(r["skill_invocations"] for r in rows)
    fetches = sum(r["fetches"] for r in rows)
    # distinct skills saved (a later trace of the same workflow may save a new version)
    learned = [
        len({r["learn"]["skill"] for r in rows if r["seed"] == s and (r.get("learn") or {}).get("status") == "saved"})
        for s in seeds
    ]
    statuses: dict[str, int] = defaultdict(int)
    for r in rows:
        if r.get("learn"):
            statuses[r["learn"]["status"]] += 1
    return {
        "tasks": n // len(seeds),
        "seeds": len(seeds),
        "success_rate": round(mean(per_seed_success), 4),
        "success_rate_sd": round(pstdev(per_seed_success), 4) if len(seeds) > 1 else 0.0,
        "tool_calls": round(mean(r["tool_calls"] for r in rows), 2),
        "decisions": round(mean(r["decisions"] for r in rows), 2),
        "llm_calls": round(mean(r["llm_calls"] for r in rows), 2),
        "tokens": round(mean(r["tokens"] for r in rows), 1),
        "wall_ms": round(mean(r["wall_ms"] for r in rows), 2),
        "learn_ms": round(mean(r.get("learn_ms", 0.0) for r in rows), 2),
        "learn_tokens": round(mean(r.get("learn_tokens", 0) for r in rows), 1),
        "skills_learned": round(mean(learned), 2),
        "learn_statuses": dict(statuses),
        "skill_invocations": round(invocations / n, 3),
        "skill_success_rate": _rate(sum(r["skill_successes"] for r in rows), invocations),
        "reuse_rate": round(sum(1 for r in rows if r["skill_successes"] > 0) / n, 4),
        "fetches": round(fetches / n, 3),
        "fetch_hit_rate": _rate(sum(r["fetch_hits"] for r in rows), fetches),
    }


def summarize(records: Sequence[dict[str, Any]], conditions: Iterable[str]) -> dict[str, Any]:
    """condition -> phase ('train', 'test', 'all') -> aggregated metrics."""
    out: dict[str, Any] = {}
    for condition in conditions:
        rows = [r for r in records if r["condition"] == condition]
        out[condition] = {phase: _aggregate([r for r in rows if r["phase"] == phase]) for phase in PHASES}
        out[condition]["all"] = _aggregate(rows)
    return out


def skill_quality(
    probes: Sequence[dict[str, Any]],
    libraries: dict[str, Any],
    records: Sequence[dict[str, Any]],
    conditions: Iterable[str],
    train_workflows: int,
) -> dict[str, Any]:
    """condition -> how the library itself does, without an agent (mean over seeds).

    ``skills``: distinct skill names in the library after training; ``skills_per_workflow``:
    that / distinct workflows of the train tasks; ``fetch_at_1``: test tasks whose top fetched
    skill was learned from (or merged with) a train trace of the task's workflow;
    ``fetched_success``: test tasks the top fetched skill solved, run with arguments bound by
    name from the task's params; ``tool_calls``: primitive calls per such run.
    """
    out: dict[str, Any] = {}
    for condition in conditions:
        rows = [p for p in probes if p["condition"] == condition]
        keys = sorted(k for k in libraries if k.startswith(f"{condition}-seed"))
        if not keys:
            continue
        names = [len({s["name"] for s in libraries[k]["skills"]}) for k in keys]
        statuses: dict[str, int] = defaultdict(int)
        for r in records:
            if r["condition"] == condition and r["phase"] == "train" and r.get("learn"):
                statuses[r["learn"]["status"]] += 1
        skills = round(mean(names), 2)
        out[condition] = {
            "seeds": len(keys),
            "skills": skills,
            "train_workflows": train_workflows,
            "skills_per_workflow": round(skills / train_workflows, 3) if train_workflows else None,
            "learn_statuses": {k: round(v / len(keys), 2) for k, v in sorted(statuses.items())},
            "test_tasks": len(rows) // len(keys) if rows else 0,
            "fetch_at_1": _rate(sum(p["right_workflow"] for p in rows), len(rows)),
            "bound": _rate(sum(p["bound"] for p in rows), len(rows)),
            "fetched_success": _rate(sum(p["success"] for p in rows), len(rows)),
            "tool_calls": round(mean(p["tool_calls"] for p in rows if p["bound"]), 2)
            if any(p["bound"] for p in rows) else None,
            "by_workflow": _probes_by_workflow(rows),
        }
    return out


def _probes_by_workflow(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """workflow -> fetch@1 right, fetched skill solves, and the workflows of the wrong skills fetched."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in rows:
        groups[p["workflow"] or p["task_id"]].append(p)
    out = {}
    for workflow, ps in sorted(groups.items()):
        wrong: dict[str, int] = defaultdict(int)
        for p in ps:
            if not p["right_workflow"]:
                wrong["+".join(p["skill_workflows"]) or ("(none)" if p["skill"] is None else "(unknown)")] += 1
        out[workflow] = {
            "tasks": len(ps),
            "fetch_at_1": _rate(sum(p["right_workflow"] for p in ps), len(ps)),
            "fetched_success": _rate(sum(p["success"] for p in ps), len(ps)),
            "wrong_fetches": dict(sorted(wrong.items(), key=lambda kv: -kv[1])),
        }
    return out


def paired(records: Sequence[dict[str, Any]], conditions: Iterable[str], baseline: str = "none") -> dict[str, Any]:
    """condition -> each test task's outcome against ``baseline``'s on the same seed.

    ``made_worse``: solved by the baseline, failed under the condition; ``made_better``: the
    reverse. Empty when the run has no baseline condition.
    """
    conditions = list(conditions)
    if baseline not in conditions:
        return {}
    base = {(r["seed"], r["task_id"]): r["success"] for r in records
            if r["condition"] == baseline and r["phase"] == "test"}
    out: dict[str, Any] = {}
    for condition in conditions:
        if condition == baseline:
            continue
        worse, better, pairs = [], [], 0
        used: dict[str, list[tuple[bool, bool]]] = defaultdict(list)  # skill -> (with, without) per task
        for r in records:
            if r["condition"] != condition or r["phase"] != "test" or (r["seed"], r["task_id"]) not in base:
                continue
            pairs += 1
            before = base[(r["seed"], r["task_id"])]
            if r.get("skills_used"):
                used[r["skills_used"][0]["name"]].append((bool(r["success"]), bool(before)))
            entry = {"seed": r["seed"], "task_id": r["task_id"], "workflow": r["workflow"]}
            if before and not r["success"]:
                worse.append(dict(entry, why=r.get("stopped") or r.get("evidence")))
            elif r["success"] and not before:
                better.append(entry)
        out[condition] = {"baseline": baseline, "pairs": pairs, "made_worse": worse, "made_better": better,
                          "uplift_by_skill": {name: uplift_of(rows) for name, rows in sorted(used.items())}}
    return out


def uplift_of(rows: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """The uplift of one skill over the test tasks it was used on: success with it (this
    condition) and without (the baseline, same task and seed), the difference and its 95%
    Newcombe interval (skill_library.uplift; the interval treats the arms as independent,
    which is conservative for these paired tasks)."""
    from skill_library.uplift import newcombe

    n = len(rows)
    with_, without = sum(w for w, _ in rows), sum(b for _, b in rows)
    d, low, high = newcombe(with_, n, without, n)
    return {"n": n, "with": with_, "without": without, "difference": round(d, 4), "low": round(low, 4),
            "high": round(high, 4)}


def by_workflow(records: Sequence[dict[str, Any]], phase: str = "test") -> dict[str, dict[str, Any]]:
    """workflow -> condition -> {success_rate, decisions, skill_success_rate}."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r["phase"] == phase:
            groups[r["workflow"] or r["task_id"]][r["condition"]].append(r)
    table: dict[str, dict[str, Any]] = {}
    for workflow, per_condition in groups.items():
        table[workflow] = {}
        for condition, rows in per_condition.items():
            invocations = sum(r["skill_invocations"] for r in rows)
            table[workflow][condition] = {
                "success_rate": round(mean(r["success"] for r in rows), 3),
                "decisions": round(mean(r["decisions"] for r in rows), 2),
                "skill_runs": f"{sum(r['skill_successes'] for r in rows)}/{invocations}",
            }
    return table


# -- markdown -----------------------------------------------------------------------------------


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "–"
    if pct:
        return f"{100 * value:.0f}%"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def markdown(results: dict[str, Any], plots: Sequence[str] = ()) -> str:
    """The results as a markdown report: the side-by-side table, then details."""
    cfg = results["config"]
    summary = results["summary"]
    suite = f" ({cfg['suite']} suite)" if cfg.get("suite") else ""
    lines = [
        f"# Benchmark: {cfg['world']} world{suite}, {cfg['agent']} agent",
        "",
        *([f"Command: `{cfg['command']}`", ""] if cfg.get("command") else []),
        f"Conditions: {', '.join(cfg['conditions'])}; skills learned with the "
        f"{cfg.get('generalizer', 'dataflow')} generalizer; seeds: {cfg['seeds']}; "
        f"tasks: {len(results['tasks']['train'])} train, {len(results['tasks']['test'])} test; "
        f"run time {results.get('elapsed_s', 0):.1f} s.",
        "",
        "| condition | phase | success | tool calls/task | decisions/task | LLM calls/task | "
        "tokens/task | wall ms/task | skills learned | skill runs ok | reuse | fetch hits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for condition in cfg["conditions"]:
        for phase in PHASES:
            m = summary[condition][phase]
            if not m.get("tasks"):
                continue
            success = _fmt(m["success_rate"], pct=True)
            if m.get("seeds", 1) > 1:
                success += f" ± {100 * m['success_rate_sd']:.0f}"
            lines.append(
                f"| {condition} | {phase} | {success} | {_fmt(m['tool_calls'])} | "
                f"{_fmt(m['decisions'])} | {_fmt(m['llm_calls'])} | {_fmt(m['tokens'])} | "
                f"{_fmt(m['wall_ms'])} | "
                f"{_fmt(m['skills_learned']) if phase == 'train' and m['learn_statuses'] else '–'} | "
                f"{_fmt(m['skill_success_rate'], pct=True)} | "
                f"{_fmt(m['reuse_rate'], pct=True) if m['fetches'] else '–'} | "
                f"{_fmt(m['fetch_hit_rate'], pct=True)} |"
            )
    lines += [
        "",
        "*decisions* = primitive calls the agent made itself + skill invocations; *tool calls* "
        "count every primitive call, including those inside skills; *skill runs ok* = skill "
        "runs that finished without error; *reuse* = tasks where at least one skill ran "
        "successfully; *fetch hits* = fetches that gave the agent a skill it could use (offline "
        "agents: one whose arguments bound, which then ran; llm agent: any skill shown to the "
        "model). *tokens* are as the model server reported them (0 without usage data). "
        "Success is mean ± sd over seeds.",
    ]
    learn_tokens = {
        c: summary[c]["train"].get("learn_tokens", 0)
        for c in cfg["conditions"]
        if summary[c]["train"].get("tasks")
    }
    if any(learn_tokens.values()):
        lines += ["", "Learning the skills cost model tokens too (LLM generalizer, tokens it reported for "
                  "saved skills; not in the table's tokens/task): "
                  + "; ".join(f"{c}: {v:.0f} per train task" for c, v in learn_tokens.items() if v) + "."]
    quality = results.get("skill_quality") or {}
    if quality:
        lines += ["", "## The library alone on the test tasks", "",
                  "| condition | skills in library | train workflows | skills / workflow | "
                  "fetch@1 right workflow | fetched skill solves | tool calls/run | learn statuses (train) |",
                  "|---|---|---|---|---|---|---|---|"]
        for condition, q in quality.items():
            statuses = ", ".join(f"{k} {_fmt(v)}" for k, v in q["learn_statuses"].items()) or "–"
            lines.append(
                f"| {condition} | {_fmt(q['skills'])} | {q['train_workflows']} | "
                f"{_fmt(q['skills_per_workflow'])} | {_fmt(q['fetch_at_1'], pct=True)} | "
                f"{_fmt(q['fetched_success'], pct=True)} | {_fmt(q['tool_calls'])} | {statuses} |"
            )
        for condition, q in quality.items():
            flows = q.get("by_workflow") or {}
            if not flows or len(flows) > 40:
                continue
            lines += ["", f"{condition}, by test workflow (pooled over seeds):", "",
                      "| workflow | tasks | fetch@1 right workflow | fetched skill solves "
                      "| wrong fetches: workflows of the skill |",
                      "|---|---|---|---|---|"]
            for workflow, w in flows.items():
                wrong = ", ".join(f"{k} ×{v}" for k, v in w["wrong_fetches"].items()) or "–"
                lines.append(f"| {workflow} | {w['tasks']} | {_fmt(w['fetch_at_1'], pct=True)} | "
                             f"{_fmt(w['fetched_success'], pct=True)} | {wrong} |")
        lines += ["", "For every test task: the top skill of `fetch(instruction, k=1)` counts as the "
                  "right workflow when a train trace of the task's workflow was learned into it "
                  "(LearnResult status saved, merged, revised or duplicate); it is then run on a "
                  "fresh world with its parameters bound by name from the task's params and the "
                  "world's verifier judges the result (no agent, no fallback). Mean over seeds."]
    pairs = results.get("paired")
    if pairs is not None and cfg["conditions"]:
        lines += ["", "## Test tasks skills made worse (solved without, failed with; same seed)", ""]
        if not pairs:
            lines.append("Not measured: the run has no `none` condition to pair with.")
        for condition, p in pairs.items():
            worse, better = p["made_worse"], p["made_better"]
            lines.append(f"- {condition} vs {p['baseline']}: **{len(worse)} made worse**, "
                         f"{len(better)} made better, of {p['pairs']} paired test tasks")
            for w in worse[:20]:
                why = _short_text(w.get("why"))
                lines.append(f"  - seed {w['seed']} `{w['task_id']}`" + (f": {why}" if why else ""))
            if len(worse) > 20:
                lines.append(f"  - ... and {len(worse) - 20} more (results.json: made_worse)")
            by_skill = p.get("uplift_by_skill") or {}
            if by_skill:
                lines += ["", f"Uplift per skill, {condition} vs {p['baseline']} (the test tasks it was used on, "
                          "same seed; 95% Newcombe interval):", "",
                          "| skill | tasks | solved with | solved without | uplift (points) |", "|---|---|---|---|---|"]
                for name, u in by_skill.items():
                    lines.append(f"| {name} | {u['n']} | {u['with']} | {u['without']} | {100 * u['difference']:+.1f} "
                                 f"[{100 * u['low']:+.1f}, {100 * u['high']:+.1f}] |")
                lines.append("")
    table = by_workflow(results["records"], "test")
    if table:
        conditions = cfg["conditions"]
        lines += ["", "## Test tasks by workflow", "",
                  "| workflow | " + " | ".join(f"{c}: success, decisions" for c in conditions) + " |",
                  "|---|" + "---|" * len(conditions)]
        for workflow in sorted(table):
            cells = []
            for c in conditions:
                m = table[workflow].get(c)
                if m is None:
                    cells.append("–")
                    continue
                cell = f"{100 * m['success_rate']:.0f}%, {m['decisions']:.1f}"
                if m["skill_runs"] != "0/0":
                    cell += f" (skill runs ok {m['skill_runs']})"
                cells.append(cell)
            lines.append(f"| {workflow} | " + " | ".join(cells) + " |")
    libraries = results.get("libraries") or {}
    if libraries:
        first = sorted(libraries)[0]
        skills = libraries[first]["skills"]
        lines += ["", f"## Skills learned ({first}: {len(skills)})", "",
                  "| skill | when | calls skills | outcomes (ok/fail) |", "|---|---|---|---|"]
        for s in skills:
            deps = ", ".join(s["depends_on"]) or "–"
            lines.append(f"| `{s['name']}` | {s['when']} | {deps} | {s['successes']}/{s['failures']} |")
    failures = [r for r in results["records"] if not r["success"]]
    if failures:
        lines += ["", f"## Failed tasks ({len(failures)})", ""]
        for r in failures[:20]:
            why = r.get("stopped") or r.get("evidence") or ""
            lines.append(f"- {r['condition']} seed {r['seed']} {r['phase']} `{r['task_id']}`: {why}")
        if len(failures) > 20:
            lines.append(f"- ... and {len(failures) - 20} more (see results.json)")
    if results.get("privacy"):
        from benchmarks.privacy import markdown_lines

        lines += ["", "## Privacy", ""] + markdown_lines(results["privacy"])
    if plots:
        lines += ["", "## Plots", ""] + [f"- {p}" for p in plots]
    return "\n".join(lines) + "\n"


def _short_text(value: Any, limit: int = 160) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- plots ----------------------------------------------------------------------------------------


def _curves(records: Sequence[dict[str, Any]], condition: str) -> tuple[list[float], list[float], int]:
    """Mean over seeds of cumulative successes and of decisions, by position; train length."""
    rows = [r for r in records if r["condition"] == condition]
    seeds = sorted({r["seed"] for r in rows})
    n_train = len([r for r in rows if r["seed"] == seeds[0] and r["phase"] == "train"]) if seeds else 0
    sequences = []
    for s in seeds:
        seq = [r for r in rows if r["seed"] == s and r["phase"] == "train"]
        seq += [r for r in rows if r["seed"] == s and r["phase"] == "test"]
        sequences.append(seq)
    length = min((len(s) for s in sequences), default=0)
    cumulative, decisions = [], []
    for i in range(length):
        cumulative.append(mean(sum(r["success"] for r in seq[: i + 1]) for seq in sequences))
        decisions.append(mean(seq[i]["decisions"] for seq in sequences))
    return cumulative, decisions, n_train


def plot(results: dict[str, Any], out: Path) -> list[str]:
    """Write the learning-curve and with/without plots into ``out``; return their paths.

    Needs the ``plot`` extra (matplotlib): :class:`MissingExtraError` names it when absent.
    """
    from skill_library.errors import require_extra

    matplotlib: Any = require_extra("matplotlib", "plot", "plotting benchmark results")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    cfg = results["config"]
    conditions = cfg["conditions"]
    records = results["records"]
    colors = {c: f"C{i}" for i, c in enumerate(conditions)}
    paths = []

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(17, 4.8))
    n_train = 0
    for c in conditions:
        cumulative, decisions, n_train = _curves(records, c)
        x = list(range(1, len(cumulative) + 1))
        ax1.plot(x, cumulative, label=c, color=colors[c], lw=2)
        ax2.plot(x, decisions, label=c, color=colors[c], marker="o", ms=3, lw=1.2)
        total, spent = 0.0, []
        for d in decisions:
            total += d
            spent.append(total)
        ax3.plot(x, spent, label=c, color=colors[c], lw=2)
    for ax in (ax1, ax2, ax3):
        if n_train:
            ax.axvline(n_train + 0.5, color="grey", ls="--", lw=1)
            ax.text(n_train + 0.7, ax.get_ylim()[1] * 0.95, "test →", color="grey", va="top")
        ax.set_xlabel("task (train in order, then test)")
        ax.grid(alpha=0.3)
        ax.legend()
    ax1.set_ylabel("cumulative successes")
    ax1.set_title("Learning curve: cumulative success")
    ax2.set_ylabel("decisions (primitive calls + skill invocations)")
    ax2.set_title("Steps per task")
    ax3.set_ylabel("cumulative decisions")
    ax3.set_title("Cumulative cost")
    fig.suptitle(f"{cfg['world']} / {cfg['agent']} (mean over {cfg['seeds']} seed(s))")
    fig.tight_layout()
    path = out / "learning_curve.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(str(path))

    summary = results["summary"]
    metrics = [("success_rate", "success rate"), ("decisions", "decisions / task"), ("tool_calls", "tool calls / task")]
    fig, axes = plt.subplots(1, len(metrics), figsize=(13, 4.2))
    width = 0.8 / max(1, len(conditions))
    for ax, (key, label) in zip(axes, metrics):
        for i, c in enumerate(conditions):
            values = [summary[c][p].get(key) or 0 for p in PHASES]
            xs = [j + (i - (len(conditions) - 1) / 2) * width for j in range(len(PHASES))]
            bars = ax.bar(xs, values, width, label=c, color=colors[c])
            for bar, value in zip(bars, values):
                text = f"{100 * value:.0f}%" if key == "success_rate" else f"{value:.1f}"
                ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(PHASES)), PHASES)
        ax.set_title(label)
        if key == "success_rate":
            ax.set_ylim(0, 1.1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"{cfg['world']} / {cfg['agent']}: " + " vs ".join(conditions))
    fig.tight_layout()
    path = out / "with_vs_without.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(str(path))
    return paths


def write(results: dict[str, Any], out: Path) -> tuple[str, list[str]]:
    """Write results.json, the plots and results.md into ``out``; return (markdown, plots)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    plots = plot(results, out)
    text = markdown(results, plots)
    (out / "results.md").write_text(text, encoding="utf-8")
    return text, plots
