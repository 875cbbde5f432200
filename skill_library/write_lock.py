"""The library's write lock: one writer of records-plus-index at a time, chosen by the store.

Every change that touches the vector index (add, learn, retire, reindex) runs under this
lock together with the record change it follows (:mod:`skill_library.index_sync`).
A folder library locks a file beside its records (``write.lock``, ``flock``: one host);
a PostgreSQL record store locks a session-level advisory lock on the database server,
which holds across hosts and is released by the server when the holder's connection
ends, including when its process is killed (its SQL is a storage primitive:
:class:`skill_library.storage.advisory_lock.AdvisoryWriteLock`, also named here).
Outcomes are not written under this lock: they are single-row counter updates that the
database serializes itself.

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


def __getattr__(name: str) -> Any:
    # the PostgreSQL lock is a storage primitive (its SQL lives in skill_library/storage/);
    # it is named here too, beside the other locks, without importing storage at start-up
    if name == "AdvisoryWriteLock":
        from skill_library.storage.advisory_lock import AdvisoryWriteLock

        return AdvisoryWriteLock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


settings.forward(__name__, "WRITE_LOCK_TIMEOUT_SECONDS")
