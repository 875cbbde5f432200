"""Commands of the learning loop: learn, fetch, run, feedback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from skill_library.cli._common import (
    EXIT_REFUSED,
    EXIT_RUN_FAILED,
    CpuSecondsOption,
    CreateOption,
    DirOption,
    JsonOption,
    MaxToolCallsOption,
    MemoryMbOption,
    WallSecondsOption,
    command,
    console,
    deployment,
    emit,
    fail,
    json_value,
    limits_from,
    load_tools,
    open_library,
    run_json,
    short,
    skill_json,
    split_names,
    styled,
)
from skill_library.cli.quick import fetch_message, print_fetched

if TYPE_CHECKING:
    from skill_library.library import GeneralizerName

#: the session (and cohort) a command acts in: a canary serves a share of sessions, and
#: fetch, run and feedback given one session use the same version (governance.canary)
SessionOption = typer.Option(None, "--session", help="Session id: canaries route by it; run/feedback keep its version.")
CohortOption = typer.Option(None, "--cohort", help="A named cohort (a canary may serve it).")

LEARN_HELP = """Learn a skill from a verified trace: SkillLibrary.learn(trace).

TRACE_FILE is JSON in one of three forms:

\b
1. A trace: {"task": "reserve 3 apple", "params": {"item": "apple", "quantity": 3},
   "calls": [{"name": "reserve", "arguments": {...}, "result": ...}, ...],
   "result": ..., "outcome": {"success": true, "verifier": "stock-audit"}}
2. An OpenAI transcript with its verdict: {"task": ..., "params": {...},
   "outcome": {"success": true, "verifier": ...}, "messages": [...]}
3. A plain OpenAI messages array [...], with --task and --verifier (and --params).

Several files, or a .jsonl file of one trace (form 1 or 2) a line, are learned together
with SkillLibrary.learn_many (batched embedding, a progress bar).

Only verified successes are learned (outcome.success with a named verifier). Learning is
offline (the dataflow generalizer) unless --llm is given.
"""


def _trace_input(data: Any, task: str | None, verifier: str | None, params: str | None) -> Any:
    """The learn() input from the file's JSON and the options that complete a transcript."""
    if isinstance(data, list):
        if task is None or verifier is None:
            fail("a plain messages array needs --task and --verifier (who judged it a success)")
        data = {"messages": data}
    if not isinstance(data, dict):
        fail("the trace file must hold a JSON object (a trace or a transcript) or a messages array")
    if task is not None:
        data["task"] = task
    if verifier is not None:
        data["outcome"] = {"success": True, "verifier": verifier}
    if params is not None:
        parsed = json_value(params, "--params")
        if not isinstance(parsed, dict):
            fail("--params must be a JSON object")
        data["params"] = parsed
    return data


def _print_result(result: Any, prefix: str = "") -> None:
    """One line for what learn did with one trace."""
    if result.status in ("saved", "merged", "revised") and result.skill is not None:
        console.print(
            styled(prefix + f"{result.status} ", (result.skill.name, "bold"),
                   f" v{result.skill.version}: {result.skill.when}"),
            highlight=False,
        )
    else:
        why = "; ".join(result.reasons or [str(result.duplicate_of)])
        console.print(styled(prefix, (result.status, "yellow"), f": {short(why, 500)}"), highlight=False)


def held_hint(results: list[Any]) -> str | None:
    """For the versions learning held for review: which they are, and the commands that
    approve and promote them (a draft: the evaluation it needs first); None: none held."""
    held = [r.skill for r in results if r.status == "held" and r.skill is not None]
    ready = list(dict.fromkeys((s.name, s.version) for s in held if s.status == "evaluated"))
    drafts = list(dict.fromkeys((s.name, s.version) for s in held if s.status != "evaluated"))
    parts = []
    if ready:
        names = " ".join(f"{n} {v}" for n, v in ready)
        parts.append(f"held for review: {', '.join(f'{n} v{v}' for n, v in ready)}; approve with "
                     f"`skills approve {names}` (or `skills approve --held`), then "
                     f"`skills promote {' '.join(dict.fromkeys(n for n, _ in ready))}`")
    if drafts:
        parts.append(f"held as drafts: {', '.join(f'{n} v{v}' for n, v in drafts)}; each needs an "
                     "evaluation first (`skills evaluate NAME VERSION --suite FILE --world MODULE:NAME`)")
    return "; ".join(parts) or None


def _jsonl(path: Path) -> list[tuple[int, Any]]:
    """The traces of a ``.jsonl`` file with their line numbers, one JSON object a line
    (blank lines skipped)."""
    items = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            fail(f"{path} line {number} is not JSON: {exc.msg} at column {exc.colno}")
    return items


@command
def learn(
    trace_files: list[Path] = typer.Argument(
        ..., exists=True, dir_okay=False, help="The trace(s) as JSON, or .jsonl files (see above)."
    ),
    task: Optional[str] = typer.Option(None, "--task", help="The task a messages array solved."),
    verifier: Optional[str] = typer.Option(
        None, "--verifier", help="Who verified the success (marks the trace verified)."
    ),
    params: Optional[str] = typer.Option(
        None, "--params", help="The task's parameters as a JSON object (or @file.json)."
    ),
    llm: bool = typer.Option(False, "--llm", help="Use the LLM generalizer (OPENAI_* settings)."),
    max_tool_calls: Optional[int] = MaxToolCallsOption,
    cpu_seconds: Optional[float] = CpuSecondsOption,
    wall_seconds: Optional[float] = WallSecondsOption,
    memory_mb: Optional[int] = MemoryMbOption,
    create: bool = CreateOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Learn a skill from a verified trace: SkillLibrary.learn(trace), or learn_many(traces)."""
    items: list[Any] = []
    labels: list[str] = []  # where each trace came from: the file, or file:line of a .jsonl
    for path in trace_files:
        if path.suffix == ".jsonl":
            if task is not None or verifier is not None:
                fail("--task and --verifier complete one messages array, not a .jsonl file")
            for number, item in _jsonl(path):
                items.append(item)
                labels.append(f"{path}:{number}")
        else:
            items.append(_trace_input(json_value(f"@{path}", str(path)), task, verifier, params))
            labels.append(str(path))
    limits = limits_from(max_tool_calls, cpu_seconds, wall_seconds, memory_mb)
    generalizer: GeneralizerName = "llm" if llm else "dataflow"
    if len(items) != 1 or trace_files[0].suffix == ".jsonl":
        with open_library(directory, create=create) as lib:
            results = lib.learn_many(items, generalizer=generalizer, limits=limits, progress=not as_json)
        if as_json:
            emit([r.model_dump(mode="json") for r in results])
        else:
            counts: dict[str, int] = {}
            for label, r in zip(labels, results):
                counts[r.status] = counts.get(r.status, 0) + 1
                _print_result(r, prefix=f"{label}: ")
            skills = sorted({r.skill.name for r in results if r.skill is not None})
            again = sum(1 for r in results if r.status == "duplicate" and any("learned before" in x for x in r.reasons))
            console.print(f"{len(results)} trace(s): " + ", ".join(
                f"{n} {s}" + (f" ({again} learned before: nothing added)" if s == "duplicate" and again else "")
                for s, n in sorted(counts.items())) + f"; skills: {', '.join(skills) or 'none'}", highlight=False)
            hint = held_hint(results)
            if hint:
                console.print(hint, highlight=False, soft_wrap=True)
        if results and all(r.status == "rejected" for r in results):
            raise typer.Exit(EXIT_REFUSED)
        return
    with open_library(directory, create=create) as lib:
        result = lib.learn(items[0], generalizer=generalizer, limits=limits)
    if as_json:
        emit(result.model_dump(mode="json"))
    else:
        _print_result(result)
        hint = held_hint([result])
        if hint:
            console.print(hint, highlight=False, soft_wrap=True)
    if result.status == "rejected":
        raise typer.Exit(EXIT_REFUSED)


@command
def plan(
    task: str,
    k: int = typer.Option(3, "-k", min=1, help="Matches read per part of the task."),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="Comma-separated tools the agent has: only skills needing no others."
    ),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Plan a compound task: SkillLibrary.plan(task) -> the skills in order, each with its part."""
    if not task.strip():
        fail("plan needs a task: pass a non-empty TASK")
    with open_library(directory) as lib:
        result = lib.plan(task, k=k, tools=split_names(tools) if tools is not None else None)
    if as_json:
        emit({"task": result.task, "uncovered": result.uncovered,
              "steps": [{"name": s.name, "version": s.version, "part": s.part, "params": s.params,
                         "similarity": round(s.similarity, 4)} for s in result.steps]})
        return
    if not result.steps:
        console.print("no skill covers any part of the task")
        return
    from skill_library.planning import describe as plan_lines

    for line in plan_lines(result):
        console.print(line, markup=False)


@command
def fetch(
    task: str,
    k: int = typer.Option(2, "-k", min=1, help="How many skills at most."),
    min_reliability: Optional[float] = typer.Option(
        None, min=0.0, max=1.0, help="Override the reliability threshold."
    ),
    min_similarity: Optional[float] = typer.Option(
        None, min=-1.0, max=1.0, help="Override the similarity floor (-1: none)."
    ),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="Comma-separated tools the agent has: only skills needing no others."
    ),
    subject: Optional[str] = typer.Option(None, "--subject", help="Whose usage pattern may prefetch a skill."),
    state: Optional[str] = typer.Option(None, "--state", help="The subject's current state or last skill."),
    session: Optional[str] = SessionOption,
    cohort: Optional[str] = CohortOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Fetch skills for a task: SkillLibrary.fetch(task, k, subject=..., state=...).

    Asked first of a `skills serve` process of the same library (skill_library.served),
    else done here."""
    from skill_library.cli.serve import served_key
    from skill_library.served import request

    message = fetch_message(task, k, tenant=deployment.get("tenant"), min_reliability=min_reliability,
                            min_similarity=min_similarity, tools=split_names(tools) if tools is not None else None,
                            subject=subject, state=state, session=session, cohort=cohort)
    path, message["deployment"] = served_key(directory)
    answer = request(path, message)
    if answer is not None and not answer.get("ok") and not answer.get("wrong_library"):
        fail(str(answer.get("error")))
    if answer is None or not answer.get("ok"):
        from skill_library.served import fetch_answer

        with open_library(directory) as lib:
            answer = fetch_answer(lib, message)
    print_fetched(answer, as_json)


@command
def feedback(
    name: str,
    success: Optional[bool] = typer.Option(None, "--success/--failure", help="The outcome to record."),
    kind: Optional[str] = typer.Option(
        None, "--kind", help="An outcome kind instead: success, failure, misuse, not_applicable."
    ),
    wrong_skill: bool = typer.Option(
        False, "--wrong-skill", help="The agent fetched the wrong skill: counted against retrieval."
    ),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why (one line, kept with the outcome)."),
    version: Optional[int] = typer.Option(None, help="Version (default: active)."),
    trace_id: Optional[str] = typer.Option(None, help="Trace that produced the outcome (`run` prints it)."),
    session: Optional[str] = SessionOption,
    cohort: Optional[str] = CohortOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Record an outcome: SkillLibrary.feedback(name, succeeded or kind, wrong_skill=)."""
    if success is None and kind is None and not wrong_skill:
        fail("say what happened: --success, --failure, --kind KIND or --wrong-skill")
    if success is not None and kind is not None:
        fail("give --success/--failure or --kind, not both")
    outcome: bool | str = bool(success)
    if kind is not None:
        from skill_library.models import OutcomeKind

        try:
            outcome = OutcomeKind.of(kind).value
        except ValueError as exc:
            fail(str(exc))
    with open_library(directory) as lib:
        skill = lib.feedback(name, outcome, version=version, trace_id=trace_id, session=session, cohort=cohort,
                             wrong_skill=wrong_skill, reason=reason)
    if as_json:
        emit(skill_json(skill))
    else:
        console.print(
            f"{skill.name} v{skill.version}: reliability {skill.reliability:.3f} "
            f"({skill.successes} ok / {skill.failures} failed)"
        )


@command
def run(
    name: str,
    args: str = typer.Option(
        "{}", "--args", help="Arguments as a JSON object, or @file.json to read them from a file."
    ),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="A .py file, or a module name, with the tools (TOOLS dict or functions)."
    ),
    record: bool = typer.Option(
        True, "--record/--no-record", help="Store the trace and a failure (default) or nothing."
    ),
    max_tool_calls: Optional[int] = MaxToolCallsOption,
    cpu_seconds: Optional[float] = CpuSecondsOption,
    wall_seconds: Optional[float] = WallSecondsOption,
    memory_mb: Optional[int] = MemoryMbOption,
    version: Optional[int] = typer.Option(
        None, "--version", help="Version to run (default: the session's, else the active one)."
    ),
    session: Optional[str] = SessionOption,
    cohort: Optional[str] = CohortOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Run a skill in the sandbox: SkillLibrary.run(name, args, tools, limits=, record=).

    Prints the trace id, for `skills feedback NAME --trace-id ID`. A missing tool or
    arguments that do not fit the skill's parameters are an error before the run, and
    record nothing.
    """
    parsed = json_value(args, "--args")
    if not isinstance(parsed, dict):
        fail("--args must be a JSON object")
    tool_map = load_tools(tools) if tools else {}
    limits = limits_from(max_tool_calls, cpu_seconds, wall_seconds, memory_mb)
    from sandbox import Sandbox

    # started first, so its worker boots while the library's records open (docs/cli.md#speed)
    with Sandbox(workers=1) as box, open_library(directory, sandbox=box) as lib:
        result = lib.run(name, parsed, tool_map, limits=limits, record=record, version=version,
                         session=session, cohort=cohort)
    if as_json:
        emit(run_json(result))
    elif result.ok:
        console.print(
            f"ok in {result.duration_ms:.1f} ms, {len(result.trace.calls)} tool call(s); "
            + (f"trace {result.trace.id}" if record else "not recorded"),
            highlight=False,
        )
        typer.echo(json.dumps(result.value, default=str))
    else:
        limit = f" (hit the {result.limit} limit)" if result.limit else ""
        console.print(
            styled(("failed", "red"), f"{limit}: {short(str(result.error), 500)}; "
                   + (f"trace {result.trace.id}" if record else "not recorded")),
            highlight=False,
        )
    if not result.ok:
        raise typer.Exit(EXIT_RUN_FAILED)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command(help=LEARN_HELP)(learn)
    for function in (fetch, run, feedback):
        app.command()(function)
