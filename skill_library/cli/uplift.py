"""Commands on measured uplift (docs/uplift.md): ``skills uplift NAME`` mirrors
``SkillLibrary.uplift(name, version)``; ``skills holdout`` mirrors
``SkillLibrary.configure_uplift`` (the tenant's opt-in) and, without options,
``SkillLibrary.uplift_settings()``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skill_library.cli._common import ActorOption, DirOption, JsonOption, command, emit, fail, open_library, split_names


@command
def uplift(
    name: str,
    version: Optional[int] = typer.Option(None, help="A specific version (default: the active one)."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Task success with and without a skill (its held-back sessions), the difference with a
    95% Newcombe interval, n per arm, cost differences, the verdict: SkillLibrary.uplift(name)."""
    with open_library(directory) as lib:
        found = lib.uplift(name, version)
    if as_json:
        emit(found.to_json())
        return
    typer.echo(found.describe())


@command
def holdout(
    share: Optional[float] = typer.Option(
        None, "--share", help="Share of sessions per skill held out, within [0, 0.5] (0: off; opt-in default 0.05)."),
    side_effects: bool = typer.Option(
        False, "--side-effects", help="Also hold out skills with state-changing tools."),
    skills: Optional[str] = typer.Option(None, "--skills", help="Comma-separated skills to measure (default: all)."),
    actor: Optional[str] = ActorOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """The tenant's uplift holdout: SkillLibrary.configure_uplift(share=, side_effects=,
    skills=, actor=); without --share it prints SkillLibrary.uplift_settings()."""
    from skill_library.uplift import check_share

    if share is not None:
        try:
            check_share(share)
        except ValueError as exc:
            fail(f"--share: {exc}")
    with open_library(directory) as lib:
        if share is None:
            found = lib.uplift_settings()
        else:
            found = lib.configure_uplift(share=share, side_effects=side_effects,
                                         skills=split_names(skills) if skills else None, actor=actor)
    if as_json:
        emit(found.to_json())
        return
    if not found.enabled:
        typer.echo("uplift holdout: off (skills holdout --share 0.05 opts the tenant in)")
        return
    typer.echo(f"uplift holdout: {found.share:.0%} of sessions per skill"
               + ("; skills with side effects too" if found.side_effects else "; skills without side effects only")
               + (f"; only {', '.join(found.skills)}" if found.skills else ""))


def register(app: typer.Typer) -> None:
    """Add the uplift commands to ``app``."""
    app.command()(uplift)
    app.command()(holdout)
