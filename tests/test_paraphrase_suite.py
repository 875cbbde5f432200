"""The office world and its paraphrase suite; the protocol on a small slice.

The property the suite stands on: no query shares a content word with the train request of
its workflow (stopwords removed, Snowball stems compared), checked for every query. The
full run is `python -m benchmarks paraphrase`.
"""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks import paraphrase
from benchmarks.tasks import office
from benchmarks.tasks.office import content_words, shared_content_words
from benchmarks.worlds import get_world, load_tasks
from benchmarks.worlds.office import OfficeWorld


@pytest.fixture(scope="module")
def tasks():
    return load_tasks("office")


def test_thirty_or_more_workflows_with_one_train_trace_each(tasks):
    train = [t for t in tasks if t.split == "train"]
    test = [t for t in tasks if t.split == "test"]
    assert len(train) >= 30 and len({t.workflow for t in train}) == len(train)
    assert Counter(t.workflow for t in test) == {t.workflow: office.QUERIES_PER_WORKFLOW for t in train}
    assert len({t.id for t in tasks}) == len(tasks)
    world = get_world("office")
    assert set(world.tool_specs()) == set(world.tool_functions()) and len(world.read_only_tools()) == 6


def test_no_query_shares_a_content_word_with_its_train_request(tasks):
    trains = {t.workflow: t.instruction for t in tasks if t.split == "train"}
    for t in tasks:
        if t.split == "test":
            assert content_words(t.instruction), t.id
            assert not shared_content_words(t.instruction, trains[t.workflow]), (t.id, t.instruction)


def test_the_content_word_check_can_fail():
    # stems meet across word forms; stopwords, digits and punctuation never count
    assert shared_content_words("Send messages to Bo", "a message was sent") == {"messag"}
    assert shared_content_words("Cancel the booking", "cancelled bookings") == {"cancel", "book"}
    assert not shared_content_words("Please do it at 10:30 on 2026-05-04", "it is 10:30 on 2026-05-04 for you")
    assert content_words("Out-of-office until Friday") == {"offic", "friday"}


def test_every_gold_solution_verifies_and_test_values_are_not_train_values(tasks):
    world = OfficeWorld()
    for t in tasks:
        world.reset(t.seed, t)
        assert all(r["error"] is None for r in world.replay(t.gold)), t.id
        assert world.verify(t).success, t.id
    # people, titles, rooms, folders, channels and texts come from the other half of each pool
    train_values = {str(v) for t in tasks if t.split == "train" for v in t.params.values()}
    for t in tasks:
        if t.split == "test":
            for value in t.params.values():
                assert not content_words(str(value)) or str(value) not in train_values, (t.id, value)


def test_the_suite_is_deterministic(tasks):
    assert office.office_tasks() == tasks


def test_the_protocol_on_a_slice_reports_what_its_records_say(tmp_path, embedder, tasks):
    workflows = sorted({t.workflow for t in tasks})[:6]
    sliced = [t for t in tasks if t.workflow in workflows]
    config = paraphrase.ParaphraseConfig(seeds=1, out=tmp_path)
    results = paraphrase.run_paraphrase(config, tasks=sliced, embedder=embedder)
    records = results["records"]
    assert len(records) == 6 * office.QUERIES_PER_WORKFLOW
    for r in records:
        assert len(r["fetched"]) <= paraphrase.FETCH_K
        assert r["at_1"] <= r["at_3"] and r["at_3"] == (r["rank"] is not None)
        if r["rank"]:
            assert r["fetched_workflows"][r["rank"] - 1] == [r["workflow"]]
    overall = results["summary"]["overall"]
    assert overall["fetch_at_3"] == round(sum(r["at_3"] for r in records) / len(records), 4)
    assert overall["fetch_at_1"] == round(sum(r["at_1"] for r in records) / len(records), 4)
    assert overall["met"] == (overall["fetch_at_3"] >= paraphrase.TARGET_FETCH_AT_3)
    assert results["libraries"]["seed0"]["workflows"] == 6
    text = paraphrase.write(results, tmp_path)
    assert "| fetch@3 | >= 90% |" in text and "## Privacy" in text
