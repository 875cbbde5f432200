"""PostgreSQL write locks (issue 24): a timed-out attempt gives its connection back to the
pool with ``lock_timeout`` reset, and each tenant's writers have their own advisory key."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from skill_library import settings
from skill_library.errors import LockTimeoutError, WriteLockTimeoutError
from skill_library.record_store import SQLRecordStore
from skill_library.write_lock import ADVISORY_WRITE_LOCK_KEY, AdvisoryWriteLock, advisory_key

_DATABASES = iter(range(1, 10**6))


@pytest.fixture
def url(pg_server):
    return pg_server.create_database(f"locks_{next(_DATABASES)}")


def test_a_timed_out_lock_attempt_leaves_its_pooled_connection_reset(url):
    holder_engine = sa.create_engine(url)
    engine = sa.create_engine(url, pool_size=1, max_overflow=0)  # one connection: the one reused
    holder = AdvisoryWriteLock(holder_engine, key=ADVISORY_WRITE_LOCK_KEY)
    holder.acquire()
    try:
        waiter = AdvisoryWriteLock(engine, key=ADVISORY_WRITE_LOCK_KEY, timeout_seconds=0.2)
        with pytest.raises(WriteLockTimeoutError) as caught:
            waiter.acquire()
        assert isinstance(caught.value, LockTimeoutError) and "\n" not in str(caught.value)
        assert not waiter.try_acquire()
        with engine.connect() as conn:  # was: 200ms, on every later use of the connection
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "0"
    finally:
        holder.release()
    waiter.acquire()  # and once it is free, taken; released with the setting reset too
    waiter.release()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "0"
    engine.dispose()
    holder_engine.dispose()


def test_each_tenant_has_its_own_advisory_write_lock(url, monkeypatch):
    monkeypatch.setattr(settings, "WRITE_LOCK_TIMEOUT_SECONDS", 0.2)
    one, two = SQLRecordStore(url), SQLRecordStore(url)
    try:
        assert advisory_key("default") == ADVISORY_WRITE_LOCK_KEY  # as before tenants
        assert len({advisory_key(t) for t in ("default", "acme", "globex")}) == 3
        home = one.write_lock()
        home.acquire()
        try:
            acme = two.for_tenant("acme").write_lock()
            assert acme.try_acquire()  # another tenant's writer does not wait (was: one key for all)
            acme.release()
            with pytest.raises(WriteLockTimeoutError):  # the same tenant's writer does
                two.write_lock().acquire()
        finally:
            home.release()
    finally:
        one.close()
        two.close()


def test_a_write_that_loses_a_deadlock_is_retried_not_reported_unavailable(url):
    """A real deadlock (two transactions taking two rows in opposite orders): the write that
    PostgreSQL aborts is retried by the store's ``retrying`` and then succeeds. It used to
    surface as ``RecordStoreUnavailableError: ... deadlock detected``: the transaction names a
    driver's OperationalError "unavailable", and the retry looked only at driver errors (the
    cause of test_shared_deployment's intermittent four-writer failure)."""
    import threading
    import time

    store = SQLRecordStore(url)
    other = sa.create_engine(url)
    try:
        with other.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE probe (id int PRIMARY KEY, v int)")
            conn.exec_driver_sql("INSERT INTO probe VALUES (1, 0), (2, 0)")
        both_hold_one = threading.Barrier(2, timeout=30)
        attempts: list[int] = []

        def rival() -> None:
            with other.begin() as conn:
                conn.exec_driver_sql("UPDATE probe SET v = v + 10 WHERE id = 2")
                both_hold_one.wait()
                time.sleep(0.3)  # the store's write waits first, so its deadlock check fires first
                conn.exec_driver_sql("UPDATE probe SET v = v + 10 WHERE id = 1")

        def work(conn: sa.Connection) -> int:
            attempts.append(1)
            conn.exec_driver_sql("UPDATE probe SET v = v + 1 WHERE id = 1")
            if len(attempts) == 1:
                both_hold_one.wait()
            conn.exec_driver_sql("UPDATE probe SET v = v + 1 WHERE id = 2")
            return len(attempts)

        thread = threading.Thread(target=rival)
        thread.start()
        try:
            assert store.retrying(work) == 2  # aborted once by PostgreSQL, then written
        finally:
            thread.join(timeout=30)
        with other.connect() as conn:
            assert dict(conn.exec_driver_sql("SELECT id, v FROM probe").all()) == {1: 11, 2: 11}
    finally:
        store.close()
        other.dispose()
