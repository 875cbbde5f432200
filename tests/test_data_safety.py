"""A damaged, empty or missing library is an error naming the file or folder, never an
empty library (issue 14 items 1-3): in the API as named exceptions, in the CLI as one line
and exit code 2."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.errors import LibraryNotFoundError, RecordStoreCorruptError
from skill_library.library import SkillLibrary
from skill_library.record_store import SQLRecordStore

runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output, result.exception


@pytest.fixture
def made(tmp_path, embedder):
    """A library folder with one skill, closed."""
    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        from skill_library.models import Skill

        lib.add(Skill.from_function("def ping() -> str:\n    return 'pong'\n", when="answer a ping"))
    return folder


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_garbage_records_file_is_one_line_and_exit_2(made, extra):
    records = made / "records.db"
    records.write_bytes(b"this is not a database at all " * 100)
    for wal in made.glob("records.db-*"):
        wal.unlink()
    code, out, exc = invoke("list", "--dir", str(made), *extra)
    assert code == 2, out
    assert not isinstance(exc, Exception) or isinstance(exc, SystemExit)
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert str(records) in lines[0] and "is not a SQLite database" in lines[0]
    assert "restore it from a backup" in lines[0]


def test_garbage_records_file_is_a_named_exception(made, embedder):
    (made / "records.db").write_bytes(b"\x00garbage" * 500)
    for wal in made.glob("records.db-*"):
        wal.unlink()
    with pytest.raises(RecordStoreCorruptError) as caught:
        SkillLibrary(made, embedder=embedder)
    assert caught.value.path == made / "records.db"


def test_empty_records_file_is_an_error_not_an_empty_library(made, embedder):
    (made / "records.db").write_bytes(b"")
    for wal in made.glob("records.db-*"):
        wal.unlink()
    with pytest.raises(RecordStoreCorruptError, match=r"is empty \(0 bytes\)"):
        SkillLibrary(made, embedder=embedder)
    code, out, _ = invoke("fetch", "answer a ping", "--dir", str(made))
    assert code == 2 and "is empty (0 bytes)" in out
    assert (made / "chroma").is_dir()  # the index was not "repaired" from zero records
    assert (made / "records.db").stat().st_size == 0


def test_records_gone_while_the_index_is_there_is_an_error(made, embedder):
    for path in made.glob("records.db*"):
        path.unlink()
    with pytest.raises(RecordStoreCorruptError, match="is missing while the folder still has its vector index"):
        SkillLibrary(made, embedder=embedder)


def test_a_database_without_the_library_tables_is_refused(tmp_path, embedder):
    folder = tmp_path / "lib"
    folder.mkdir()
    with sqlite3.connect(folder / "records.db") as conn:
        conn.execute("CREATE TABLE other (x INTEGER)")
    with pytest.raises(RecordStoreCorruptError, match="is not a skill-library records file"):
        SkillLibrary(folder, embedder=embedder)


def test_integrity_check_finds_damage_the_open_does_not(made):
    store = SQLRecordStore.in_folder(made, create=False)
    assert store.integrity_problem() is None
    store.check_integrity()
    store.close()
    # overwrite the page of one index, which opening the store never reads
    records = made / "records.db"
    with sqlite3.connect(records) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'ix_outcomes_skill'"
        ).fetchone()[0]
    data = bytearray(records.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\xa5" * page_size
    records.write_bytes(bytes(data))
    store = SQLRecordStore.in_folder(made, create=False)  # opens: the damage is elsewhere
    try:
        problem = store.integrity_problem()
        assert problem is not None and "integrity check" in problem
        with pytest.raises(RecordStoreCorruptError, match="fails SQLite's integrity check"):
            store.check_integrity()
    finally:
        store.close()


def test_a_folder_without_a_library_is_not_created(tmp_path, embedder):
    typo = tmp_path / "librray"
    code, out, _ = invoke("list", "--dir", str(typo))
    assert code == 2 and f"no skill library in {typo}" in out and "skills init" in out
    assert not typo.exists()
    with pytest.raises(LibraryNotFoundError, match="no such folder"):
        SkillLibrary(typo, create=False, embedder=embedder)
    assert not typo.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LibraryNotFoundError, match="the folder has no records.db"):
        SkillLibrary(empty, create=False, embedder=embedder)


def test_init_and_create_make_a_library(tmp_path, embedder):
    made = tmp_path / "made"
    code, out, _ = invoke("init", "--dir", str(made), "--json")
    assert code == 0 and json.loads(out) == {"path": str(made), "skills": 0}
    code, out, _ = invoke("list", "--dir", str(made), "--json")
    assert code == 0 and json.loads(out) == []
    skill = tmp_path / "ping.py"
    skill.write_text("def ping() -> str:\n    return 'pong'\n")
    other = tmp_path / "other"
    code, out, _ = invoke("add", str(skill), "--when", "answer a ping", "--dir", str(other))
    assert code == 2 and not other.exists()
    code, out, _ = invoke("add", str(skill), "--when", "answer a ping", "--dir", str(other), "--create")
    assert code == 0, out
    # the API's default is create=True
    with SkillLibrary(tmp_path / "api", embedder=embedder) as lib:
        assert lib.list() == []
    assert (tmp_path / "api" / "records.db").is_file()



def test_a_records_file_being_created_by_another_process_is_not_damage(tmp_path):
    """The two states another process's creation passes through: a 0-byte file for a few
    milliseconds, then a database with no table yet. Neither is an error."""
    import threading

    folder = tmp_path / "lib"
    folder.mkdir()
    records = folder / "records.db"
    records.write_bytes(b"")

    def creator() -> None:  # what sqlite3 does a moment after creating the file
        with sqlite3.connect(records) as conn:
            conn.execute("PRAGMA journal_mode=WAL")

    timer = threading.Timer(0.15, creator)
    timer.start()
    store = SQLRecordStore.in_folder(folder, create=False)
    timer.join()
    try:
        assert store.integrity_problem() is None and store.list() == []
    finally:
        store.close()


def test_a_newer_schema_is_one_line_and_exit_2(made):
    with sqlite3.connect(made / "records.db") as conn:
        conn.execute("UPDATE library_meta SET value = '99' WHERE key = 'schema_version'")
    code, out, _ = invoke("list", "--dir", str(made))
    assert code == 2 and len(out.strip().splitlines()) == 1
    assert "has schema version 99" in out and "upgrade skill-library" in out
