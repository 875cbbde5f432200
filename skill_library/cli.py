"""The ``skills`` command line: each command is a thin mirror of one SkillLibrary call.

The library folder comes from ``--dir`` or ``SKILLS_DIR`` (default ``./.skills``). Every
read command takes ``--json`` for machine-readable output.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from skill_library.errors import SkillLibraryError
from skill_library.models import Skill

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Procedural memory for agents: learn, store, fetch and run verified skills.",
)
console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # one-line errors, never wrapped

DirOption = typer.Option(
    None, "--dir", envvar="SKILLS_DIR", help="Library folder (default: ./.skills)."
)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")


def _open(directory: Optional[Path]) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from skill_library.library import SkillLibrary

    return SkillLibrary(directory or Path(".skills"))


def _emit(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


def _fail(message: str, code: int = 1) -> None:
    err_console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def _skill_json(skill: Skill) -> dict[str, Any]:
    data = skill.model_dump(mode="json")
    data["reliability"] = skill.reliability
    return data


def _guard(action: Callable[[], Any]) -> Any:
    """Run ``action``; library errors become a one-line message and exit code 1."""
    try:
        return action()
    except (SkillLibraryError, KeyError, ValueError) as exc:
        _fail(str(exc))


@app.command()
def init(directory: Optional[Path] = DirOption) -> None:
    """Create an empty library folder (SkillLibrary(path))."""
    lib = _open(directory)
    console.print(f"library ready in [bold]{lib.path}[/bold]")
    lib.close()


@app.command()
def add(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A .py file with one function."),
    when: str = typer.Option(..., "--when", help="When to use this skill (the text that is embedded)."),
    verified: bool = typer.Option(False, "--verified", help="Count one verified success."),
    tools: str = typer.Option("", "--tools", help="Comma-separated tool names the skill may call."),
    depends_on: str = typer.Option("", "--depends-on", help="Comma-separated skill names it calls."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a hand-written skill: SkillLibrary.add(Skill.from_function(...))."""
    code = file.read_text()
    split = lambda text: [t.strip() for t in text.split(",") if t.strip()]  # noqa: E731
    skill = _guard(
        lambda: Skill.from_function(code, when=when, tools=split(tools), depends_on=split(depends_on))
    )
    lib = _open(directory)
    try:
        result = _guard(lambda: lib.add(skill, verified=verified))
    finally:
        lib.close()
    if as_json:
        _emit(result.model_dump(mode="json"))
    elif result.added:
        console.print(f"added [bold]{result.skill.name}[/bold] v{result.skill.version}")
    else:
        console.print(
            f"[yellow]not added:[/yellow] duplicate of [bold]{result.duplicate_of}[/bold] "
            f"(similarity {result.similarity:.3f})"
        )
    if not result.added:
        raise typer.Exit(3)


@app.command("list")
def list_(
    status: Optional[str] = typer.Option(None, help="Only skills with this status."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """List every skill's current version: SkillLibrary.list()."""
    lib = _open(directory)
    try:
        skills = lib.list(status=status)
    finally:
        lib.close()
    if as_json:
        _emit([_skill_json(s) for s in skills])
        return
    table = Table("name", "version", "kind", "status", "reliability", "ok/fail", "when")
    for s in skills:
        table.add_row(
            s.name, str(s.version), s.kind, s.status, f"{s.reliability:.2f}",
            f"{s.successes}/{s.failures}", s.when,
        )
    console.print(table)


@app.command()
def show(
    name: str,
    version: Optional[int] = typer.Option(None, help="A specific version."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one skill: SkillLibrary.get(name, version)."""
    lib = _open(directory)
    try:
        skill = _guard(lambda: lib.get(name, version))
    finally:
        lib.close()
    if as_json:
        _emit(_skill_json(skill))
        return
    console.print(f"[bold]{skill.name}[/bold] v{skill.version} ({skill.kind}, {skill.status})")
    console.print(f"when: {skill.when}")
    console.print(
        f"reliability {skill.reliability:.3f} ({skill.successes} ok / {skill.failures} failed)"
    )
    console.print(f"tools: {', '.join(skill.tools) or '-'}; depends on: {', '.join(skill.depends_on) or '-'}")
    console.print(skill.code or skill.description, markup=False, highlight=False)


@app.command()
def fetch(
    task: str,
    k: int = typer.Option(2, "-k", help="How many skills at most."),
    min_reliability: Optional[float] = typer.Option(None, help="Override the threshold."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Fetch skills for a task: SkillLibrary.fetch(task, k)."""
    lib = _open(directory)
    try:
        matches = _guard(lambda: lib.fetch(task, k, min_reliability=min_reliability))
    finally:
        lib.close()
    if as_json:
        _emit(
            [
                {
                    "name": m.skill.name,
                    "version": m.skill.version,
                    "similarity": m.similarity,
                    "reliability": m.reliability,
                    "score": m.score,
                    "when": m.skill.when,
                    "parameters": m.skill.parameters,
                }
                for m in matches
            ]
        )
        return
    table = Table("name", "version", "similarity", "reliability", "when")
    for m in matches:
        table.add_row(
            m.skill.name, str(m.skill.version), f"{m.similarity:.3f}", f"{m.reliability:.2f}",
            m.skill.when,
        )
    console.print(table if matches else "no skill qualifies")


@app.command()
def feedback(
    name: str,
    success: bool = typer.Option(..., "--success/--failure", help="The outcome to record."),
    version: Optional[int] = typer.Option(None, help="Version (default: active)."),
    trace_id: Optional[str] = typer.Option(None, help="Trace that produced the outcome."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Record an outcome: SkillLibrary.feedback(name, succeeded)."""
    lib = _open(directory)
    try:
        skill = _guard(lambda: lib.feedback(name, success, version=version, trace_id=trace_id))
    finally:
        lib.close()
    if as_json:
        _emit(_skill_json(skill))
    else:
        console.print(
            f"{skill.name} v{skill.version}: reliability {skill.reliability:.3f} "
            f"({skill.successes} ok / {skill.failures} failed)"
        )


@app.command()
def history(name: str, directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Every version of a skill with its counts: SkillLibrary.history(name)."""
    lib = _open(directory)
    try:
        versions = _guard(lambda: lib.history(name))
    finally:
        lib.close()
    if as_json:
        _emit([_skill_json(s) for s in versions])
        return
    table = Table("version", "status", "reliability", "ok/fail", "generalizer", "created")
    for s in versions:
        table.add_row(
            str(s.version), s.status, f"{s.reliability:.2f}", f"{s.successes}/{s.failures}",
            s.provenance.generalizer, s.provenance.created_at.isoformat(timespec="seconds"),
        )
    console.print(table)


@app.command()
def retire(name: str, directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Retire a skill so it is never fetched: SkillLibrary.retire(name)."""
    lib = _open(directory)
    try:
        skill = _guard(lambda: lib.retire(name))
    finally:
        lib.close()
    if as_json:
        _emit(_skill_json(skill))
    else:
        console.print(f"retired {skill.name} v{skill.version}")


@app.command()
def reindex(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Rebuild the vector index from the records: SkillLibrary.reindex()."""
    lib = _open(directory)
    try:
        count = lib.reindex(progress=not as_json)
    finally:
        lib.close()
    if as_json:
        _emit({"indexed": count})
    else:
        console.print(f"indexed {count} skill(s)")


@app.command()
def learn(
    trace_file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A trace as JSON."),
    llm: bool = typer.Option(False, "--llm", help="Use the LLM generalizer (OPENAI_* settings)."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Learn a skill from a verified trace: SkillLibrary.learn(trace)."""
    try:
        data = json.loads(trace_file.read_text())
    except json.JSONDecodeError as exc:
        _fail(f"{trace_file} is not JSON: {exc}")
    from skill_library.induction import coerce_trace

    trace, problems = coerce_trace(data)  # trace fields, or an OpenAI transcript with task
    if trace is None:
        _fail(f"{trace_file} is not a valid trace: {'; '.join(problems)}")
    lib = _open(directory)
    try:
        generalizer = None
        if llm:
            from skill_library.induction import LLMGeneralizer

            generalizer = _guard(lambda: LLMGeneralizer())
        result = _guard(lambda: lib.learn(trace, generalizer=generalizer))
    finally:
        lib.close()
    if as_json:
        _emit(result.model_dump(mode="json"))
    elif result.status == "saved":
        console.print(f"saved [bold]{result.skill.name}[/bold] v{result.skill.version}: {result.skill.when}")
    else:
        console.print(f"[yellow]{result.status}[/yellow]: " + "; ".join(result.reasons or [str(result.duplicate_of)]))
    if result.status == "rejected":
        raise typer.Exit(3)


def load_tools(spec: str) -> dict[str, Callable[..., Any]]:
    """Tools from a module name or .py path: its ``TOOLS`` dict, else its public functions.

    A module that cannot be found or fails to import is a ValueError naming it.
    """
    try:
        if spec.endswith(".py") or os.sep in spec:
            path = Path(spec)
            if not path.is_file():
                raise ValueError(f"cannot load tools from {spec}: no such file")
            module_spec = importlib.util.spec_from_file_location(path.stem, path)
            if module_spec is None or module_spec.loader is None:
                raise ValueError(f"cannot load tools from {spec}")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except ValueError:
        raise
    except Exception as exc:  # the tools module is the user's code: any import failure
        raise ValueError(f"cannot load tools from {spec}: {type(exc).__name__}: {exc}") from None
    tools = getattr(module, "TOOLS", None)
    if isinstance(tools, dict):
        return dict(tools)
    return {
        name: obj
        for name, obj in vars(module).items()
        if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__
    }


@app.command()
def run(
    name: str,
    args: str = typer.Option("{}", "--args", help="Arguments as a JSON object."),
    tools: Optional[str] = typer.Option(None, "--tools", help="Module (or .py file) with the tools."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Run a skill in the sandbox: SkillLibrary.run(name, args, tools)."""
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as exc:
        _fail(f"--args is not JSON: {exc}")
    if not isinstance(parsed, dict):
        _fail("--args must be a JSON object")
    tool_map = _guard(lambda: load_tools(tools)) if tools else {}
    lib = _open(directory)
    try:
        result = _guard(lambda: lib.run(name, parsed, tool_map))
    finally:
        lib.close()
    if as_json:
        _emit(result.model_dump(mode="json"))
    elif result.ok:
        console.print(f"ok in {result.duration_ms:.1f} ms, {len(result.trace.calls)} tool call(s)")
        console.print(json.dumps(result.value, default=str), markup=False, highlight=False)
    else:
        console.print(f"[red]failed[/red]: {result.error}", markup=True)
    if not result.ok:
        raise typer.Exit(4)


from skill_library.integrations.cli import app as _integrations_app  # noqa: E402

app.registered_commands += _integrations_app.registered_commands  # serve-mcp, export, import


def main() -> None:
    """Console-script entry point."""
    sys.path.insert(0, os.getcwd())  # so `--tools mymodule` finds modules in the cwd
    app()


if __name__ == "__main__":
    main()
