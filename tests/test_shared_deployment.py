"""The same library on both deployments: a folder, and PostgreSQL + a Chroma server.

Real servers (benchmarks/local_servers.py, started once per session by conftest.py), real processes
(forked from a preloaded forkserver, tests/processes.py), the real model. Each test taking
``deployment`` runs once per deployment.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings

import pytest
import sqlalchemy as sa

from skill_library.errors import IndexUnavailableError, RecordStoreUnavailableError
from skill_library.library import IndexRebuiltWarning, SkillLibrary
from skill_library.models import Skill
from tests.processes import worker_context

WORKERS = 8
# 8 writers contending on one counter: 150 writes each interleave as densely as 500 did (every
# write is its own transaction racing seven others), at a third of the time
WRITES_PER_WORKER = 150


def make_skill(name: str, when: str) -> Skill:
    code = f'def {name}(target: str) -> dict:\n    """{when}"""\n    return {{"target": target}}\n'
    return Skill.from_function(code, when=when)


def _join(processes, timeout: float = 300) -> list[int | None]:
    for process in processes:
        process.join(timeout=timeout)
    return [p.exitcode for p in processes]


def _outcome_worker(spec: dict, count: int, start: object) -> None:
    with SkillLibrary(**spec) as lib:  # feedback never loads the model or opens the index
        start.wait()  # type: ignore[attr-defined]
        for i in range(count):
            lib.feedback("water_plants", i % 2 == 0)


@pytest.mark.slow
def test_outcomes_from_eight_processes_are_exact(deployment, embedder):
    with deployment.open(embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"))
    context = worker_context()
    start = context.Event()
    workers = [context.Process(target=_outcome_worker, args=(deployment.spec, WRITES_PER_WORKER, start))
               for _ in range(WORKERS)]
    for w in workers:
        w.start()
    start.set()
    assert _join(workers) == [0] * WORKERS
    with deployment.open(embedder) as lib:
        skill = lib.get("water_plants")
        half = WORKERS * WRITES_PER_WORKER // 2
        assert (skill.successes, skill.failures) == (half, half)
        assert len(lib.outcomes("water_plants")) == WORKERS * WRITES_PER_WORKER


def _version_writer(spec: dict) -> None:
    """Add version after version of one skill, with outcomes in between, until killed."""
    from embed_service import process_embedder  # the session's model: no torch in this process

    with SkillLibrary(**spec, embedder=process_embedder()) as lib:
        n = 0
        while True:
            n += 1
            lib.add(make_skill("water_plants", f"water the plants in the garden, round {n}"))
            for i in range(5):
                lib.feedback("water_plants", i % 2 == 0)


@pytest.mark.slow
def test_a_writer_killed_mid_transaction_leaves_consistent_records_and_a_repaired_index(deployment, embedder):
    with deployment.open(embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"))
        process = worker_context().Process(target=_version_writer, args=(deployment.spec,))
        process.start()
        deadline = time.monotonic() + 240
        while lib.get("water_plants").version < 4 and time.monotonic() < deadline:
            assert process.is_alive()
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.join()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexRebuiltWarning)  # a kill between records and index
        with deployment.open(embedder) as lib:
            lib.context.store.check_integrity()
            history = lib.history("water_plants")
            assert [s.version for s in history] == list(range(1, len(history) + 1))
            assert [s.status for s in history] == ["superseded"] * (len(history) - 1) + ["active"]
            assert lib.get("water_plants").version == len(history)
            log = lib.outcomes("water_plants")
            for version in history:
                mine = [o for o in log if o["version"] == version.version]
                assert (version.successes, version.failures) == (
                    sum(o["success"] for o in mine), sum(not o["success"] for o in mine))
            assert lib.index.entries() == {e.id: e.version for e in lib._index.expected_entries()}
            # the killed writer's lock is gone: this writer gets it at once
            started = time.monotonic()
            assert lib.add(make_skill("water_plants", "water every plant in the garden")).status == "added"
            assert time.monotonic() - started < 30
            assert lib.fetch("water the garden plants", min_reliability=0)[0].skill.name == "water_plants"


# -- shared deployment only ------------------------------------------------------------
@pytest.mark.slow
def test_the_index_server_restarted_mid_run_fetch_reconnects_and_nothing_is_lost(shared, chroma_server, embedder):
    with shared.open(embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
        errors: list[BaseException] = []
        fetched = []
        stop = threading.Event()

        def client() -> None:
            try:
                while not stop.is_set():
                    fetched.append(lib.fetch("water my garden plants")[0].skill.name)
                    lib.feedback("water_plants", True)
            except BaseException as exc:  # noqa: B036 (reported below)
                errors.append(exc)

        thread = threading.Thread(target=client)
        thread.start()
        time.sleep(0.5)
        before = len(fetched)
        chroma_server.restart(pause=1.0)
        time.sleep(0.5)
        stop.set()
        thread.join(timeout=60)
        assert not errors, errors
        assert len(fetched) > before and set(fetched) == {"water_plants"}
        assert lib.get("water_plants").successes == 1 + len(fetched)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)  # the server kept the index
        with shared.open(embedder) as lib:
            assert lib.fetch("water my garden plants")[0].skill.name == "water_plants"


@pytest.mark.slow
def test_an_index_server_that_stays_away_is_one_clear_error_and_records_are_kept(
    shared, chroma_server, embedder, monkeypatch
):
    from skill_library import vector_index

    with shared.open(embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
        monkeypatch.setattr(vector_index, "INDEX_RECONNECT_SECONDS", 1.0)
        chroma_server.stop_process()
        try:
            with pytest.raises(IndexUnavailableError, match="cannot be reached") as caught:
                lib.fetch("water my garden plants")
            assert len(str(caught.value).splitlines()) == 1
            lib.feedback("water_plants", True)  # outcomes need only the records
        finally:
            chroma_server.start()
        assert lib.fetch("water my garden plants")[0].skill.successes == 2


def test_postgres_credentials_never_appear_in_messages(pg_server, chroma_server, embedder):
    url = pg_server.url("postgres").replace(pg_server.password, "wrong-secret-pw")
    with pytest.raises(RecordStoreUnavailableError) as caught:
        SkillLibrary(records=url, index=f"{chroma_server.url}/creds", embedder=embedder)
    assert "wrong-secret-pw" not in str(caught.value) and "***" in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


def test_a_non_loopback_index_needs_a_token(monkeypatch):
    from skill_library.library import _index_server
    from skill_library.vector_index import InsecureIndexError

    monkeypatch.delenv("SKILLS_INDEX_TOKEN", raising=False)
    with pytest.raises(InsecureIndexError, match="not on loopback and no token is set"):
        _index_server("http://10.1.2.3:8000", None)
    assert _index_server("http://10.1.2.3:8000", "tok").token == "tok"
    assert "tok" not in repr(_index_server("http://10.1.2.3:8000", "tok"))
    assert _index_server("http://127.0.0.1:8000/lib_a", None).collection == "lib_a"
    monkeypatch.setenv("SKILLS_INDEX_TOKEN", "from-env")
    assert _index_server("https://chroma.internal", None).token == "from-env"


def test_a_new_postgres_database_is_created_with_every_migration(shared, embedder):
    from skill_library.migrations import MIGRATIONS
    from skill_library.record_store import SCHEMA_VERSION

    assert len(MIGRATIONS) == SCHEMA_VERSION
    with shared.open(embedder) as lib:
        assert lib.list() == []
    engine = sa.create_engine(shared.spec["records"])
    try:
        with engine.connect() as conn:
            versions = [r[0] for r in conn.exec_driver_sql("SELECT version FROM schema_migrations ORDER BY version")]
    finally:
        engine.dispose()
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_an_old_folder_upgrades_in_place(tmp_path, embedder):
    """A folder from before the evidence and vector tables (schema 1, no migrations table)."""
    import sqlite3

    from skill_library.record_store import SCHEMA_VERSION

    folder = tmp_path / "old"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
    with sqlite3.connect(folder / "records.db") as conn:
        for table in ("skill_examples", "skill_profiles", "text_vectors", "schema_migrations"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE library_meta SET value = '1' WHERE key = 'schema_version'")
    with SkillLibrary(folder, embedder=embedder) as lib:
        assert lib.get("water_plants").successes == 1
        assert lib.fetch("water my garden plants")[0].skill.name == "water_plants"
    with sqlite3.connect(folder / "records.db") as conn:
        applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        version = conn.execute("SELECT value FROM library_meta WHERE key = 'schema_version'").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert applied == list(range(2, SCHEMA_VERSION + 1)) and version == str(SCHEMA_VERSION)
    assert {"skill_examples", "skill_profiles", "text_vectors"} <= tables


@pytest.mark.slow
def test_skills_migrate_copies_a_folder_into_the_shared_deployment(tmp_path, shared, embedder, monkeypatch):
    from typer.testing import CliRunner

    from skill_library.cli import app

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
        lib.add(make_skill("book_flight", "book a flight ticket to another city"))
        lib.add(make_skill("book_flight", "book a plane ticket to another city"))
        lib.feedback("book_flight", True)
        lib.feedback("book_flight", False)
        before = {s.name: (s.version, s.successes, s.failures) for s in lib.list()}
        log = lib.outcomes("book_flight")
    runner = CliRunner()
    args = ["migrate", "--to", shared.spec["records"], "--index-to", shared.spec["index"], "--dir", str(folder),
            "--json"]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert '"indexed": 2' in done.output
    again = runner.invoke(app, args)  # never into a store that holds skills
    assert again.exit_code == 1 and "already holds skills" in again.output
    assert shared.spec["records"].split("@")[0].split(":")[-1] not in again.output  # no password
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)
        with shared.open(embedder, policy=None) as lib:  # the policy copied with the records
            assert {s.name: (s.version, s.successes, s.failures) for s in lib.list()} == before
            assert lib.policy.auto_approve == "read_only"
            assert [e.name for e in lib.audit("water_plants")] == ["water_plants"]
            assert [(o["version"], o["success"]) for o in lib.outcomes("book_flight")] == [
                (o["version"], o["success"]) for o in log]
            assert len(lib.history("book_flight")) == 2
            assert lib.fetch("water my garden plants")[0].skill.name == "water_plants"
            lib.retire("water_plants")  # the copied audit log goes on numbering on PostgreSQL
    monkeypatch.setenv("SKILLS_RECORDS_URL", shared.spec["records"])
    monkeypatch.setenv("SKILLS_INDEX_URL", shared.spec["index"])
    listed = runner.invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert "water_plants" in listed.output and "book_flight" in listed.output


def test_migrate_copies_procedures_and_usage_patterns(tmp_path, shared, embedder):
    """The procedure and pattern tables (schema step 11) move with
    the skills; transition ids are kept (the drift marks name them) and numbering goes on."""
    from skill_library.deploy import copy_folder_library

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
        lib.procedures.add("Ann likes tea", "serving ann", "Offer tea first.", subject="ann")
        for n in range(8):
            lib.patterns.record_transition("ann", "browsing", "checkout" if n % 4 else "search", session=f"s{n}")
        procedures = [(p.name, p.version, p.description, p.confidence) for p in lib.procedures.list()]
        summary = lib.patterns.summary("ann")
    report = copy_folder_library(folder, shared.spec["records"], shared.spec["index"])
    assert report.rows["procedures"] == 1 and report.rows["pattern_transitions"] == 8
    with shared.open(embedder, policy=None) as lib:
        assert [(p.name, p.version, p.description, p.confidence) for p in lib.procedures.list()] == procedures
        assert lib.patterns.summary("ann") == summary
        recorded = lib.patterns.record_transition("ann", "browsing", "checkout", session="s9")
        assert recorded.recorded and recorded.id == 9  # the id sequence continues after the copy
    with pytest.raises(Exception, match="already holds"):
        copy_folder_library(folder, shared.spec["records"])


def test_migrate_copies_the_tombstones_and_the_aliases(tmp_path, shared, embedder):
    """Erasure's tombstones and redaction's aliases (schema step 11, on the records' metadata)
    move with the rest: a forgotten trace stays forgotten, an old name still resolves."""
    from skill_library import redaction
    from skill_library.deploy import copy_folder_library
    from skill_library.models import utc_now
    from skill_library.storage.privacy_tables import aliases_table, tombstones_table

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", "water the plants in the garden"), verified=True)
        with lib.context.store.transaction(write=True) as conn:  # what forget and redact_stored write
            conn.execute(tombstones_table.insert().values(tenant="default", digest="f" * 64, at=utc_now()))
            conn.execute(aliases_table.insert().values(tenant="default", alias="water_anns_plants",
                                                       name="water_plants", made_in="0", created_at=utc_now()))
    report = copy_folder_library(folder, shared.spec["records"])
    assert report.rows["forgotten_traces"] == 1 and report.rows["skill_aliases"] == 1
    with shared.open(embedder, policy=None) as lib:
        with pytest.warns(DeprecationWarning, match="renamed to 'water_plants'"):
            assert redaction.resolve(lib, "water_anns_plants") == "water_plants"
        with lib.context.store.transaction(write=False) as conn:
            assert conn.execute(sa.select(tombstones_table.c.digest)).scalars().all() == ["f" * 64]


def _store_of(spec: dict):
    from pathlib import Path

    from skill_library.record_store import SQLRecordStore

    return SQLRecordStore(spec["records"]) if "records" in spec else SQLRecordStore.in_folder(Path(spec["path"]))


def _version_adder(spec: dict, worker: int, count: int, start: object) -> None:
    store = _store_of(spec)  # the record store alone: no write lock around it
    try:
        start.wait()  # type: ignore[attr-defined]
        for n in range(count):
            store.add_version(make_skill("book_flight", f"book a flight, worker {worker} round {n}"))
    finally:
        store.close()


@pytest.mark.slow
def test_versions_of_one_new_name_from_four_processes_are_numbered_once_each(deployment):
    """Row locks (an existing name) and retries (the first version of a new name) on
    PostgreSQL; BEGIN IMMEDIATE on SQLite: no number twice, one active version, the
    pointer on the newest."""
    if deployment.kind == "folder":
        os.makedirs(deployment.spec["path"])
    _store_of(deployment.spec).close()
    context = worker_context()
    start = context.Event()
    workers = [context.Process(target=_version_adder, args=(deployment.spec, w, 10, start)) for w in range(4)]
    for w in workers:
        w.start()
    start.set()
    assert _join(workers) == [0] * 4
    store = _store_of(deployment.spec)
    try:
        history = store.history("book_flight")
        assert [s.version for s in history] == list(range(1, 41))
        assert [s.status for s in history].count("active") == 1 and history[-1].status == "active"
        assert store.get("book_flight").version == 40
    finally:
        store.close()
