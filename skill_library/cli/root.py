"""The root ``skills`` command: the typer app, every command group registered on it, and the
root options (the deployment and tenant). ``skill_library.cli`` lends ``app`` and
``load_tools`` from here, imported only when a command needs typer (skill_library.cli.quick).
"""

from __future__ import annotations

from typing import Optional

import typer

from skill_library.cli import (
    _common,
    admin,
    console,
    governance,
    integrations,
    learning,
    memory,
    rollout,
    serve,
    skills,
)
from skill_library.cli import uplift as uplift_commands
from skill_library.cli._common import INDEX_URL_ENV, RECORDS_URL_ENV, TENANT_ENV, load_tools

__all__ = ["app", "load_tools"]

app = typer.Typer(
    cls=_common.OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    help="Procedural memory for agents: learn, store, fetch and run verified skills.",
)
for _group in (admin, skills, learning, integrations, memory, governance, rollout, console, serve, uplift_commands):
    _group.register(app)


@app.callback()
def _deployment(
    records: Optional[str] = typer.Option(
        None, "--records", envvar=RECORDS_URL_ENV, show_envvar=True,
        help="Record store URL of a shared deployment (postgresql+psycopg://...; prefer the "
        "environment setting, so no password shows in the process list).",
    ),
    index: Optional[str] = typer.Option(
        None, "--index", envvar=INDEX_URL_ENV, show_envvar=True,
        help="Chroma server index URL of a shared deployment (http://HOST:PORT\\[/COLLECTION]; "
        "token: SKILLS_INDEX_TOKEN).",
    ),
    tenant: Optional[str] = typer.Option(
        None, "--tenant", envvar=TENANT_ENV, show_envvar=True,
        help="The tenant whose skills every command reads and writes (default: default).",
    ),
) -> None:
    """Procedural memory for agents: learn, store, fetch and run verified skills."""
    _common.deployment.update(records=records, index=index, tenant=tenant, actor=None)
