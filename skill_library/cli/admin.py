"""Commands that make, repair or move a library: init, reindex, migrate, redact-stored."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skill_library.cli._common import (
    DEFAULT_DIR,
    EXIT_UNUSABLE,
    DirOption,
    JsonOption,
    command,
    console,
    emit,
    fail,
    open_library,
    styled,
)


@command
def init(
    auto_approve: Optional[str] = typer.Option(
        None, "--auto-approve", help="The policy a new library is created with: never, read_only "
        "(the default) or all: SkillLibrary(path, policy=Policy(auto_approve=...)).",
    ),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Create an empty library folder, or open an existing one: SkillLibrary(path, create=True).

    Creating one registers you (the OS user) as its admin actor."""
    from skill_library.governance import Policy

    policy = Policy(auto_approve=auto_approve) if auto_approve is not None else None  # type: ignore[arg-type]
    with open_library(directory, create=True, policy=policy) as lib:
        count = len(lib.list())
        path = lib.location
    if as_json:
        emit({"path": str(path), "skills": count})
    else:
        console.print(styled("library ready in ", (str(path), "bold"), f" ({count} skill(s))"))


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


@command
def migrate(
    to: str = typer.Option(..., "--to", help="Record store URL to copy into (postgresql+psycopg://...)."),
    index_to: Optional[str] = typer.Option(
        None, "--index-to", help="Chroma server URL whose index is built from the copied records."
    ),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Copy a folder library into a shared deployment: skill_library.deploy.copy_folder_library(dir, to, index_to)."""
    from skill_library.deploy import copy_folder_library
    from skill_library.errors import RecordStoreURLError

    try:
        report = copy_folder_library(directory or DEFAULT_DIR, to, index_to)
    except RecordStoreURLError as exc:
        fail(f"--to: {exc} (a record store URL: postgresql+psycopg://USER@HOST/DATABASE)", EXIT_UNUSABLE)
    if as_json:
        emit({"rows": report.rows, "indexed": report.indexed})
    else:
        console.print(
            f"copied {report.rows.get('skills', 0)} skill(s), {report.rows.get('skill_versions', 0)} version(s), "
            f"{report.rows.get('outcomes', 0)} outcome(s)"
            + (f"; indexed {report.indexed} skill(s)" if report.indexed is not None else "")
        )


@command
def redact_stored(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Redact versions stored before the masking pass that hold personal data (a redacted new
    version, the old texts erased, renamed skills' old names kept as aliases): SkillLibrary.redact_stored()."""
    with open_library(directory) as lib:
        report = lib.redact_stored()
    if as_json:
        emit(report.as_dict())
    else:
        console.print(report.summary(), highlight=False)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(init)
    app.command()(reindex)
    app.command()(migrate)
    app.command("redact-stored")(redact_stored)
