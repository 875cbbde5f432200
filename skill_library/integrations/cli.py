"""``skills serve-mcp``, ``skills export`` and ``skills import``: each mirrors one call.

A Typer app of its own, merged into the ``skills`` command by ``skill_library.cli``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

app = typer.Typer(add_completion=False)

DirOption = typer.Option(None, "--dir", envvar="SKILLS_DIR", help="Library folder (default: ./.skills).")


def _open(directory: Optional[Path]) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from skill_library.library import SkillLibrary

    return SkillLibrary(directory or Path(".skills"))


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@app.command("serve-mcp")
def serve_mcp(
    directory: Optional[Path] = DirOption,
    tools: Optional[str] = typer.Option(None, "--tools", help="Module (or .py file) with the host tools."),
    http: Optional[str] = typer.Option(
        None, "--http", help="Serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio."
    ),
) -> None:
    """Serve the library over MCP: integrations.mcp_server.serve(library, tools)."""
    try:
        from skill_library.integrations import mcp_server
    except ImportError as exc:
        _fail(f"the MCP server needs the mcp package: pip install 'skill-library[mcp]' ({exc})")
    from skill_library.cli import load_tools  # lazy: skill_library.cli imports this module

    try:
        tool_map = load_tools(tools) if tools else {}
    except ValueError as exc:
        _fail(str(exc))
    if http is not None:
        try:
            mcp_server.parse_http(http)
        except ValueError as exc:
            _fail(str(exc))
    library = _open(directory)
    library.embedder.embed(["warm up"])  # load the model before the first request
    try:
        mcp_server.serve(library, tool_map, http=http)
    finally:
        library.close()


@app.command("export")
def export(
    out: Path = typer.Argument(..., file_okay=False, help="Folder to write the skill folders into."),
    format: str = typer.Option("agent-skills", "--format", help="Output format (only agent-skills)."),
    license: Optional[str] = typer.Option(None, "--license", help="License to state in each SKILL.md."),
    directory: Optional[Path] = DirOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Export every active skill as an Agent Skills folder: agent_skills.export_library(library, out)."""
    if format != "agent-skills":
        _fail(f"--format must be agent-skills, got {format!r}")
    from skill_library.integrations.agent_skills import export_library

    library = _open(directory)
    try:
        result = export_library(library, out, license=license)
    finally:
        library.close()
    if as_json:
        typer.echo(json.dumps({"written": [str(p) for p in result.written], "skipped": result.skipped}, indent=2))
        return
    typer.echo(f"wrote {len(result.written)} skill folder(s) to {out}")
    for name, reason in result.skipped.items():
        typer.echo(f"skipped {name}: {reason}")


@app.command("import")
def import_(
    source: Path = typer.Argument(..., exists=True, file_okay=False, help="A skill folder, or a folder of them."),
    directory: Optional[Path] = DirOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Import Agent Skills folders as unverified drafts: agent_skills.import_folders(library, source)."""
    from skill_library.integrations.agent_skills import import_folders

    library = _open(directory)
    try:
        results = import_folders(library, source)
    finally:
        library.close()
    if as_json:
        typer.echo(json.dumps([
            {"folder": str(r.folder), "status": r.status, "problems": r.problems,
             "name": r.skill.name if r.skill else None, "version": r.skill.version if r.skill else None}
            for r in results
        ], indent=2))
    else:
        for r in results:
            if r.skill is not None:
                typer.echo(f"draft {r.skill.name} v{r.skill.version} from {r.folder.name} (not fetched until verified)")
            for problem in r.problems:
                typer.echo(f"invalid {r.folder.name}: {problem}", err=True)
    if any(r.status == "invalid" for r in results):
        raise typer.Exit(3)
