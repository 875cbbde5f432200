"""One settings module (issue 24, defect 3): every reader reads skill_library.settings at
use, and the names modules used to define there (``library.ADD_BATCH``, the three copies of
``IN_QUERY_BATCH``, ...) read and write it, so none is a copy that nothing reads."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from skill_library import ingest, record_store, settings, write_lock
from skill_library import library as library_module
from skill_library.models import Skill
from skill_library.storage import bulk, dialects
from skill_library.vector_index import VectorIndex

WHENS = {
    "cancel_order": "cancel a pending order for a customer",
    "book_flight": "book a flight ticket to another city",
    "water_plants": "water the plants in the garden",
}


def skill(name: str, when: str) -> Skill:
    return Skill.from_function(f"def {name}(target: str) -> str:\n    return target\n", when=when)


def test_setting_library_add_batch_changes_the_batches_add_many_writes(library, monkeypatch):
    upserts: list[int] = []
    original = VectorIndex.upsert

    def counting(self, entries, embeddings):
        upserts.append(len(entries))
        return original(self, entries, embeddings)

    monkeypatch.setattr(VectorIndex, "upsert", counting)
    monkeypatch.setattr(library_module, "ADD_BATCH", 1)  # was: a copy ingest never read
    assert settings.ADD_BATCH == 1 and ingest.ADD_BATCH == 1
    results = library.add_many([skill(n, w) for n, w in WHENS.items()], verified=True)
    assert [r.status for r in results] == ["added"] * 3
    assert upserts == [1, 1, 1]  # one batch per skill
    monkeypatch.undo()
    assert settings.ADD_BATCH == ingest.ADD_BATCH == library_module.ADD_BATCH == 256


def test_in_query_batch_is_one_setting_read_at_use(library, monkeypatch):
    for name, when in WHENS.items():
        library.add(skill(name, when), verified=True)
    statements: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if "IN (" in statement and "skill_versions" in statement:
            statements.append(statement)

    engine = library.context.store.engine
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        monkeypatch.setattr(record_store, "IN_QUERY_BATCH", 2)
        for module in (settings, dialects, bulk, record_store):
            assert module.IN_QUERY_BATCH == 2  # one value under every name
        found = library.context.store.get_many([(n, 1) for n in WHENS])
        assert sorted(n for n, _ in found) == sorted(WHENS)
        assert len(statements) == 2  # 3 names, 2 per query
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)


@pytest.mark.parametrize("module, name", [
    (library_module, "LEARN_BATCH"), (write_lock, "WRITE_LOCK_TIMEOUT_SECONDS"),
    (dialects, "SQLITE_BUSY_TIMEOUT_MS"), (library_module, "DUPLICATE_SIMILARITY"),
])
def test_old_setting_names_read_and_write_the_settings_module(monkeypatch, module, name):
    assert getattr(module, name) == getattr(settings, name)
    monkeypatch.setattr(module, name, 7)
    assert getattr(settings, name) == 7
    monkeypatch.setattr(settings, name, 9)
    assert getattr(module, name) == 9


def test_only_known_settings_can_be_forwarded():
    with pytest.raises(ValueError, match="not settings"):
        settings.forward(__name__, "NOT_A_SETTING")


def test_setting_library_duplicate_similarity_changes_what_add_calls_a_duplicate(library, monkeypatch):
    """``DUPLICATE_SIMILARITY`` was defined in library.py and imported from there by ingest
    and learning; now a setting: the facade's name, add, add_many and learn read one value."""
    library.add(skill("cancel_order", WHENS["cancel_order"]), verified=True)
    near = skill("cancel_purchase", "cancel a pending order of a customer")
    monkeypatch.setattr(library_module, "DUPLICATE_SIMILARITY", 0.999)
    assert settings.DUPLICATE_SIMILARITY == 0.999
    assert library.add(near, verified=True).status == "added"
    monkeypatch.setattr(library_module, "DUPLICATE_SIMILARITY", 0.1)
    result = library.add(skill("cancel_request", "cancel a pending order from a customer"), verified=True)
    assert (result.status, result.duplicate_of) == ("duplicate", "cancel_order")
    monkeypatch.undo()
    assert settings.DUPLICATE_SIMILARITY == library_module.DUPLICATE_SIMILARITY == 0.9
