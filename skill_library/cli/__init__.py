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

import sys
from typing import Any

__all__ = ["app", "load_tools", "main"]


def main() -> None:
    """Console-script entry point (``sys.path`` is left as it is): ``skills fetch`` answered by
    a running ``skills serve`` without importing typer (skill_library.cli.quick), every other
    command by the typer app."""
    from skill_library.cli.quick import fetch_quickly

    if fetch_quickly(sys.argv[1:]):
        return
    from skill_library.cli.root import app

    app()


def __getattr__(name: str) -> Any:
    """``app`` and ``load_tools`` (skill_library.cli.root), imported on first use."""
    if name in ("app", "load_tools"):
        from skill_library.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'skill_library.cli' has no attribute {name!r}")
