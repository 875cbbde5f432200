"""The library's write lock: one writer of records-plus-index at a time, chosen by the store.

Every change that touches the vector index (add, learn, retire, reindex) runs under this
lock together with the record change it follows (:mod:`skill_library.index_sync`).
A folder library locks a file beside its records (``write.lock``, ``flock``: one host);
a PostgreSQL record store locks a session-level advisory lock on the database server,
which holds across hosts and is released by the server when the holder's connection
ends, including when its process is killed. Outcomes are not written under this lock:
they are single-row counter updates that the database serializes itself.

Every lock gives up after ``settings.WRITE_LOCK_TIMEOUT_SECONDS`` with
:class:`~skill_library.errors.WriteLockTimeoutError` (a :class:`LockTimeoutError`);
:meth:`WriteLock.try_acquire` never waits (readers use it: they never wait for a writer).
"""

from __future__ import annotations

import fcntl
import hashlib
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from skill_library import settings
from skill_library.errors import WriteLockTimeoutError
from skill_library.tenancy import DEFAULT_TENANT

if TYPE_CHECKING:
    #: skill_library.settings.WRITE_LOCK_TIMEOUT_SECONDS (read and written there)
    WRITE_LOCK_TIMEOUT_SECONDS: float

#: key of the default tenant's PostgreSQL advisory write lock (any constant 64-bit
#: integer): "SKILLWRT"
ADVISORY_WRITE_LOCK_KEY = 0x534B494C4C575254


def advisory_key(tenant: str) -> int:
    """The advisory lock key of ``tenant``'s writers on PostgreSQL: each tenant has its own
    (its records and its index collection are its own), so writers of different tenants
    never wait for each other; the default tenant keeps :data:`ADVISORY_WRITE_LOCK_KEY`."""
    if tenant == DEFAULT_TENANT:
        return ADVISORY_WRITE_LOCK_KEY
    digest = hashlib.blake2b(f"skill-library write lock:{tenant}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)  # pg_advisory_lock takes a signed bigint


class WriteLock(Protocol):
    """An exclusive lock across processes (and hosts, where the store spans hosts)."""

    def acquire(self) -> None:
        """Block until this process holds the lock, at most
        ``settings.WRITE_LOCK_TIMEOUT_SECONDS`` (then :class:`WriteLockTimeoutError`)."""

    def try_acquire(self) -> bool:
        """Take the lock if it is free now (True), never waiting (False: another holds it)."""

    def release(self) -> None:
        """Release the lock this process holds."""


def _timed_out(what: str, seconds: float) -> WriteLockTimeoutError:
    return WriteLockTimeoutError(
        f"another writer held the library's write lock ({what}) for over {seconds:g} s "
        "(settings.WRITE_LOCK_TIMEOUT_SECONDS): nothing was written; try again"
    )


class FileWriteLock:
    """``flock`` on a file: exclusive across the processes of one host."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._handle: IO[str] | None = None

    def _try(self, handle: IO[str]) -> bool:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._handle = handle
        return True

    def acquire(self) -> None:
        seconds = float(settings.WRITE_LOCK_TIMEOUT_SECONDS)
        deadline = time.monotonic() + seconds
        handle = open(self.path, "a+")
        try:
            while not self._try(handle):
                if time.monotonic() >= deadline:
                    raise _timed_out(str(self.path), seconds)
                time.sleep(settings.WRITE_LOCK_POLL_SECONDS)
        except BaseException:
            handle.close()
            raise

    def try_acquire(self) -> bool:
        handle = open(self.path, "a+")
        if self._try(handle):
            return True
        handle.close()
        return False

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
        seconds = float(settings.WRITE_LOCK_TIMEOUT_SECONDS)
        if not self._lock.acquire(timeout=seconds):
            raise _timed_out("this process's", seconds)

    def try_acquire(self) -> bool:
        return self._lock.acquire(blocking=False)

    def release(self) -> None:
        self._lock.release()


class AdvisoryWriteLock:
    """A PostgreSQL session advisory lock on a connection of its own (autocommit).

    Held from :meth:`acquire` to :meth:`release`, across the transactions in between; the
    server drops it when the connection ends, so a killed writer never leaves it held.
    The connection goes back to the pool with its settings reset, whether the lock was
    taken or the attempt timed out.
    """

    def __init__(self, engine: Any, key: int = ADVISORY_WRITE_LOCK_KEY,
                 timeout_seconds: float | None = None) -> None:
        self._engine = engine
        self.key = key
        #: None: ``settings.WRITE_LOCK_TIMEOUT_SECONDS`` when the lock is taken
        self.timeout_seconds = timeout_seconds
        self._conn: Any = None

    def _connect(self) -> Any:
        return self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    @staticmethod
    def _give_back(conn: Any) -> None:
        """Return ``conn`` to the pool with ``lock_timeout`` reset (or drop it)."""
        try:
            conn.exec_driver_sql("RESET lock_timeout")
        except Exception:  # the connection is broken: the pool must not reuse it
            try:
                conn.invalidate()
            except Exception:
                pass
        finally:
            conn.close()

    def acquire(self) -> None:
        import sqlalchemy as sa

        seconds = float(self.timeout_seconds if self.timeout_seconds is not None
                        else settings.WRITE_LOCK_TIMEOUT_SECONDS)
        conn = self._connect()
        try:
            conn.exec_driver_sql(f"SET lock_timeout = '{int(seconds * 1000)}ms'")
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({self.key})")
            conn.exec_driver_sql("RESET lock_timeout")  # the lock is held: later statements wait as usual
        except sa.exc.OperationalError as exc:
            self._give_back(conn)
            if "lock timeout" in str(exc):
                raise _timed_out(f"advisory lock {self.key:#x}", seconds) from None
            raise
        except BaseException:
            self._give_back(conn)
            raise
        self._conn = conn

    def try_acquire(self) -> bool:
        conn = self._connect()
        try:
            got = bool(conn.exec_driver_sql(f"SELECT pg_try_advisory_lock({self.key})").scalar())
        except BaseException:
            self._give_back(conn)
            raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.exec_driver_sql(f"SELECT pg_advisory_unlock({self.key})")
        except Exception:  # the connection is gone: the server released the lock with it
            pass
        self._give_back(conn)


settings.forward(__name__, "WRITE_LOCK_TIMEOUT_SECONDS")
