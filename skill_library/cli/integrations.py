"""Commands that meet agents where they are: serve-mcp, export, import."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skill_library.cli._common import (
    EXIT_REFUSED,
    EXIT_UNUSABLE,
    DirOption,
    JsonOption,
    command,
    console,
    emit,
    fail,
    load_tools,
    open_library,
    required_text,
    warm_up_in_background,
)
from skill_library.errors import require_extra


@command
def serve_mcp(
    directory: Optional[Path] = DirOption,
    tools: Optional[str] = typer.Option(None, "--tools", help="Module (or .py file) with the host tools."),
    http: Optional[str] = typer.Option(
        None, "--http", help="Serve streamable HTTP on HOST:PORT (path /mcp, loopback only) instead of stdio; "
        "every request must carry the bearer token in $SKILLS_MCP_TOKEN."
    ),
) -> None:
    """Serve the library over MCP (stdio by default): integrations.mcp_server.serve(library, tools)."""
    require_extra("mcp", "mcp", "the MCP server")
    from skill_library.integrations import mcp_server

    tool_map = load_tools(tools) if tools else {}
    if http is not None:
        try:
            mcp_server.parse_http(http)
            mcp_server.http_token()
        except ValueError as exc:
            fail(str(exc), EXIT_UNUSABLE)
    with open_library(directory) as library:
        warm_up_in_background(library)  # initialize and list_tools answer before the model is loaded
        mcp_server.serve(library, tool_map, http=http)


@command
def export(
    out: str = typer.Argument(..., callback=required_text, metavar="OUT",
                              help="Folder to write the skill folders into."),
    format: str = typer.Option("agent-skills", "--format", help="Output format (only agent-skills)."),
    license: Optional[str] = typer.Option(None, "--license", help="License to state in each SKILL.md."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Export every active skill as an Agent Skills folder: agent_skills.export_library(library, out)."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        fail(f"OUT: {out} is a file; name a folder to write the skill folders into", EXIT_UNUSABLE)
    if format != "agent-skills":
        fail(f"--format must be agent-skills, got {format!r}", EXIT_UNUSABLE)
    from skill_library.integrations.agent_skills import export_library

    with open_library(directory) as library:
        result = export_library(library, folder, license=license)
    if as_json:
        emit({"written": [str(p) for p in result.written], "skipped": result.skipped})
        return
    console.print(f"wrote {len(result.written)} skill folder(s) to {out}")
    for name, reason in result.skipped.items():
        console.print(f"skipped {name}: {reason}")


@command
def import_(
    source: str = typer.Argument(..., callback=required_text, metavar="SOURCE",
                                 help="A skill folder, or a folder of them."),
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Import Agent Skills folders as unverified drafts: agent_skills.import_folders(library, source).

    Creates the library when the folder holds none (importing is a way to start one).
    """
    from skill_library.integrations.agent_skills import import_folders

    folder = Path(source)
    if not folder.is_dir():
        fail(f"SOURCE: {source} is {'a file' if folder.exists() else 'not there'}; name a skill folder "
             "(one with a SKILL.md) or a folder of them", EXIT_UNUSABLE)
    with open_library(directory, create=True) as library:
        results = import_folders(library, folder)
    if as_json:
        emit([
            {"folder": str(r.folder), "status": r.status, "problems": r.problems, "examples": r.examples,
             "name": r.skill.name if r.skill else None, "version": r.skill.version if r.skill else None}
            for r in results
        ])
    else:
        for r in results:
            if r.status == "duplicate" and r.skill is not None:
                console.print(f"duplicate {r.folder.name}: the same as {r.skill.name} v{r.skill.version} "
                              f"({r.skill.status}); nothing added")
            elif r.skill is not None:
                examples = f", {r.examples} example task(s)" if r.examples else ""
                console.print(f"draft {r.skill.name} v{r.skill.version} from {r.folder.name}{examples} "
                              "(not fetched until verified)")
            for problem in r.problems:
                typer.echo(f"invalid {r.folder.name}: {problem}", err=True)
    if any(r.status == "invalid" for r in results):
        raise typer.Exit(EXIT_REFUSED)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command("serve-mcp")(serve_mcp)
    app.command("export")(export)
    app.command("import")(import_)
