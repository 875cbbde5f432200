"""The review console command: ui."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skill_library.cli._common import (
    EXIT_UNUSABLE,
    DirOption,
    command,
    fail,
    notice,
    open_library,
    warm_up_in_background,
)
from skill_library.errors import require_extra


@command
def ui(
    directory: Optional[Path] = DirOption,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback unless --allow-remote)."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to listen on."),
    actor: Optional[str] = typer.Option(
        None, "--actor", envvar="SKILLS_ACTOR", show_envvar=True,
        help="Who the console acts as (default: the OS user).",
    ),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="Allow a non-loopback --host (plain HTTP: a warning is printed)."
    ),
) -> None:
    """Serve the review console in the browser: skill_library.console.serve(library, actor_id=...)."""
    for module in ("starlette", "uvicorn", "multipart", "pygments", "matplotlib"):
        require_extra(module, "console", "the review console")
    from skill_library.console import is_loopback, serve
    from skill_library.console.auth import default_actor_id

    if not is_loopback(host) and not allow_remote:
        fail(f"refusing to serve the console on {host}, which is not a loopback address: "
             "pass --allow-remote to do it anyway", EXIT_UNUSABLE)
    with open_library(directory) as library:
        def announce(line: str) -> None:
            if line.startswith("warning:"):
                return notice(line)
            typer.echo(line)
            if "/login?token=" in line:  # the URL is out: load the model while the browser comes
                warm_up_in_background(library)

        serve(library, actor_id=actor or default_actor_id(), host=host, port=port, allow_remote=allow_remote,
              announce=announce)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(ui)
