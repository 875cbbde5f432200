"""What differs between SQLite and PostgreSQL: engine setup, error mapping, retries.

SQLite connections run in WAL mode with a busy timeout, and a writer takes the lock at
``BEGIN``; a damaged or foreign file becomes :class:`RecordStoreCorruptError`. On
PostgreSQL an unreachable server becomes :class:`RecordStoreUnavailableError`, and a
write transaction that lost a race with another writer is retried.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from skill_library import settings
from skill_library.errors import (
    LockTimeoutError,
    RecordStoreCorruptError,
    RecordStoreUnavailableError,
    RecordStoreURLError,
)

#: a 0-byte records file is re-checked this often, this far apart, before it is an error
EMPTY_FILE_CHECKS = 5
EMPTY_FILE_WAIT_SECONDS = 0.1
#: how often a PostgreSQL transaction that lost a race (unique violation, deadlock,
#: serialization failure) is retried before the error is raised
PG_CONFLICT_RETRIES = 5
#: SQLSTATEs of the races above
_PG_RETRY_STATES = {"23505", "40001", "40P01"}
#: SQLite result codes that mean the file is damaged or not a database at all
_SQLITE_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
#: SQLite result codes of a lock another connection held past the busy timeout
_SQLITE_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
#: PostgreSQL's SQLSTATE of a lock not granted within ``lock_timeout``
_PG_LOCK_NOT_AVAILABLE = "55P03"


def create_engine(url: str) -> Engine:
    """The engine for ``url``; on SQLite its connections are set up by :func:`enable_sqlite_wal`.
    A URL that cannot be parsed: :class:`RecordStoreURLError`."""
    try:
        engine = sa.create_engine(url, future=True, pool_pre_ping=True)
    except sa.exc.ArgumentError as exc:
        raise RecordStoreURLError(str(exc)) from exc
    if engine.dialect.name == "sqlite":
        enable_sqlite_wal(engine)
    return engine


def enable_sqlite_wal(engine: Engine) -> None:
    """WAL mode, busy timeout and foreign keys on each new connection; writers ``BEGIN IMMEDIATE``."""
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy emit BEGIN itself (below), so writers take the lock up front.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(settings.SQLITE_BUSY_TIMEOUT_MS)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")


def stays_empty(path: Path) -> bool:
    """True when ``path`` has 0 bytes and keeps them for a moment: another process that is
    creating the library writes the header within milliseconds of creating the file."""
    for _ in range(EMPTY_FILE_CHECKS):
        if path.stat().st_size:
            return False
        time.sleep(EMPTY_FILE_WAIT_SECONDS)
    return path.stat().st_size == 0


def named_error(
    exc: BaseException, *, postgres: bool, url: str, path: Path | None
) -> RecordStoreCorruptError | RecordStoreUnavailableError | LockTimeoutError | None:
    """The named error for a damaged file, an unreachable server or a lock held past its
    timeout, or None for any other database error (``url`` with its password masked;
    ``path`` of a SQLite file)."""
    orig = getattr(exc, "orig", exc)
    where = path if path is not None else url
    if postgres and getattr(orig, "sqlstate", None) == _PG_LOCK_NOT_AVAILABLE:
        return LockTimeoutError(f"the record store {url} kept a lock held past lock_timeout: nothing was "
                                "written; try again")
    if not postgres and getattr(orig, "sqlite_errorcode", None) in _SQLITE_BUSY_CODES:
        return LockTimeoutError(
            f"the records in {where} stayed locked by another writer for over "
            f"{settings.SQLITE_BUSY_TIMEOUT_MS / 1000:g} s (settings.SQLITE_BUSY_TIMEOUT_MS; "
            f"SQLite: {str(orig).strip() or 'database is locked'}): nothing was written; try again"
        )
    if postgres and (
        isinstance(exc, sa.exc.OperationalError) or getattr(exc, "connection_invalidated", False)
    ):
        first = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        return RecordStoreUnavailableError(f"the record store {url} is unavailable: {first}")
    if getattr(orig, "sqlite_errorcode", None) in _SQLITE_CORRUPT_CODES:
        problem = "is not a SQLite database" if "not a database" in str(orig) else "is damaged"
        return RecordStoreCorruptError(where, f"{problem} ({orig})")
    return None


def retrying(
    write: Callable[[], AbstractContextManager[Connection]],
    work: Callable[[Connection], Any],
    *,
    postgres: bool,
) -> Any:
    """``work(conn)`` in one ``write()`` transaction; on PostgreSQL, retried when it lost a
    race with another writer (two first versions of one new name: unique violation;
    a deadlock) up to :data:`PG_CONFLICT_RETRIES` times."""
    for attempt in range(PG_CONFLICT_RETRIES + 1):
        try:
            with write() as conn:
                return work(conn)
        except (sa.exc.DBAPIError, RecordStoreUnavailableError) as exc:
            # a deadlock is an OperationalError, which the transaction names "unavailable"
            # (raised from the driver's error): the race is read from the cause
            driver = exc if isinstance(exc, sa.exc.DBAPIError) else exc.__cause__
            state = getattr(getattr(driver, "orig", None), "sqlstate", None)
            if not postgres or state not in _PG_RETRY_STATES or attempt == PG_CONFLICT_RETRIES:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


settings.forward(__name__, "IN_QUERY_BATCH", "SQLITE_BUSY_TIMEOUT_MS")
