"""SkillLibrary on real parts: SQLite records, a real Chroma index, the real MiniLM model."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest

from skill_library.errors import SkillNotFoundError
from skill_library.library import IndexRebuiltWarning, SkillLibrary
from skill_library.models import Skill
from tests.processes import worker_context


def make_skill(name: str, when: str, **fields) -> Skill:
    code = f'def {name}(target: str, count: int = 1) -> dict:\n    """{when}"""\n    return {{"target": target}}\n'
    return Skill.from_function(code, when=when, **fields)


# Distinct workflows, far apart in meaning (pairwise similarity well under 0.9).
WORKFLOWS = {
    "cancel_order": "cancel a pending order for a customer",
    "craft_pickaxe": "craft an iron pickaxe from ingots and sticks",
    "book_flight": "book a flight ticket to another city",
    "water_plants": "water the plants in the garden",
    "reset_password": "reset a user's forgotten password",
}


def test_add_then_fetch_returns_the_closest_reliable_skill(library):
    for name, when in WORKFLOWS.items():
        assert library.add(make_skill(name, when), verified=True).added
    matches = library.fetch("please cancel my pending order", k=2, min_similarity=-1)
    assert [m.skill.name for m in matches][0] == "cancel_order"
    assert len(matches) == 2
    top = matches[0]
    assert top.reliability == pytest.approx(2 / 3)
    # the ranking score: similarity less bounded penalties (skill_library.ranking)
    assert top.score <= top.similarity
    assert top.score == pytest.approx(library.fetch("please cancel my pending order", k=1, min_similarity=-1,
                                                    explain=True)[0].explanation.score)
    assert matches[0].similarity >= matches[1].similarity


def test_hand_written_skill_is_not_fetched_until_it_earns_a_success(library):
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]))
    assert library.get("water_plants").reliability == 0.5
    assert library.fetch("water the garden plants") == []
    library.feedback("water_plants", True)
    assert [m.skill.name for m in library.fetch("water the garden plants")] == ["water_plants"]


def test_laplace_values_after_known_outcome_sequences(library):
    library.add(make_skill("book_flight", WORKFLOWS["book_flight"]))
    expected = []
    successes = failures = 0
    for outcome in [True, True, False, True, False, False, False]:
        skill = library.feedback("book_flight", outcome)
        successes += outcome
        failures += not outcome
        expected.append((successes + 1) / (successes + failures + 2))
        assert skill.reliability == pytest.approx(expected[-1])
    assert (skill.successes, skill.failures) == (3, 4)
    assert skill.reliability == pytest.approx(4 / 9)
    log = library.outcomes("book_flight")
    assert [entry["success"] for entry in log] == [True, True, False, True, False, False, False]


def test_skill_drops_out_of_fetch_after_failures(library):
    library.add(make_skill("reset_password", WORKFLOWS["reset_password"]), verified=True)
    task = "reset the password of a user who forgot it"
    assert [m.skill.name for m in library.fetch(task)] == ["reset_password"]  # 2/3
    library.feedback("reset_password", False)  # 2/4 = 0.5 < 0.6
    assert library.fetch(task) == []
    assert [m.skill.name for m in library.fetch(task, min_reliability=0.5)] == ["reset_password"]
    library.feedback("reset_password", True)
    library.feedback("reset_password", True)  # 4/6 >= 0.6
    assert [m.skill.name for m in library.fetch(task)] == ["reset_password"]


def test_duplicate_when_is_refused_and_nothing_is_stored(library, embedder):
    first = "cancel a pending order for a customer"
    near = "cancel the pending order of a customer"
    far = "book a flight ticket to another city"
    a, b, c = embedder.embed([first, near, far])
    dot = lambda x, y: sum(p * q for p, q in zip(x, y))  # noqa: E731
    assert dot(a, b) > 0.9 and dot(a, c) < 0.9  # the premise of the test
    assert library.add(make_skill("cancel_order", first), verified=True).added
    result = library.add(make_skill("cancel_pending", near), verified=True)
    assert result.status == "duplicate" and result.duplicate_of == "cancel_order"
    assert result.similarity == pytest.approx(dot(a, b), abs=1e-4)
    with pytest.raises(SkillNotFoundError):
        library.get("cancel_pending")
    assert library.add(make_skill("book_flight", far), verified=True).added
    assert {s.name for s in library.list()} == {"cancel_order", "book_flight"}


def test_new_versions_keep_history_and_start_fresh(library):
    library.add(make_skill("craft_pickaxe", WORKFLOWS["craft_pickaxe"]), verified=True)
    library.feedback("craft_pickaxe", False)
    second = library.add(make_skill("craft_pickaxe", WORKFLOWS["craft_pickaxe"] + " quickly"))
    assert second.added and second.skill.version == 2
    assert second.skill.outcomes == 0 and second.skill.status == "active"
    history = library.history("craft_pickaxe")
    assert [(s.version, s.status, s.successes, s.failures) for s in history] == [
        (1, "superseded", 1, 1),
        (2, "active", 0, 0),
    ]
    assert library.get("craft_pickaxe", 1).when == WORKFLOWS["craft_pickaxe"]
    assert library.get("craft_pickaxe").version == 2
    library.feedback("craft_pickaxe", True, version=1)
    assert library.get("craft_pickaxe", 1).successes == 2
    assert library.get("craft_pickaxe", 2).successes == 0


def test_retired_skill_is_never_fetched(library):
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    library.retire("water_plants")
    assert library.get("water_plants").status == "retired"
    assert library.fetch("water the plants", min_reliability=0.0) == []
    assert library.index.count() == 0


def test_fetch_over_fetches_past_unreliable_neighbours(library):
    # Twelve near-identical-meaning but distinct skills that fail, then one reliable one.
    whens = [f"sort the warehouse shelf number {i} by product colour" for i in range(12)]
    for i, when in enumerate(whens):
        skill = make_skill(f"sort_shelf_{i}", when)
        result = library.add(skill)
        if result.added:
            library.feedback(skill.name, False)
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    library.add(make_skill("book_flight", WORKFLOWS["book_flight"]), verified=True)
    matches = library.fetch("sort the warehouse shelf by colour", k=2, min_similarity=-1)
    assert len(matches) == 2
    assert {m.skill.name for m in matches} == {"water_plants", "book_flight"}


def test_ties_break_by_reliability_then_name(library):
    library.context.store.add_version(make_skill("beta", "water the plants in the garden"), initial_success=True)
    library.context.store.add_version(make_skill("alpha", "water the plants in the garden"), initial_success=True)
    library.context.store.add_version(make_skill("gamma", "water the plants in the garden"), initial_success=True)
    library.feedback("gamma", True)
    library.reindex()
    names = [m.skill.name for m in library.fetch("water the plants in the garden", k=3)]
    assert names == ["gamma", "alpha", "beta"]


def test_kinds_filter(library):
    library.add(make_skill("cancel_order", WORKFLOWS["cancel_order"]), verified=True)
    text = Skill(
        name="refund_rules",
        kind="instruction",
        when="how to cancel an order and refund the customer",
        description="1. Check the order is pending. 2. Cancel it. 3. Refund.",
    )
    assert library.add(text, verified=True).added
    task = "cancel the order and refund"
    assert [m.skill.kind for m in library.fetch(task, k=2, kinds=["instruction"])] == ["instruction"]
    assert [m.skill.kind for m in library.fetch(task, k=2, kinds=["code"])] == ["code"]


def test_bad_inputs_give_named_errors(library):
    with pytest.raises(ValueError, match="k must be a positive integer"):
        library.fetch("anything", k=0)
    with pytest.raises(ValueError, match="task must be a non-empty string"):
        library.fetch("   ")
    with pytest.raises(SkillNotFoundError, match="no skill named 'ghost'") as info:
        library.feedback("ghost", True)
    assert isinstance(info.value, KeyError)
    with pytest.raises(SkillNotFoundError, match="no skill named 'ghost'"):
        library.get("ghost")
    with pytest.raises(SkillNotFoundError):
        library.history("ghost")
    with pytest.raises(SkillNotFoundError):
        library.retire("ghost")
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]))
    with pytest.raises(SkillNotFoundError, match="skill 'water_plants' has no version 7"):
        library.feedback("water_plants", True, version=7)
    with pytest.raises(ValueError, match="unknown outcome kind 'yes'; use one of success, failure"):
        library.feedback("water_plants", "yes")  # a string names an outcome kind
    with pytest.raises(TypeError, match="add\\(\\) takes a Skill"):
        library.add({"name": "x"})
    with pytest.raises(ValueError, match="min_reliability"):
        SkillLibrary(library.path, min_reliability=2.0)


def _reopen(path, embedder) -> SkillLibrary:
    return SkillLibrary(path, embedder=embedder)


def test_reindex_after_deleting_the_chroma_folder(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        for name, when in WORKFLOWS.items():
            lib.add(make_skill(name, when), verified=True)
        lib.retire("book_flight")
        before = [m.skill.name for m in lib.fetch("craft a pickaxe", k=3)]
    shutil.rmtree(path / "chroma")
    with _reopen(path, embedder) as lib:
        with pytest.warns(IndexRebuiltWarning, match="is missing; rebuilding it from 4 skill"):
            after = [m.skill.name for m in lib.fetch("craft a pickaxe", k=3)]
        assert after == before
        assert lib.index.count() == 4
        assert lib.reindex() == 4


def test_corrupt_index_is_rebuilt_with_a_warning(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        for name, when in WORKFLOWS.items():
            lib.add(make_skill(name, when), verified=True)
    for file in (path / "chroma").rglob("*"):
        if file.is_file():
            file.write_bytes(b"this is not a database" * 100)
    with _reopen(path, embedder) as lib:
        with pytest.warns(IndexRebuiltWarning, match="could not be used"):
            names = [m.skill.name for m in lib.fetch("water the garden", k=1)]
        assert names == ["water_plants"]
        assert len(lib.list()) == 5


def test_index_out_of_step_with_records_is_rebuilt(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
        # A writer that updated the records but died before touching the index:
        lib.context.store.add_version(make_skill("book_flight", WORKFLOWS["book_flight"]), initial_success=True)
    with _reopen(path, embedder) as lib:
        with pytest.warns(IndexRebuiltWarning, match="out of step"):
            assert [m.skill.name for m in lib.fetch("book a flight", k=1)] == ["book_flight"]


def test_a_consistent_index_opens_without_warning(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    with _reopen(path, embedder) as lib:
        with warnings.catch_warnings():
            warnings.simplefilter("error", IndexRebuiltWarning)
            assert lib.fetch("water the plants")


def _feedback_worker(path: str, count: int, succeed_every: int) -> None:
    from skill_library.library import SkillLibrary

    with SkillLibrary(path) as lib:  # feedback never loads the model or opens the index
        for i in range(count):
            lib.feedback("water_plants", i % succeed_every == 0)


def test_concurrent_feedback_from_four_processes_is_exact(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]))
    ctx = worker_context()
    workers = [ctx.Process(target=_feedback_worker, args=(str(path), 200, 2)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=240)
        assert w.exitcode == 0
    with _reopen(path, embedder) as lib:
        skill = lib.get("water_plants")
        assert (skill.successes, skill.failures) == (400, 400)
        assert len(lib.outcomes("water_plants")) == 800


def test_add_many_dedupes_within_the_batch_and_against_the_index(library):
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    results = library.add_many(
        [
            make_skill("book_flight", WORKFLOWS["book_flight"]),
            make_skill("water_garden", "water the garden plants"),  # ~ water_plants
            make_skill("cancel_order", WORKFLOWS["cancel_order"]),
            make_skill("cancel_pending", "cancel the pending order of a customer"),  # ~ cancel_order
        ],
        verified=True,
    )
    assert [r.status for r in results] == ["added", "duplicate", "added", "duplicate"]
    assert [r.duplicate_of for r in results] == [None, "water_plants", None, "cancel_order"]
    assert library.index.count() == 3
    assert [m.skill.name for m in library.fetch("book a flight", k=1)] == ["book_flight"]


def test_run_task_text_fills_placeholders_and_tolerates_any_braces(library):
    code = 'def count_items(count: int, label: str = "box") -> int:\n    return count\n'
    when = "count the {count} items in {label} ({count[0]} {count.__class__} {missing})"
    library.add(Skill.from_function(code, when=when), verified=True)
    run = library.run("count_items", {"count": 3, "label": "the red box"})
    assert run.ok and run.value == 3
    assert run.trace.task == (
        "count the 3 items in the red box ({count[0]} {count.__class__} {missing})"
    )
    assert library.context.store.get_trace(run.trace.id).task == run.trace.task


def test_add_many_with_two_versions_of_one_name_indexes_the_newest(library):
    code = 'def water(bed: str) -> str:\n    return bed\n'
    results = library.add_many(
        [
            Skill.from_function(code, when="water the plants in the garden"),
            Skill.from_function(code, when="water the plants in the garden at night"),
        ],
        verified=True,
    )
    assert [(r.status, r.skill.version) for r in results] == [("added", 1), ("added", 2)]
    assert library.index.entries() == {"water": 2}
    assert [(m.skill.name, m.skill.version) for m in library.fetch("water the plants")] == [
        ("water", 2)
    ]


def test_a_failed_index_write_makes_the_next_use_rebuild_the_index(library, monkeypatch):
    library.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(type(library.index), "upsert", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        library.add(make_skill("book_flight", WORKFLOWS["book_flight"]), verified=True)
    monkeypatch.undo()
    assert library.get("book_flight").version == 1  # the record was committed
    with pytest.warns(IndexRebuiltWarning, match="out of step"):
        names = [m.skill.name for m in library.fetch("book a flight ticket", k=1)]
    assert names == ["book_flight"]


def test_reindex_reads_the_records_under_the_write_lock(tmp_path, embedder):
    import threading

    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib, _reopen(path, embedder) as other:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
        real_list = lib.context.store.list
        writer = threading.Thread(
            target=lambda: other.add(make_skill("book_flight", WORKFLOWS["book_flight"]),
                                     verified=True)
        )

        def list_while_another_writer_adds(**kwargs):
            found = real_list(**kwargs)
            if writer.ident is None:  # another writer right after reindex read the records
                writer.start()
                writer.join(timeout=3)  # done unless reindex holds the write lock
            return found

        lib.context.store.list = list_while_another_writer_adds
        lib.reindex()
        writer.join(timeout=60)
        lib.context.store.list = real_list
        assert lib.index.entries() == {"water_plants": 1, "book_flight": 1}


VERIFIED = {"success": True, "verifier": "garden-check"}
TRANSCRIPT = [
    {"role": "user", "content": "water the tomato bed"},
    {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "pour", "arguments": '{"bed": "tomato", "litres": 20}'}},
    ]},
]


@pytest.mark.parametrize(
    "trace, reason",
    [
        ({"task": "water the tomato bed", "calls": [
            {"name": "pour", "arguments": {"bed": "tomato"}, "result": {"ok": True}}],
          "outcome": {"success": True}}, "no verifier named"),
        ({"task": "water the tomato bed", "calls": [
            {"name": "pour", "arguments": {"bed": "tomato"}, "error": "no water"}],
          "outcome": VERIFIED}, "no successful tool calls"),
        ({"messages": TRANSCRIPT, "task": "water the tomato bed", "outcome": VERIFIED},
         "message 1: tool_call id 'c1' has no tool message answering it"),
        ({"calls": []}, "trace is malformed: task"),
    ],
)
def test_learn_rejects_bad_traces_clearly_and_stores_nothing(library, trace, reason):
    result = library.learn(trace)
    assert result.status == "rejected" and result.skill is None
    assert any(reason in r for r in result.reasons), result.reasons
    assert library.list() == []
    assert library._sandbox is None  # rejected before any candidate could run


def test_learn_accepts_an_openai_transcript(library):
    messages = TRANSCRIPT + [{"role": "tool", "tool_call_id": "c1", "content": '{"poured": 20}'}]
    result = library.learn(
        {"messages": messages, "task": "water the tomato bed with 20 litres",
         "outcome": VERIFIED}
    )
    assert result.status == "saved", result.reasons
    assert result.skill.tools == ["pour"] and result.skill.successes == 1
    assert library.context.store.get_trace(result.skill.provenance.trace_ids[0]).calls[0].name == "pour"


def _add_in_other_process(path: str, name: str, when: str) -> None:
    from embed_service import process_embedder  # the session's model: no torch in this process

    from skill_library.library import SkillLibrary

    with SkillLibrary(path, embedder=process_embedder()) as lib:
        assert lib.add(make_skill(name, when), verified=True).added


def _reindex_in_other_process(path: str) -> None:
    from skill_library.library import SkillLibrary

    with SkillLibrary(path) as lib:
        lib.reindex()


def _in_other_process(target, *args) -> None:
    process = worker_context().Process(target=target, args=args)
    process.start()
    process.join(timeout=240)
    assert process.exitcode == 0


@pytest.mark.slow
def test_an_open_library_sees_other_processes_writes(tmp_path, embedder):
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
        assert [m.skill.name for m in lib.fetch("book a flight", k=1, min_similarity=-1)] == ["water_plants"]
        _in_other_process(_add_in_other_process, str(path), "book_flight", WORKFLOWS["book_flight"])
        assert [m.skill.name for m in lib.fetch("book a flight", k=1)] == ["book_flight"]
        # the other process's skill also counts for the duplicate check here
        assert lib.add(make_skill("fly_somewhere", "book a plane ticket to another city")).status == "duplicate"
        _in_other_process(_reindex_in_other_process, str(path))
        with warnings.catch_warnings():
            warnings.simplefilter("error", IndexRebuiltWarning)
            assert [m.skill.name for m in lib.fetch("water the garden", k=1)] == ["water_plants"]
        lib.retire("book_flight")
    with _reopen(path, embedder) as lib:
        with warnings.catch_warnings():
            warnings.simplefilter("error", IndexRebuiltWarning)
            assert [m.skill.name for m in lib.fetch("book a flight", k=2, min_similarity=-1)] == ["water_plants"]


def test_fetch_has_a_similarity_floor_and_a_tool_filter(library):
    for name, when in WORKFLOWS.items():
        library.add(make_skill(name, when), verified=True)
    assert library.fetch("what is the capital of Australia?", k=3) == []  # nothing related
    assert library.fetch("what is the capital of Australia?", k=1, min_similarity=-1)  # no floor
    assert [m.skill.name for m in library.fetch("please cancel my pending order", k=1)] == ["cancel_order"]
    # only skills whose tools the agent has
    code = "def refund_order(order_id: str) -> dict:\n    return refund(order_id=order_id)\n"
    library.add(Skill.from_function(code, when="refund a pending order", tools=["refund"]), verified=True)
    names = [m.skill.name for m in library.fetch("refund my pending order", k=3, tools=["cancel"])]
    assert "refund_order" not in names
    names = [m.skill.name for m in library.fetch("refund my pending order", k=3, tools=["refund"])]
    assert names[0] == "refund_order"
    with pytest.raises(TypeError, match="collection of tool names"):
        library.fetch("refund my pending order", tools="refund")


def test_the_index_is_keyed_by_model_identity_not_install_path(tmp_path, embedder):
    import shutil
    import warnings

    from skill_library import embeddings
    from skill_library.embeddings import SentenceTransformerEmbedder, default_model_path, same_model
    from skill_library.library import IndexRebuiltWarning, SkillLibrary

    copy = tmp_path / "other-install" / "all-MiniLM-L6-v2"
    shutil.copytree(default_model_path(), copy)
    elsewhere = SentenceTransformerEmbedder(copy, threads=1)
    assert same_model(elsewhere.model_name, embedder.model_name)
    assert elsewhere.model_name != embedder.model_name  # the folder's name differs, the digest not
    path = tmp_path / "lib"
    with SkillLibrary(path, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)  # a rebuild would raise here
        with SkillLibrary(path, embedder=elsewhere) as lib:
            assert [m.skill.name for m in lib.fetch("water the garden plants", k=1)] == ["water_plants"]
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")  # now another model
    embeddings._identities.clear()
    assert not same_model(SentenceTransformerEmbedder(copy).model_name, embedder.model_name)


def test_an_older_records_file_never_silently_shrinks_the_index(tmp_path, embedder):
    import shutil

    from typer.testing import CliRunner

    from skill_library.cli import app
    from skill_library.errors import RecordsBehindIndexError
    from skill_library.library import SkillLibrary

    path = tmp_path / "lib"
    with SkillLibrary(path, embedder=embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
    shutil.copy(path / "records.db", tmp_path / "backup.db")  # a copy from before the next add
    with SkillLibrary(path, embedder=embedder) as lib:
        lib.add(make_skill("book_flight", WORKFLOWS["book_flight"]), verified=True)
    for extra in ("records.db-wal", "records.db-shm"):
        (path / extra).unlink(missing_ok=True)
    shutil.copy(tmp_path / "backup.db", path / "records.db")  # restored: one skill fewer
    with SkillLibrary(path, embedder=embedder) as lib:
        assert [s.name for s in lib.list()] == ["water_plants"]  # the records read fine
        with pytest.raises(RecordsBehindIndexError, match="older than the vector index"):
            lib.fetch("book a flight to Rome")
        with pytest.raises(RecordsBehindIndexError):
            lib.reindex()
    assert len(list((path / "chroma").iterdir())) > 1  # the index was left as it was
    out = CliRunner().invoke(app, ["fetch", "book a flight", "--dir", str(path)])
    assert out.exit_code == 2 and "skills reindex --force" in out.output
    out = CliRunner().invoke(app, ["reindex", "--force", "--dir", str(path), "--json"])
    assert out.exit_code == 0, out.output
    with SkillLibrary(path, embedder=embedder) as lib:
        assert [m.skill.name for m in lib.fetch("water the garden plants", k=2)] == ["water_plants"]


def _crash_after_bump_in_other_process(path: str) -> None:
    """A writer that dies after bumping the generation and storing a skill, before it
    writes and marks the index."""
    from skill_library.record_store import SQLRecordStore

    store = SQLRecordStore.in_folder(Path(path))
    try:
        store.bump_index_generation()
        store.add_version(make_skill("book_flight", WORKFLOWS["book_flight"]))
    finally:
        store.close()


@pytest.mark.slow
def test_a_reopen_after_a_marked_write_skips_the_full_check_and_an_unmarked_one_does_not(
        tmp_path, embedder, monkeypatch):
    """Another writer's finished write (generation bumped, index written and marked under the
    lock) is picked up without reading and comparing the whole index; a writer that died
    between bump and mark leaves the old mark, so the next reader checks and repairs."""
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        lib.add(make_skill("water_plants", WORKFLOWS["water_plants"]), verified=True)
        lib.fetch("water the garden", k=1)
        checks = []
        real = type(lib._index)._open_checked
        monkeypatch.setattr(type(lib._index), "_open_checked", lambda self: checks.append(1) or real(self))
        _in_other_process(_add_in_other_process, str(path), "cancel_order", WORKFLOWS["cancel_order"])
        assert [m.skill.name for m in lib.fetch("cancel my pending order", k=1)] == ["cancel_order"]
        assert checks == []  # reopened, not re-checked
        _in_other_process(_crash_after_bump_in_other_process, str(path))
        with pytest.warns(IndexRebuiltWarning):
            found = [m.skill.name for m in lib.fetch("book a flight", k=1, min_reliability=0)]
        assert checks == [1] and found == ["book_flight"]


def _repair_cut_short_in_other_process(path: str) -> None:
    """Open a library whose index is out of step and die in the middle of the repair: the
    rebuild writes one entry, then the process is gone."""
    import warnings as _warnings

    from skill_library.library import SkillLibrary
    from skill_library.vector_index import VectorIndex

    real = VectorIndex.rebuild

    def cut_short(self, entries, **kwargs):
        real(self, entries[:1], **kwargs)
        os._exit(3)

    VectorIndex.rebuild = cut_short  # type: ignore[method-assign]
    from embed_service import process_embedder  # the session's model: no torch in this process

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        with SkillLibrary(path, embedder=process_embedder()) as lib:
            lib.fetch("book a flight")


def test_a_repair_cut_short_is_repaired_by_the_next_reader(tmp_path, embedder):
    """A repair bumps the generation before it deletes anything, so a repair that dies
    leaves the mark behind: a long-running reader does not trust the partial index."""
    path = tmp_path / "lib"
    with _reopen(path, embedder) as lib:
        for name in ("water_plants", "book_flight", "cancel_order"):
            lib.add(make_skill(name, WORKFLOWS[name]), verified=True)
        lib.fetch("water the garden", k=1)
        lib.index._collection.delete(ids=["cancel_order"])  # the index lost an entry
        process = worker_context().Process(
            target=_repair_cut_short_in_other_process, args=(str(path),))
        process.start()
        process.join(timeout=240)
        assert process.exitcode == 3
        with pytest.warns(IndexRebuiltWarning):
            found = [m.skill.name for m in lib.fetch("cancel my pending order", k=1)]
        assert found == ["cancel_order"]
        assert sorted(lib.index.entries()) == ["book_flight", "cancel_order", "water_plants"]
