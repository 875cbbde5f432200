"""Usage-pattern memory (issue 11): states, classification, transitions, prediction, prefetch."""

from __future__ import annotations

import pytest

from skill_library.models import Skill
from skill_library.patterns import PatternError

SPACE = [
    {"name": "browsing", "description": "the user looks around the catalogue",
     "examples": ["show me your jackets", "what do you have in blue?"]},
    {"name": "checkout", "description": "the user pays for the items in the cart",
     "examples": ["I want to pay now", "take my card"]},
    {"name": "support", "description": "the user has a problem with an order",
     "examples": ["my parcel never arrived", "the zip is broken"]},
]


def test_unknown_states_are_errors(library):
    library.patterns.define_states(SPACE)
    with pytest.raises(PatternError, match="unknown state 'dancing'"):
        library.patterns.record_transition("ann", "browsing", "dancing", session="s1")
    with pytest.raises(PatternError, match="names a state twice: browsing"):
        library.patterns.define_states(["browsing", "browsing"])


def test_classify_state_offline_with_the_transition_prior(library):
    patterns = library.patterns
    patterns.define_states(SPACE)
    found = patterns.classify_state("where is my parcel? it never came")
    assert found is not None and found.state == "support" and 0 < found.confidence <= 1
    assert patterns.classify_state("purple elephants sing opera on the moon") is None
    ambiguous = "ok, next"
    plain = patterns.classify_state(ambiguous)
    for n in range(20):
        patterns.record_transition(f"u{n}", "browsing", "checkout", session=f"s{n}")
    primed = patterns.classify_state(ambiguous, recent_states=["browsing"])
    assert primed is not None and primed.state == "checkout"
    assert plain is None or plain.state != "checkout" or plain.confidence < primed.confidence
    # "my order" reads most like support; a subject's own habit primes their turns, until they opt out
    assert patterns.classify_state("my order").state == "support"
    assert patterns.classify_state("my order", recent_states=["browsing"]).state == "checkout"  # everyone's
    for n in range(5):
        patterns.record_transition("ivy", "browsing", "browsing", session=f"i{n}")
    assert patterns.classify_state("my order", recent_states=["browsing"], subject="ivy").state == "browsing"
    patterns.opt_out("ivy")
    assert patterns.classify_state("my order", recent_states=["browsing"], subject="ivy").state == "support"


def test_distribution_and_predict_need_min_n(library):
    patterns = library.patterns
    for n, state in enumerate(["checkout", "checkout", "support", "checkout"]):
        assert patterns.record_transition("ann", "browsing", state, session=f"s{n}").recorded
    dist = patterns.distribution("ann", "browsing")
    assert dist == {"checkout": (0.75, 3), "support": (0.25, 1)}
    assert patterns.distribution("ann", "browsing", last_n=1) == {"checkout": (1.0, 1)}
    assert patterns.predict("ann", "browsing", min_n=5) is None
    assert patterns.predict("ann", "browsing", min_n=4) == "checkout"
    assert patterns.distribution("bob", "browsing") == {}


CODE = {
    "find_user": "def find_user(email: str) -> dict:\n    return lookup(email=email)\n",
    "list_orders": "def list_orders(user_id: str) -> list:\n    return orders(user_id=user_id)\n",
}


def test_fetch_prefetches_the_predicted_next_skill(library):
    library.add(Skill.from_function(CODE["find_user"], when="find the customer account of an email address",
                                    tools=["lookup"]), verified=True)
    library.add(Skill.from_function(CODE["list_orders"], when="list every order a customer placed",
                                    tools=["orders"]), verified=True)
    task = "find the account of alice@example.com"
    for n in range(4):
        library.patterns.record_transition("ann", "find_user", "list_orders", session=f"s{n}")
    assert [m.skill.name for m in library.fetch(task, k=1, subject="ann", state="find_user")] == ["find_user"]
    library.patterns.record_transition("ann", "find_user", "list_orders", session="s5")
    matches = library.fetch(task, k=1, subject="ann", state="find_user")
    assert [(m.skill.name, m.prefetch) for m in matches] == [("find_user", False), ("list_orders", True)]
    assert [m.skill.name for m in library.fetch(task, k=1)] == ["find_user"]  # no subject: no prefetch
    library.opt_out("ann")
    assert [m.skill.name for m in library.fetch(task, k=1, subject="ann", state="find_user")] == ["find_user"]


def test_classify_state_by_the_llm_when_asked(library):
    import openai
    from chat_server import ScriptedChatServer, json_reply

    from skill_library.errors import LLMError

    library.patterns.define_states(SPACE)
    with ScriptedChatServer([json_reply({"state": "checkout", "confidence": 0.9}),
                             json_reply({"state": "dancing", "confidence": 0.9}),
                             json_reply({"state": "support", "confidence": 0.1})]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0, timeout=5)
        found = library.patterns.classify_state("ok, next", recent_states=["browsing"], llm=True, client=client)
        prompt = server.last_user_message()
        with pytest.raises(LLMError, match="unknown state 'dancing'"):
            library.patterns.classify_state("ok", llm=True, client=client)
        assert library.patterns.classify_state("hm", llm=True, client=client) is None  # below the threshold
    assert (found.state, found.confidence) == ("checkout", 0.9)
    assert "- checkout: the user pays for the items in the cart" in prompt
    assert "recent states, oldest first: browsing" in prompt and "ok, next" in prompt


def test_runs_in_a_session_are_transitions_that_prefetch_reads(library):
    tools = {"lookup": lambda email: {"id": "u1", "email": email}, "orders": lambda user_id: ["W1"]}
    library.add(Skill.from_function(CODE["find_user"], when="find the customer account of an email address",
                                    tools=["lookup"]), verified=True)
    library.add(Skill.from_function(CODE["list_orders"], when="list every order a customer placed",
                                    tools=["orders"]), verified=True)
    for n in range(5):
        assert library.run("find_user", {"email": "a@example.com"}, tools, subject="gus", session=f"s{n}").ok
        assert library.run("list_orders", {"user_id": "u1"}, tools, subject="gus", session=f"s{n}").ok
    assert library.patterns.distribution("gus", "find_user") == {"list_orders": (1.0, 5)}
    assert library.patterns.distribution("gus", "list_orders") == {}  # no session went on after it
    matches = library.fetch("find the account of bea@example.com", k=1, subject="gus", state="find_user")
    assert [(m.skill.name, m.prefetch) for m in matches] == [("find_user", False), ("list_orders", True)]


def test_cli_fetch_marks_the_prefetched_skill(tmp_path, embedder):
    import json

    from typer.testing import CliRunner

    from skill_library.cli import app
    from skill_library.library import SkillLibrary

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(Skill.from_function(CODE["find_user"], when="find the customer account of an email address",
                                    tools=["lookup"]), verified=True)
        lib.add(Skill.from_function(CODE["list_orders"], when="list every order a customer placed",
                                    tools=["orders"]), verified=True)
        for n in range(5):
            lib.patterns.record_transition("hal", "find_user", "list_orders", session=f"s{n}")
    result = CliRunner().invoke(app, ["fetch", "find the account of x@example.com", "-k", "1", "--subject", "hal",
                                      "--state", "find_user", "--json"], env={"SKILLS_DIR": str(folder)})
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [(m["name"], m.get("prefetch", False)) for m in found] == [("find_user", False), ("list_orders", True)]
