"""The ``skills`` command line: each command is a thin mirror of one SkillLibrary call.

The library folder comes from ``--dir`` or ``SKILLS_DIR`` (default ``./.skills``); a shared
deployment from the root options ``--records`` / ``--index`` or ``SKILLS_RECORDS_URL`` /
``SKILLS_INDEX_URL`` (``skills --records URL --index URL list``); the tenant from the root
option ``--tenant`` or ``SKILLS_TENANT`` (``skills --tenant acme list``; default ``default``),
for every command; a folder
with no library is an error unless ``skills init`` or ``--create``. Every read command
takes ``--json``. Commands live in one module per group: ``admin`` (init, reindex),
``skills`` (add, list, show, history, retire, outcomes, traces), ``learning`` (learn,
fetch, run, feedback), ``integrations`` (serve-mcp, export, import) and ``memory``
(procedures, prompt, plot, patterns, explain, forget, opt-out), ``governance``
(propose, approve, reject, promote, rollback, audit, diff, delete, review, actors,
policy, tools), ``rollout`` (evaluate, canary, canaries), ``uplift`` (uplift, holdout)
and ``console`` (ui, the review console); ``_common``
holds the shared options, ``open_library`` and the one error mapper.
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

__all__ = ["app", "load_tools", "main"]

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


def main() -> None:
    """Console-script entry point (``sys.path`` is left as it is)."""
    app()
