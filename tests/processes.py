"""Other processes on a library folder, for the concurrency tests (issue 24): a writer that
adds one skill and exits, and holders of the write lock or the records' SQLite lock."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_ADD = """
import sys
from skill_library.library import SkillLibrary
from skill_library.models import Skill
from tests.embed_service import process_embedder  # the session's model, no torch here
folder, name, when = sys.argv[1:4]
code = f'def {name}(target: str) -> str:\\n    return target\\n'
with SkillLibrary(folder, embedder=process_embedder()) as lib:
    print(lib.add(Skill.from_function(code, when=when), verified=True).status, flush=True)
"""

#: holds the folder's write lock; with "bump", as a writer at work does: generation bumped,
#: the index not marked yet (a revision generalizing under the lock)
_HOLD_WRITE_LOCK = """
import sys
from skill_library.record_store import SQLRecordStore
folder, mode = sys.argv[1:3]
store = SQLRecordStore.in_folder(folder, create=False)
lock = store.write_lock()
lock.acquire()
if mode == "bump":
    store.bump_index_generation()
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
lock.release()
"""

#: holds the records' SQLite write lock (BEGIN IMMEDIATE), as a long write transaction does
_HOLD_SQLITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def add_in_another_process(folder: Path, name: str, when: str) -> None:
    """Another process opens the library in ``folder``, adds skill ``name``, and exits (it
    embeds with the session's model, tests/embed_service.py)."""
    done = subprocess.run([sys.executable, "-c", _ADD, str(folder), name, when], env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "added", done.stderr[-2000:]


class Holder:
    """A process holding a lock until :meth:`release` (a context manager)."""

    def __init__(self, script: str, *args: str) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", script, *args], env=_env(), text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if line != "held":
            self._proc.kill()
            raise AssertionError(f"the lock holder did not start: {self._proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]

    def release(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            self._proc.wait(timeout=30)

    def __enter__(self) -> "Holder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold_write_lock(folder: Path, *, bump: bool = False) -> Holder:
    """Another process takes the folder's ``write.lock`` (``bump``: and bumps the index
    generation first, as a writer does before it writes the index)."""
    return Holder(_HOLD_WRITE_LOCK, str(folder), "bump" if bump else "hold")


def hold_sqlite_lock(records: Path) -> Holder:
    """Another process holds the SQLite write lock of ``records`` (BEGIN IMMEDIATE)."""
    return Holder(_HOLD_SQLITE, str(records))


# -- worker processes: forked from one clean, preloaded server per pytest process ---------------
#: what a worker process of the concurrency tests imports: the forkserver imports it once per
#: pytest process, instead of every spawned worker paying about a CPU second for it
PRELOAD = ["pytest", "numpy", "sqlalchemy", "sqlalchemy.dialects.sqlite", "sqlalchemy.dialects.postgresql",
           "psycopg", "chromadb", "skill_library.library", "skill_library.record_store",
           "skill_library.vector_index", "skill_library.chroma_embedding", "skill_library.governance.workflow",
           "skill_library.learning", "skill_library.ingest", "skill_library.fetching", "skill_library.execution",
           "skill_library.induction.learner", "sandbox.host"]


def _in_environ(environ: dict[str, str], target: Any, args: tuple, kwargs: dict) -> Any:
    os.environ.clear()
    os.environ.update(environ)
    return target(*args, **kwargs)


_forkserver = multiprocessing.get_context("forkserver")


class WorkerProcess(_forkserver.Process):  # type: ignore[name-defined,misc]
    """A forkserver process that runs ``target`` in the environment this process had when
    it was made (as a spawned one would; a forked one would have the server's)."""

    def __init__(self, *, target: Any, args: tuple = (), kwargs: dict | None = None, **options: Any) -> None:
        super().__init__(target=_in_environ, args=(dict(os.environ), target, tuple(args), kwargs or {}), **options)


class WorkerContext:
    """``multiprocessing.get_context("spawn")`` for the concurrency tests, cheaper: each worker
    is forked from a forkserver (a fresh interpreter started once per pytest process, holding
    no library, lock, connection or thread) that imported :data:`PRELOAD` already. A worker is
    still its own process with its own memory, record store connections, index client and
    locks, its arguments pickled as for spawn; it starts in milliseconds, not a second."""

    Process = WorkerProcess

    def __getattr__(self, name: str) -> Any:  # Event, Queue, ... of the forkserver context
        return getattr(_forkserver, name)


def worker_context() -> WorkerContext:
    _forkserver.set_forkserver_preload(PRELOAD)
    return WorkerContext()
