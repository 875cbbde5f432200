"""The part of the ``skills`` command line that needs no typer: the settings every command
shares (the default folder, the deployment's environment names), the one console, what
``skills fetch`` prints, and fetch's quick path.

**The quick path** (:func:`fetch_quickly`): ``skills fetch TASK [-k N] [--dir DIR] [--json]``
with a ``skills serve`` of that library running is answered before typer is imported. This
version of typer validates every option with pydantic (``typer._adapters``), so any typer
command costs pydantic's import (~0.15 s here) on top of typer's own; a served fetch is
~0.08 s of work, the rest is start-up. The quick path takes only that plain form: any other
option, a global option, a shared deployment (``SKILLS_RECORDS_URL`` / ``SKILLS_INDEX_URL``),
a tenant name that is not valid, an empty task, a ``k`` that is not a positive integer, no
server, or any answer but a successful one returns False, and the full command runs (it
asks the server again and words every error as always). Both print with
:func:`print_fetched`, so they print the same (tests/test_served.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

#: the library folder when neither --dir nor SKILLS_DIR is given
DEFAULT_DIR = Path(".skills")
#: the environment setting of the library folder (also --dir)
DIR_ENV = "SKILLS_DIR"
#: environment settings of a shared deployment (also the root options --records / --index)
RECORDS_URL_ENV = "SKILLS_RECORDS_URL"
INDEX_URL_ENV = "SKILLS_INDEX_URL"

#: every command prints here; nothing printed is read as rich markup
console = Console(markup=False)


def emit(data: Any) -> None:
    """Print ``data`` as indented JSON."""
    print(json.dumps(data, indent=2, default=str), flush=True)


def print_fetched(answer: dict[str, Any], as_json: bool) -> None:
    """What fetch found (``skill_library.served.fetch_answer``'s JSON), as JSON or a table."""
    from rich.table import Table

    matches = answer["matches"]
    if as_json:
        emit(matches)
        return
    if not matches:
        console.print("no skill qualifies")
        return
    flags = [f for f in ("abstained", "ambiguous") if answer.get(f)]
    if flags:  # the abstention rules (skill_library.abstention)
        console.print(f"{' and '.join(flags)}: {answer.get('reason') or ''}", highlight=False)
    width = max(len("name"), *(len(m["name"]) for m in matches))
    table = Table()
    table.add_column("name", no_wrap=True, min_width=width, overflow="ignore")
    for title in ("version", "similarity", "reliability", "when"):
        table.add_column(title, overflow="fold")
    for m in matches:
        table.add_row(
            m["name"], str(m["version"]), "prefetch" if m.get("prefetch") else f"{m['similarity']:.3f}",
            f"{m['reliability']:.2f}", m["when"],
        )
    console.print(table, width=None if console.is_terminal else max(console.width, width + 60))


def fetch_message(task: str, k: int, *, tenant: str | None, **options: Any) -> dict[str, Any]:
    """The request ``skills fetch`` sends a ``skills serve`` (skill_library.served)."""
    names = ("min_reliability", "min_similarity", "tools", "subject", "state", "session", "cohort")
    return {"op": "fetch", "task": task, "k": k, **{n: options.get(n) for n in names}, "tenant": tenant}


def _plain_fetch(args: Sequence[str]) -> tuple[str, int, Path | None, bool] | None:
    """``(task, k, dir, as_json)`` of ``fetch TASK [-k N] [--dir DIR] [--json]``, else None."""
    if not args or args[0] != "fetch":
        return None
    task: str | None = None
    k, directory, as_json = 2, None, False
    rest = list(args[1:])
    while rest:
        word = rest.pop(0)
        if word in ("-k", "--dir") and rest:
            value = rest.pop(0)
            if word == "--dir":
                directory = Path(value)
            elif value.isdigit() and int(value) >= 1:
                k = int(value)
            else:
                return None
        elif word == "--json":
            as_json = True
        elif word.startswith("-") or task is not None:
            return None
        else:
            task = word
    if task is None or not task.strip():
        return None
    return task, k, directory, as_json


def fetch_quickly(args: Sequence[str]) -> bool:
    """Answer ``skills fetch`` from a running ``skills serve`` without typer (module doc);
    False: nothing was printed, run the full command."""
    plain = _plain_fetch(args)
    if plain is None or os.environ.get(RECORDS_URL_ENV) or os.environ.get(INDEX_URL_ENV):
        return False
    from skill_library.served import SOCKET_ENV, deployment_key, request, socket_path
    from skill_library.tenancy import TENANT_ENV, tenant_problem

    task, k, directory, as_json = plain
    tenant = os.environ.get(TENANT_ENV)
    if tenant is not None and (not tenant or tenant_problem(tenant) is not None):
        return False
    folder = directory or (Path(os.environ[DIR_ENV]) if os.environ.get(DIR_ENV) else DEFAULT_DIR)
    path = socket_path(folder)
    if path is None or (not os.environ.get(SOCKET_ENV) and not path.exists()):
        return False
    message = fetch_message(task, k, tenant=tenant)
    message["deployment"] = deployment_key(folder)
    answer = request(path, message)
    if answer is None or not answer.get("ok"):
        return False
    print_fetched(answer, as_json)
    return True
