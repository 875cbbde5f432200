"""Procedures, usage patterns and the subject's controls: procedures add|list|show|outcome,
prompt, plot confidence, patterns, explain, forget, opt-out."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from skill_library.cli._common import (
    ActorOption,
    DirOption,
    JsonOption,
    command,
    console,
    emit,
    fail,
    open_library,
    required_text,
    styled,
)
from skill_library.errors import require_extra

#: skill_library.procedures.core's defaults, which a test compares these with (the CLI builds
#: its options without importing the procedures' store)
DEFAULT_CONFIDENCE = 0.6
PROMPT_THRESHOLD = 0.55
PROMPT_LIMIT = 6

#: the subject of patterns, explain, forget and opt-out (never empty)
SubjectArgument = typer.Argument(..., callback=required_text, help="The subject (a user id).")

procedures_app = typer.Typer(
    no_args_is_help=True, help="Instruction procedures for the system prompt: add, list, show, outcome."
)
plot_app = typer.Typer(no_args_is_help=True, help="Plots of the library's learning: confidence.")


def _procedure_json(procedure: Any) -> dict[str, Any]:
    data: dict[str, Any] = procedure.model_dump(mode="json")
    return data


@procedures_app.command("add")
@command
def procedures_add(
    title: str = typer.Argument(..., help="A short imperative title."),
    trigger: str = typer.Option(..., "--trigger", help="When the procedure applies."),
    description: str = typer.Option(..., "--description", help="The directive itself."),
    confidence: float = typer.Option(DEFAULT_CONFIDENCE, "--confidence", min=0.0, max=1.0, help="Starting confidence."),
    name: Optional[str] = typer.Option(None, "--name", help="Record name (default: from the title)."),
    actor: Optional[str] = ActorOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Add an active procedure: SkillLibrary.add_procedure(title, trigger, description)."""
    with open_library(directory) as lib:
        skill = lib.add_procedure(title, trigger, description, confidence=confidence, name=name, actor=actor)
        procedure = lib.procedures.get(skill.name)
    if as_json:
        emit(_procedure_json(procedure))
    else:
        console.print(styled("added procedure ", (procedure.name, "bold"), f" v{procedure.version} "
                             f"(confidence {procedure.confidence:.2f})"))


@procedures_app.command("list")
@command
def procedures_list(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Every procedure with its confidence: SkillLibrary.procedures.list()."""
    with open_library(directory) as lib:
        found = lib.procedures.list()
    if as_json:
        emit([_procedure_json(p) for p in found])
        return
    if not found:
        console.print("no procedures")
    for p in found:
        console.print(f"{p.name}  v{p.version}  {p.status}  confidence {p.confidence:.2f}  "
                      f"({p.successes} ok / {p.failures} failed)  {p.title}", highlight=False)


@procedures_app.command("show")
@command
def procedures_show(
    name: str = typer.Argument(...), directory: Optional[Path] = DirOption, as_json: bool = JsonOption
) -> None:
    """One procedure: SkillLibrary.procedures.get(name)."""
    with open_library(directory) as lib:
        procedure = lib.procedures.get(name)
    if as_json:
        emit(_procedure_json(procedure))
        return
    console.print(styled((procedure.title, "bold"), f" ({procedure.name} v{procedure.version}, {procedure.status})"))
    console.print(f"Trigger: {procedure.trigger}", highlight=False)
    console.print(procedure.description, highlight=False)
    console.print(f"confidence {procedure.confidence:.2f}; {procedure.successes} ok / "
                  f"{procedure.failures} failed; added by {procedure.actor or 'the local admin'}", highlight=False)


@procedures_app.command("outcome")
@command
def procedures_outcome(
    name: str = typer.Argument(...),
    success: bool = typer.Option(..., "--success/--failure", help="Did applying it work?"),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Record one application: SkillLibrary.record_procedure_outcome(name, positive)."""
    with open_library(directory) as lib:
        lib.record_procedure_outcome(name, success)
        procedure = lib.procedures.get(name)
    if as_json:
        emit(_procedure_json(procedure))
    else:
        console.print(f"{procedure.name}: confidence {procedure.confidence:.2f}", highlight=False)


@command
def prompt(
    base: Path = typer.Option(..., "--base", exists=True, dir_okay=False, help="File with the base instructions."),
    task: Optional[str] = typer.Option(None, "--task", help="Only procedures relevant to this task."),
    threshold: float = typer.Option(PROMPT_THRESHOLD, "--threshold", min=0.0, max=1.0, help="Least confidence."),
    limit: int = typer.Option(PROMPT_LIMIT, "--limit", min=0, help="Most procedures."),
    directory: Optional[Path] = DirOption,
) -> None:
    """Print the system prompt with the learned procedures: SkillLibrary.build_system_prompt(base)."""
    with open_library(directory) as lib:
        text = lib.build_system_prompt(base.read_text(), task=task, threshold=threshold, limit=limit)
    typer.echo(text)


@plot_app.command("confidence")
@command
def plot_confidence(
    names: List[str] = typer.Argument(..., help="Procedure names."),
    output: Path = typer.Option(Path("confidence.png"), "--output", "-o", help="The PNG to write."),
    threshold: float = typer.Option(PROMPT_THRESHOLD, "--threshold", help="The prompt threshold line."),
    directory: Optional[Path] = DirOption,
) -> None:
    """PNG of each procedure's confidence per applied session: SkillLibrary.procedures.confidence_path."""
    require_extra("matplotlib", "plot", "skills plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open_library(directory) as lib:
        paths = {n: lib.procedures.confidence_path(n) for n in names}
    figure, axes = plt.subplots(figsize=(6, 3.5))
    for name, path in paths.items():
        axes.plot(range(len(path)), path, marker="o", label=name)
    axes.axhline(threshold, color="grey", linestyle="--", label=f"threshold {threshold:.2f}")
    axes.set_xlabel("applied sessions")
    axes.set_ylabel("confidence")
    axes.set_ylim(0, 1.05)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    try:
        figure.savefig(output, format="png")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    finally:
        plt.close(figure)
    console.print(f"wrote {output}")


@command
def patterns(subject: str = SubjectArgument, directory: Optional[Path] = DirOption,
             as_json: bool = JsonOption) -> None:
    """A subject's transition statistics: SkillLibrary.patterns.summary(subject)."""
    with open_library(directory) as lib:
        found = lib.patterns.summary(subject)
    if as_json:
        emit(found)
        return
    if not found:
        console.print(f"no patterns recorded for {subject}", highlight=False)
    for p in found:
        shares = ", ".join(f"{s} {d['probability']:.2f} ({d['count']})" for s, d in p["distribution"].items())
        console.print(f"{p['from_state']} -> {shares}; predicts {p['predicts'] or 'nothing'}", highlight=False)


@command
def explain(subject: str = SubjectArgument, directory: Optional[Path] = DirOption,
            as_json: bool = JsonOption) -> None:
    """Everything inferred about a subject and what it may influence: SkillLibrary.explain(subject)."""
    with open_library(directory) as lib:
        found = lib.explain(subject)
    if as_json:
        emit(found)
        return
    console.print(f"{subject}: {'opted out' if found['opted_out'] else 'recording'}", highlight=False)
    for p in found["patterns"]:
        console.print(f"pattern from {p['from_state']}: {p['transitions']} transition(s), "
                      f"predicts {p['predicts'] or 'nothing'}; influences {p['influences']}", highlight=False)
    for p in found["procedures"]:
        console.print(f"procedure {p['name']} ({p['status']}, confidence {p['confidence']:.2f}); "
                      f"influences {p['influences']}", highlight=False)


@command
def forget(subject: str = SubjectArgument, directory: Optional[Path] = DirOption,
           as_json: bool = JsonOption) -> None:
    """Erase a subject (a user id or a value such as an email) everywhere: its traces,
    examples, outcome links, patterns, procedures, index entries: SkillLibrary.forget(subject)."""
    from skill_library.erasure import ForgetReport

    with open_library(directory) as lib:
        found = lib.forget(subject)
    if as_json:
        emit(found)
    else:
        console.print(ForgetReport(**found).summary(), highlight=False)


@command
def opt_out(subject: str = SubjectArgument, directory: Optional[Path] = DirOption,
            as_json: bool = JsonOption) -> None:
    """Stop recording and using anything about a subject: SkillLibrary.opt_out(subject)."""
    with open_library(directory) as lib:
        lib.opt_out(subject)
    if as_json:
        emit({"subject": subject, "opted_out": True})
    else:
        console.print(f"{subject} opted out: nothing about them is recorded or used", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.add_typer(procedures_app, name="procedures")
    app.add_typer(plot_app, name="plot")
    app.command()(prompt)
    app.command()(patterns)
    app.command()(explain)
    app.command()(forget)
    app.command("opt-out")(opt_out)
