"""Fetch by what a skill does, for requests worded unlike its one trace (issue 21, paraphrases).

Dates and clock times read as words in every embedded form (query and stored texts alike);
real embedding model and real Chroma where a library is used.
"""

from __future__ import annotations

import pytest

from skill_library.shapes import index_text, query_text, value_shape


@pytest.mark.parametrize("text, expected", [
    ("Book Aurora on 2026-03-09 at 13:30", "Book Aurora on date at time"),
    ("off 2026-05-21 – 2026-06-02, back 2026-06-03T09:00Z", "off date – date, back date"),
    ("till 21/05/2026, 4:15 pm", "till date, time"),
    ("remind me at 9:30.", "remind me at time."),
    ("Nudge me 16:00: pay rent", "Nudge me time: pay rent"),
    ("ship #W123 to a@b.co, zip 12345", "ship id to email, zip number"),
])
def test_dates_and_times_read_as_words(text, expected):
    assert value_shape(text) == expected
    assert query_text(text) == expected


@pytest.mark.parametrize("text", ["ratio 3:1", "version v1.2.3", "call +31 6 7482 6819", "room 12", "25:61"])
def test_what_is_not_a_date_or_a_time_stays(text):
    assert value_shape(text) == text


def test_two_requests_differing_only_in_their_dates_embed_alike():
    assert query_text("Move it from 2026-04-03 to 2026-04-14 at 15:00") == \
        query_text("Move it from 2026-07-30 to 2026-08-01 at 9:05")
    # a masked example's date and time (the stored shapes) read as the query's do
    assert index_text("Book {room} on {date} at {time}", {"room": "Xxxxx", "date": "0000-00-00", "time": "00:00"}) \
        == "Book room on date at time"


# -- the phrase entry: what a description says the skill does, and its inputs ----------------

from skill_library import phrases  # noqa: E402
from skill_library.text_vectors import embedded_forms  # noqa: E402

DESCRIBED = ("Invite one more colleague (email) to an event (after: list events, find colleague). "
             "Applies when the event's status is confirmed. Needs the date, the name and the title.")


def test_a_description_has_a_phrase_of_its_action_and_inputs():
    assert phrases.phrase_text(DESCRIBED) == \
        "Invite one more colleague (email) to an event: the date, the name and the title"
    assert phrases.phrase_text("Order office supplies. Needs the item and the quantity.") == \
        "Order office supplies: the item and the quantity"
    assert phrases.phrase_text("Archive a document (after: find document).") == "Archive a document"


@pytest.mark.parametrize("when", ["cancel a pending order", "Cancel a pending order. It is refunded.", "",
                                  "Needs the order id.", "Do it. Needs the x."])
def test_a_when_that_is_not_a_description_has_no_phrase(when):
    assert phrases.phrase_text(when) is None


def test_the_embedded_forms_of_a_when_hold_its_phrase():
    forms = embedded_forms(DESCRIBED)
    assert DESCRIBED in forms and phrases.phrase_text(DESCRIBED) in forms
    assert embedded_forms("cancel a pending order") == {"cancel a pending order"}


def test_the_phrase_reads_what_describe_writes():
    """The phrase parser and the description writer share their words (phrases.NEEDS): a
    description built by induction.describe, with a lookup and a condition, has the phrase of
    its action and inputs; one with neither lookups nor inputs has none."""
    from skill_library.induction.describe import Step, ToolDoc, describe_steps, with_conditions
    from skill_library.induction.preconditions import SENTENCE_START

    docs = {"find_user": ToolDoc("find_user", "Find a user by email", True),
            "reset_password": ToolDoc("reset_password", "Reset a user's password")}
    when = describe_steps([Step("find_user"), Step("reset_password")], ["email", "reason"], docs)
    when = with_conditions(when, SENTENCE_START + "the account's status is active.")
    assert phrases.phrase_text(when) == "Reset a user's password: the email and the reason"
    assert phrases.phrase_text(describe_steps([Step("reset_password")], [], docs)) is None


def _office_library(tmp_path, embedder, workflows):
    from benchmarks.suite_library import learn_gold, open_library
    from benchmarks.worlds import get_world, load_tasks

    world = get_world("office")
    train = [t for t in load_tasks("office") if t.split == "train" and t.workflow in workflows]
    library = open_library(tmp_path / "lib", world, embedder=embedder)
    results = learn_gold(library, world, train)
    assert [r.status for r in results] == ["saved"] * len(train), [r.reasons for r in results]
    return library, {r.skill.name: t.workflow for r, t in zip(results, train) if r.skill is not None}


def _vector_rows(library) -> int:
    import sqlalchemy as sa

    with library.context.store.transaction(write=False) as conn:
        return int(conn.execute(sa.text("SELECT COUNT(*) FROM text_vectors")).scalar())


def test_a_learned_skill_is_indexed_by_its_phrase_and_fetched_by_it(tmp_path, embedder):
    library, names = _office_library(tmp_path, embedder, {"add_attendee", "post_to_channel", "join_channel"})
    try:
        name = next(n for n, w in names.items() if w == "add_attendee")
        skill = library.get(name)
        phrase = phrases.phrase_text(skill.when)
        assert phrase and "(after:" not in phrase and "Needs" not in phrase
        texts = library.context.index.opened().texts_of(name)
        assert texts[phrases.key(name)] == (phrase, skill.version)
        result = library.fetch("Invite a colleague to an event", k=3, explain=True)
        assert result[0].skill.name == name and "phrase" in result[0].explanation.by_entry
        # a reindex keeps it; the open check finds the index in step
        assert library.reindex() == len(names)
        assert phrases.key(name) in library.context.index.opened().texts_of(name)
    finally:
        library.close()


def test_delete_removes_the_phrase_entry_and_its_stored_vector(tmp_path, embedder):
    library, names = _office_library(tmp_path, embedder, {"add_attendee", "join_channel"})
    try:
        name = next(n for n, w in names.items() if w == "add_attendee")
        other = next(n for n in names if n != name)
        rows = _vector_rows(library)
        library.delete(name, actor=None)
        index = library.context.index.opened()
        assert index.texts_of(name) == {} and phrases.key(other) in index.texts_of(other)
        assert _vector_rows(library) < rows
        library.delete(other, actor=None)
        assert _vector_rows(library) == 0  # every embedded form of both, phrases too
    finally:
        library.close()


def test_rank_skills_ranks_by_the_best_of_a_skills_texts(embedder):
    from benchmarks.taubench_descriptions import rank_skills

    skills = [("invite", DESCRIBED), ("order", "Order office supplies. Needs the item and the quantity.")]
    [first] = rank_skills(embedder, skills, ["please buy twelve boxes of staples"], "description+phrase")
    assert first == ["order", "invite"]
    [alone] = rank_skills(embedder, skills, ["invite a colleague to the budget review event"], "description")
    assert alone[0] == "invite"


@pytest.mark.bench
def test_the_descriptions_benchmark_runs_on_a_slice_of_the_dev_protocol(embedder, tmp_path):
    from benchmarks.taubench import data
    from benchmarks.taubench_descriptions import INDEXES, markdown, measure

    if data.default_data_dir() is None:
        pytest.skip("no ../shared/benchmarks/taubench-retail")
    results = measure(embedder=embedder, limit=40)
    assert results["skills"] >= 1 and results["dev_tasks"] >= results["judged"]
    assert set(results["indexes"]) == set(INDEXES)
    for found in results["indexes"].values():
        assert len(found["rows"]) == results["judged"]
        if results["judged"]:
            assert 0.0 <= found["fetch_at_1"] <= found["fetch_at_3"] <= 1.0
    text = markdown(results, "python -m benchmarks.taubench_descriptions --limit 40")
    assert "fetch@3" in text and "--limit 40" in text
