"""Skills bound to tool schemas (issue 26, item 2): each version records the digest of every
tool schema it was verified against; register_tools changing or removing one suspends the
versions calling it at once, re-verifies them by replaying their example traces' calls
against the new schema, and audits every step; an invalid JSON Schema is refused."""

from __future__ import annotations

import threading

import pytest

from skill_library import SkillLibrary
from skill_library.governance import Policy, ToolSpec
from skill_library.governance import tool_schemas as ts
from skill_library.models import Outcome, ToolCall, Trace

VERIFIED = Outcome(success=True, verifier="stock-audit")
CHECK_V1 = {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}
TASK = "check the stock of pears in the fruit aisle"


def check_trace(item: str = "pear") -> Trace:
    return Trace(task=f"check the stock of {item}s in the fruit aisle", params={"item": item},
                 calls=[ToolCall(name="check", arguments={"item": item}, result={"item": item, "stock": 4})],
                 outcome=VERIFIED)


@pytest.fixture
def lib(tmp_path, embedder):
    with SkillLibrary(tmp_path / "s", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        library.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False)})
        yield library


def learned(lib: SkillLibrary) -> str:
    result = lib.learn(check_trace())
    assert result.status == "saved" and result.skill.status == "active"
    return result.skill.name


def names(lib: SkillLibrary) -> list[str]:
    return [m.skill.name for m in lib.fetch(TASK, min_reliability=0, abstain=False)]


def test_a_version_records_the_digest_of_the_declared_schema(lib):
    name = learned(lib)
    assert lib.tool_schema_digests(name) == {"check": ts.digest(CHECK_V1)}


def test_an_undeclared_tool_is_bound_to_the_schema_seen_in_its_traces(tmp_path, embedder):
    with SkillLibrary(tmp_path / "u", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        name = library.learn(check_trace()).skill.name
        seen = {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}
        assert library.tool_schema_digests(name) == {"check": ts.digest(seen)}


def test_a_compatible_change_suspends_then_reactivates_by_system(lib):
    name = learned(lib)
    wider = {**CHECK_V1, "properties": {**CHECK_V1["properties"], "aisle": {"type": "string"}}}
    outcome = lib.register_tools({"check": ToolSpec(schema=wider, side_effects=False)})
    assert outcome.suspended == [(name, 1)] and outcome.reactivated == [(name, 1)] and not outcome.held
    assert lib.get(name).status == "active" and names(lib) == [name]
    assert lib.tool_schema_digests(name) == {"check": ts.digest(wider)}
    steps = [(e.from_status, e.to_status, e.actor) for e in lib.audit(name)][-2:]
    assert steps == [("active", "suspended", "system"), ("suspended", "active", "system")]
    suspended, back = lib.audit(name)[-2:]
    assert "tool 'check' schema changed" in suspended.reason
    assert suspended.evidence["tools"]["check"] == {"from": ts.digest(CHECK_V1), "to": ts.digest(wider)}
    assert "re-verified" in back.reason and '+    "aisle"' in back.evidence["diff"]


def test_an_incompatible_change_holds_it_out_of_fetch_for_a_person_with_the_diff(lib):
    name = learned(lib)
    assert names(lib) == [name]
    stricter = {"type": "object", "properties": {"item": {"type": "string"}, "store": {"type": "string"}},
                "required": ["item", "store"]}
    seen: list[list[str]] = []
    done = threading.Event()
    returned: list[int] = []

    def keep_fetching() -> None:  # a live reader while the schema changes
        while not done.is_set():
            found = names(lib)
            seen.append(found)
            if returned:
                returned.append(len(found))

    reader = threading.Thread(target=keep_fetching)
    reader.start()
    try:
        outcome = lib.register_tools({"check": ToolSpec(schema=stricter, side_effects=False)})
        returned.append(-1)  # from here on, every fetch must leave the version out
        for _ in range(5):
            assert names(lib) == []
    finally:
        done.set()
        reader.join()
    assert all(n == 0 for n in returned[1:])
    assert outcome.held[(name, 1)] and "store is required" in outcome.held[(name, 1)][0]
    assert lib.get(name).status == "suspended" and lib.index.texts_of(name) == {}
    held = lib.audit(name)[-1]
    assert (held.from_status, held.to_status, held.actor) == ("suspended", "suspended", "system")
    assert "held for a person" in held.reason
    assert '+    "store": {' in held.evidence["diff"] and held.evidence["problems"] == outcome.held[(name, 1)]
    assert [s.name for s in lib.review_queue()] == [name]
    with pytest.raises(Exception, match="only active skills run"):
        lib.run(name, {"item": "pear"}, {"check": lambda item: {"item": item, "stock": 1}})
    lib.resume(name, reason="the store argument has a default on the server")
    assert lib.get(name).status == "active" and names(lib) == [name]
    assert lib.audit(name)[-1].actor != "system"


def test_removing_a_tool_holds_every_version_calling_it(lib):
    name = learned(lib)
    outcome = lib.register_tools({"check": None})
    assert "check" not in lib.tool_specs()
    assert outcome.held[(name, 1)] == [f"trace {check_trace().id} call 1: tool 'check' was removed"]
    assert lib.get(name).status == "suspended" and names(lib) == []


def test_an_unchanged_schema_touches_nothing(lib):
    name = learned(lib)
    events = len(lib.audit(name))
    outcome = lib.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False,
                                                    description="Check the stock of an item.")})
    assert outcome.suspended == [] and len(lib.audit(name)) == events


@pytest.mark.parametrize(("schema", "where"), [
    ({"type": "objekt"}, "$.type"),
    ({"type": "object", "properties": {"item": {"type": 5}}}, "$.properties.item.type"),
    ({"type": "object", "required": "item"}, "$.required"),
])
def test_a_schema_that_is_not_json_schema_is_refused_with_the_path(lib, schema, where):
    with pytest.raises(ValueError, match=rf"tool 'check': the schema is not valid JSON Schema at "
                                         rf"{where.replace('$', '[$]')}: "):
        lib.register_tools({"check": ToolSpec(schema=schema)})
    assert lib.tool_specs()["check"].schema_ == CHECK_V1  # nothing stored


def test_replay_names_the_call_and_rule_but_never_the_value():
    calls = {"t1": [{"name": "check", "arguments": {"item": "ann@example.com"}}]}
    problems = ts.replay(calls, "check", {"type": "object", "properties": {"item": {"type": "integer"}}})
    assert problems == ["trace t1 call 1 (check): $.item: fails 'type' (\"integer\")"]
    assert "ann@example.com" not in problems[0]


def test_putting_the_schema_back_re_verifies_a_held_version(lib):
    name = learned(lib)
    stricter = {**CHECK_V1, "required": ["item", "store"],
                "properties": {**CHECK_V1["properties"], "store": {"type": "string"}}}
    assert lib.register_tools({"check": ToolSpec(schema=stricter, side_effects=False)}).held
    outcome = lib.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False)})
    assert outcome.suspended == [(name, 1)] and outcome.reactivated == [(name, 1)]
    assert lib.get(name).status == "active" and names(lib) == [name]
    assert (lib.audit(name)[-1].from_status, lib.audit(name)[-1].to_status) == ("suspended", "active")


# -- a canary bound to a changed tool (issue 26 item 2: canaries leave fetch too) -------------
AISLE_V1 = {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}
CHECK_CODE = '''
def check_stock(item: str):
    return check(item=item)["stock"]
'''
AISLE_CODE = '''
def check_stock(item: str):
    return check(item=item)["stock"] if aisle_of(item=item)["aisle"] == "fruit" else 0
'''
WHEN_STOCK = "check the stock of {item}s in the fruit aisle"


def _shop(task):
    from skill_library.governance.suite import TaskEnvironment

    return TaskEnvironment(tools={"check": lambda item: {"item": item, "stock": 4},
                                  "aisle_of": lambda item: {"item": item, "aisle": "fruit"}},
                           check=lambda run: run.value == 4)


@pytest.fixture
def canaried(tmp_path, embedder):
    """check_stock v1 active (calls check), v2 a canary for cohort ``beta`` (calls check and
    aisle_of), its example trace stored; both tools declared read-only."""
    from skill_library.governance.suite import Suite
    from skill_library.models import Skill
    from tests.governance_world import actors

    with SkillLibrary(tmp_path / "c", embedder=embedder) as library:
        library.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False),
                                "aisle_of": ToolSpec(schema=AISLE_V1, side_effects=False)})
        proposer, approver = actors(library)
        library.add(Skill.from_function(CHECK_CODE, when=WHEN_STOCK, tools=["check"]), verified=True)
        trace = Trace(task=TASK, params={"item": "pear"}, outcome=VERIFIED, calls=[
            ToolCall(name="aisle_of", arguments={"item": "pear"}, result={"item": "pear", "aisle": "fruit"}),
            ToolCall(name="check", arguments={"item": "pear"}, result={"item": "pear", "stock": 4})])
        library.context.store.save_trace(trace)
        skill = Skill.from_function(AISLE_CODE, when=WHEN_STOCK, tools=["check", "aisle_of"])
        skill = skill.model_copy(update={"provenance": skill.provenance.model_copy(update={"trace_ids": [trace.id]})})
        draft = library.propose(skill, actor=proposer)
        suite = Suite(id="shop", tasks=[{"id": "pear", "instruction": TASK, "params": {"item": "pear"}}])
        assert library.evaluate("check_stock", draft.version, suite, _shop, actor=proposer).passed
        library.approve("check_stock", draft.version, actor=approver)
        library.start_canary("check_stock", draft.version, actor=approver, cohort="beta")
        assert library.get("check_stock", 2).status == "canary"
        yield library


def served(lib: SkillLibrary, cohort: str | None = "beta") -> list[tuple[str, int]]:
    return [(m.skill.name, m.skill.version) for m in lib.fetch(TASK, min_reliability=0, abstain=False, cohort=cohort)]


def test_a_canary_bound_to_a_changed_tool_leaves_fetch_and_is_re_verified_back_to_canary(canaried):
    lib = canaried
    assert served(lib) == [("check_stock", 2)] and served(lib, None) == [("check_stock", 1)]
    wider = {**AISLE_V1, "properties": {**AISLE_V1["properties"], "store": {"type": "string"}}}
    outcome = lib.register_tools({"aisle_of": ToolSpec(schema=wider, side_effects=False)})
    assert outcome.suspended == [("check_stock", 2)] and outcome.reactivated == [("check_stock", 2)]
    assert lib.get("check_stock", 2).status == "canary" and lib.get("check_stock", 1).status == "active"
    assert served(lib) == [("check_stock", 2)]  # back to its cohort
    steps = [(e.version, e.from_status, e.to_status, e.actor) for e in lib.audit("check_stock")][-2:]
    assert steps == [(2, "canary", "suspended", "system"), (2, "suspended", "canary", "system")]
    assert "tool 'aisle_of' schema changed" in lib.audit("check_stock")[-2].reason
    assert lib.tool_schema_digests("check_stock", 2)["aisle_of"] == ts.digest(wider)


def test_a_canary_failing_re_verification_is_held_and_its_cohort_gets_the_active_version(canaried):
    lib = canaried
    stricter = {**AISLE_V1, "required": ["item", "store"],
                "properties": {**AISLE_V1["properties"], "store": {"type": "string"}}}
    outcome = lib.register_tools({"aisle_of": ToolSpec(schema=stricter, side_effects=False)})
    assert outcome.held[("check_stock", 2)] and "store is required" in outcome.held[("check_stock", 2)][0]
    assert lib.get("check_stock", 2).status == "suspended" and lib.get("check_stock", 1).status == "active"
    for _ in range(3):  # out of its cohort's fetch at once; the active version, untouched, serves it
        assert served(lib) == [("check_stock", 1)] and served(lib, None) == [("check_stock", 1)]
    run = lib.run("check_stock", {"item": "pear"}, {"check": lambda item: {"item": item, "stock": 4}},
                  cohort="beta")
    assert run.version == 1
    held = lib.audit("check_stock")[-1]
    assert (held.version, held.from_status, held.to_status, held.actor) == (2, "suspended", "suspended", "system")
    assert '+    "store": {' in held.evidence["diff"]
    lib.resume("check_stock", actor="rita", reason="the store argument has a default on the server")
    assert lib.get("check_stock", 2).status == "canary" and served(lib) == [("check_stock", 2)]
    assert (lib.audit("check_stock")[-1].from_status, lib.audit("check_stock")[-1].to_status) == ("suspended", "canary")


def test_a_suspended_canary_retired_ends_its_canary(canaried):
    lib = canaried
    lib.register_tools({"aisle_of": None})
    assert lib.get("check_stock", 2).status == "suspended"
    from skill_library.governance.lifecycle import transition

    transition(lib, "check_stock", 2, "retired", actor="rita", reason="the aisle tool is gone")
    assert served(lib) == [("check_stock", 1)] and "check_stock" not in ts_canaries(lib)


def ts_canaries(lib: SkillLibrary) -> set[str]:
    from skill_library.governance.lifecycle import unit_of

    with unit_of(lib).transaction(write=False) as conn:
        return {n for n, _ in ts.canaries_of(conn, lib.tenant, ["check_stock"])}


# -- the live read-only check with the caller's tools ----------------------------------------
RESERVE_CODE = '''
def check_stock(item: str):
    stock = check(item=item)["stock"]
    reserve(item=item, count=1)
    return stock
'''
RESERVE = {"type": "object", "properties": {"item": {"type": "string"}, "count": {"type": "integer"}}}
WIDER = {**CHECK_V1, "properties": {**CHECK_V1["properties"], "aisle": {"type": "string"}}}


@pytest.fixture
def reader(tmp_path, embedder):
    """check_stock v1 active: reads ``check``'s ``stock`` key, then calls ``reserve`` (a
    state-changing tool); its example trace stored."""
    from skill_library.models import Skill

    with SkillLibrary(tmp_path / "r", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        library.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False),
                                "reserve": ToolSpec(schema=RESERVE, side_effects=True)})
        trace = Trace(task=TASK, params={"item": "pear"}, outcome=VERIFIED, result=4, calls=[
            ToolCall(name="check", arguments={"item": "pear"}, result={"item": "pear", "stock": 4}),
            ToolCall(name="reserve", arguments={"item": "pear", "count": 1}, result={"ok": True})])
        library.context.store.save_trace(trace)
        skill = Skill.from_function(RESERVE_CODE, when=WHEN_STOCK, tools=["check", "reserve"])
        skill = skill.model_copy(update={"provenance": skill.provenance.model_copy(update={"trace_ids": [trace.id]})})
        library.add(skill, verified=True)
        yield library, trace.id


def test_a_live_read_that_lost_a_key_the_code_uses_holds_the_version(reader):
    lib, trace_id = reader
    reserved: list[str] = []
    tools = {"check": lambda item: {"item": item, "count": 4},  # the server renamed stock to count
             "reserve": lambda item, count: reserved.append(item)}
    outcome = lib.register_tools({"check": ToolSpec(schema=WIDER, side_effects=False)}, tools=tools)
    problems = outcome.held[("check_stock", 1)]
    assert problems == [f"trace {trace_id}: the run with live check failed: KeyError at line 3 ('stock')"]
    assert lib.get("check_stock").status == "suspended" and names(lib) == []
    assert lib.audit("check_stock")[-1].evidence["problems"] == problems
    assert reserved == []  # the state-changing tool was never called live


def test_a_live_read_that_still_fits_returns_the_version_and_never_calls_a_state_changing_tool(reader):
    lib, _ = reader
    reads: list[str] = []
    reserved: list[str] = []

    def check(item: str) -> dict:
        reads.append(item)
        return {"item": item, "stock": 9}  # live data differ from the recorded 4: fine

    outcome = lib.register_tools({"check": ToolSpec(schema=WIDER, side_effects=False)},
                                 tools={"check": check, "reserve": lambda item, count: reserved.append(item)})
    assert outcome.reactivated == [("check_stock", 1)] and not outcome.held
    assert reads == ["pear"] and reserved == []
    back = lib.audit("check_stock")[-1]
    assert back.to_status == "active" and back.evidence["live"] is True and "live succeeded" in back.reason


def test_a_live_read_that_raises_holds_it_and_reverify_tools_returns_it_once_fixed(reader):
    lib, trace_id = reader

    def down(item: str) -> dict:
        raise ConnectionError("the stock service is down")

    outcome = lib.register_tools({"check": ToolSpec(schema=WIDER, side_effects=False)}, tools={"check": down})
    (problem,) = outcome.held[("check_stock", 1)]
    assert problem.startswith(f"trace {trace_id}: the run with live check failed: ")
    assert "the live call of 'check' failed" in problem and "down" not in problem
    assert lib.get("check_stock").status == "suspended"
    again = lib.reverify_tools("check_stock", tools={"check": lambda item: {"item": item, "stock": 2}})
    assert again.reactivated == [("check_stock", 1)] and lib.get("check_stock").status == "active"
    assert names(lib) == ["check_stock"]
    with pytest.raises(Exception, match="no suspended version"):
        lib.reverify_tools("check_stock")


def test_a_live_read_that_sends_the_code_another_way_holds_it(tmp_path, embedder):
    from skill_library.models import Skill

    code = '''
def check_stock(item: str):
    stock = check(item=item)["stock"]
    reserve(item=item, count=stock)
    return stock
'''
    with SkillLibrary(tmp_path / "w", embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        lib.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False),
                            "reserve": ToolSpec(schema=RESERVE, side_effects=True)})
        trace = Trace(task=TASK, params={"item": "pear"}, outcome=VERIFIED, calls=[
            ToolCall(name="check", arguments={"item": "pear"}, result={"item": "pear", "stock": 4}),
            ToolCall(name="reserve", arguments={"item": "pear", "count": 4}, result={"ok": True})])
        lib.context.store.save_trace(trace)
        skill = Skill.from_function(code, when=WHEN_STOCK, tools=["check", "reserve"])
        lib.add(skill.model_copy(update={"provenance": skill.provenance.model_copy(update={"trace_ids": [trace.id]})}),
                verified=True)
        outcome = lib.register_tools({"check": ToolSpec(schema=WIDER, side_effects=False)},
                                     tools={"check": lambda item: {"item": item, "stock": 7}})
        (problem,) = outcome.held[("check_stock", 1)]
        assert "it made a call the trace did not record" in problem


def test_the_tool_bindings_migration_binds_stored_versions_as_learning_does(tmp_path, embedder):
    """Migration step 10 (storage.migrations._tool_bindings, storage.tool_digests) binds the
    versions stored before bindings existed: a declared tool (its stored description left
    out of the schema) to its declaration, an undeclared one to the schema its traces show;
    the very digests learning records."""
    import sqlalchemy as sa

    from skill_library.storage import migrations
    from skill_library.storage.feature_tables import tool_bindings_table

    trace = Trace(task="check the pears and note it", params={"item": "pear"},
                  calls=[ToolCall(name="check", arguments={"item": "pear"}, result={"stock": 4}),
                         ToolCall(name="note", arguments={"text": "pear", "count": 4}, result="ok")],
                  outcome=VERIFIED)
    with SkillLibrary(tmp_path / "m", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        library.register_tools({"check": ToolSpec(schema=CHECK_V1, side_effects=False,
                                                  description="Check the stock of one item.")})
        name = library.learn(trace).skill.name
        learned_digests = library.tool_schema_digests(name)
        seen = {"type": "object", "properties": {"count": {"type": "integer"}, "text": {"type": "string"}},
                "required": ["count", "text"]}
        assert learned_digests == {"check": ts.digest(CHECK_V1), "note": ts.digest(seen)}
        with library.context.store.engine.begin() as conn:  # the store as it was before step 10
            conn.execute(sa.delete(tool_bindings_table))
        assert library.tool_schema_digests(name) == {}
        with library.context.store.engine.begin() as conn:
            migrations._tool_bindings(conn)
        assert library.tool_schema_digests(name) == learned_digests
        with library.context.store.engine.begin() as conn:  # a second run finds rows and adds none
            migrations._tool_bindings(conn)
            assert conn.execute(sa.select(sa.func.count()).select_from(tool_bindings_table)).scalar() == 2
