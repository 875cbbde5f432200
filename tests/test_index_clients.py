"""One Chroma client per folder per process, and index leases (issue 24, defects 1 and 2).

Real processes write the folder; the reproductions keep their shape: a second client of the
folder in this process (a tenant view, or a second SkillLibrary) must not make this process
miss the other process's write, and an index handed out (``library.index``, what
``learn()`` holds while it generalizes) must survive another thread's reopen.
"""

from __future__ import annotations

import threading

import pytest

from skill_library import learning
from skill_library.governance import Policy
from skill_library.library import SkillLibrary
from skill_library.models import Outcome, ToolCall, Trace
from tests.processes import add_in_another_process
from tests.test_tenant_views import skill

HOME_WHEN = "water the plants in the garden"
NEW_WHEN = "book a flight ticket to another city"


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "lib"


def open_library(folder, embedder):
    return SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all"))


@pytest.mark.slow
@pytest.mark.parametrize("second", ["tenant view", "second library"])
def test_a_second_client_of_the_folder_does_not_hide_another_processes_write(folder, embedder, second):
    lib = open_library(folder, embedder)
    other = lib.for_tenant("acme") if second == "tenant view" else open_library(folder, embedder)
    try:
        lib.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        other.add(skill("water_plants", HOME_WHEN, "other"), verified=True)
        assert [m.skill.name for m in lib.fetch(HOME_WHEN, k=1)] == ["water_plants"]
        assert [m.skill.name for m in other.fetch(HOME_WHEN, k=1)] == ["water_plants"]

        add_in_another_process(folder, "book_flight", NEW_WHEN)

        assert lib.index.count() == 2  # count() always saw it
        assert [m.skill.name for m in lib.fetch(NEW_WHEN, k=1)] == ["book_flight"]  # was: []
        if second == "second library":
            assert [m.skill.name for m in other.fetch(NEW_WHEN, k=1)] == ["book_flight"]
        else:  # the view's tenant has no such skill, and it still reads its own
            assert [m.skill.name for m in other.fetch(NEW_WHEN, k=1, min_similarity=0.9)] == []
            assert [m.skill.name for m in other.fetch(HOME_WHEN, k=1)] == ["water_plants"]
    finally:
        other.close()
        lib.close()


def test_an_index_handed_out_survives_another_threads_reopen(folder, embedder):
    with open_library(folder, embedder) as lib:
        lib.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        handed = lib.index
        assert handed.count() == 1
        add_in_another_process(folder, "book_flight", NEW_WHEN)
        reopened = threading.Thread(target=lambda: lib.fetch(NEW_WHEN, k=1))
        reopened.start()
        reopened.join()  # this thread's reopen used to close the index handed out above
        assert handed.count() == 2  # was: AttributeError: 'NoneType' object has no attribute 'count'
        hits = handed.query(embedder.embed([NEW_WHEN])[0], 1)
        assert [h.name for h in hits] == ["book_flight"]


def restock_trace() -> Trace:
    calls = [ToolCall(name="restock", arguments={"item": "apple", "count": 3}, result={"item": "apple", "stock": 3})]
    return Trace(task="restock 3 apples in the fruit aisle", params={"count": 3}, calls=calls,
                 outcome=Outcome(success=True, verifier="stock-audit"))


def test_learn_survives_a_reopen_by_another_thread_while_it_generalizes(folder, embedder, monkeypatch):
    with open_library(folder, embedder) as lib:
        lib.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        lib.fetch(HOME_WHEN, k=1)
        original = learning.related_skills
        reopens: list[list[str]] = []

        def related_after_a_reopen(*args, **kwargs):
            # forced interleaving: learn holds the index it took before generalizing; another
            # process writes, and another thread's fetch reopens the library's index meanwhile
            if not reopens:
                add_in_another_process(folder, "book_flight", NEW_WHEN)
                other = threading.Thread(target=lambda: reopens.append(
                    [m.skill.name for m in lib.fetch(NEW_WHEN, k=1)]))
                other.start()
                other.join()
            return original(*args, **kwargs)

        monkeypatch.setattr(learning, "related_skills", related_after_a_reopen)
        learned = lib.learn(restock_trace())  # was: AttributeError: 'NoneType' ... 'query'
        assert reopens == [["book_flight"]]
        assert learned.status == "saved", learned.reasons
        assert [m.skill.name for m in lib.fetch("restock 5 apples in the fruit aisle", k=1)] == [learned.skill.name]
