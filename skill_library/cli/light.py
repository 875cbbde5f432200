"""The read commands' light path: ``skills list``, ``history``, ``outcomes`` and ``traces``
(their text form) answered from a library folder's SQLite records with the standard library
alone (``skill_library.storage.light_reads``), without importing SQLAlchemy, pydantic,
governance or the facade, so such a command costs little more than ``skills --help``.

:func:`read` answers ``None`` whenever the library must be opened the usual way: a shared
deployment (``--records`` / ``--index``), an ``--actor`` to check, a folder whose records
are missing, damaged or of another schema version, a tenant never opened, an unknown skill
name (whose message the full path words), or any surprise in a row. The full path then runs
as before; tests/test_cli_light.py checks that both print the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from skill_library.cli._common import DEFAULT_DIR, deployment
from skill_library.tenancy import DEFAULT_TENANT, tenant_problem

if TYPE_CHECKING:
    from skill_library.storage.light_reads import FolderReader

T = TypeVar("T")


def read(directory: Path | None, query: "Callable[[FolderReader], T | None]") -> T | None:
    """``query`` on a read-only view of the folder's records, or None: open the library."""
    if deployment.get("records") or deployment.get("index") or deployment.get("actor"):
        return None
    tenant = deployment.get("tenant") or DEFAULT_TENANT
    if tenant_problem(tenant) is not None:
        return None  # the full path reports it
    import sqlite3

    from skill_library.storage.light_reads import open_reader

    try:
        with open_reader(directory or DEFAULT_DIR, tenant) as reader:
            return None if reader is None else query(reader)
    except (sqlite3.Error, ValueError, KeyError, TypeError, AttributeError):
        return None  # a row this path does not expect: the full path reads it
