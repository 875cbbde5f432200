"""The ``skills`` command line: each command is a thin mirror of one SkillLibrary call.

The library folder comes from ``--dir`` or ``SKILLS_DIR`` (default ``./.skills``); a folder
with no library is an error unless ``skills init`` or ``--create``. Every read command
takes ``--json``. Commands live in one module per group: ``admin`` (init, reindex),
``skills`` (add, list, show, history, retire, outcomes, traces), ``learning`` (learn,
fetch, run, feedback), ``integrations`` (serve-mcp, export, import) and ``memory``
(procedures, prompt, plot, patterns, explain, forget, opt-out); ``_common``
holds the shared options, ``open_library`` and the one error mapper.
"""

from __future__ import annotations

import typer

from skill_library.cli import admin, integrations, learning, memory, skills
from skill_library.cli._common import load_tools

__all__ = ["app", "load_tools", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Procedural memory for agents: learn, store, fetch and run verified skills.",
)
for _group in (admin, skills, learning, integrations, memory):
    _group.register(app)


def main() -> None:
    """Console-script entry point (``sys.path`` is left as it is)."""
    app()
