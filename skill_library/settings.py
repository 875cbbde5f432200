"""The library's tunable settings, defined once: every module reads them here, at use.

Change one for the whole process by assigning it here (``skill_library.settings.ADD_BATCH
= 64``). The names the library used to define in other modules (``library.ADD_BATCH``,
``ingest.ADD_BATCH``, ``library.LEARN_BATCH``, ``record_store.IN_QUERY_BATCH``,
``storage.dialects.IN_QUERY_BATCH``, ``write_lock.WRITE_LOCK_TIMEOUT_SECONDS``, ...)
stay readable and writable there and read and write this module (:func:`forward`): a copy
that nothing reads can no longer be set by mistake.

Lock timeouts: every lock the library takes gives up after a bounded wait with
:class:`~skill_library.errors.LockTimeoutError` (docs/deployment.md#locks-and-timeouts).
"""

from __future__ import annotations

import sys
import types
from typing import Any

# -- batches ---------------------------------------------------------------------------
#: skills embedded and written to the index per batch in ``SkillLibrary.add_many``
ADD_BATCH = 256
#: ``learn_many`` embeds and admits this many traces at a time
LEARN_BATCH = 64
#: example traces a revision replays in the sandbox: the new trace and a diverse sample of
#: the workflow's others (different tool paths, lengths and parameter shapes first); every
#: trace still counts as evidence, and ``SkillLibrary.verify_all`` replays them all, off the
#: write path (skill_library.induction.revision)
REVISION_SAMPLE = 8
#: names per ``IN (...)`` query: far below SQLite's limit on bound variables (32,766)
IN_QUERY_BATCH = 500

# -- admission -------------------------------------------------------------------------
#: a new skill whose ``when`` is more cosine-similar than this to another skill's is a
#: duplicate of it (``add``, ``add_many``, ``learn``)
DUPLICATE_SIMILARITY = 0.9

# -- locks -----------------------------------------------------------------------------
#: how long a writer waits for another one's write lock (``write.lock`` in a folder, the
#: advisory lock on PostgreSQL) before :class:`LockTimeoutError`
WRITE_LOCK_TIMEOUT_SECONDS = 120.0
#: how often a writer waiting for a folder's ``write.lock`` tries it again
WRITE_LOCK_POLL_SECONDS = 0.01
#: how long a SQLite connection waits for another one's database lock before
#: :class:`LockTimeoutError` (SQLite's ``busy_timeout``)
SQLITE_BUSY_TIMEOUT_MS = 60_000

#: the settings, by name (what :func:`forward` accepts)
NAMES = frozenset({
    "ADD_BATCH", "LEARN_BATCH", "REVISION_SAMPLE", "IN_QUERY_BATCH", "WRITE_LOCK_TIMEOUT_SECONDS",
    "WRITE_LOCK_POLL_SECONDS", "SQLITE_BUSY_TIMEOUT_MS", "DUPLICATE_SIMILARITY",
})

def _setting(name: str) -> property:
    """A module attribute that is ``skill_library.settings.<name>`` (read and written)."""
    here = sys.modules[__name__]

    def read(_module: types.ModuleType) -> Any:
        return getattr(here, name)

    def write(_module: types.ModuleType, value: Any) -> None:
        setattr(here, name, value)

    return property(read, write, doc=f"skill_library.settings.{name}")


def forward(module_name: str, *names: str) -> None:
    """Make ``names`` in module ``module_name`` (where they used to be defined) read and
    write this module's settings of the same names."""
    unknown = set(names) - NAMES
    if unknown:
        raise ValueError(f"not settings: {sorted(unknown)}")
    module = sys.modules[module_name]
    for name in names:
        module.__dict__.pop(name, None)
    base = type(module)
    module.__class__ = type(f"{base.__name__}", (base,), {name: _setting(name) for name in names})
