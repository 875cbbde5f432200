"""Commands that make or repair a library folder: init, reindex."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skill_library.cli._common import DirOption, JsonOption, command, console, emit, open_library


@command
def init(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Create an empty library folder, or open an existing one: SkillLibrary(path, create=True)."""
    with open_library(directory, create=True) as lib:
        count = len(lib.list())
        path = lib.path
    if as_json:
        emit({"path": str(path), "skills": count})
    else:
        console.print(f"library ready in [bold]{path}[/bold] ({count} skill(s))")


@command
def reindex(
    force: bool = typer.Option(
        False, "--force", help="Rebuild even from records older than the index (losing what only it holds)."
    ),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Rebuild the vector index from the records: SkillLibrary.reindex(force=...)."""
    with open_library(directory) as lib:
        count = lib.reindex(progress=not as_json, force=force)
    if as_json:
        emit({"indexed": count})
    else:
        console.print(f"indexed {count} skill(s)")


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(init)
    app.command()(reindex)
