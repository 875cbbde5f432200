"""Schema step 11 (memory and privacy): the pattern, reliability and procedure tables and
erasure's and redaction's tables, created by a numbered migration (they were created on
first use before it). A store as schema 10 left it upgrades in place, on a SQLite file and
on a PostgreSQL database, and keeps the rows of those tables it had already created.

The schema-10 store is made by today's code and taken back to schema 10: the step's tables
dropped (or, for the tables a schema-10 library had created on first use, kept with their
rows, in the same form: the definitions did not change), its migration row deleted and
``schema_version`` set to 10, which is what a schema-10 library left behind."""

from __future__ import annotations

import os
from itertools import count

import pytest
import sqlalchemy as sa

from skill_library import migrations
from skill_library.models import utc_now
from skill_library.record_store import SCHEMA_VERSION, SQLRecordStore
from skill_library.storage.pattern_tables import TENANT_TABLES as PATTERN_TABLES
from skill_library.storage.pattern_tables import opt_outs_table, transitions_table
from skill_library.storage.privacy_tables import PRIVACY_TABLES, aliases_table, tombstones_table

_DATABASES = count(1)
STEP_11 = {t.name for t in (*PATTERN_TABLES, *PRIVACY_TABLES)}


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'records.db'}"
    pg = request.getfixturevalue("pg_server")
    return pg.create_database(f"migrations{os.getpid()}_{next(_DATABASES)}")


def _as_schema_10(url: str, *, keep: frozenset[str] = frozenset()) -> None:
    """Take the store at ``url`` back to schema 10, keeping the step-11 tables in ``keep``."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for name in sorted(STEP_11 - keep):
                conn.exec_driver_sql(f'DROP TABLE "{name}"')
            conn.execute(migrations.migrations_table.delete().where(migrations.migrations_table.c.version == 11))
            conn.exec_driver_sql("UPDATE library_meta SET value = '10' WHERE key = 'schema_version'")
    finally:
        engine.dispose()


def _state(url: str) -> tuple[set[str], list[int], str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            applied = [r[0] for r in conn.execute(sa.select(migrations.migrations_table.c.version)
                                                  .order_by(migrations.migrations_table.c.version))]
            version = conn.exec_driver_sql("SELECT value FROM library_meta WHERE key = 'schema_version'").scalar()
    finally:
        engine.dispose()
    return tables, applied, str(version)


def test_step_11_is_the_last_and_creates_the_memory_and_privacy_tables():
    assert SCHEMA_VERSION == len(migrations.MIGRATIONS) == 11
    assert migrations.MIGRATIONS[10].name.startswith("memory and privacy")
    assert {"forgotten_traces", "skill_aliases", "pattern_transitions", "procedures",
            "reliability_events"} <= STEP_11


def test_a_schema_10_store_without_the_tables_gets_them_when_it_opens(url):
    SQLRecordStore(url, create=True).close()
    _as_schema_10(url)
    tables, applied, version = _state(url)
    assert not tables & STEP_11 and applied == list(range(1, 11)) and version == "10"
    store = SQLRecordStore(url, create=False)
    try:
        assert store.integrity_problem() is None
        with store.transaction(write=True) as conn:  # the new tables are usable at once
            conn.execute(tombstones_table.insert().values(tenant="default", digest="d" * 64, at=utc_now()))
            conn.execute(aliases_table.insert().values(tenant="default", alias="old", name="new",
                                                       made_in="1", created_at=utc_now()))
            conn.execute(transitions_table.insert().values(tenant="default", subject="ann", from_state="a",
                                                           to_state="b", session="s", at=utc_now()))
    finally:
        store.close()
    tables, applied, version = _state(url)
    assert STEP_11 <= tables
    assert applied == list(range(1, SCHEMA_VERSION + 1)) and version == str(SCHEMA_VERSION)


def test_a_schema_10_store_keeps_the_rows_of_the_tables_it_had_made_on_first_use(url):
    store = SQLRecordStore(url, create=True)
    with store.transaction(write=True) as conn:
        conn.execute(tombstones_table.insert().values(tenant="default", digest="e" * 64, at=utc_now()))
        conn.execute(opt_outs_table.insert().values(tenant="acme", subject="bob", at=utc_now()))
    store.close()
    _as_schema_10(url, keep=frozenset({tombstones_table.name, opt_outs_table.name}))
    store = SQLRecordStore(url, create=False)
    try:
        with store.transaction(write=False) as conn:
            assert list(conn.execute(sa.select(tombstones_table.c.tenant, tombstones_table.c.digest))) == [
                ("default", "e" * 64)]
            assert list(conn.execute(sa.select(opt_outs_table.c.tenant, opt_outs_table.c.subject))) == [
                ("acme", "bob")]
    finally:
        store.close()
    tables, applied, _ = _state(url)
    assert STEP_11 <= tables and applied == list(range(1, SCHEMA_VERSION + 1))


def test_a_schema_10_folder_forgets_and_redacts_after_the_upgrade(tmp_path, embedder):
    """The library's erasure and redaction on the upgraded folder (they no longer create
    their tables themselves)."""
    from skill_library import redaction
    from skill_library.library import SkillLibrary

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.patterns.record_transition("ann@example.com", "a", "b", session="s1")
    _as_schema_10(f"sqlite:///{folder / 'records.db'}", keep=frozenset({transitions_table.name}))
    with SkillLibrary(folder, embedder=embedder) as lib:
        assert lib.patterns.distribution("ann@example.com", "a") == {"b": (1.0, 1)}
        lib.patterns.opt_out("ann@example.com")
        report = lib.forget("ann@example.com")
        assert report["found"] and report["transitions"] == 1 and report["opt_out_kept"]
        assert lib.patterns.opted_out("ann@example.com")  # kept as a salted hash
        assert redaction.aliases(lib) == {} and redaction.resolve(lib, "send_note") == "send_note"
        assert lib.redact_stored().skills == []
    assert _state(f"sqlite:///{folder / 'records.db'}")[2] == str(SCHEMA_VERSION)
