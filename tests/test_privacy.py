"""The one masking pass (skill_library.privacy): values, shapes, names, free text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from skill_library.models import ToolCall
from skill_library.privacy import (
    dummy,
    mask_names,
    personal_values_in,
    redact,
    scrub_shapes,
    shape_dummy,
    trace_values,
)

TOPIC = {"unlock", "account", "reset", "password", "cancel", "order", "refund", "return", "items"}

FIRST = ["Ines", "Ravi", "Tomás", "Zoë", "Łukasz", "Mara", "Yusuf", "Aoife", "Chidi", "Søren", "Nguyễn"]
LAST = ["Garcia", "Osei", "Ñúñez", "Kowalski", "Lopez", "Rossi", "O'Brien", "Chen", "Müller", "Haddad"]


def test_bound_values_become_placeholders_and_the_rest_of_the_trace_its_role():
    calls = [ToolCall(name="find_user", arguments={"email": "ines@corp.example"},
                      result={"user_id": "U123", "address": "12 Rue Haute"})]
    known = trace_values({"email": "ines@corp.example"}, calls)
    text = redact("Please unlock the account of ines@corp.example, I live at 12 Rue Haute.",
                  {"email": "ines@corp.example"}, known, topic=TOPIC)
    assert text == "Please unlock the account of {email}."
    assert "12 Rue" not in text


def test_shapes_are_masked_even_when_no_tool_returned_them():
    text = scrub_shapes("IBAN DE89 3704 0044 0532 0130 00, card 4111 1111 1111 1111, "
                        "call +44 20 7946 0958, order #W2378156, mail a.b@c.org")
    for value in ("DE89", "4111", "7946", "W2378156", "a.b@c.org"):
        assert value not in text, (value, text)


def test_free_text_that_binds_nothing_and_names_no_action_is_dropped():
    text = redact("Reset the password of {x}. My mother is in hospital after her chemotherapy. "
                  "Thanks so much!", {}, {}, topic=TOPIC)
    assert text == "Reset the password of {x}."
    # a clause inside a kept sentence goes too
    assert redact("Cancel order 77 because my husband passed away", {"order_id": 77}, {},
                  topic=TOPIC) == "Cancel order {order_id}."


def test_names_are_masked_by_capitalization_and_position():
    assert mask_names("Thanks, Ines") == "Thanks, someone"
    assert mask_names("Ravi Osei here, please help.") == "someone here, please help."
    assert mask_names("Please help Ines with her order.") == "Please help someone with her order."
    # common capitalized words stay
    assert mask_names("Monday: Please reset it. Thanks!") == "Monday: Please reset it. Thanks!"


SHAPES = [
    "Hi, {first} here. Please {action}.",
    "{first} {last} ({email}) needs you to {action}.",
    "Could you {action}? Thanks, {first}",
    "Dear support,\n{action} for {email} please.\nRegards,\n{first} {last}",
    "Please {action}. - {first}",
    "My colleague {first} {last} asked me to {action}; her email is {email}.",
    "{action} for {first}'s account, {email}.",
    "Kind regards from {first}: {action} asap.",
    "I'm {first} {last}. {action}.",
    "Ticket from {first} {last} <{email}>: {action}",
]
ACTIONS = ["reset the password", "unlock the account", "cancel the order", "return the items"]


@settings(max_examples=300, deadline=None)
@given(shape=st.sampled_from(SHAPES), first=st.sampled_from(FIRST), last=st.sampled_from(LAST),
       action=st.sampled_from(ACTIONS), user=st.from_regex(r"[a-z]{3,8}\.[a-z]{2,6}[0-9]{0,3}", fullmatch=True))
def test_no_name_or_email_survives_any_sentence_shape(shape, first, last, action, user):
    email = f"{user}@mail.example"
    task = shape.format(first=first, last=last, email=email, action=action)
    out = redact(task, {}, {}, topic=TOPIC)
    assert personal_values_in([out], [first, last, email, user]) == [], (task, out)
    assert re.search(r"reset|unlock|cancel|return", out, re.IGNORECASE), (task, out)  # the request stays


def test_typed_dummies_keep_type_and_shape_not_content():
    assert dummy("#W2378156") == "#W0000000"
    assert dummy("ines@corp.example") == "user@example.com"
    assert dummy(42) == 0 and dummy(True) is True
    assert dummy("blue", "color") == "<color>"
    assert shape_dummy({"a": ["Ines.G@x.org", 3]}) == {"a": ["Xxxx.X@x.xxx", 3]}


def test_personal_values_in_finds_whole_words_only():
    assert personal_values_in(["order of Ines"], ["Ines", "Ravi"]) == ["Ines"]
    assert personal_values_in(["Inessa"], ["Ines"]) == []
