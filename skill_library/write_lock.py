"""The library's write lock: one writer of records-plus-index at a time, chosen by the store.

Every change that touches the vector index (add, learn, retire, reindex) runs under this
lock together with the record change it follows (:mod:`skill_library.index_sync`).
A folder library locks a file beside its records (``write.lock``, ``flock``: one host);
a PostgreSQL record store locks a session-level advisory lock on the database server,
which holds across hosts and is released by the server when the holder's connection
ends, including when its process is killed. Outcomes are not written under this lock:
they are single-row counter updates that the database serializes itself.
"""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path
from typing import IO, Any, Protocol

from skill_library.errors import WriteLockTimeoutError

#: how long a writer waits for another one's write lock before giving up
WRITE_LOCK_TIMEOUT_SECONDS = 120
#: key of the PostgreSQL advisory write lock (any constant 64-bit integer): "SKILLWRT"
ADVISORY_WRITE_LOCK_KEY = 0x534B494C4C575254


class WriteLock(Protocol):
    """An exclusive lock across processes (and hosts, where the store spans hosts)."""

    def acquire(self) -> None:
        """Block until this process holds the lock (raise :class:`WriteLockTimeoutError`)."""

    def release(self) -> None:
        """Release the lock this process holds."""


class FileWriteLock:
    """``flock`` on a file: exclusive across the processes of one host."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        handle = open(self.path, "a+")
        fcntl.flock(handle, fcntl.LOCK_EX)
        self._handle = handle

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


class ThreadWriteLock:
    """A lock for a store only this process can see (an in-memory database)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self) -> None:
        self._lock.acquire()

    def release(self) -> None:
        self._lock.release()


class AdvisoryWriteLock:
    """A PostgreSQL session advisory lock on a connection of its own (autocommit).

    Held from :meth:`acquire` to :meth:`release`, across the transactions in between; the
    server drops it when the connection ends, so a killed writer never leaves it held.
    """

    def __init__(self, engine: Any, key: int = ADVISORY_WRITE_LOCK_KEY,
                 timeout_seconds: float = WRITE_LOCK_TIMEOUT_SECONDS) -> None:
        self._engine = engine
        self.key = key
        self.timeout_seconds = timeout_seconds
        self._conn: Any = None

    def acquire(self) -> None:
        import sqlalchemy as sa

        conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            conn.exec_driver_sql(f"SET lock_timeout = '{int(self.timeout_seconds * 1000)}ms'")
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({self.key})")
        except sa.exc.OperationalError as exc:
            conn.close()
            if "lock timeout" in str(exc):
                raise WriteLockTimeoutError(
                    f"another writer held the library's write lock for over {self.timeout_seconds:g} s "
                    "(WRITE_LOCK_TIMEOUT_SECONDS)"
                ) from None
            raise
        self._conn = conn

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.exec_driver_sql(f"SELECT pg_advisory_unlock({self.key})")
            conn.exec_driver_sql("RESET lock_timeout")  # the pooled connection is reused
        except Exception:  # the connection is gone: the server released the lock with it
            pass
        finally:
            conn.close()
