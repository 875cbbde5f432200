"""``python -m benchmarks``: run benchmark suites and the offline demo.

    python -m benchmarks run --world crafting --agent explorer --conditions none,skills --seeds 3 --out DIR
    python -m benchmarks run --world shop --agent llm --max-test 5 --out DIR   # none,prompt,tools
    python -m benchmarks run --world shop --suite users --agent replay --out DIR
    python -m benchmarks demo [--out demo-output]
    python -m benchmarks users [--out bench-output/users]
        # = run --world shop --suite users --agent replay --agent-opt fit=top --seeds 3
    python -m benchmarks lookalike [--seeds 3] [--out bench-output/lookalike]
        # the helpdesk look-alike suite: right workflow, abstention, no wrong-workflow change
    python -m benchmarks paraphrase [--seeds 3] [--out bench-output/paraphrase]
        # single-trace skills fetched by rewordings that share no content word
    python -m benchmarks misuse [--out bench-output/misuse]
        # misuse inputs must not quarantine a correct skill; a real failure burst must
    python -m benchmarks uplift [--seeds 3] [--sessions 1000] [--out bench-output/uplift]
        # a harmful skill (runs succeed, tasks worse) suppressed by its measured uplift; good ones not
    python -m benchmarks taubench [--data DIR] [--protocol cv|dev|all] [--folds 5] [--fold F] [--limit N]
        # τ-bench retail: learn gold train traces, solve held-out tasks (benchmarks/taubench/)
    python -m benchmarks list

Every run with a library ends with the privacy check (benchmarks/privacy.py): a personal value
of the world in anything the library stores or shows makes the command exit 3.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

for _key, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("ANONYMIZED_TELEMETRY", "False"),
    ("TOKENIZERS_PARALLELISM", "false"),
    ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
    ("TRANSFORMERS_VERBOSITY", "error"),
):
    os.environ.setdefault(_key, _value)

DEMO_SEEDS = 3
USERS_SEEDS = 3
#: the exit code of a run whose privacy check found a personal value
PRIVACY_FAILED = 3


def _run(config, *, progress: bool, console) -> dict[str, Any]:
    from benchmarks import report
    from benchmarks.harness import run_benchmark

    if not progress:
        results = run_benchmark(config)
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (
            TextColumn("[bold]{task.fields[phase]:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            job = bar.add_task("loading", total=None, phase="starting")

            def update(label: str, done: int, total: int) -> None:
                head, _, task_id = label.rpartition(" ")
                bar.update(job, completed=done, total=total, description=task_id, phase=head or label)

            results = run_benchmark(config, progress=update)
    text, plots = report.write(results, Path(config.out))
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    console.print(f"results: {Path(config.out) / 'results.json'}", markup=False)
    console.print(f"report:  {Path(config.out) / 'results.md'}", markup=False)
    for path in plots:
        console.print(f"plot:    {path}", markup=False)
    _print_privacy(results, console)
    return results


def _print_privacy(results: dict[str, Any], console) -> None:
    from benchmarks.privacy import PrivacyReport

    privacy = results.get("privacy")
    if privacy is None:
        return
    report = PrivacyReport(values=privacy["values_checked"], texts=privacy["texts_checked"], leaks=privacy["leaks"],
                           by_place=privacy["by_place"], by_kind=privacy["by_kind"], errors=privacy["errors"])
    from benchmarks.privacy import Leak

    report.kept = [Leak(**leak) for leak in privacy["first_leaks"]]
    for line in report.lines():
        console.print(line, markup=False, soft_wrap=True)


def _suite_progress(console):
    """A progress callback (label, done, total) drawing a rich bar, and the bar to close."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("[bold]{task.fields[phase]:<34}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=False)
    job = bar.add_task("", total=None, phase="starting")

    def update(label: str, done: int, total: int) -> None:
        bar.update(job, completed=done, total=total, phase=label[:34])

    return update, bar


def _suite(args, console, command: str) -> int:
    """The lookalike, paraphrase and misuse subcommands: run, write, print, exit code."""
    import importlib

    suite: Any = importlib.import_module(f"benchmarks.{args.command}")
    if args.command == "lookalike":
        config: Any = suite.LookalikeConfig(seeds=args.seeds, out=args.out, max_train=args.max_train,
                                            max_test=args.max_test, probe=args.probe, command=command)
        run = suite.run_lookalike
    elif args.command == "paraphrase":
        config = suite.ParaphraseConfig(seeds=args.seeds, out=args.out, max_test=args.max_test, command=command)
        run = suite.run_paraphrase
    elif args.command == "uplift":
        config = suite.UpliftConfig(out=args.out, seeds=args.seeds, sessions=args.sessions, command=command)
        run = suite.run_uplift
    else:
        config = suite.MisuseConfig(out=args.out, command=command)
        run = suite.run_misuse
    console.print(f"command: {command}", markup=False, soft_wrap=True)
    start = time.perf_counter()
    if args.no_progress:
        results = run(config)
    else:
        update, bar = _suite_progress(console)
        with bar:
            results = run(config, progress=update)
    text = suite.write(results, Path(args.out))
    console.print(text, markup=False, highlight=False, soft_wrap=True)
    console.print(f"results: {Path(args.out) / 'results.json'}\nreport:  {Path(args.out) / 'results.md'}", markup=False)
    _print_privacy(results, console)
    console.print(f"finished in {time.perf_counter() - start:.1f} s (wall time, {os.cpu_count()} cores): {command}",
                  markup=False, soft_wrap=True)
    return 0 if results["privacy"]["ok"] else PRIVACY_FAILED


def _taubench(args, console, command: str) -> int:
    """The taubench subcommand: check the data folder, run, write, print."""
    from benchmarks import taubench
    from benchmarks.taubench import report

    if args.merge:
        try:
            merged = taubench.merge(args.merge, args.out, command=None)
        except ValueError as exc:
            console.print(f"error: {exc}", markup=False, soft_wrap=True)
            return 2
        console.print(report.table(merged), markup=False, highlight=False, soft_wrap=True)
        console.print(f"wrote {args.out}: merged {len(args.merge)} runs ({command})", markup=False, soft_wrap=True)
        return 0
    try:
        taubench.resolve_data_dir(args.data)
    except taubench.DataError as exc:
        console.print(f"error: {exc}", markup=False, soft_wrap=True)
        return 2
    config = taubench.TauConfig(data=args.data, protocol=args.protocol, folds=args.folds, fold=args.fold,
                                limit=args.limit, k=args.k, out=args.out, command=command,
                                oracle=not args.no_oracle)
    console.print(f"command: {command}", markup=False, soft_wrap=True)
    start = time.perf_counter()
    try:
        if args.no_progress:
            results = taubench.run(config)
        else:
            update, bar = _suite_progress(console)
            with bar:
                results = taubench.run(config, progress=update)
    except (taubench.DataError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False, soft_wrap=True)
        return 2
    console.print(report.table(results), markup=False, highlight=False, soft_wrap=True)
    for name in ("results.json", "results.md", "taubench.png"):
        if (Path(args.out) / name).exists():
            console.print(f"wrote {Path(args.out) / name}", markup=False)
    console.print(f"finished in {time.perf_counter() - start:.1f} s (wall time, {os.cpu_count()} cores): {command}",
                  markup=False, soft_wrap=True)
    return 0


def _options(pairs: list[str]) -> dict[str, Any]:
    import json

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--agent-opt expects KEY=VALUE, got {pair!r}")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


def _conditions_help() -> str:
    """Which conditions apply to which agents (without importing the agents)."""
    from benchmarks.agents import AGENTS, conditions_for
    from benchmarks.harness import CONDITIONS

    groups: dict[tuple[str, ...], list[str]] = {}
    for name in AGENTS:
        groups.setdefault(conditions_for(name), []).append(name)
    applies = "; ".join(f"{', '.join(agents)}: {','.join(conds)}" for conds, agents in groups.items())
    meanings = "; ".join(f"{c} = {CONDITIONS[c].description}" for c in CONDITIONS)
    return f"comma-separated; default: all of the agent's conditions ({applies}). {meanings}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Skill-library benchmark harness")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="replay a task suite under several conditions")
    run.add_argument("--world", required=True, help="a world (see `list`)")
    run.add_argument(
        "--suite", default=None,
        help="a named task suite of the world: benchmarks/tasks/<world>_<suite>.jsonl (e.g. "
        "--world shop --suite users); default: the world's own <world>.jsonl (see `list`)",
    )
    run.add_argument("--agent", required=True, help="an agent (see `list`)")
    run.add_argument("--conditions", default=None, help=_conditions_help())
    run.add_argument(
        "--seeds", type=int, default=1,
        help="how many seeds (0..N-1); seed 0 runs the train tasks in file order, seed s a "
        "random.Random(s) shuffle of them",
    )
    run.add_argument("--out", type=Path, default=Path("bench-output"), help="output folder (default: bench-output)")
    run.add_argument(
        "--min-reliability", type=float, default=0.6,
        help="the libraries' fetch threshold on a skill's reliability (default: 0.6)",
    )
    run.add_argument("--max-train", type=int, default=None, help="only the first N train tasks")
    run.add_argument("--max-test", type=int, default=None, help="only the first N test tasks")
    run.add_argument(
        "--agent-opt", action="append", default=[], metavar="KEY=VALUE",
        help="an option for the agent's constructor (VALUE is read as JSON when it parses)",
    )
    run.add_argument(
        "--generalizer", choices=("dataflow", "llm"), default="dataflow",
        help="how the library learns skills from train traces: dataflow (offline, default) or llm "
        "(the library's LLM generalizer, from OPENAI_BASE_URL / SKILL_LIBRARY_MODEL; its tokens "
        "are reported as learn_tokens)",
    )
    run.add_argument("--no-progress", action="store_true")

    demo = sub.add_parser("demo", help="offline showcase: crafting + explorer, with vs without skills")
    demo.add_argument("--out", type=Path, default=Path("demo-output"))
    demo.add_argument("--seeds", type=int, default=DEMO_SEEDS)
    demo.add_argument("--no-progress", action="store_true")

    users = sub.add_parser(
        "users",
        help="the shop world's users suite with the replay agent (fit=top), none vs skills: "
        f"= run --world shop --suite users --agent replay --agent-opt fit=top --seeds {USERS_SEEDS}",
    )
    users.add_argument("--out", type=Path, default=Path("bench-output/users"))
    users.add_argument("--seeds", type=int, default=USERS_SEEDS)
    users.add_argument("--generalizer", choices=("dataflow", "llm"), default="dataflow")
    users.add_argument("--no-progress", action="store_true")

    lookalike = sub.add_parser(
        "lookalike", help="the helpdesk look-alike suite: learn its tickets, then act on held-out and "
        "out-of-scope tickets the way an agent that trusts fetch would (benchmarks/lookalike.py)")
    lookalike.add_argument("--out", type=Path, default=Path("bench-output/lookalike"))
    lookalike.add_argument("--seeds", type=int, default=3)
    lookalike.add_argument("--max-train", type=int, default=None, help="only the first N train tickets")
    lookalike.add_argument("--max-test", type=int, default=None,
                           help="only the first N in-scope and N out-of-scope test tickets")
    lookalike.add_argument("--probe", action="store_true",
                           help="the agent gives fetch the ticket's values and the read-only tools: the top "
                           "candidates' preconditions are checked (fetch(read_tools=...))")
    lookalike.add_argument("--no-progress", action="store_true")
    paraphrase = sub.add_parser(
        "paraphrase", help="single-trace skills (30+ workflows) fetched by rewordings that share no content "
        "word with their trace (benchmarks/paraphrase.py)")
    paraphrase.add_argument("--out", type=Path, default=Path("bench-output/paraphrase"))
    paraphrase.add_argument("--seeds", type=int, default=3)
    paraphrase.add_argument("--max-test", type=int, default=None, help="only the first N queries")
    paraphrase.add_argument("--no-progress", action="store_true")
    misuse = sub.add_parser(
        "misuse", help="misuse inputs (typos, wrong ids) must not quarantine a correct skill; its own "
        "state-changing call breaking must (benchmarks/misuse.py)")
    misuse.add_argument("--out", type=Path, default=Path("bench-output/misuse"))
    misuse.add_argument("--no-progress", action="store_true")
    uplift = sub.add_parser(
        "uplift", help="a world with one harmful skill (its runs succeed, its tasks succeed 80%% vs 98%% "
        "without it): suppressed by its uplift at a 5%% holdout, the good ones not (benchmarks/uplift.py)")
    uplift.add_argument("--out", type=Path, default=Path("bench-output/uplift"))
    uplift.add_argument("--seeds", type=int, default=3)
    uplift.add_argument("--sessions", type=int, default=1000, help="sessions of each workflow")
    uplift.add_argument("--no-progress", action="store_true")

    tau = sub.add_parser(
        "taubench", help="τ-bench retail: learn the gold train traces, fetch and run skills on held-out tasks "
        "(cross-validation on train, and dev) (benchmarks/taubench/)")
    tau.add_argument("--data", type=Path, default=None,
                     help="the τ-bench retail data folder (default: ../shared/benchmarks/taubench-retail from "
                     "the project root, when present)")
    tau.add_argument("--protocol", choices=("cv", "dev", "all"), default="cv")
    tau.add_argument("--folds", type=int, default=5)
    tau.add_argument("--fold", type=int, default=None, help="only this cross-validation fold")
    tau.add_argument("--limit", type=int, default=None, help="only the first N train tasks")
    tau.add_argument("--k", type=int, default=3, help="attempts per task (fetch k)")
    tau.add_argument("--no-oracle", action="store_true", help="skip the oracle runs (no miss classification)")
    tau.add_argument("--out", type=Path, default=Path("benchmarks/results/taubench"))
    tau.add_argument("--merge", type=Path, nargs="+", default=None, metavar="RESULTS_JSON",
                     help="instead of running: merge the cv results.json of separate runs (e.g. one --fold each) "
                     "into --out")
    tau.add_argument("--no-progress", action="store_true")

    sub.add_parser("list", help="worlds, suites, agents and task counts")

    args = parser.parse_args(argv)
    from rich.console import Console

    console = Console(stderr=False)
    if args.command == "list":
        from benchmarks.agents import AGENTS, conditions_for
        from benchmarks.harness import suite_path, suites
        from benchmarks.worlds import load_tasks, world_names

        for name in world_names():
            for suite in suites(name):
                tasks = load_tasks(name, path=suite_path(name, suite))
                train = sum(1 for t in tasks if t.split == "train")
                label = f"world {name}" + (f" --suite {suite}" if suite else "")
                console.print(f"{label}: {len(tasks)} tasks ({train} train, {len(tasks) - train} test)", markup=False)
        for name in AGENTS:
            console.print(f"agent {name}: conditions {', '.join(conditions_for(name))}", markup=False)
        return 0

    if args.command == "taubench":
        return _taubench(args, console, "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv))

    if args.command in ("lookalike", "paraphrase", "misuse", "uplift"):
        command = "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
        try:
            return _suite(args, console, command)
        except (KeyError, ValueError) as exc:
            console.print(f"error: {exc}", markup=False)
            return 2

    from benchmarks.harness import RunConfig

    if args.command == "demo":
        config = RunConfig(world="crafting", agent="explorer", conditions=["none", "skills"],
                           seeds=args.seeds, out=args.out)
        console.print(
            "Demo: the crafting suite with the offline explorer agent, without and with a skill "
            f"library ({args.seeds} seed(s)). Output in {args.out}/", markup=False, soft_wrap=True
        )
    elif args.command == "users":
        config = RunConfig(world="shop", suite="users", agent="replay", conditions=["none", "skills"],
                           seeds=args.seeds, out=args.out, agent_options={"fit": "top"},
                           generalizer=args.generalizer)
        console.print(
            "The shop world's users suite (customer messages; unseen customers and phrasings at "
            "test) with the replay agent trusting fetch@1 (fit=top), without and with a skill "
            f"library ({args.seeds} seed(s)). Output in {args.out}/", markup=False, soft_wrap=True
        )
    else:
        config = RunConfig(
            world=args.world,
            suite=args.suite,
            agent=args.agent,
            conditions=None if args.conditions is None
            else [c.strip() for c in args.conditions.split(",") if c.strip()],
            seeds=args.seeds,
            out=args.out,
            min_reliability=args.min_reliability,
            max_train=args.max_train,
            max_test=args.max_test,
            agent_options=_options(args.agent_opt),
            generalizer=args.generalizer,
        )
    config.command = "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
    console.print(f"command: {config.command}", markup=False, soft_wrap=True)
    start = time.perf_counter()
    try:
        results = _run(config, progress=not args.no_progress, console=console)
    except (KeyError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False)
        return 2
    console.print(f"finished in {time.perf_counter() - start:.1f} s (wall time, {os.cpu_count()} cores): "
                  f"{config.command}", markup=False, soft_wrap=True)
    leaked = isinstance(results, dict) and not results.get("privacy", {"ok": True})["ok"]
    return PRIVACY_FAILED if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
