"""The helpdesk world and its look-alike suite; the protocol on a small slice.

The suite is generated data: it is checked whole (shape, held-out people and phrasings,
every gold solution verifies, determinism). The protocol runs on a slice; its numbers must
follow from its per-ticket records. The full run is `python -m benchmarks lookalike`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from benchmarks import lookalike
from benchmarks.suite_library import flags_of
from benchmarks.tasks import helpdesk
from benchmarks.worlds import ToolError, get_world, load_tasks
from benchmarks.worlds.helpdesk import HelpdeskWorld


@pytest.fixture(scope="module")
def tasks():
    return load_tasks("helpdesk")


def test_the_world_has_twelve_to_fourteen_tools_declared_with_their_side_effects():
    world = get_world("helpdesk")
    world.reset(1)
    specs = world.tool_specs()
    assert 10 <= len(specs) <= 14 and set(specs) == set(world.tool_functions())
    assert {n for n, s in specs.items() if not s.side_effects} == world.read_only_tools() == {
        "find_employee_by_email", "get_employee", "list_devices"}
    assert all(s.schema_["type"] == "object" for s in specs.values())
    assert all(d.strip() for d in world.tool_descriptions().values())


def test_the_world_is_generated_from_the_seed_and_enforces_no_policy_itself():
    a, b = HelpdeskWorld(), HelpdeskWorld()
    a.reset(3)
    b.reset(3)
    assert a.state() == b.state()
    b.reset(4)
    assert a.state() != b.state()
    locked = next(e for e in a.db["employees"].values() if e["status"] == "locked")
    # resetting a locked account's password works and leaves it locked (the procedure is the helpdesk's)
    assert a.call("reset_password", {"employee_id": locked["employee_id"]})["status"] == "locked"
    active = next(e for e in a.db["employees"].values() if e["status"] == "active")
    before = a.state()
    assert a.call("unlock_account", {"employee_id": active["employee_id"]})["changed"] is False
    assert a.state() == before
    with pytest.raises(ToolError, match="no employee has the email 'nobody@northwind.example'; check the spelling"):
        a.call("find_employee_by_email", {"email": "nobody@northwind.example"})
    a.break_tool("reset_password", "store down")
    with pytest.raises(ToolError, match="store down"):
        a.call("reset_password", {"employee_id": active["employee_id"]})


def test_the_suite_has_the_shape_issue_21_asks_for(tasks):
    train = [t for t in tasks if t.split == "train"]
    test = [t for t in tasks if t.split == "test"]
    inside = [t for t in test if not helpdesk.is_out_of_scope(t)]
    outside = [t for t in test if helpdesk.is_out_of_scope(t)]
    assert len({t.id for t in tasks}) == len(tasks)
    assert {t.workflow for t in train} == {t.workflow for t in inside} == set(helpdesk.WORKFLOWS)
    # at least six look-alike pairs over the suite's workflows, of all three kinds
    assert len(helpdesk.LOOKALIKES) >= 6
    assert all(a in helpdesk.WORKFLOWS and b in helpdesk.WORKFLOWS for a, b, _ in helpdesk.LOOKALIKES)
    kinds = " ".join(d for _, _, d in helpdesk.LOOKALIKES)
    assert "every" in kinds and "state" in kinds and "role" in kinds
    # at least 20 out-of-scope requests, only at test; some would change the world by hand
    assert len(helpdesk.OUT_OF_SCOPE) >= 20 and len({t.workflow for t in outside}) >= 20
    assert not any(helpdesk.is_out_of_scope(t) for t in train)
    world = get_world("helpdesk")
    assert any(a.name not in world.read_only_tools() for t in outside for a in t.gold)
    assert any(not t.gold for t in outside)
    # held-out phrasings: no test request phrasing is a train one of its workflow
    for workflow, phrasings in helpdesk.REQUESTS.items():
        held_out, trained = phrasings[helpdesk.TRAIN_PHRASINGS:], phrasings[:helpdesk.TRAIN_PHRASINGS]
        assert len(held_out) >= 3 and not set(held_out) & set(trained), workflow
    # every param is written in the ticket
    for t in tasks:
        for value in t.params.values():
            assert str(value) in t.instruction, (t.id, value)
        assert t.goal["scope"] == ("out" if helpdesk.is_out_of_scope(t) else "in")


def test_tickets_are_written_as_people_write_them(tasks):
    texts = [t.instruction for t in tasks]
    non_ascii = sum(bool(re.search(r"[^\x00-\x7f]", x.split("@")[0])) for x in texts)
    assert non_ascii > len(texts) / 3
    assert sum("\n\n" in x for x in texts) > len(texts) / 2  # a signature
    assert sum(any(g and x.startswith(g) for g in helpdesk.GREETINGS) for x in texts) > len(texts) / 2
    assert sum(" asked me to raise this" in x or "working from home" in x for x in texts) > 10  # chatter
    voices = Counter(v for phrasings in helpdesk.REQUESTS.values() for v, _ in phrasings)
    assert voices[helpdesk.SELF] >= 30 and voices[helpdesk.OTHER] >= 30  # first and third person
    # the person named before the request and after it
    templates = [t for phrasings in helpdesk.REQUESTS.values() for _, t in phrasings]
    assert any(t.startswith("{target}") for t in templates)
    assert any(t.rstrip(".?!").endswith("{target}") for t in templates)
    assert sum("Account in question:" in x or "(That's for" in x or "My account:" in x for x in texts) > 10


def test_test_people_never_occur_in_train(tasks):
    seen = defaultdict(set)
    for t in tasks:
        seen[t.split] |= set(re.findall(r"[\w.]+@northwind\.example", t.instruction))
    assert seen["test"] and not seen["train"] & seen["test"]
    world = HelpdeskWorld()
    for t in tasks:
        world.reset(t.seed)
        people = {e["email"]: e for e in world.db["employees"].values()}
        for email in re.findall(r"[\w.]+@northwind\.example", t.instruction):
            assert (people[email]["first_name"] in helpdesk.TEST_FIRST_NAMES) == (t.split == "test"), t.id


def test_every_gold_solution_verifies_and_states_tell_the_pairs_apart(tasks):
    world = HelpdeskWorld()
    for t in tasks:
        world.reset(t.seed, t)
        results = world.replay(t.gold)
        assert [r["error"] for r in results] == [None] * len(results), t.id
        assert world.verify(t).success, t.id
    status = {"unlock_account": "locked", "reset_password": "active", "reactivate_account": "disabled"}
    roles = {"grant_access": {"staff", "manager"}, "request_contractor_access": {"contractor"}}
    for t in tasks:
        if t.workflow in status or t.workflow in roles:
            world.reset(t.seed)
            e = world.db["employees"][world.find_employee_by_email(t.params["email"])]
            assert e["status"] == status[t.workflow] if t.workflow in status else e["role"] in roles[t.workflow]


def test_the_suite_is_deterministic(tasks):
    assert helpdesk.helpdesk_tasks() == tasks


class _Matches(list):
    ambiguous = True


def test_flags_are_read_from_the_result_and_its_top_match():
    class M:
        abstained = False
        ambiguous = True

    assert flags_of([]) == ["abstained"]
    assert flags_of(_Matches([object()])) == ["ambiguous"]
    assert flags_of([M()]) == ["ambiguous"]
    assert flags_of([object()]) == []


def test_the_protocol_on_a_slice_reports_what_its_records_say(tmp_path, embedder, tasks):
    # one train ticket of every workflow, then three in-scope and three out-of-scope test tickets
    config = lookalike.LookalikeConfig(seeds=1, out=tmp_path, max_train=len(helpdesk.WORKFLOWS), max_test=3)
    results = lookalike.run_lookalike(config, tasks=tasks, embedder=embedder)
    records = results["records"]
    assert len(records) == 6 and Counter(r["scope"] for r in records) == {"in": 3, "out": 3}
    for r in records:
        assert r["given"] == (r["top"] is not None and not r["flags"])
        assert r["ran"] <= bool(r["given"]) and r["wrong_change"] == (r["wrong_workflow"] and r["changed_state"])
        assert r["made_worse"] == (not r["success"])
        assert not (r["scope"] == "out" and r["right_top"])
        if r["ran"] and r["scope"] == "out":
            assert r["wrong_workflow"]
    overall = results["summary"]["overall"]
    inside = [r for r in records if r["scope"] == "in"]
    outside = [r for r in records if r["scope"] == "out"]
    assert overall["wrong_workflow_changes"] == sum(r["wrong_change"] for r in records)
    assert overall["made_worse"] == sum(r["made_worse"] for r in records)
    assert overall["in_scope_fetch_at_1"] == round(sum(r["right_top"] for r in inside) / 3, 4)
    assert overall["in_scope_flagged"] == round(sum(bool(r["flags"]) for r in inside) / 3, 4)
    assert overall["oos_given_skill"] == round(sum(r["given"] for r in outside) / 3, 4)
    assert results["summary"]["per_seed"]["0"]["made_worse"] == overall["made_worse"]
    assert overall["targets_met"]["made_worse"] == (overall["made_worse"] == 0)
    lib = results["libraries"]["seed0"]
    assert lib["skills"] and sum(lib["learn_statuses"].values()) == config.max_train
    text = lookalike.write(results, tmp_path)
    assert "| in-scope fetch@1 of the right workflow | >= 90% |" in text and "## Privacy" in text
    assert (tmp_path / "results.json").exists()
