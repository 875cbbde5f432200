"""SkillLibrary.add_many's pipeline (skill_library.ingest): the same records as add() one by
one, checks before any write, errors from either stage, batched policy checks."""

from __future__ import annotations

import pytest

from sandbox import PolicyViolation, check_source, check_sources
from skill_library import ingest
from skill_library.errors import SkillPolicyError
from skill_library.library import IndexRebuiltWarning, SkillLibrary
from skill_library.models import Skill

WHENS = {
    "cancel_order": "cancel a pending order for a customer",
    "craft_pickaxe": "craft an iron pickaxe from ingots and sticks",
    "book_flight": "book a flight ticket to another city",
    "water_plants": "water the plants in the garden",
    "reset_password": "reset a user's forgotten password",
    "tune_guitar": "tune the strings of an acoustic guitar",
    "bake_bread": "bake a loaf of sourdough bread",
}


def skill(name: str, when: str, body: str = "return target") -> Skill:
    return Skill.from_function(f"def {name}(target: str) -> str:\n    {body}\n", when=when)


def state(lib: SkillLibrary) -> list[tuple]:
    """What a library holds, times and ids aside."""
    rows = []
    for s in sorted(lib.list(), key=lambda s: s.name):
        for v in lib.history(s.name):
            rows.append((v.name, v.version, v.status, v.successes, v.failures, v.when, v.code))
        rows.append((s.name, [(o["version"], o["success"]) for o in lib.outcomes(s.name)]))
    return rows


@pytest.mark.parametrize("batch", [2, 256])
def test_add_many_stores_what_add_one_by_one_stores(tmp_path, embedder, monkeypatch, batch):
    monkeypatch.setattr(ingest, "ADD_BATCH", batch)
    first = [skill(n, w) for n, w in list(WHENS.items())[:3]]
    later = [skill(n, w) for n, w in list(WHENS.items())[3:]] + [
        skill("cancel_order", WHENS["cancel_order"] + " today", "return target + '!'"),  # version 2
        skill("cancel_pending", "cancel the pending order of a customer"),  # ~ cancel_order
    ]
    with SkillLibrary(tmp_path / "one", embedder=embedder) as one, \
            SkillLibrary(tmp_path / "many", embedder=embedder) as many:
        for s in first:
            one.add(s, verified=True)
        expected = [one.add(s, verified=True) for s in later]
        many.add_many(first, verified=True)
        got = many.add_many(later, verified=True)
        assert [(r.status, r.duplicate_of, r.skill and (r.skill.name, r.skill.version, r.skill.status,
                                                           r.skill.successes)) for r in got] == [
            (r.status, r.duplicate_of, r.skill and (r.skill.name, r.skill.version, r.skill.status,
                                                    r.skill.successes)) for r in expected]
        assert state(many) == state(one)
        assert many.index.entries() == one.index.entries()


def test_add_many_refuses_a_bad_skill_before_storing_any(library):
    bad = Skill.from_function("def leak(target: str) -> str:\n    return target\n", when="leak it")
    bad = bad.model_copy(update={"code": "def leak(target: str) -> str:\n    import os\n    return os.name\n"})
    skills = [skill("water_plants", WHENS["water_plants"]), bad, skill("bake_bread", WHENS["bake_bread"])]
    with pytest.raises(SkillPolicyError, match="'leak' breaks the sandbox policy"):
        library.add_many(skills, verified=True)
    assert library.list() == []
    assert library.index.count() == 0
    with pytest.raises(ValueError, match="status"):
        library.add_many([skill("water_plants", WHENS["water_plants"]).model_copy(update={"status": "retired"})])
    with pytest.raises(TypeError, match="takes Skills"):
        library.add_many([skill("bake_bread", WHENS["bake_bread"]), "not a skill"])  # type: ignore[list-item]
    assert library.list() == []


def test_a_failed_write_stops_add_many_and_the_index_is_rebuilt(library, monkeypatch):
    monkeypatch.setattr(ingest, "ADD_BATCH", 2)
    calls = []
    original = type(library.index).upsert

    def upsert(self, entries, vectors):
        calls.append(len(entries))
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return original(self, entries, vectors)

    monkeypatch.setattr(type(library.index), "upsert", upsert)
    with pytest.raises(RuntimeError, match="disk full"):
        library.add_many([skill(n, w) for n, w in WHENS.items()], verified=True)
    monkeypatch.undo()
    assert len(calls) == 2  # nothing after the failed batch
    assert sorted(s.name for s in library.list()) == sorted(list(WHENS)[:4])  # records first
    with pytest.warns(IndexRebuiltWarning, match="out of step"):
        assert library.index.count() == 4


def test_a_failed_embedding_keeps_the_batches_before_it(library, monkeypatch):
    monkeypatch.setattr(ingest, "ADD_BATCH", 2)
    embed = library.embedder.embed
    seen = []

    def flaky(texts):
        seen.append(len(texts))
        if len(seen) == 3:
            raise RuntimeError("model gone")
        return embed(texts)

    monkeypatch.setattr(library.embedder, "embed", flaky)
    with pytest.raises(RuntimeError, match="model gone"):
        library.add_many([skill(n, w) for n, w in WHENS.items()], verified=True)
    monkeypatch.undo()
    assert sorted(s.name for s in library.list()) == sorted(list(WHENS)[:4])
    assert library.index.count() == 4  # in step: no rebuild needed
    assert [m.skill.name for m in library.fetch("book a flight ticket", k=1)] == ["book_flight"]


def test_check_sources_gives_each_source_the_verdict_check_source_gives():
    good = "def ok_{i}(x: int) -> int:\n    return x + {i}\n"
    codes = [good.format(i=i) for i in range(7)]
    codes[1] = "def bad(x):\n    import os\n    return os\n"
    codes[4] = "def broken(:\n"
    codes[5] = codes[1]  # the same source twice
    codes.append("x" * (600 * 1024))  # too long: refused before any child sees it
    verdicts = check_sources(codes)
    for code, verdict in zip(codes, verdicts):
        try:
            check_source(code)
            expected = None
        except PolicyViolation as exc:
            expected = (str(exc), getattr(exc, "kind", None))
        assert (None if verdict is None else (str(verdict), getattr(verdict, "kind", None))) == expected
    assert [v is None for v in verdicts] == [True, False, True, True, False, False, True, False]


def test_check_many_compiles_many_sources_per_child():
    from sandbox import Limits, Sandbox

    codes = [f"def f{i}(x: int) -> int:\n    return x\n" for i in range(40)]
    codes[10] = "def g(x):\n    return x.__class__\n"
    with Sandbox(limits=Limits(cpu_seconds=5, wall_seconds=10, memory_mb=256), workers=1) as box:
        verdicts = box.check_many(codes)
        assert [i for i, v in enumerate(verdicts) if v is not None] == [10]
        assert box.stats()["runs"] <= 2  # one child up to the bad source, one for the rest


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_store_add_versions_writes_what_add_version_writes(kind, tmp_path, request):
    import os

    from skill_library.record_store import SQLRecordStore

    if kind == "sqlite":
        urls = [f"sqlite:///{tmp_path / name}.db" for name in ("one", "many")]
    else:
        pg = request.getfixturevalue("pg_server")
        urls = [pg.create_database(f"ingest{os.getpid()}_{name}") for name in ("one", "many")]
    one, many = (SQLRecordStore(url) for url in urls)
    try:
        first = [skill(n, w) for n, w in list(WHENS.items())[:3]]
        later = [skill("book_flight", WHENS["book_flight"] + " soon")] + [
            skill(n, w) for n, w in list(WHENS.items())[3:]
        ]
        for store in (one, many):
            store.add_versions(first, initial_success=True)
        expected = [one.add_version(s, initial_success=True) for s in later]
        got = many.add_versions(later, initial_success=True)
        assert [s.model_dump() for s in got] == [s.model_dump() for s in expected]
        for name in WHENS:
            assert [s.model_dump() for s in many.history(name)] == [s.model_dump() for s in one.history(name)]
            assert [(o["version"], o["success"]) for o in many.outcome_log(name)] == [
                (o["version"], o["success"]) for o in one.outcome_log(name)]
    finally:
        one.close()
        many.close()


@pytest.mark.parametrize("batch", [2, 256])
def test_add_many_is_audited_like_add_and_needs_an_admin(tmp_path, embedder, monkeypatch, batch):
    from skill_library.errors import PermissionDenied
    from skill_library.governance import Actor

    monkeypatch.setattr(ingest, "ADD_BATCH", batch)
    with SkillLibrary(tmp_path / "lib", embedder=embedder) as lib:
        admin = lib.resolve_actor(None).id
        lib.add_many([skill(n, w) for n, w in list(WHENS.items())[:3]])
        # a new version of one name, and the same name twice in one call
        lib.add_many([skill("cancel_order", WHENS["cancel_order"], "return target + '!'"),
                      skill("book_flight", WHENS["book_flight"], "return target + '?'"),
                      skill("book_flight", WHENS["book_flight"], "return target + '.'")])
        assert [(e.version, e.from_status, e.to_status, e.actor) for e in lib.audit("cancel_order")] == [
            (1, None, "active", admin), (1, "active", "superseded", admin), (2, None, "active", admin)]
        assert [(e.version, e.to_status) for e in lib.audit("book_flight")] == [
            (1, "active"), (1, "superseded"), (2, "active"), (2, "superseded"), (3, "active")]
        lib.actors.add(Actor(id="alice", kind="user", permissions=frozenset({"skill.propose"})))
    with SkillLibrary(tmp_path / "lib", embedder=embedder, actor="alice") as lib:
        with pytest.raises(PermissionDenied, match="skill.admin"):
            lib.add_many([skill("water_plants", WHENS["water_plants"])])
        assert "water_plants" not in {s.name for s in lib.list()}
