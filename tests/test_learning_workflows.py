"""One skill per workflow: merge, revision across traces, masked examples, no personal data.

Real sandbox workers, the real embedding model and a real Chroma index.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skill_library.governance import Policy
from skill_library.induction import DataflowGeneralizer
from skill_library.induction.admission import choose_indexed, normalized_code
from skill_library.models import Example, Outcome, ToolCall, Trace

#: these tests learn skills that activate: they opt in to auto-approval
ALL = Policy(auto_approve="all")

VERIFIED = Outcome(success=True, verifier="db-check")


def cancel_trace(person: str, email: str, order: str, reason: str, *, persona: bool = True) -> Trace:
    intro = f"I'm {person}, {email}. I am patient but busy. " if persona else ""
    return Trace(
        task=f"{intro}Please cancel order {order} because it was {reason}.",
        params={"email": email, "order_id": order, "reason": reason},
        calls=[
            ToolCall(name="find_user_id_by_email", arguments={"email": email}, result="u_" + order[-3:]),
            ToolCall(name="get_order_details", arguments={"order_id": order},
                     result={"order_id": order, "status": "pending"}),
            ToolCall(name="cancel_pending_order", arguments={"order_id": order, "reason": reason},
                     result={"status": "cancelled"}),
        ],
        outcome=VERIFIED,
    )


def test_traces_of_one_workflow_give_one_skill_with_all_the_evidence(library):
    first = library.learn(cancel_trace("Dana Whitfield", "dana.w@example.org", "#W1001", "no longer needed"))
    assert first.status == "saved"
    assert first.skill.name == "cancel_pending_order_by_email"
    second = library.learn(cancel_trace("Ravi Osei", "ravi@example.net", "#W2002", "ordered by mistake"))
    third = library.learn(cancel_trace("Mia Chen", "mia@example.com", "#W3003", "too slow", persona=False))
    assert [second.status, third.status] == ["merged", "merged"]
    assert len(library.list()) == 1
    skill = library.get(first.skill.name)
    assert (skill.version, skill.successes, skill.failures) == (1, 3, 0)
    examples = library.examples(skill.name)
    assert len(examples) == 3  # every trace is evidence; equal texts are indexed once
    assert [e.indexed for e in examples] == [True, False, True]
    assert {e.text for e in examples} == {
        "{email}. Please cancel order {order_id} because it was {reason}.",
        "Please cancel order {order_id} because it was {reason}.",
    }
    texts = [skill.name, skill.when, skill.code or "", *[e.text for e in examples]]
    for secret in ("Dana", "Whitfield", "dana.w@example.org", "Ravi", "Mia", "#W1001", "patient"):
        assert not any(secret in t for t in texts), secret
    # fetch finds it by what is asked, whoever asks, and returns it once
    matches = library.fetch("I am Lee Park. Cancel order #W9 please, it was a duplicate.", k=3)
    assert [m.skill.name for m in matches] == [skill.name]


# a long shared request, so the two lookups' tasks read alike (similarity over 0.9)
LATER = " Cancel the pending order before it ships, and send the order confirmation of the cancellation to me."


def cancel_by_name_trace(first: str, last: str, zip_code: str, order: str, reason: str) -> Trace:
    """The cancel workflow with the customer looked up by name and zip, not by email."""
    return Trace(
        task=f"I'm {first} {last}, {zip_code}. I am patient but busy. "
             f"Please cancel order {order} because it was {reason}.{LATER}",
        params={"first_name": first, "last_name": last, "zip": zip_code, "order_id": order, "reason": reason},
        calls=[
            ToolCall(name="find_user_id_by_name_zip",
                     arguments={"first_name": first, "last_name": last, "zip": zip_code}, result="u_" + order[-3:]),
            ToolCall(name="get_order_details", arguments={"order_id": order},
                     result={"order_id": order, "status": "pending"}),
            ToolCall(name="cancel_pending_order", arguments={"order_id": order, "reason": reason},
                     result={"status": "cancelled"}),
        ],
        outcome=VERIFIED,
    )


def test_a_trace_that_reads_alike_but_takes_other_inputs_is_another_workflow(library):
    """The same request with the customer looked up another way is no "duplicate" of the
    reliable email skill: it is saved as its own workflow, and further traces merge into it."""
    for n, (person, email) in enumerate([("Dana Whitfield", "dana.w@example.org"), ("Ravi Osei", "ravi@example.net")]):
        trace = cancel_trace(person, email, f"#W100{n}", "no longer needed")
        library.learn(trace.model_copy(update={"task": trace.task + LATER}))
    email_skill = library.get("cancel_pending_order_by_email")
    assert email_skill.successes == 2
    by_name = library.learn(cancel_by_name_trace("Mia", "Chen", "60614", "#W3003", "too slow"))
    assert by_name.status == "saved", by_name.reasons
    assert by_name.skill.name == "cancel_pending_order_by_name_zip"
    again = library.learn(cancel_by_name_trace("Lee", "Park", "10001", "#W4004", "ordered by mistake"))
    assert (again.status, again.skill.name) == ("merged", by_name.skill.name)
    assert library.get("cancel_pending_order_by_email").successes == 2  # no evidence moved to it
    assert sorted(s.name for s in library.list()) == [
        "cancel_pending_order_by_email", "cancel_pending_order_by_name_zip"]


def test_merged_evidence_survives_a_reindex_and_the_index_holds_each_text(library):
    library.learn(cancel_trace("Dana Whitfield", "dana.w@example.org", "#W1001", "no longer needed"))
    library.learn(cancel_trace("Mia Chen", "mia@example.com", "#W3003", "too slow", persona=False))
    assert library.index.count() == 4  # the when (what the skill does), its phrase and both examples
    assert library.reindex() == 1
    assert library.index.count() == 4
    assert len(library.examples("cancel_pending_order_by_email")) == 2


def orders_trace(orders: list[str]) -> Trace:
    return Trace(
        task=f"cancel every pending order of customer {orders[0][:2]}",
        params={"customer": orders[0][:2]},
        calls=[
            ToolCall(name="list_orders", arguments={"customer": orders[0][:2]},
                     result=[{"order_id": o} for o in orders]),
            *[ToolCall(name="cancel_order", arguments={"order_id": o}, result="ok") for o in orders],
        ],
        outcome=VERIFIED,
    )


def test_a_one_item_skill_is_revised_into_a_loop_by_a_longer_trace(library):
    first = library.learn(orders_trace(["AB1"]))
    assert first.status == "saved" and "[0]" in first.skill.code and "for " not in first.skill.code
    revised = library.learn(orders_trace(["CD1", "CD2", "CD3"]))
    assert revised.status == "revised", revised.reasons
    assert revised.skill.name == first.skill.name and revised.skill.version == 2
    assert "for " in revised.skill.code
    assert len(revised.skill.provenance.trace_ids) == 2
    # evidence counts live in the counters, never frozen into the immutable code
    assert "Learned from" not in revised.skill.code
    # the revision replays the one-item trace too, so a third trace merges
    assert library.learn(orders_trace(["EF1", "EF2"])).status == "merged"
    assert library.get(first.skill.name).successes == 2  # v2: its own trace and the merged one


def refund_trace(item: str, price: float, amount: float, units: list[str]) -> Trace:
    return Trace(
        task=f"refund {item} to the customer",
        params={"item": item, "units": units},
        calls=[
            ToolCall(name="get_price", arguments={"item": item}, result={"item": item, "price": price}),
            ToolCall(name="issue_refund", arguments={"item": item, "amount": amount, "quantity": len(units),
                                                     "channel": "card"},
                     result={"refunded": amount}),
        ],
        outcome=VERIFIED,
    )


def test_differing_constants_become_expressions_and_equal_ones_stay(library):
    first = library.learn(refund_trace("lamp", 40, 20, ["a"]))
    assert first.status == "saved" and "amount=20" in first.skill.code
    revised = library.learn(refund_trace("desk", 30, 15, ["a", "b", "c"]))
    assert revised.status == "revised", revised.reasons
    code = revised.skill.code
    assert "amount=(r1['price'] / 2)" in code  # half of the looked-up price
    assert "quantity=len(units)" in code  # a count of a list parameter
    assert "channel='card'" in code  # equal in every trace: a constant
    assert library.learn(refund_trace("chair", 50, 25, ["x", "y"])).status == "merged"


def test_a_fixed_fraction_of_a_looked_up_value_is_found():
    traces = [refund_trace("lamp", 40, 4, ["a"]), refund_trace("desk", 35, 3.5, ["a"]),
              refund_trace("rug", 12.3, 1.23, ["a"])]
    candidate = DataflowGeneralizer().generalize_many(traces)
    assert "amount=round((r1['price'] * 0.1), 2)" in candidate.code


def test_normalized_code_ignores_names_and_docstrings():
    a = 'def cancel_it(order_id: str):\n    """Cancel."""\n    r1 = cancel(order_id=order_id)\n    return r1\n'
    b = "def stop_order(oid):\n    result = cancel(order_id=oid)\n    return result\n"
    c = "def stop_order(oid):\n    result = cancel(order_id=oid, force=True)\n    return result\n"
    assert normalized_code(a) == normalized_code(b) != normalized_code(c)


def test_indexed_examples_are_capped_and_diverse():
    texts = [f"cancel order {{order_id}} variant {n % 3}" for n in range(20)] + [
        f"completely different wording {n}" for n in range(10)]
    examples = [Example(trace_id=str(n), text=t) for n, t in enumerate(texts)]
    chosen = [e for e in choose_indexed(examples, cap=5) if e.indexed]
    assert len(chosen) == 5
    assert len({e.text for e in chosen}) == 5  # no text twice
    assert any("variant" in e.text for e in chosen) and any("different" in e.text for e in chosen)


FIRST = ["Dana", "Ravi", "Mia", "Lee", "Zoe", "Omar", "Ines", "Kofi"]
LAST = ["Whitfield", "Osei", "Chen", "Park", "Novak", "Haddad", "Silva"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_no_personal_data_reaches_name_when_docstring_or_code(seed):
    rng = random.Random(seed)
    first, last = rng.choice(FIRST), rng.choice(LAST)
    email = f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.org"
    zip_code = str(rng.randint(10000, 99999))
    phone = f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    order = f"#W{rng.randint(1000000, 9999999)}"
    persona = rng.choice([
        f"I'm {first} {last} from {zip_code}, {email}.",
        f"Hi, this is {first} {last} ({phone}).",
        f"My name is {first} {last} and I live at {zip_code}.",
        f"I lost access to my old email, old.{email}. Still {first} here.",  # an email that binds nothing
    ])
    mood = rng.choice(["I am patient but busy.", "Thanks so much!", "I'm a bit frustrated."])
    ask = rng.choice([f"Please cancel order {order}.", f"Cancel {order} for me."])
    trace = Trace(
        task=" ".join(rng.sample([persona, mood], 2) + [ask]),
        params={"order_id": order, "email": email},
        calls=[ToolCall(name="find_user_id_by_email", arguments={"email": email}, result="u1"),
               ToolCall(name="cancel_pending_order", arguments={"order_id": order}, result="ok")],
        outcome=VERIFIED,
    )
    candidate = DataflowGeneralizer().generalize(trace)
    shown = "\n".join([candidate.name, candidate.when, candidate.code, candidate.description])
    for value in (first, last, email, zip_code, phone, order, "example.org", "example. org"):
        assert not re.search(re.escape(value), shown, re.IGNORECASE), (value, shown)
    assert "the order id" in candidate.when and "{" not in candidate.when


def invoices_trace(customer: str, ids: list[str]) -> Trace:
    return Trace(
        task=f"archive the invoices of {customer}",
        params={"customer": customer},
        calls=[ToolCall(name="find_invoices", arguments={"customer": customer}, result=[{"id": i} for i in ids]),
               *[ToolCall(name="archive", arguments={"invoice_id": i}, result="ok") for i in ids]],
        outcome=VERIFIED,
    )


def llm_reply(body: str) -> dict:
    return {
        "name": "archive_customer_invoices",
        "when": "Archive the invoices of the customer",
        "description": "Archive the invoices of one customer.",
        "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
        "code": "def archive_customer_invoices(customer: str) -> list:\n" + body,
    }


def test_the_llm_revision_prompt_gets_every_example_trace(library):
    from chat_server import ScriptedChatServer, json_reply

    from skill_library.induction import LLMGeneralizer

    first_only = "    found = find_invoices(customer=customer)\n    return [archive(invoice_id=found[0]['id'])]\n"
    three = ("    found = find_invoices(customer=customer)\n"
             "    return [archive(invoice_id=found[n]['id']) for n in range(3)]\n")
    loop = ("    done = []\n    for invoice in find_invoices(customer=customer):\n"
            "        done.append(archive(invoice_id=invoice['id']))\n    return done\n")
    with ScriptedChatServer([json_reply(llm_reply(first_only)), json_reply(llm_reply(three)),
                             json_reply(llm_reply(loop))]) as server:
        llm = LLMGeneralizer(base_url=server.base_url, api_key="test", model="scripted")
        assert library.learn(invoices_trace("acme", ["i-1"]), generalizer=llm).status == "saved"
        result = library.learn(invoices_trace("globex", ["g-1", "g-2", "g-3"]), generalizer=llm)
        assert result.status == "revised", result.reasons
        assert "for invoice in" in result.skill.code and result.skill.provenance.generalizer == "llm"
        prompt = server.requests[2]["messages"][-1]["content"]
        assert "One workflow, 2 verified traces" in prompt
        assert "archive the invoices of acme" in prompt and "archive the invoices of globex" in prompt


def test_learn_many_keeps_input_order_and_merges_within_a_batch(library):
    from skill_library import library as library_module

    good = [cancel_trace(f"P{n}", f"p{n}@example.org", f"#W{4000 + n}", "no longer needed") for n in range(5)]
    unverified = good[0].model_copy(update={"outcome": Outcome(success=True), "id": "unverified-1"})
    batch = [good[0], unverified, *good[1:], orders_trace(["AB1", "AB2"])]
    old = library_module.LEARN_BATCH
    library_module.LEARN_BATCH = 3  # several batches: merges also cross batch boundaries
    try:
        results = library.learn_many(batch, progress=True)
    finally:
        library_module.LEARN_BATCH = old
    assert [r.status for r in results] == ["saved", "rejected", "merged", "merged", "merged", "merged", "saved"]
    assert "verifier" in results[1].reasons[0]
    assert len(library.list()) == 2
    assert library.get("cancel_pending_order_by_email").successes == 5
    # the index holds each skill's texts, as a rebuild from the records would
    assert library.index.entries() == {e.id: e.version for e in library._index.expected_entries()}


def test_a_skill_looks_before_it_acts_when_reads_are_declared(tmp_path, embedder):
    from skill_library import SkillLibrary

    trace = Trace(
        task="make 2 widgets", params={"count": 2}, outcome=VERIFIED,
        calls=[ToolCall(name="inventory", result={"widget": 0, "wood": 5}),
               ToolCall(name="build", arguments={"item": "widget", "count": 2},
                        result={"built": "widget", "inventory": {"widget": 2, "wood": 3}}),
               ToolCall(name="inventory", result={"widget": 2, "wood": 3})],
    )
    with SkillLibrary(tmp_path / "lib", embedder=embedder, read_only_tools={"inventory"}, policy=ALL) as library:
        skill = library.learn(trace).skill
        assert skill.name == "build_widget"
        assert "state.get('widget', 0) >= count" in skill.code
        # the first, unused read is gone; the guard reads, and the final read is the result
        assert skill.code.count("= inventory()") == 2 and "\n    inventory()" not in skill.code
        stock = {"widget": 5, "wood": 0}

        def build(item: str, count: int) -> dict:
            stock[item] = stock.get(item, 0) + count
            return {"built": item, "inventory": dict(stock)}

        tools = {"inventory": lambda: dict(stock), "build": build}
        done = library.run(skill.name, {"count": 3}, tools)
        assert done.ok and [c.name for c in done.trace.calls] == ["inventory"]  # nothing to do
        stock["widget"] = 0
        made = library.run(skill.name, {"count": 3}, tools)
        assert made.ok and [c.name for c in made.trace.calls] == ["inventory", "build", "inventory"]
    with SkillLibrary(tmp_path / "plain", embedder=embedder, policy=ALL) as library:  # nothing declared
        code = library.learn(trace).skill.code
        assert "state" not in code and "\n    inventory()" in code


def _learn_in_process(spec: dict, worker: int) -> None:
    from embed_service import process_embedder  # the session's model: no torch in this process

    from skill_library import SkillLibrary

    with SkillLibrary(**spec, embedder=process_embedder(), policy=ALL) as library:
        for n in range(3):
            order = f"#W{5000 + worker * 10 + n}"
            result = library.learn(cancel_trace(f"W{worker}", f"w{worker}n{n}@example.org", order, "too slow"))
            assert result.status in ("saved", "merged"), result


@pytest.mark.slow
def test_four_processes_learning_one_workflow_make_one_skill_with_exact_evidence(deployment, embedder):
    """On a folder (file lock) and on PostgreSQL + Chroma server (advisory lock)."""
    from tests.processes import worker_context

    deployment.open(embedder).close()
    context = worker_context()
    workers = [context.Process(target=_learn_in_process, args=(deployment.spec, w)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=300)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    with deployment.open(embedder) as library:
        assert [s.name for s in library.list()] == ["cancel_pending_order_by_email"]
        skill = library.get("cancel_pending_order_by_email")
        assert (skill.version, skill.successes) == (1, 12)
        assert len(library.examples(skill.name)) == 12
        assert len(library.outcomes(skill.name)) == 12
        assert library.index.entries() == {e.id: e.version for e in library._index.expected_entries()}


class NoModelEmbedder:
    """A named stand-in for an embedder whose model cannot be loaded: any embedding fails."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name

    def embed(self, texts):
        raise AssertionError(f"the model was needed to embed {list(texts)[:1]}")


def test_rebuilding_and_retiring_need_no_model_once_texts_are_embedded(tmp_path, embedder):
    import shutil

    from skill_library import SkillLibrary

    path = tmp_path / "lib"
    with SkillLibrary(path, embedder=embedder, policy=ALL) as library:
        library.learn_many([cancel_trace(f"P{n}", f"p{n}@example.org", f"#W{70 + n}", "late", persona=n % 2 == 0)
                            for n in range(4)] + [orders_trace(["AB1", "AB2"])])
        expected = library.index.entries()
    shutil.rmtree(path / "chroma")
    with SkillLibrary(path, embedder=NoModelEmbedder(embedder.model_name)) as library:
        assert library.reindex() == 2  # every vector came from the records
        assert library.index.entries() == expected
        library.retire("cancel_every_order")
        assert {e.split("#")[0].split("~")[0] for e in library.index.entries()} == {"cancel_pending_order_by_email"}


def test_sentences_end_at_punctuation_and_a_space_so_emails_stay_whole():
    from skill_library.privacy import sentences
    from skill_library.privacy import redact

    text = "I lost access to my old email, maya.tanaka94@example.com. Please cancel #W1."
    assert sentences(text) == ["I lost access to my old email, maya.tanaka94@example.com.", "Please cancel #W1."]
    shown = redact(text, {"order_id": "#W1"}, {}, topic={"cancel"})
    assert "maya" not in shown and "example" not in shown and "{order_id}" in shown


def _return_trace(task: str, params: dict, returned: list[str]) -> Trace:
    order = {"order_id": "#W1", "items": [{"item_id": "111"}, {"item_id": "222"}]}
    return Trace(
        task=task, params=params,
        calls=[ToolCall(name="get_order_details", arguments={"order_id": "#W1"}, result=order),
               ToolCall(name="return_delivered_order_items", arguments={"order_id": "#W1", "item_ids": returned},
                        result={"status": "return requested"})],
        outcome=VERIFIED,
    )


def test_a_skill_given_every_looked_up_item_is_named_for_all_of_them():
    """Returning the items a customer names and returning all of an order's items are two
    workflows with the same tools: the names say which (not ``..._2``)."""
    some = DataflowGeneralizer().generalize(_return_trace(
        "Return item 111 of order #W1.", {"order_id": "#W1", "item_ids": ["111"]}, ["111"]))
    every = DataflowGeneralizer().generalize(_return_trace(
        "Return everything in order #W1.", {"order_id": "#W1"}, ["111", "222"]))
    # the tool's own name is taken (a skill must not shadow it): the lookup is added
    assert some.name == "return_delivered_order_items_after_get_order_details"
    assert every.name == "return_all_delivered_order_items", every.code
    assert "for " in every.code and "item_ids" not in every.parameters["properties"]


def test_a_parameter_renamed_or_an_optional_argument_stays_one_workflow(library):
    """Same tools and behaviour name, but a parameter called otherwise in the trace's params,
    or an extra optional argument: the evidence is not split into a ``..._2`` skill."""
    people = [("Dana Whitfield", "dana.w@example.org"), ("Ravi Osei", "ravi@example.net"), ("Mia Chen", "mia@example.com")]
    for n, (person, email) in enumerate(people):
        library.learn(cancel_trace(person, email, f"#W100{n}", "no longer needed"))
    renamed = cancel_trace("Lee Park", "lee@example.com", "#W4004", "ordered by mistake")
    params = dict(renamed.params)
    params["customer_email"] = params.pop("email")
    optional = cancel_trace("Ann Bo", "ann@example.com", "#W5005", "too slow")
    calls = list(optional.calls)
    calls[2] = ToolCall(name="cancel_pending_order", arguments={"order_id": "#W5005", "reason": "too slow",
                                                                "note": "call me"}, result={"status": "cancelled"})
    for trace in (renamed.model_copy(update={"params": params}),
                  optional.model_copy(update={"params": {**optional.params, "note": "call me"}, "calls": calls})):
        result = library.learn(trace)
        assert result.status != "saved", result.reasons
    assert [s.name for s in library.list()] == ["cancel_pending_order_by_email"]
