"""The PostgreSQL write lock: a session advisory lock on a connection of its own, the
storage primitive behind :mod:`skill_library.write_lock`'s lock of a shared deployment
(one key per tenant: :func:`skill_library.write_lock.advisory_key`)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from skill_library import settings
from skill_library.write_lock import ADVISORY_WRITE_LOCK_KEY, _timed_out


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
