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
