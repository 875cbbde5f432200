"""extract_procedures against the scripted chat-completions server (issue 11)."""

from __future__ import annotations

import json

import pytest
from chat_server import ScriptedChatServer, json_reply

from skill_library.procedures import MAX_PROCEDURES, fact_problem

SESSION = [
    {"role": "user", "content": "Should I move my savings into tech stocks?"},
    {"role": "assistant", "content": "Before anything: in a bad year you could lose 40%, about 8,000 EUR."},
    {"role": "user", "content": "Thanks, always tell me the worst case like that first."},
]
GOOD = {"title": "Quantify the worst case", "trigger": "When the user asks about an investment",
        "description": "State the worst plausible loss in money before recommending anything.",
        "confidence": 0.85}


@pytest.fixture
def client():
    def make(server):
        import openai

        return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5)
    return make


@pytest.fixture(autouse=True)
def optimizer(library):
    """The extracting service: it may propose, never approve."""
    from skill_library.governance import Actor

    library.actors.add(Actor(id="optimizer", kind="service", permissions=frozenset({"skill.propose"})))


def test_a_good_reply_becomes_a_draft(library, client):
    with ScriptedChatServer([json_reply({"procedures": [GOOD]})]) as server:
        result = library.extract_procedures(SESSION, actor="optimizer", subject="alice", client=client(server))
        sent = server.requests[0]["messages"]
    assert not result.rejected and not result.refused
    [draft] = result.drafts
    assert (draft.name, draft.status, draft.kind) == ("quantify_the_worst_case", "draft", "instruction")
    procedure = library.procedures.get(draft.name)
    assert (procedure.confidence, procedure.actor, procedure.subject, procedure.source) == (
        0.85, "optimizer", "alice", "extracted")
    assert "always tell me the worst case" in sent[-1]["content"]
    assert library.build_system_prompt("Base.") == "Base."  # a draft is never in the prompt


def test_malformed_json_is_sent_back_and_retried(library, client):
    with ScriptedChatServer(["{not json", json_reply({"procedures": [GOOD]})]) as server:
        result = library.extract_procedures(SESSION, actor=None, client=client(server))
        repair = server.requests[1]["messages"][-1]["content"]
    assert len(result.drafts) == 1
    assert result.attempts == [[result.attempts[0][0]]] and "not valid JSON" in result.attempts[0][0]
    assert "not valid JSON" in repair and "attempt 1 of 3" in repair


def test_invalid_fields_every_time_are_rejected_with_the_reason(library, client):
    bad = {**GOOD, "confidence": 0.5, "trigger": ""}
    with ScriptedChatServer([json_reply({"procedures": [bad]})] * 3) as server:
        result = library.extract_procedures(SESSION, actor=None, client=client(server), max_retries=2)
        assert len(server.requests) == 3
    assert result.rejected and result.drafts == []
    assert len(result.reasons) == 3
    assert '"trigger" must be a non-empty string' in result.reasons[0]
    assert '"confidence" must be one of 0.60, 0.70, 0.85, got 0.5' in result.reasons[0]
    assert library.procedures.list() == []


def test_too_many_procedures_are_refused_then_fixed(library, client):
    many = [{**GOOD, "title": f"Rule number {n}"} for n in range(MAX_PROCEDURES + 1)]
    with ScriptedChatServer([json_reply({"procedures": many}),
                             json_reply({"procedures": many[:2]})]) as server:
        result = library.extract_procedures(SESSION, actor=None, client=client(server))
        repair = server.requests[1]["messages"][-1]["content"]
    assert "4 procedures proposed; at most 3 are allowed" in repair
    assert [d.name for d in result.drafts] == ["rule_number_0", "rule_number_1"]


def test_a_fact_dressed_as_a_procedure_is_refused(library, client):
    fact = {"title": "Investor profile", "trigger": "When the user asks about an investment",
            "description": "The user is 45 and has 20,000 EUR in savings.", "confidence": 0.7}
    with ScriptedChatServer([json_reply({"procedures": [fact, GOOD]})]) as server:
        result = library.extract_procedures(SESSION, actor=None, client=client(server))
    assert [d.name for d in result.drafts] == ["quantify_the_worst_case"]
    [(item, reason)] = result.refused
    assert item["title"] == "Investor profile" and "states a fact about the user" in reason
    assert "investor_profile" not in library.context.store.names()


@pytest.mark.parametrize("text, is_fact", [
    ("The user is 45 years old.", True),
    ("User prefers bonds over stocks.", True),
    ("The user's portfolio is mostly tech.", True),
    ("She lives in Lyon.", True),
    ("Always quantify the worst case before the user asks.", False),
    ("When the user is unsure, offer two options.", False),
    ("Ask the user for their horizon before recommending.", False),
])
def test_fact_check(text, is_fact):
    assert (fact_problem({"title": "t", "description": text}) is not None) is is_fact


def test_an_opted_out_subject_is_not_extracted_from(library, client):
    library.opt_out("bob")
    with ScriptedChatServer([json_reply({"procedures": [GOOD]})]) as server:
        result = library.extract_procedures(SESSION, actor=None, subject="bob", client=client(server))
        assert server.requests == []
    assert result.rejected and "opted out" in result.reasons[0]
    json.dumps(result.reasons)


def test_an_extracted_procedure_is_proposed_approved_by_a_person_and_promoted(library, client):
    from skill_library.errors import PermissionDenied

    with ScriptedChatServer([json_reply({"procedures": [GOOD]})]) as server:
        [draft] = library.extract_procedures(SESSION, actor="optimizer", client=client(server)).drafts
    assert "LEARNED OPERATIONAL" not in library.build_system_prompt("base")  # a draft is not applied
    with pytest.raises(PermissionDenied, match="optimizer"):
        library.approve(draft.name, draft.version, actor="optimizer")  # a service never approves
    approved = library.approve(draft.name, draft.version, actor=None, reason="a good rule")
    assert approved.status == "approved"
    library.promote(draft.name, draft.version, actor=None)
    assert GOOD["title"] in library.build_system_prompt("base")
    assert [(e.to_status, e.actor) for e in library.audit(draft.name)][:2] == [("draft", "optimizer"),
                                                                               ("evaluated", library.resolve_actor(None).id)]
    with ScriptedChatServer([json_reply({"procedures": [GOOD]})]) as server:
        with pytest.raises(PermissionDenied, match="stranger"):
            library.extract_procedures(SESSION, actor="stranger", client=client(server))
