"""What fetch embeds of a long request: the task less what only says who the requester is or
what they are like (skill_library.intent.without_requester; issue 21).

The sentences are written for this test, in several shapes and domains (first and second
person, names before and after, non-ASCII names), none taken from a benchmark's tasks. The
library tests use the real embedding model and real Chroma.
"""

from __future__ import annotations

import pytest

from skill_library import SkillLibrary, intent
from skill_library.governance import Policy
from skill_library.models import Skill


@pytest.mark.parametrize("sentence", [
    "My name is Lena Vogt and my postcode is 10115.",
    "Your name is Tomás Ñúñez and your zip code is 30301.",
    "My work email is lena.vogt@example.org.",
    "This is Ingrid Søberg (ingrid@example.net).",
    "You are cheerful, impatient, direct.",
    "I'm calm and polite.",
    "I am messy, curious, busy.",
])
def test_sentences_that_only_say_who_asks_or_what_they_are_like(sentence):
    assert intent.about_requester(sentence)


@pytest.mark.parametrize("sentence", [
    "My name is Ana, ana@example.com, and I am locked out.",  # the request rides along
    "My account is locked.",
    "I'm locked out of the wiki.",
    "I am very upset about the broken kettle.",
    "Please cancel order #W0012345.",
    "You'd like to return the lamp you received.",
    "Lena Vogt left the company yesterday.",
])
def test_sentences_about_the_request_are_not_about_the_requester(sentence):
    assert not intent.about_requester(sentence)


def test_without_requester_keeps_the_request_and_what_a_lookup_reads():
    text = ("My name is Lena Vogt and my email is lena@example.org. You are calm, polite. "
            "The lamp I got last week flickers. Please take it back and refund me.")
    bare = "The lamp I got last week flickers. Please take it back and refund me."
    assert intent.without_requester(text) == bare
    # a library that looks customers up keeps the sentence that says who asks; the
    # description of what the requester is like goes all the same
    kept = intent.without_requester(text, keep_identity=True)
    assert kept == "My name is Lena Vogt and my email is lena@example.org. " + bare
    # nothing but the requester: the text stays whole
    assert intent.without_requester("My name is Lena Vogt. You are calm, polite.") == \
        "My name is Lena Vogt. You are calm, polite."


CANCEL = '''def cancel_order(order_id: str, reason: str) -> dict:
    """Cancel a pending order."""
    return cancel_pending_order(order_id=order_id, reason=reason)
'''
ADDRESS = '''def change_address(order_id: str, address: str, zip: str) -> dict:
    """Change the shipping address of a pending order."""
    return modify_order_address(order_id=order_id, address=address, zip=zip)
'''
LOOKUP = '''def cancel_for_customer(email: str, reason: str) -> dict:
    """Cancel the pending order of a customer found by email."""
    customer = find_customer_by_email(email=email)
    return cancel_pending_order(order_id=customer["order_id"], reason=reason)
'''
PERSONA = "My name is Lena Vogt and my zip code is 10115. I'm calm, polite, direct. "
REQUEST = "I ordered #W0012345 by mistake, please cancel it."


def test_a_library_looks_people_up_by_a_declared_lookup_or_a_person_parameter():
    looked_up = Skill.from_function(LOOKUP, when="Cancel a customer's order.",
                                    tools=["find_customer_by_email", "cancel_pending_order"])
    by_order = Skill.from_function(CANCEL, when="Cancel a pending order.", tools=["cancel_pending_order"])
    address = Skill.from_function(ADDRESS, when="Change an address.", tools=["modify_order_address"])
    assert intent.looks_people_up([looked_up], read_only={"find_customer_by_email"})
    assert intent.looks_people_up([looked_up], read_only=())  # its email parameter says so
    # order ids, reasons, a shipping address and its zip: nobody is looked up
    assert not intent.looks_people_up([by_order, address], read_only={"find_customer_by_email"})


def _library(path, embedder, skills):
    library = SkillLibrary(path, embedder=embedder, read_only_tools=["find_customer_by_email"],
                           policy=Policy(auto_approve="all"))
    library.add_many([Skill.from_function(code, when=when, tools=tools) for code, when, tools in skills],
                     verified=True)
    return library


def test_fetch_embeds_a_long_request_without_its_persona(tmp_path, embedder):
    with _library(tmp_path / "lib", embedder, [
        (CANCEL, "Cancel a pending order. Needs the order id and the reason.", ["cancel_pending_order"]),
        (ADDRESS, "Change the shipping address of a pending order. Needs the order id, the address and the zip.",
         ["modify_order_address"]),
    ]) as library:
        long = library.fetch(PERSONA + REQUEST, k=2, abstain=False)
        bare = library.fetch(REQUEST, k=2, abstain=False)
        assert [m.skill.name for m in long] == [m.skill.name for m in bare]
        assert long[0].skill.name == "cancel_order"
        # the same text was embedded: the persona and the traits did not move a similarity
        assert [round(m.similarity, 6) for m in long] == [round(m.similarity, 6) for m in bare]


def test_a_library_that_looks_people_up_keeps_what_identifies_them(tmp_path, embedder):
    with _library(tmp_path / "lib", embedder, [
        (LOOKUP, "Cancel the pending order of a customer (after: find customer by email). Needs the email "
                 "and the reason.", ["find_customer_by_email", "cancel_pending_order"]),
        (ADDRESS, "Change the shipping address of a pending order. Needs the order id, the address and the zip.",
         ["modify_order_address"]),
    ]) as library:
        assert intent.known(library).people
        who = "My email is lena@example.org. "
        with_email = library.fetch(who + REQUEST, k=2, abstain=False)
        bare = library.fetch(REQUEST, k=2, abstain=False)
        # the identifying sentence is embedded (a skill reads it), so the similarities differ
        assert [round(m.similarity, 6) for m in with_email] != [round(m.similarity, 6) for m in bare]


def test_a_fetch_that_reads_a_newer_generation_embeds_the_task_as_that_generation_reads_it(tmp_path, embedder):
    path = tmp_path / "lib"
    task = "My email is lena@example.org. " + REQUEST
    with _library(path, embedder, [
        (CANCEL, "Cancel a pending order. Needs the order id and the reason.", ["cancel_pending_order"]),
    ]) as first:
        first.fetch(REQUEST, k=1, abstain=False)  # this process has seen a library that looks nobody up
        assert not intent.known(first).people
        # another library object adds a skill that looks customers up by email
        with SkillLibrary(path, embedder=embedder, read_only_tools=["find_customer_by_email"],
                          policy=Policy(auto_approve="all")) as other:
            other.add(Skill.from_function(LOOKUP, when="Cancel the pending order of a customer found by email.",
                                          tools=["find_customer_by_email", "cancel_pending_order"]), verified=True)
        got = first.fetch(task, k=2, abstain=False)
        with SkillLibrary(path, embedder=embedder, read_only_tools=["find_customer_by_email"]) as fresh:
            expected = fresh.fetch(task, k=2, abstain=False)
        # the first object embedded the task again with its email sentence, as a fresh one does
        assert [(m.skill.name, round(m.similarity, 6)) for m in got] == \
            [(m.skill.name, round(m.similarity, 6)) for m in expected]
