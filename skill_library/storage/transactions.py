"""One connection, one transaction, committed on success, database errors named."""

from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from skill_library.errors import SkillLibraryError

#: a database error -> the library's named error for it, or None (dialects.named_error)
#: (RecordStoreCorruptError, RecordStoreUnavailableError, LockTimeoutError)
ErrorNamer = Callable[[BaseException], SkillLibraryError | None]


class Transaction:
    """Context manager: one connection from ``connect(write)``, one transaction, committed
    on success.

    A database error that ``named_error`` names (a damaged file, an unreachable server,
    a lock held past its timeout)
    is raised as that error.
    """

    def __init__(self, connect: Callable[[bool], Connection], named_error: ErrorNamer, *, write: bool) -> None:
        self._connect = connect
        self._named_error = named_error
        self._write = write

    def __enter__(self) -> Connection:
        self._conn = self._connect(self._write)
        try:
            self._tx = self._conn.begin()
        except sa.exc.DatabaseError as exc:
            self._conn.close()
            corrupt = self._named_error(exc)
            if corrupt is None:
                raise
            raise corrupt from exc
        return self._conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None:
                self._tx.commit()
            else:
                self._tx.rollback()
        except sa.exc.DatabaseError as error:
            corrupt = self._named_error(error)
            if corrupt is None:
                raise
            raise corrupt from error
        finally:
            self._conn.close()
        if isinstance(exc, sa.exc.DatabaseError):
            corrupt = self._named_error(exc)
            if corrupt is not None:
                raise corrupt from exc

__all__ = ["Connection", "ErrorNamer", "Transaction"]
