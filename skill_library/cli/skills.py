"""Commands on stored skills and their evidence: add, list, show, stats, history, retire,
outcomes, traces."""

from __future__ import annotations

import enum
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.table import Table

from skill_library.cli._common import (
    EXIT_REFUSED,
    SKILL_STATUSES,
    ActorOption,
    CreateOption,
    DirOption,
    JsonOption,
    command,
    console,
    emit,
    fail,
    open_library,
    outcome_json,
    short,
    skill_json,
    split_names,
    styled,
    trace_json,
)
from skill_library.cli.light import read as light_read
from skill_library.reliability import laplace_reliability

if TYPE_CHECKING:
    from skill_library.storage.light_reads import FolderReader

#: the statuses `list --status` accepts: exactly the records' own
StatusChoice = enum.Enum(  # type: ignore[misc]
    "StatusChoice", {s: s for s in SKILL_STATUSES}, type=str
)

#: characters of a trace's task shown in the `traces` table (the name is never cut)
TASK_COLUMN_CHARS = 60


def _table(*columns: str, names: list[str]) -> Table:
    """A table whose first column (names) is never cut or wrapped; later ones wrap."""
    table = Table(show_lines=False)
    width = max([len(columns[0]), *(len(n) for n in names)])
    table.add_column(columns[0], no_wrap=True, min_width=width, overflow="ignore")
    for title in columns[1:]:
        table.add_column(title, overflow="fold")
    return table


def _print_table(table: Table) -> None:
    # wide enough that the name column is never cut: on a terminal rich wraps the rest
    needed = sum(c.min_width or 0 for c in table.columns) + 3 * len(table.columns) + 40
    console.print(table, width=max(console.width, needed) if not console.is_terminal else None)


@command
def add(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A .py file with the function."),
    when: str = typer.Option(..., "--when", help="When to use this skill (the text that is embedded)."),
    name: Optional[str] = typer.Option(
        None, "--name", help="The function to add, when the file defines several."
    ),
    verified: bool = typer.Option(
        False, "--verified", help="Count one verified success; needs --trace (the evidence)."),
    trace_id: Optional[str] = typer.Option(
        None, "--trace", help="The stored trace (id) a verifier judged a success that proves the skill."),
    tools: Optional[str] = typer.Option(
        None,
        "--tools",
        help="Comma-separated tool names the skill may call (default: the names its code "
        "calls but does not define or import).",
    ),
    depends_on: str = typer.Option("", "--depends-on", help="Comma-separated skill names it calls."),
    create: bool = CreateOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a hand-written skill: SkillLibrary.add(Skill.from_function(...)).

    The code is checked against the sandbox policy now (an `import os` is refused here,
    not at its first run).
    """
    from pydantic import ValidationError

    from skill_library.models import Skill

    code = file.read_text()
    try:
        skill = Skill.from_function(
            code,
            when=when,
            name=name,
            infer_tools=True,
            tools=split_names(tools) if tools is not None else None,
            depends_on=split_names(depends_on),
        )
    except ValidationError:
        raise  # the error mapper prints it as one line
    except ValueError as exc:  # from_function's own message (which function to add)
        fail(str(exc))
    if verified and trace_id is None:
        fail("--verified needs --trace ID: a success is granted only on evidence (a stored trace "
             "a verifier judged a success; `skills learn` stores them)")
    if trace_id is not None:
        skill = skill.model_copy(update={"provenance": skill.provenance.model_copy(
            update={"trace_ids": [trace_id]})})
    with open_library(directory, create=create) as lib:
        result = lib.add(skill, verified=verified)
    if as_json:
        emit(result.model_dump(mode="json"))
    elif result.added and result.skill is not None:
        tools_text = ", ".join(result.skill.tools) or "none"
        console.print(
            styled("added ", (result.skill.name, "bold"), f" v{result.skill.version} (tools: {tools_text})"),
            highlight=False,
        )
    else:
        console.print(
            styled(("not added:", "yellow"), " duplicate of ", (str(result.duplicate_of), "bold"),
                   f" (similarity {result.similarity or 0:.3f})")
        )
    if not result.added:
        raise typer.Exit(EXIT_REFUSED)


@command
def list_(
    status: Optional[StatusChoice] = typer.Option(
        None, "--status", help="Only skills with this status.", case_sensitive=False
    ),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """List every skill's current version: SkillLibrary.list()."""
    chosen = status.value if status is not None else None
    if as_json:
        found = light_read(directory, lambda reader: _skills_json(reader.current_versions(chosen)))
        if found is not None:
            return emit(found)
    else:
        from skill_library.storage.light_reads import current_when

        def light(reader: "FolderReader") -> list[SkillLine]:
            return [(r["name"], r["version"], r["kind"], r["status"], r["successes"], r["failures"],
                     current_when(r)) for r in reader.current_versions(chosen)]

        lines = light_read(directory, light)
        if lines is not None:
            return _print_skills(lines)
    with open_library(directory) as lib:
        skills = lib.list(status=chosen)
    if as_json:
        emit([skill_json(s) for s in skills])
        return
    _print_skills([(s.name, s.version, s.kind, s.status, s.successes, s.failures, s.when) for s in skills])


def _skills_json(rows: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Version rows (storage.light_reads) in the JSON the full path prints (the same Skill)."""
    from skill_library.storage.version_rows import row_to_skill

    return None if rows is None else [skill_json(row_to_skill(r)) for r in rows]


#: one row of `skills list`: name, version, kind, status, successes, failures, when
SkillLine = tuple[str, int, str, str, int, int, str]


def _reliability(successes: int, failures: int) -> str:
    return f"{laplace_reliability(successes, failures):.2f}"


def _print_skills(lines: list[SkillLine]) -> None:
    table = _table("name", "version", "kind", "status", "reliability", "ok/fail", "when",
                   names=[line[0] for line in lines])
    for name, version, kind, status, successes, failures, when in lines:
        table.add_row(name, str(version), kind, status, _reliability(successes, failures),
                      f"{successes}/{failures}", when)
    _print_table(table)


#: masked example tasks ``skills show`` prints
SHOWN_EXAMPLES = 5


@command
def show(
    name: str,
    version: Optional[int] = typer.Option(None, help="A specific version."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one skill: SkillLibrary.get(name, version), examples(name), prototype_traces(name).

    Prints the facts as `#` comments, then the code exactly as stored (never wrapped):
    `skills show NAME > NAME.py` is valid Python.
    """
    import warnings

    with open_library(directory) as lib:
        with warnings.catch_warnings(record=True) as renamed:
            warnings.simplefilter("always", DeprecationWarning)
            skill = lib.get(name, version)  # an old name of a renamed skill resolves, with a warning
        for warning in renamed:
            typer.echo(f"note: {warning.message}", err=True)
        examples = lib.examples(skill.name)
        prototype = lib.prototype_traces(skill.name)
        counts = lib.outcome_counts(skill.name, skill.version)
        measured = lib.uplift(skill.name, skill.version)
    others = {k: n for k, n in counts.items() if k not in ("success", "failure") and n}
    if as_json:
        data = skill_json(skill)
        data["outcome_counts"] = counts
        data["examples"] = [e.model_dump(mode="json", exclude={"params"}) for e in examples]
        data["prototype_traces"] = prototype
        data["uplift"] = measured.to_json()
        emit(data)
        return
    learned_from = len(skill.provenance.trace_ids)
    lines = [
        f"{skill.name} v{skill.version} ({skill.kind}, {skill.status})",
        f"when: {skill.when}",
        f"reliability {skill.reliability:.3f} ({skill.successes} ok / {skill.failures} failed"
        + (f"; not counted against it: {', '.join(f'{n} {k}' for k, n in others.items())})" if others else ")"),
        f"tools: {', '.join(skill.tools) or '-'}; depends on: {', '.join(skill.depends_on) or '-'}",
        f"evidence: {len(examples)} example trace(s) of this workflow; this version was built from "
        f"{learned_from} and verified by replaying {'it' if learned_from == 1 else 'each'}"
        + (" (one trace: not yet seen on other cases)" if len(examples) <= 1 else ""),
    ]
    indexed = sum(e.indexed for e in examples)
    lines.append(f"fetched by: its when, {indexed} example text(s)"
                 + (f" and a prototype, the mean of {len(prototype)} traces' tasks" if prototype else ""))
    lines += [f"example: {e.text}" for e in examples if e.indexed][:SHOWN_EXAMPLES]
    lines.append(measured.describe())
    lines.append("abstention: `skills stats` (the library's calibration reads the index)")
    for line in lines:
        typer.echo("# " + " ".join(line.splitlines()))
    typer.echo(skill.code if skill.code else skill.description)


@command
def stats(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The library's skills by status and fetch's abstention calibration (floor, margin,
    expected precision and recall): SkillLibrary.list(), SkillLibrary.calibration()."""
    from skill_library.uplift import summary as uplift_summary

    with open_library(directory) as lib:
        skills = lib.list()
        calibration = lib.calibration()
        measured = uplift_summary(lib)
    by_status: dict[str, int] = {}
    for s in skills:
        by_status[s.status] = by_status.get(s.status, 0) + 1
    if as_json:
        emit({"skills": len(skills), "by_status": by_status, "abstention": calibration.to_json(),
              "uplift": measured.to_json()})
        return
    typer.echo(f"{len(skills)} skill(s): " + (", ".join(f"{n} {k}" for k, n in sorted(by_status.items())) or "none"))
    typer.echo(calibration.describe())
    typer.echo(measured.describe())


@command
def history(name: str, directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Every version of a skill with its counts: SkillLibrary.history(name)."""
    if as_json:
        found = light_read(directory, lambda reader: _skills_json(reader.versions(name)))
        if found is not None:
            return emit(found)
    else:
        def light(reader: "FolderReader") -> list[VersionLine] | None:
            rows = reader.versions(name)
            return None if rows is None else [
                (r["version"], r["status"], r["successes"], r["failures"], r["provenance"]["generalizer"],
                 datetime.fromisoformat(r["provenance"]["created_at"])) for r in rows]

        lines = light_read(directory, light)
        if lines is not None:
            return _print_versions(lines)
    with open_library(directory) as lib:
        versions = lib.history(name)
    if as_json:
        emit([skill_json(s) for s in versions])
        return
    _print_versions([(s.version, s.status, s.successes, s.failures, s.provenance.generalizer,
                      s.provenance.created_at) for s in versions])


#: one row of `skills history`: version, status, successes, failures, generalizer, created
VersionLine = tuple[int, str, int, int, str, datetime]


def _print_versions(lines: list[VersionLine]) -> None:
    table = _table("version", "status", "reliability", "ok/fail", "generalizer", "created",
                   names=[str(line[0]) for line in lines])
    for version, status, successes, failures, generalizer, created in lines:
        table.add_row(str(version), status, _reliability(successes, failures), f"{successes}/{failures}",
                      generalizer, created.isoformat(timespec="seconds"))
    _print_table(table)


@command
def retire(
    name: str, actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Retire a skill so it is never fetched: SkillLibrary.retire(name, actor=)."""
    with open_library(directory) as lib:
        skill = lib.retire(name, actor=actor)
    if as_json:
        emit(skill_json(skill))
    else:
        console.print(f"retired {skill.name} v{skill.version}")


@command
def outcomes(name: str, directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The outcome log of a skill, all versions, oldest first: SkillLibrary.outcomes(name)."""
    found = light_read(directory, lambda reader: reader.outcomes(name))
    if found is not None:
        return emit([outcome_json(o) for o in found]) if as_json else _print_outcomes(name, found)
    with open_library(directory) as lib:
        log = lib.outcomes(name)
    if as_json:
        emit([outcome_json(o) for o in log])
        return
    _print_outcomes(name, log)


def _recorded(entry: dict[str, Any]) -> str:
    """When an outcome was recorded, to the second, as its JSON form (outcome_json) has it."""
    recorded = entry["recorded_at"]
    return str(recorded.isoformat() if hasattr(recorded, "isoformat") else recorded)[:19]


def _print_outcomes(name: str, log: list[dict[str, Any]]) -> None:
    reasons = any(r.get("reason") for r in log)  # the column only when some outcome says why
    table = _table("recorded", "version", "outcome", "trace id", *(("reason",) if reasons else ()),
                   names=[_recorded(r) for r in log])
    for r in log:
        table.add_row(
            _recorded(r), str(r["version"]),
            r.get("kind") or ("success" if r["success"] else "failure"), r["trace_id"] or "-",
            *((r.get("reason") or "",) if reasons else ()),
        )
    _print_table(table)
    if not log:
        console.print(f"no outcomes recorded for {name}")


@command
def traces(
    name: str,
    trace_id: Optional[str] = typer.Option(None, "--id", help="Show this trace in full."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """The traces of a skill (learned from, or made by its runs): SkillLibrary.traces(name);
    with --id, one trace in full: SkillLibrary.trace(id)."""
    if trace_id is not None or as_json:
        from skill_library.models import Trace

        def light_json(reader: "FolderReader") -> Any:
            if trace_id is not None:
                body = reader.trace_body(trace_id)
                return None if body is None else trace_json(Trace.model_validate(body))
            bodies = reader.trace_bodies(name)
            return None if bodies is None else [trace_json(t) for t in sorted(
                (Trace.model_validate(b) for b in bodies), key=lambda t: (t.created_at, t.id))]

        data = light_read(directory, light_json)
        if data is not None:
            return emit(data) if as_json else typer.echo(json.dumps(data, indent=2))
    else:
        def light(reader: "FolderReader") -> list[TraceLine] | None:
            bodies = reader.trace_bodies(name)
            return None if bodies is None else sorted(
                (datetime.fromisoformat(b["created_at"]), str(b["id"]), str(b["source"]), len(b["calls"]),
                 None if b["outcome"] is None else bool(b["outcome"]["success"]), _text(b["task"]))
                for b in bodies)

        lines = light_read(directory, light)
        if lines is not None:
            return _print_traces(name, lines)
    with open_library(directory) as lib:
        if trace_id is not None:
            one = lib.trace(trace_id)
            found: list[Any] = [one]
        else:
            found = lib.traces(name)
    if trace_id is not None:
        emit(trace_json(found[0])) if as_json else typer.echo(
            json.dumps(trace_json(found[0]), indent=2)
        )
        return
    if as_json:
        emit([trace_json(t) for t in found])
        return
    _print_traces(name, [(t.created_at, t.id, t.source, len(t.calls),
                          None if t.outcome is None else t.outcome.success, t.task) for t in found])


#: one row of `skills traces`, in its order: created, id, source, calls, success (None: no
#: verdict), task
TraceLine = tuple[datetime, str, str, int, Optional[bool], str]


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a text")  # not what a stored trace holds: the full path reads it
    return value


def _print_traces(name: str, lines: list[TraceLine]) -> None:
    table = _table("id", "created", "source", "calls", "outcome", "task", names=[line[1] for line in lines])
    for created, trace_id, source, calls, success, task in lines:
        verdict = "-" if success is None else ("success" if success else "failure")
        table.add_row(trace_id, created.isoformat(timespec="seconds"), source, str(calls), verdict,
                      short(task, TASK_COLUMN_CHARS))
    _print_table(table)
    if not lines:
        console.print(f"no traces stored for {name}")


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(add)
    app.command("list")(list_)
    for function in (show, stats, history, retire, outcomes, traces):
        app.command()(function)
