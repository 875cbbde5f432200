"""The serving command: serve (a library kept open for fast fetches; skill_library.served)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Optional

import typer

from skill_library.cli._common import DEFAULT_DIR, EXIT_UNUSABLE, DirOption, command, deployment, fail, open_library


def served_key(directory: Path | None) -> tuple[Path | None, dict[str, Any]]:
    """The socket a command run with these options would find, and its deployment key."""
    from skill_library.served import deployment_key, socket_path

    folder = directory or (None if deployment["records"] and deployment["index"] else DEFAULT_DIR)
    return socket_path(folder), deployment_key(folder, deployment["records"], deployment["index"])


@command
def serve(
    directory: Optional[Path] = DirOption,
    socket: Optional[Path] = typer.Option(
        None, "--socket", envvar="SKILLS_SERVE_SOCKET", show_envvar=True,
        help="The Unix socket (default: serve.sock in the library folder).",
    ),
) -> None:
    """Keep the library open and its model loaded; `skills fetch` asks it first:
    skill_library.served.Server(library, path, key).serve_forever()."""
    from skill_library.served import ServeError, Server

    path, key = served_key(directory)
    if socket is not None:
        path = socket
    if path is None:
        fail("a shared deployment has no folder for the socket: pass --socket PATH (or set SKILLS_SERVE_SOCKET)",
             EXIT_UNUSABLE)
    with open_library(directory, served_embeddings=False) as library:
        library.embedder.embed(["warm up"])  # the model is loaded before the first request
        try:
            server = Server(library, path, key)
        except ServeError as exc:
            fail(str(exc), EXIT_UNUSABLE)
        signal.signal(signal.SIGTERM, lambda *_: server.close())
        typer.echo(f"serving {key['folder'] or key['records']} on {path} (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(serve)
