"""Lock discipline (issue 24, defects 6 and 8): readers never wait for the write lock,
every lock gives up after its timeout with :class:`LockTimeoutError`, and a SQLite lock
held past its busy timeout is one too, which the CLI prints as one line.

Another process holds the lock in each test (tests/processes.py), as in the reproductions.
"""

from __future__ import annotations

import threading
import time

import pytest
from typer.testing import CliRunner

from skill_library import LockTimeoutError, settings
from skill_library.cli import app
from skill_library.errors import WriteLockTimeoutError
from skill_library.governance import Policy
from skill_library.library import SkillLibrary
from tests.processes import add_in_another_process, hold_sqlite_lock, hold_write_lock
from tests.test_tenant_views import skill

HOME_WHEN = "water the plants in the garden"
NEW_WHEN = "book a flight ticket to another city"
#: what "milliseconds, not seconds" allows on a loaded 2-core machine
FAST_SECONDS = 1.0
#: a holder that outlives this releases its lock (so that a waiting call ends, and fails)
HOLD_SECONDS = 5.0


@pytest.fixture
def lib(tmp_path, embedder):
    library = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"))
    library.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
    assert [m.skill.name for m in library.fetch(HOME_WHEN, k=1)] == ["water_plants"]
    yield library
    library.close()


def timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


@pytest.mark.slow
def test_fetch_that_must_reopen_does_not_wait_for_a_held_write_lock(lib):
    add_in_another_process(lib.path, "book_flight", NEW_WHEN)  # this process must reopen
    with hold_write_lock(lib.path) as holder:
        threading.Timer(HOLD_SECONDS, holder.release).start()
        matches, seconds = timed(lambda: lib.fetch(NEW_WHEN, k=1))
    assert [m.skill.name for m in matches] == ["book_flight"]
    assert seconds < FAST_SECONDS, f"fetch took {seconds * 1000:.0f} ms under a held write lock"


def test_fetch_during_another_processes_write_reads_the_index_as_it_was(lib):
    with hold_write_lock(lib.path, bump=True) as holder:  # a writer at work: generation bumped
        threading.Timer(HOLD_SECONDS, holder.release).start()
        matches, seconds = timed(lambda: lib.fetch(HOME_WHEN, k=1))
    assert [m.skill.name for m in matches] == ["water_plants"]
    assert seconds < FAST_SECONDS, f"fetch took {seconds * 1000:.0f} ms under a held write lock"


def test_a_writer_gives_up_after_the_write_lock_timeout(lib, monkeypatch):
    monkeypatch.setattr(settings, "WRITE_LOCK_TIMEOUT_SECONDS", 0.5)
    with hold_write_lock(lib.path) as holder:
        threading.Timer(HOLD_SECONDS, holder.release).start()
        start = time.perf_counter()
        with pytest.raises(WriteLockTimeoutError) as caught:
            lib.add(skill("book_flight", NEW_WHEN, "home"), verified=True)
        seconds = time.perf_counter() - start
    assert isinstance(caught.value, LockTimeoutError) and isinstance(caught.value, TimeoutError)
    message = str(caught.value)
    assert "\n" not in message and "WRITE_LOCK_TIMEOUT_SECONDS" in message and "0.5 s" in message
    assert 0.5 <= seconds < 0.5 + FAST_SECONDS * 3
    assert lib.add(skill("book_flight", NEW_WHEN, "home"), verified=True).status == "added"  # released


@pytest.fixture
def quick_sqlite_timeout(monkeypatch):
    monkeypatch.setattr(settings, "SQLITE_BUSY_TIMEOUT_MS", 300)  # read by each new connection


def test_a_sqlite_lock_held_past_the_busy_timeout_is_lock_timeout_error(tmp_path, embedder, quick_sqlite_timeout):
    with SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        lib.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        with hold_sqlite_lock(lib.path / "records.db"):
            with pytest.raises(LockTimeoutError) as caught:  # was: sqlalchemy OperationalError
                lib.feedback("water_plants", True)
            assert lib.get("water_plants").successes == 1  # reads go on (WAL)
        message = str(caught.value)
        assert "\n" not in message and "database is locked" in message and "SQLITE_BUSY_TIMEOUT_MS" in message
        assert lib.feedback("water_plants", True).successes == 2


def test_the_cli_prints_a_lock_timeout_as_one_line(tmp_path, embedder, quick_sqlite_timeout):
    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        lib.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
    with hold_sqlite_lock(folder / "records.db"):
        result = CliRunner().invoke(app, ["feedback", "water_plants", "--success"], env={"SKILLS_DIR": str(folder)})
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "database is locked" in lines[0], result.output
