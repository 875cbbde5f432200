"""The record store's contract (skill_library.storage.interface.RecordStore), method by
method with its error paths, on both backends: a SQLite file and a PostgreSQL database
(issue 24: one storage contract, a conformance suite in langgraph's habit). A backend
that passes this suite is one the library can use."""

from __future__ import annotations

import os
from itertools import count

import pytest

from skill_library.errors import SkillNotFoundError, TraceNotFoundError
from skill_library.models import Example, Outcome, OutcomeKind, Skill, ToolCall, Trace
from skill_library.record_store import SQLRecordStore
from skill_library.storage.interface import RecordStore

_DATABASES = count(1)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """A new, empty record store on each backend (closed after the test)."""
    if request.param == "sqlite":
        opened = SQLRecordStore.in_folder(tmp_path, create=True)
    else:
        pg = request.getfixturevalue("pg_server")
        opened = SQLRecordStore(pg.create_database(f"contract{os.getpid()}_{next(_DATABASES)}"), create=True)
    yield opened
    opened.close()


def skill(name: str = "greet", value: str = "hi", when: str = "greet the visitor {target}") -> Skill:
    code = f'def {name}(target: str) -> str:\n    return "{value} " + target\n'
    return Skill.from_function(code, when=when)


def trace(task: str = "greet Ada", success: bool = True) -> Trace:
    return Trace(task=task, calls=[ToolCall(name="say", arguments={"text": "hi Ada"}, result="ok")],
                 outcome=Outcome(success=success, verifier="test"))


def test_it_is_a_record_store_of_the_default_tenant_and_starts_empty(store):
    assert isinstance(store, RecordStore)
    assert store.tenant == "default"
    assert store.list() == [] and store.names() == []
    assert store.index_generation() == 0
    assert store.integrity_problem() is None
    store.check_integrity()


def test_versions_supersede_and_the_active_pointer_follows(store):
    v1 = store.add_version(skill(value="one"))
    v2 = store.add_version(skill(value="two"))
    assert (v1.version, v1.status, v2.version, v2.status) == (1, "active", 2, "active")
    assert store.get("greet").version == 2
    assert store.get("greet", 1).status == "superseded"
    assert [s.version for s in store.history("greet")] == [1, 2]
    assert [s.name for s in store.list()] == ["greet"]
    assert store.list(status="superseded") == []  # the pointer's versions only
    assert [s.version for s in store.list(status="active")] == [2]
    assert store.names() == ["greet"] and store.names(prefix="gr") == ["greet"] and store.names(prefix="x") == []


def test_a_draft_supersedes_nothing(store):
    store.add_version(skill(value="one"))
    draft = store.add_version(skill(value="two"), status="draft")
    assert draft.status == "draft" and draft.version == 2
    assert store.get("greet").version == 1 and store.get("greet").status == "active"
    only = store.add_version(skill("wave", when="wave to {target}"), status="draft")
    assert store.get("wave").version == only.version  # no active version: the draft is current


def test_unknown_names_and_versions_raise_skill_not_found(store):
    with pytest.raises(SkillNotFoundError, match="no skill named 'nobody'"):
        store.get("nobody")
    store.add_version(skill())
    with pytest.raises(SkillNotFoundError, match="has no version 9") as info:
        store.get("greet", 9)
    assert (info.value.name, info.value.version) == ("greet", 9)
    with pytest.raises(SkillNotFoundError):
        store.history("nobody")
    with pytest.raises(SkillNotFoundError):
        store.record_outcome("nobody", True)
    with pytest.raises(SkillNotFoundError):
        store.set_status("nobody", "retired")


def test_many_versions_are_read_and_written_together(store):
    added = store.add_versions([skill("greet"), skill("wave", when="wave to {target}")], initial_success=True)
    assert [(s.name, s.version, s.successes) for s in added] == [("greet", 1, 1), ("wave", 1, 1)]
    found = store.get_many([("greet", 1), ("wave", 1), ("greet", 7), ("nobody", 1)])
    assert sorted(found) == [("greet", 1), ("wave", 1)]
    both, generation = store.get_many_and_generation([("wave", 1)])
    assert list(both) == [("wave", 1)] and generation == store.index_generation()
    assert sorted(store.get_many_active(["greet", "wave", "nobody"])) == ["greet", "wave"]
    assert store.get_many([]) == {} and store.get_many_active([]) == {}


def test_outcomes_count_only_success_and_failure(store):
    store.add_version(skill())
    store.record_outcome("greet", True, trace_id="t1", origin="run")
    store.record_outcome("greet", False, trace_id="t2")
    after = store.record_outcome("greet", False, kind=OutcomeKind.MISUSE, reason="a typo in the name")
    assert (after.successes, after.failures) == (1, 1)
    counts = store.outcome_counts("greet")
    assert counts["success"] == 1 and counts["failure"] == 1 and counts["misuse"] == 1
    assert set(counts) >= {k.value for k in OutcomeKind} and counts["wrong_skill"] == 0
    log = store.outcome_log("greet")
    assert [(o["kind"], o["success"], o["trace_id"]) for o in log] == [
        ("success", True, "t1"), ("failure", False, "t2"), ("misuse", False, None)]
    assert log[0]["origin"] == "run" and log[2]["reason"] == "a typo in the name"
    assert store.recent_outcomes("greet", 1, 10) == [True, False]  # misuse is not the skill's record
    assert store.recent_outcomes("greet", 1, 1) == [False]
    assert store.trace_outcome("t2")["kind"] == "failure" and store.trace_outcome("t9") is None


def test_an_outcome_of_a_run_can_be_reclassified_and_the_counters_follow(store):
    store.add_version(skill())
    store.record_outcome("greet", True, trace_id="t1")
    moved = store.reclassify_outcome("t1", "greet", OutcomeKind.WRONG_SKILL, "fetched for the wrong task")
    assert (moved.successes, moved.failures) == (0, 0)
    assert store.outcome_counts("greet")["wrong_skill"] == 1
    assert store.trace_outcome("t1")["kind"] == "wrong_skill"


def test_an_outcome_goes_to_the_version_named(store):
    store.add_version(skill(value="one"))
    store.add_version(skill(value="two"))
    old = store.record_outcome("greet", True, version=1)
    assert (old.version, old.successes) == (1, 1)
    assert store.get("greet").successes == 0
    assert store.outcome_counts("greet", 1)["success"] == 1


def test_status_changes_and_the_active_pointer(store):
    store.add_version(skill(value="one"))
    store.add_version(skill(value="two"))
    assert store.set_status("greet", "quarantined").status == "quarantined"
    assert store.set_version_status("greet", 1, "retired").status == "retired"
    assert store.get("greet", 1).status == "retired" and store.get("greet", 2).status == "quarantined"
    pointed = store.set_active_version("greet", 1)
    assert pointed.version == 1 and store.get("greet").version == 1
    with pytest.raises(SkillNotFoundError):
        store.set_version_status("greet", 5, "retired")


def test_traces_are_stored_once_and_found_by_skill(store):
    first = trace("greet Ada")
    store.save_trace(first)
    store.save_trace(first)  # idempotent on its id
    got = store.get_trace(first.id)
    assert (got.id, got.task, got.calls, got.outcome) == (first.id, first.task, first.calls, first.outcome)
    assert store.known_traces([first.id, "missing"]) == {first.id}
    with pytest.raises(TraceNotFoundError, match="no trace with id 'missing'"):
        store.get_trace("missing")
    learned = skill().model_copy(update={"provenance": skill().provenance.model_copy(update={"trace_ids": [first.id]})})
    store.add_version(learned)
    ran = trace("greet Bob")
    store.save_trace(ran)
    store.record_outcome("greet", True, trace_id=ran.id)
    store.record_outcome("greet", True, trace_id="never-stored")
    assert [t.id for t in store.traces_for("greet")] == [first.id, ran.id]
    with pytest.raises(SkillNotFoundError):
        store.traces_for("nobody")


def test_vectors_are_kept_per_model_and_never_overwritten(store):
    store.save_vectors("model-a", {"d1": b"\x01", "d2": b"\x02"})
    store.save_vectors("model-a", {"d1": b"\x09", "d3": b"\x03"})
    assert store.load_vectors("model-a", ["d1", "d2", "d3", "d4"]) == {"d1": b"\x01", "d2": b"\x02", "d3": b"\x03"}
    assert store.load_vectors("model-b", ["d1"]) == {} and store.load_vectors("model-a", []) == {}
    store.save_task_vectors("model-a", {"t1": b"\x05"})
    store.save_task_vectors("model-a", {"t1": b"\x06", "t2": b"\x07"})
    assert store.load_task_vectors("model-a", ["t1", "t2", "t3"]) == {"t1": b"\x05", "t2": b"\x07"}
    assert store.task_vector_ids("model-a", ["t1", "t3"]) == {"t1"}
    assert store.task_vector_ids("model-b", ["t1"]) == set()


def test_evidence_is_saved_in_one_call(store):
    store.add_version(skill())
    evidence = trace("greet Ada")
    examples = [Example(trace_id=evidence.id, text="greet the visitor {target}", params={"target": "Ada"})]
    after = store.save_evidence("greet", trace=evidence, success=True, examples=examples,
                                when="greet a visitor by name {target}")
    assert after.successes == 1 and after.when == "greet a visitor by name {target}"
    assert store.get_trace(evidence.id).id == evidence.id
    assert [e.text for e in store.examples(["greet"])["greet"]] == ["greet the visitor {target}"]
    assert store.examples(["nobody"]) == {"nobody": []}
    replaced = [Example(trace_id=evidence.id, text="greet {target} at the door", params={"target": "Ada"})]
    store.save_evidence("greet", examples=replaced)
    assert [e.text for e in store.examples(["greet"])["greet"]] == ["greet {target} at the door"]


def test_the_index_generation_counts_up(store):
    assert store.index_generation() == 0
    assert store.bump_index_generation() == 1
    assert store.bump_index_generation() == 2 and store.index_generation() == 2


def test_a_tenant_sees_only_its_own_records(store):
    acme = store.for_tenant("acme")
    assert acme.tenant == "acme" and store.for_tenant("default") is store
    store.add_version(skill(value="home"))
    assert acme.names() == [] and acme.list() == []
    with pytest.raises(SkillNotFoundError):
        acme.get("greet")
    mine = acme.add_version(skill(value="acme"))  # the same name in another tenant
    assert mine.version == 1 and "acme" in (acme.get("greet").code or "")
    acme.record_outcome("greet", False)
    assert store.get("greet").failures == 0 and acme.get("greet").failures == 1
    acme.bump_index_generation()
    assert store.index_generation() == 0 and acme.index_generation() == 1
    assert store.tenants() == ["acme", "default"]


def test_a_bad_tenant_name_is_refused(store):
    with pytest.raises(ValueError, match="tenant"):
        store.for_tenant("Not A Tenant")


def test_the_write_lock_excludes_another_holder_until_released(store):
    mine, theirs = store.write_lock(), store.write_lock()
    mine.acquire()
    try:
        assert not theirs.try_acquire()
    finally:
        mine.release()
    assert theirs.try_acquire()
    theirs.release()


# -- the actors' rows (skill_library.storage.actor_rows): each write with its audit event ----
def _audit_of(store):
    from skill_library.storage import audit

    with store.transaction(write=False) as conn:
        return [(e.to_status, e.actor, e.evidence.get("actor")) for e in audit.read(conn, store.tenant, audit.ACTORS)]


def test_actor_rows_are_written_with_their_audit_events(store):
    from skill_library.storage.actor_rows import ActorRow, ActorRows, AuditNote

    rows = ActorRows(store)
    ada = ActorRow("ada", "user", frozenset({"skill.propose"}))
    assert rows.seed([(ada, AuditNote("registered", "system", "seeded", {"actor": "ada"}))])
    assert not rows.seed([(ActorRow("bob", "user"), AuditNote("registered", "system", "again", {"actor": "bob"}))])
    assert rows.get("ada") == ada and rows.get("bob") is None
    wider = ActorRow("ada", "user", frozenset({"skill.propose", "skill.approve"}))
    rows.put(wider, AuditNote("registered", "root", "widened", {"actor": "ada"}))
    rows.put(ActorRow("bot", "agent"), AuditNote("registered", "root", "added", {"actor": "bot"}))
    assert [r.id for r in rows.list()] == ["ada", "bot"] and rows.get("ada") == wider
    assert rows.remove("bot", AuditNote("removed", "root", "gone", {"actor": "bot"}))
    assert not rows.remove("bot", AuditNote("removed", "root", "twice", {"actor": "bot"}))
    assert _audit_of(store) == [("registered", "system", "ada"), ("registered", "root", "ada"),
                                ("registered", "root", "bot"), ("removed", "root", "bot")]
    acme = ActorRows(store.for_tenant("acme"))
    assert acme.list() == [] and acme.get("ada") is None  # another tenant's actors


def test_an_actor_change_whose_audit_write_fails_is_not_written(store, monkeypatch):
    from skill_library.storage import audit
    from skill_library.storage.actor_rows import ActorRow, ActorRows, AuditNote

    rows = ActorRows(store)
    rows.put(ActorRow("ada", "user"), AuditNote("registered", "root", "added", {"actor": "ada"}))

    def failing(*args, **kwargs):
        raise RuntimeError("the audit write failed")

    monkeypatch.setattr(audit, "write", failing)
    with pytest.raises(RuntimeError, match="audit write failed"):
        rows.put(ActorRow("bob", "user"), AuditNote("registered", "root", "added", {"actor": "bob"}))
    with pytest.raises(RuntimeError, match="audit write failed"):
        rows.remove("ada", AuditNote("removed", "root", "gone", {"actor": "ada"}))
    monkeypatch.undo()
    assert [r.id for r in rows.list()] == ["ada"]  # neither change without its event
    assert _audit_of(store) == [("registered", "root", "ada")]


# -- the policy row (skill_library.storage.policy_rows), on the caller's transaction ------
def test_a_tenants_policy_body_is_replaced_and_rolled_back_with_its_transaction(store):
    from skill_library.storage.policy_rows import load_body, save_body

    with store.transaction(write=True) as conn:
        assert load_body(conn, "default") is None
        save_body(conn, "default", {"auto_approve": "never"})
        save_body(conn, "default", {"auto_approve": "all"})
        save_body(conn, "acme", {"auto_approve": "read_only"})
    with pytest.raises(RuntimeError, match="after the write"):
        with store.transaction(write=True) as conn:
            save_body(conn, "default", {"auto_approve": "never"})
            raise RuntimeError("a failure after the write (its audit event, say)")
    with store.transaction(write=False) as conn:
        assert load_body(conn, "default") == {"auto_approve": "all"}  # the failed change rolled back
        assert load_body(conn, "acme") == {"auto_approve": "read_only"}


# -- the running canaries' rows (skill_library.storage.canary_rows) -----------------------
def test_canary_rows_are_the_tenants_own(store):
    from skill_library.models import utc_now
    from skill_library.storage.canary_rows import canary_rows
    from skill_library.storage.governance_tables import canaries_table

    assert canary_rows(store) == []
    with store.transaction(write=True) as conn:
        for tenant, name in (("default", "wave"), ("default", "greet"), ("acme", "greet")):
            conn.execute(canaries_table.insert().values(tenant=tenant, name=name, version=2, share=0.1,
                                                        cohort=None, actor="ada", started_at=utc_now()))
    assert [(r["name"], r["version"], r["share"]) for r in canary_rows(store)] == [("greet", 2, 0.1), ("wave", 2, 0.1)]
    assert [r["name"] for r in canary_rows(store.for_tenant("acme"))] == ["greet"]


# -- the usage-pattern rows (skill_library.storage.patterns) -----------------------------
def test_pattern_rows_keep_states_transitions_sessions_and_marks_per_tenant(store):
    from skill_library.storage.patterns import PatternRows

    rows, acme = PatternRows(store), PatternRows(store.for_tenant("acme"))
    assert rows.states() == [] and rows.marks("ann", "a") == (0, None)
    rows.replace_states([{"name": "b", "description": "", "examples": ["x"]},
                         {"name": "a", "description": "first", "examples": []}])
    assert [s["name"] for s in rows.states()] == ["a", "b"] and rows.states()[1]["examples"] == ["x"]
    rows.replace_states([{"name": "c", "description": "", "examples": []}])
    assert [s["name"] for s in rows.states()] == ["c"] and acme.states() == []
    first = rows.add_transition("ann", "a", "b", session="s1")
    second = rows.add_transition("ann", "a", "c", session="s1")
    rows.add_transition("bob", "a", "b", session="s2")
    acme.add_transition("ann", "a", "z", session="s1")
    assert first is not None and second is not None and second > first
    assert rows.sequence("ann", "a") == [(first, "b"), (second, "c")]
    assert rows.sequence("ann", "a", since=second) == [(second, "c")] and rows.sequence("ann", "z") == []
    assert rows.pooled("a") == {"b": 2, "c": 1} and acme.pooled("a") == {"z": 1}
    assert rows.from_states("ann") == ["a"] and rows.from_states("nobody") == []
    assert rows.advance_session("ann", "s1", "greet") is None  # the session's first
    assert rows.advance_session("ann", "s1", "wave") == "greet"
    assert acme.advance_session("ann", "s1", "x") is None  # another tenant's session
    rows.set_marks("ann", "a", 0, second)
    rows.set_marks("ann", "a", first, None)  # replaced, not added
    assert rows.marks("ann", "a") == (first, None) and acme.marks("ann", "a") == (0, None)
    assert rows.forget("ann") == 2 and rows.forget("ann") == 0
    assert rows.sequence("ann", "a") == [] and rows.marks("ann", "a") == (0, None)
    assert rows.advance_session("ann", "s1", "again") is None  # its open session went too
    assert acme.sequence("ann", "a") != [] and rows.pooled("a") == {"b": 1}


def test_pattern_rows_opt_outs_and_forgetting_by_a_matcher(store):
    from skill_library.storage import privacy_rows
    from skill_library.storage.patterns import PatternRows

    rows = PatternRows(store)
    assert not rows.opted_out("ann") and rows.opted_out_subjects() == frozenset()
    rows.opt_out("ann")
    rows.opt_out("ann")  # once
    rows.opt_out("cy")
    assert rows.opted_out("ann") and rows.opted_out_subjects() == {"ann", "cy"}
    assert not PatternRows(store.for_tenant("acme")).opted_out("ann")
    rows.add_transition("bob", "a", "b", session="s-ann")  # a session id that names her
    rows.add_transition("bob", "a", "c", session="s2")
    rows.add_transition("dee", "a", "b", session="s3")
    assert rows.pooled("a") == {"b": 2, "c": 1}  # opted-out subjects are not pooled
    rows.opt_out("dee")
    assert rows.pooled("a") == {"b": 1, "c": 1}
    assert rows.forget_matching(lambda v: isinstance(v, str) and "ann" in v) == 1
    assert [s for _, s in rows.sequence("bob", "a")] == ["c"]  # the one of the session naming her went
    with store.transaction(write=True) as conn:
        key = privacy_rows.opt_out_key(conn, store.tenant, "ann")
    assert key.startswith("forgotten:") and "ann" not in key
    assert rows.opted_out_subjects() == {key, "cy", "dee"}  # her opt-out is kept as the salted key
    assert rows.opted_out("ann")  # and still answers for her
    assert rows.forget_matching(lambda v: False) == 0
    rows.opt_in("cy")
    rows.opt_in("nobody")
    assert not rows.opted_out("cy")


def test_reliability_events_are_the_tenants_own_and_deleted_on_the_callers_transaction(store):
    from skill_library.storage.patterns import PatternRows

    rows, acme = PatternRows(store), PatternRows(store.for_tenant("acme"))
    rows.add_reliability_event("greet", 1, "quarantined", "5 of 6 failed", "library")
    rows.add_reliability_event("greet", 1, "lifted", "re-verified", "ada")
    acme.add_reliability_event("greet", 3, "quarantined", "theirs", "library")
    assert [(e["version"], e["event"], e["actor"]) for e in rows.reliability_events("greet")] == [
        (1, "quarantined", "library"), (1, "lifted", "ada")]
    assert rows.reliability_events("nobody") == []
    with pytest.raises(RuntimeError, match="after the delete"):
        with store.transaction(write=True) as conn:
            rows.delete_reliability_events(conn, "greet")
            raise RuntimeError("a failure after the delete")
    assert len(rows.reliability_events("greet")) == 2  # rolled back with its transaction
    with store.transaction(write=True) as conn:
        rows.delete_reliability_events(conn, "greet")
    assert rows.reliability_events("greet") == [] and len(acme.reliability_events("greet")) == 1


# -- the procedure rows (skill_library.storage.procedures) -------------------------------
def _instruction(name: str = "be_brief", when: str = "when the user is in a hurry") -> Skill:
    return Skill(name=name, kind="instruction", when=when, description="Answer in one sentence.")


def test_procedure_rows_are_written_with_their_version_and_move_with_outcomes(store):
    from skill_library.models import OutcomeKind
    from skill_library.storage.procedures import ProcedureRows

    rows = ProcedureRows(store)
    with store.transaction(write=True) as conn:
        stored, _ = store.insert_version(conn, _instruction(), status="active")
        rows.insert(conn, stored.name, stored.version, title="Be brief", confidence=0.6, actor="ada",
                    subject="ann", source="admin")
    [(key, row)] = rows.rows().items()
    assert key == ("be_brief", 1) and (row["title"], row["confidence"], row["initial_confidence"]) == (
        "Be brief", 0.6, 0.6)
    assert rows.rows([("be_brief", 1), ("be_brief", 2)]).keys() == {("be_brief", 1)}
    rows.record_outcome("be_brief", 1, OutcomeKind.SUCCESS, None, confidence_after=lambda c: round(c + 0.1, 6),
                        default={"title": "unused", "confidence": 0.5})
    rows.record_outcome("be_brief", 1, OutcomeKind.FAILURE, "too short",
                        confidence_after=lambda c: round(c - 0.2, 6), default={"title": "unused", "confidence": 0.5})
    assert rows.rows()[("be_brief", 1)]["confidence"] == 0.5
    assert (store.get("be_brief").successes, store.get("be_brief").failures) == (1, 1)
    assert [(o["kind"], o["origin"], o["reason"]) for o in store.outcome_log("be_brief")] == [
        ("success", "feedback", None), ("failure", "feedback", "too short")]
    with pytest.raises(ValueError, match="not misuse"):
        rows.record_outcome("be_brief", 1, OutcomeKind.MISUSE, None, confidence_after=lambda c: c,
                            default={"title": "unused", "confidence": 0.5})
    # a version stored without its row gets the default one first
    store.add_version(_instruction("plain", "when nothing else applies"))
    rows.record_outcome("plain", 1, OutcomeKind.SUCCESS, None, confidence_after=lambda c: c + 0.25,
                        default={"title": "plain", "confidence": 0.5, "actor": "bob"})
    plain = rows.rows()[("plain", 1)]
    assert (plain["title"], plain["confidence"], plain["initial_confidence"], plain["actor"]) == (
        "plain", 0.75, 0.5, "bob")
    assert ProcedureRows(store.for_tenant("acme")).rows() == {}


def test_a_procedure_outcome_that_fails_midway_writes_nothing(store, monkeypatch):
    from skill_library.models import OutcomeKind
    from skill_library.storage.procedures import ProcedureRows

    rows = ProcedureRows(store)
    store.add_version(_instruction())

    def failing(confidence: float) -> float:
        raise RuntimeError("the confidence could not be computed")

    with pytest.raises(RuntimeError, match="could not be computed"):
        rows.record_outcome("be_brief", 1, OutcomeKind.SUCCESS, None, confidence_after=failing,
                            default={"title": "be_brief", "confidence": 0.6})
    assert rows.rows() == {} and store.outcome_log("be_brief") == [] and store.get("be_brief").successes == 0


def test_procedure_rows_are_found_by_subject_or_matcher_and_deleted_with_their_audit(store, monkeypatch):
    from skill_library.storage import audit
    from skill_library.storage.actor_rows import AuditNote
    from skill_library.storage.procedures import ProcedureRows

    rows = ProcedureRows(store)
    with store.transaction(write=True) as conn:
        for name, when, subject in (("tea_first", "when serving ann", "ann"), ("be_brief", "when in a hurry", None),
                                    ("ask_cy", "when cy calls", None)):
            stored, _ = store.insert_version(conn, _instruction(name, when), status="active")
            rows.insert(conn, name, 1, title=name, confidence=0.6, actor="ada", subject=subject, source="admin")
            audit.write(conn, store.tenant, name, 1, None, "active", actor="ada", reason="added", evidence={})
    assert rows.names_for_subject("ann") == ["tea_first"] and rows.names_for_subject("bob") == []
    assert rows.matching("ann", lambda v: isinstance(v, str) and "cy" in v) == ["ask_cy", "tea_first"]
    assert rows.matching("nobody", lambda v: False) == []
    note = AuditNote("forgotten", "system", "a subject's procedures were forgotten", {"procedures": 2})

    def failing(*args, **kwargs):
        raise RuntimeError("the audit write failed")

    monkeypatch.setattr(audit, "write", failing)
    with pytest.raises(RuntimeError, match="audit write failed"):
        rows.delete(["tea_first", "ask_cy"], note)
    monkeypatch.undo()
    assert len(rows.rows()) == 3  # nothing deleted without its event
    rows.delete(["tea_first", "ask_cy"], note)
    assert list(rows.rows()) == [("be_brief", 1)]
    with store.transaction(write=False) as conn:
        events = [(e.name, e.to_status) for e in audit.read(conn, store.tenant)]
    assert events == [("be_brief", "active"), (audit.SUBJECTS, "forgotten")]


# -- running canaries written on the caller's transaction (storage.canary_rows) ----------
def test_a_canary_row_starts_on_the_callers_transaction_and_rolls_back_with_it(store):
    from skill_library.storage import canary_rows

    with store.transaction(write=True) as conn:
        assert canary_rows.running_version(conn, "default", "greet") is None
        canary_rows.start(conn, "default", "greet", 2, share=0.25, cohort=None, actor="ada")
        canary_rows.start(conn, "acme", "greet", 5, share=None, cohort="beta", actor="bob")
        assert canary_rows.running_version(conn, "default", "greet") == 2
    with pytest.raises(RuntimeError, match="the transition failed"):
        with store.transaction(write=True) as conn:
            canary_rows.start(conn, "default", "wave", 3, share=0.1, cohort=None, actor="ada")
            raise RuntimeError("the transition failed")
    with store.transaction(write=False) as conn:
        assert canary_rows.running_version(conn, "default", "wave") is None  # rolled back
        assert canary_rows.running_version(conn, "acme", "greet") == 5
    [row] = canary_rows.canary_rows(store)
    assert (row["name"], row["version"], row["share"], row["cohort"], row["actor"]) == ("greet", 2, 0.25, None, "ada")


# -- the skill rows governance reads and deletes (storage.skill_rows) --------------------
def test_versions_waiting_for_a_person_are_listed_oldest_first(store):
    from skill_library.storage.skill_rows import SkillRows

    store.add_version(skill(value="one"))
    store.add_version(skill("wave", when="wave to {target}"), status="draft")
    store.add_version(skill(value="two"), status="draft")
    store.add_version(skill("nod", when="nod at {target}"), status="draft")
    store.set_version_status("nod", 1, "quarantined")
    rows = SkillRows(store)
    assert rows.with_status(["draft", "quarantined"]) == [("wave", 1), ("greet", 2), ("nod", 1)]
    assert rows.with_status(["evaluated"]) == [] and rows.with_status([]) == []
    assert SkillRows(store.for_tenant("acme")).with_status(["draft"]) == []


def test_a_deleted_skill_leaves_no_row_and_keeps_the_traces_another_skill_cites(store):
    from skill_library.models import utc_now
    from skill_library.storage import audit, canary_rows
    from skill_library.storage.patterns import PatternRows
    from skill_library.storage.skill_rows import SkillRows
    from skill_library.storage.tables import task_vectors_table

    mine, cited = trace("greet Ada"), trace("greet Bob")
    for t in (mine, cited):
        store.save_trace(t)
    store.add_version(skill())
    store.add_version(skill("wave", when="wave to {target}"))
    store.save_evidence("greet", examples=[Example(trace_id=mine.id, text="greet {target}", params={"target": "Ada"})])
    store.record_outcome("greet", True, trace_id=cited.id)
    store.record_outcome("wave", True, trace_id=cited.id)  # wave cites this trace too
    store.save_task_vectors("model-a", {mine.id: b"\x01", cited.id: b"\x02"})
    store.save_vectors("model-a", {"d": b"\x03"})
    PatternRows(store).add_reliability_event("greet", 1, "quarantined", "failing", "library")
    acme = store.for_tenant("acme")
    acme.add_version(skill(value="acme"))
    with store.transaction(write=True) as conn:
        canary_rows.start(conn, "default", "greet", 1, share=0.1, cohort=None, actor="ada")
        audit.write(conn, "default", "greet", 1, None, "active", actor="ada", reason="added")
        audit.write(conn, "default", "wave", 1, None, "active", actor="ada", reason="added")
    with pytest.raises(RuntimeError, match="audit write failed"):
        with store.transaction(write=True) as conn:
            SkillRows(store).delete_skill(conn, "greet", {mine.id, cited.id})
            raise RuntimeError("the audit write failed")
    assert store.get("greet").version == 1  # nothing deleted without the caller's event
    with store.transaction(write=True) as conn:
        gone = SkillRows(store).delete_skill(conn, "greet", {mine.id, cited.id, "never-stored"})
    assert gone == sorted({mine.id, "never-stored"})
    with pytest.raises(SkillNotFoundError):
        store.get("greet")
    assert store.known_traces([mine.id, cited.id]) == {cited.id}
    assert store.task_vector_ids("model-a", [mine.id, cited.id]) == {cited.id}
    assert PatternRows(store).reliability_events("greet") == [] and canary_rows.canary_rows(store) == []
    with store.transaction(write=False) as conn:
        assert [e.name for e in audit.read(conn, "default")] == ["wave"]
        assert conn.execute(task_vectors_table.select()).all() != []
    assert store.get("wave").successes == 1 and acme.get("greet").version == 1  # others untouched
    assert store.load_vectors("model-a", ["d"]) == {"d": b"\x03"}  # not one of greet's texts


# -- copying a store into an empty one (storage.copying, `skills migrate`) ---------------
def test_every_table_is_copied_into_an_empty_store_and_a_full_one_is_refused(store, tmp_path):
    from skill_library.errors import DestinationNotEmptyError
    from skill_library.storage import audit
    from skill_library.storage.copying import copy_records
    from skill_library.storage.patterns import PatternRows

    (tmp_path / "source").mkdir()
    source = SQLRecordStore.in_folder(tmp_path / "source", create=True)
    try:
        source.add_version(skill(value="one"))
        source.add_version(skill(value="two"))
        source.record_outcome("greet", True)
        source.for_tenant("acme").add_version(skill("wave", when="wave to {target}"))
        PatternRows(source).add_transition("ann", "a", "b", session="s1")
        with source.transaction(write=True) as conn:
            audit.write(conn, "default", "greet", 2, None, "active", actor="ada", reason="added")
        copied = copy_records(source, store)
        assert copied["skill_versions"] == 3 and copied["outcomes"] == 1 and copied["pattern_transitions"] == 1
        assert copied["audit_events"] == 1 and copied["forgotten_traces"] == 0
        assert [s.version for s in store.history("greet")] == [1, 2] and store.get("greet").successes == 1
        assert store.tenants() == ["acme", "default"] and store.for_tenant("acme").names() == ["wave"]
        assert PatternRows(store).sequence("ann", "a")[0][1] == "b"
        with pytest.raises(DestinationNotEmptyError, match="already holds skills"):
            copy_records(source, store)
    finally:
        source.close()

def test_a_copy_into_a_store_that_holds_pattern_rows_is_refused(store, tmp_path):
    from skill_library.errors import DestinationNotEmptyError
    from skill_library.storage.copying import copy_records
    from skill_library.storage.patterns import PatternRows

    PatternRows(store).add_transition("x", "a", "b", session="s")
    assert store.tenants() == []  # patterns alone are no skill
    (tmp_path / "source").mkdir()
    source = SQLRecordStore.in_folder(tmp_path / "source", create=True)
    try:
        with pytest.raises(DestinationNotEmptyError, match="already holds pattern_transitions rows"):
            copy_records(source, store)
    finally:
        source.close()
    assert PatternRows(store).sequence("x", "a")[0][1] == "b"


# -- the erasure salt and opt-out keys (storage.privacy_rows) ----------------------------
def test_the_erasure_salt_is_made_once_per_tenant_and_keys_follow_it(store):
    from skill_library.storage import privacy_rows

    with store.transaction(write=False) as conn:
        assert privacy_rows.salt(conn, "default", create=False) is None
        assert privacy_rows.opt_out_keys(conn, "default", "Ann@Example.com") == []  # no salt: no key
    with store.transaction(write=True) as conn:
        key = privacy_rows.opt_out_key(conn, "default", "Ann@Example.com")
        salt = privacy_rows.salt(conn, "default", create=False)
        theirs = privacy_rows.opt_out_key(conn, "acme", "Ann@Example.com")
    assert salt is not None and key != theirs  # each tenant its own salt
    with store.transaction(write=True) as conn:
        assert privacy_rows.salt(conn, "default", create=True) == salt  # made once
        assert privacy_rows.opt_out_keys(conn, "default", " ann@example.com ") == [key]  # normalized
    assert key.startswith("forgotten:") and "ann" not in key.casefold()
    assert privacy_rows.digest(salt, "t1") == privacy_rows.digest(salt, "t1") != privacy_rows.digest(salt, "t2")
    with pytest.raises(RuntimeError, match="rolled back"):
        with store.transaction(write=True) as conn:
            privacy_rows.salt(conn, "zed", create=True)
            raise RuntimeError("rolled back")
    with store.transaction(write=False) as conn:
        assert privacy_rows.salt(conn, "zed", create=False) is None


# -- the rows an erasure touches (storage.erasure_rows) ----------------------------------
class _Naming:
    """A matcher of one word (what skill_library.erasure.Matcher answers, simplified)."""

    def __init__(self, word: str) -> None:
        self.word = word

    def text(self, text: str) -> bool:
        return self.word in text

    def any(self, value):
        return self.word in str(value)

    def scrub(self, value):
        if isinstance(value, str):
            return value.replace(self.word, "(forgotten)")
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        return value


def test_erasure_rows_delete_a_subjects_traces_scrub_the_rest_and_keep_tombstones(store):
    from skill_library.storage.erasure_rows import ErasureRows

    rows = ErasureRows(store)
    assert rows.tombstoned({}) == set() and rows.tombstoned({0: {"x"}}) == set()  # no salt yet: none
    hers, other = trace("greet Zoe"), trace("greet Ada")
    learned = skill(when="greet Zoe {target}")
    learned = learned.model_copy(update={"provenance": learned.provenance.model_copy(
        update={"trace_ids": [hers.id, other.id]})})
    store.add_version(learned)
    store.save_evidence("greet", trace=hers, success=True, examples=[
        Example(trace_id=hers.id, text="greet Zoe", params={}), Example(trace_id=other.id, text="greet Ada", params={})])
    store.save_trace(other)
    store.save_task_vectors("m", {hers.id: b"\x01", other.id: b"\x02"})
    store.for_tenant("acme").save_trace(hers)  # another tenant's copy is not this erasure's
    naming = _Naming("Zoe")
    found = rows.matching_traces(lambda task, body: naming.text(task))
    assert list(found) == [hers.id] and found[hers.id].task == "greet Zoe"
    store.save_vectors("m", {"d-old": b"\x01", "d-kept": b"\x02"})
    asked: list[set[str]] = []
    erased = rows.erase(sorted(found), {hers.id, "content-of-hers"}, naming,
                        lambda old: asked.append(old) or {"d-old"})
    assert store.load_vectors("m", ["d-old", "d-kept"]) == {"d-kept": b"\x02"}  # the tenant's key too
    assert (erased.traces, erased.examples, erased.outcome_links, erased.tombstones) == (1, 1, 1, 2)
    assert erased.affected == {"greet"} and erased.scrubbed.get("skill_versions") == 1
    assert asked == [{"greet Zoe {target}"}]  # the old text of the scrubbed version
    with pytest.raises(TraceNotFoundError):
        store.get_trace(hers.id)
    assert store.get_trace(other.id).id == other.id and store.for_tenant("acme").get_trace(hers.id)
    assert store.get("greet").provenance.trace_ids == [other.id]
    assert "Zoe" not in store.get("greet").when
    assert [e.trace_id for e in store.examples(["greet"])["greet"]] == [other.id]
    assert store.task_vector_ids("m", [hers.id, other.id]) == {other.id}
    assert [o["trace_id"] for o in store.outcome_log("greet")] == [None]  # the outcome stays, unlinked
    assert rows.tombstoned({0: {"content-of-hers"}, 1: {other.id}, 2: {hers.id}}) == {0, 2}
    assert ErasureRows(store.for_tenant("acme")).tombstoned({0: {hers.id}}) == set()
    again = rows.erase([hers.id], {hers.id}, naming, lambda old: set())
    assert again.tombstones == 0 and again.traces == 0  # a tombstone is kept once
    nothing = rows.erase([], set(), _Naming("nobody"), lambda old: set())
    assert (nothing.traces, nothing.tombstones, nothing.scrubbed) == (0, 0, {})
    store.compact()  # VACUUM on either backend, the rows unchanged
    assert store.get_trace(other.id).id == other.id


# -- the rows redaction rewrites (storage.redaction_rows) --------------------------------
def test_redaction_rows_rewrite_a_skill_rename_it_and_keep_an_alias_in_one_transaction(store):
    from skill_library.storage import redaction_rows
    from skill_library.storage.redaction_rows import RedactionRows

    hers = trace("greet Zoe")
    store.add_version(skill("greet_zoe", when="greet Zoe {target}"))
    store.save_evidence("greet_zoe", trace=hers, success=True,
                        examples=[Example(trace_id=hers.id, text="greet Zoe", params={"target": "Zoe"})])
    store.save_vectors("m", {"d-old": b"\x01", "d-kept": b"\x02"})
    assert redaction_rows.alias_of(store, "greet_zoe") is None and redaction_rows.aliases(store) == {}
    with pytest.raises(RuntimeError, match="rolled back"):
        with RedactionRows.writing(store) as rows:
            rows.add_version(skill("greet"), status="active", successes=0, failures=0)
            rows.rename("greet_zoe", "greet", "9.9")
            raise RuntimeError("rolled back")
    assert redaction_rows.aliases(store) == {} and store.names() == ["greet_zoe"]  # nothing of it stays
    with RedactionRows.writing(store) as rows:
        assert rows.names() == ["greet_zoe"] and rows.aliases() == set()
        versions = rows.versions("greet_zoe")
        assert [(v["version"], v["when_text"]) for v in versions] == [(1, "greet Zoe {target}")]
        assert [e["trace_id"] for e in rows.examples("greet_zoe")] == [hers.id]
        assert [t.id for t in rows.traces({hers.id, "unknown"})] == [hers.id] and rows.traces(set()) == []
        assert rows.active_version("greet_zoe") == 1
        rows.set_example("greet_zoe", hers.id, text="greet (name)", params={"target": "x"})
        stored = rows.add_version(skill("greet", when="greet (name) {target}"), status="active",
                                  successes=3, failures=1)
        rows.rewrite_version("greet_zoe", 1, {"when_text": "(erased)", "description": "(erased)",
                                              "status": "retired"})
        rows.forget_derived("greet_zoe", ["d-old"])
        rows.rename("greet_zoe", "greet", "9.9")
        rows.audit("greet", stored.version, None, "redacted", actor="system", reason="test", evidence={"n": 1})
    assert (stored.name, stored.version) == ("greet", 1)
    assert (store.get("greet").successes, store.get("greet").failures) == (3, 1)
    assert store.get("greet_zoe", 1).when == "(erased)" and store.get("greet_zoe", 1).status == "retired"
    assert [(e.trace_id, e.text) for e in store.examples(["greet"])["greet"]] == [(hers.id, "greet (name)")]
    assert store.examples(["greet_zoe"])["greet_zoe"] == []
    assert store.load_vectors("m", ["d-old", "d-kept"]) == {"d-kept": b"\x02"}
    assert redaction_rows.alias_of(store, "greet_zoe") == ("greet", "9.9")
    assert redaction_rows.aliases(store) == {"greet_zoe": "greet"}
    assert redaction_rows.aliases(store.for_tenant("acme")) == {}
    with RedactionRows.writing(store) as rows:  # an alias of the alias follows a second rename
        rows.add_version(skill("hello"), status="draft", successes=0, failures=0)
        rows.rename("greet", "hello", "9.10")
    assert redaction_rows.aliases(store) == {"greet_zoe": "hello", "greet": "hello"}


# -- the uplift holdout's rows (storage.uplift_rows) --------------------------------------
def test_uplift_rows_settings_change_with_their_audit_event_and_outcomes_are_one_per_session(store):
    from skill_library.storage import audit
    from skill_library.storage.uplift_rows import UpliftRows, delete_outcomes

    rows = UpliftRows(store)
    assert rows.settings() is None and rows.measured_names() == [] and rows.session_outcomes("greet") == []
    seen = []

    def event(old):
        seen.append(old)
        return {"name": "(uplift)", "to_status": "0.1", "reason": "set", "evidence": {"n": 1}}

    rows.set_settings(share=0.1, side_effects=False, skills=["greet"], actor="ann", event=event)
    rows.set_settings(share=0.2, side_effects=True, skills=None, actor="bob", event=event)
    assert seen[0] is None and seen[1]["share"] == 0.1 and seen[1]["skills"] == ["greet"]
    got = rows.settings()
    assert (got["share"], got["side_effects"], got["skills"], got["actor"]) == (0.2, True, None, "bob")
    assert UpliftRows(store.for_tenant("acme")).settings() is None
    with store.transaction(write=False) as conn:
        assert [e.actor for e in audit.read(conn, "default", "(uplift)")] == ["ann", "bob"]

    def failing(old):
        raise RuntimeError("the audit event could not be made")

    with pytest.raises(RuntimeError, match="could not be made"):
        rows.set_settings(share=0.5, side_effects=False, skills=None, actor="cy", event=failing)
    assert rows.settings()["share"] == 0.2  # no setting without its audit event
    one = {"version": 1, "kind": "success", "success": True, "reason": None, "origin": "feedback", "cost": None}
    assert rows.add_session_outcomes("s1", [{"name": "greet", "arm": "served", **one},
                                            {"name": "wave", "arm": "held_back", **one}]) == []
    assert rows.add_session_outcomes("s1", [{"name": "greet", "arm": "served", **one},
                                            {"name": "hop", "arm": "served", **one}]) == ["greet"]
    assert rows.measured_names() == ["greet", "wave"]  # hop was not written either
    rows.add_session_outcomes("s2", [{"name": "greet", "arm": "held_back", **{**one, "version": 2}}])
    assert [r["arm"] for r in rows.session_outcomes("greet")] == ["served", "held_back"]
    assert [r["arm"] for r in rows.session_outcomes("greet", 2)] == ["held_back"]
    assert UpliftRows(store.for_tenant("acme")).measured_names() == []
    with store.transaction(write=True) as conn:
        delete_outcomes(conn, "default", "greet")
    assert rows.measured_names() == ["wave"]


# -- governance's other rows (storage.governance_rows, storage.canary_rows) ----------------
def test_tool_specs_are_declared_redeclared_and_removed_per_tenant(store):
    from skill_library.models import utc_now
    from skill_library.storage import governance_rows as g

    with store.transaction(write=True) as conn:
        assert g.tool_spec_rows(conn, "default") == []
        g.save_tool_specs(conn, "default", {"say": (False, {"type": "object"}), "pay": (True, {})}, utc_now())
        g.save_tool_specs(conn, "default", {"say": (True, {"type": "object", "x": 1})}, utc_now())
        g.save_tool_specs(conn, "acme", {"hop": (False, {})}, utc_now())
    with store.transaction(write=False) as conn:
        rows = g.tool_spec_rows(conn, "default")
    assert [(r["name"], r["side_effects"], r["schema"]) for r in rows] == [
        ("pay", True, {}), ("say", True, {"type": "object", "x": 1})]
    with store.transaction(write=True) as conn:
        g.remove_tool_specs(conn, "default", ["pay", "unknown"])
        g.remove_tool_specs(conn, "default", [])
        assert [r["name"] for r in g.tool_spec_rows(conn, "default")] == ["say"]
        assert [r["name"] for r in g.tool_spec_rows(conn, "acme")] == ["hop"]


def test_approvals_by_people_tools_of_versions_and_status_counts(store):
    from skill_library.storage import audit
    from skill_library.storage import governance_rows as g

    store.add_version(skill())
    store.add_version(skill(value="two"), status="draft")
    with store.transaction(write=True) as conn:
        assert not g.skill_exists(conn, "default", "wave") and g.skill_exists(conn, "default", "greet")
        assert not g.skill_exists(conn, "acme", "greet")
        audit.write(conn, "default", "greet", 1, "evaluated", "approved", actor="ann")
        audit.write(conn, "default", "greet", 2, "evaluated", "approved", actor="system")
        assert g.approved_versions(conn, "default", "greet", not_by={"system"}) == {1}
        assert g.approved_versions(conn, "default", "greet", not_by=set()) == {1, 2}
        assert g.approved_versions(conn, "acme", "greet", not_by=set()) == set()
        assert g.version_tools(conn, "default", "greet", {1, 2}) == [[], []]
        assert g.version_tools(conn, "default", "greet", set()) == []
    assert g.status_counts(store, ("active", "draft", "retired")) == {"active": 1, "draft": 1}
    assert g.status_counts(store.for_tenant("acme"), ("active",)) == {}


def test_evaluations_are_stored_whole_and_read_oldest_first(store):
    from skill_library.models import utc_now
    from skill_library.storage import governance_rows as g

    made = [g.add_evaluation(store, name="greet", version=v, active_version=None, suite_id="s", suite_hash="h",
                             passed=v == 2, actor="ann", body={"passed": v == 2, "n": v}, created_at=utc_now())
            for v in (1, 2, 2)]
    assert made == sorted(made) and len(set(made)) == 3
    assert [r["body"]["n"] for r in g.evaluation_rows(store, "greet")] == [1, 2, 2]
    assert [r["id"] for r in g.evaluation_rows(store, "greet", 2)] == made[1:]
    assert g.evaluation_rows(store, "wave") == [] and g.evaluation_rows(store.for_tenant("acme"), "greet") == []


def test_a_canary_row_is_found_and_stopped_on_the_callers_transaction(store):
    from skill_library.storage import canary_rows

    with store.transaction(write=True) as conn:
        canary_rows.start(conn, "default", "greet", 2, share=0.1, cohort=None, actor="ann")
        assert canary_rows.has_row(conn, "default", "greet", 2)
        assert not canary_rows.has_row(conn, "default", "greet", 1) and not canary_rows.has_row(conn, "acme", "greet", 2)
    with pytest.raises(RuntimeError, match="rolled back"):
        with store.transaction(write=True) as conn:
            canary_rows.stop(conn, "default", "greet", 2)
            raise RuntimeError("rolled back")
    with store.transaction(write=True) as conn:
        assert canary_rows.has_row(conn, "default", "greet", 2)  # the stop rolled back with its transaction
        canary_rows.stop(conn, "default", "greet", 2)
        assert not canary_rows.has_row(conn, "default", "greet", 2)


# -- the rows of tool-schema re-verification (storage.tool_binding_rows) --------------------
def test_tool_binding_rows_bind_rebind_and_move_versions_on_the_callers_transaction(store):
    from skill_library.models import utc_now
    from skill_library.storage import canary_rows
    from skill_library.storage import tool_binding_rows as b

    evidence = trace("greet Ada")
    store.add_version(skill())
    store.save_evidence("greet", trace=evidence, examples=[Example(trace_id=evidence.id, text="greet Ada", params={})])
    store.add_version(skill("wave", when="wave to {target}"))
    now = utc_now()
    with store.transaction(write=True) as conn:
        assert b.trace_bodies(conn, "default", [evidence.id, "unknown"])[evidence.id]["task"] == "greet Ada"
        assert b.trace_bodies(conn, "acme", [evidence.id]) == {}
        assert b.example_trace_ids(conn, "default", ["greet", "wave"]) == {"greet": [evidence.id]}
        b.add_bindings(conn, [])
        b.add_bindings(conn, [{"tenant": "default", "name": n, "version": 1, "tool": "say", "digest": "d1",
                               "source": "traces", "schema": {}, "bound_at": now} for n in ("greet", "wave")])
        b.replace_binding(conn, "default", "greet", 1, tool="say", digest="d2", source="declared",
                          schema={"type": "object"}, now=now)
        rows = b.binding_rows(conn, "default", ["greet"])
        assert [(r["tool"], r["digest"], r["source"], r["schema"]) for r in rows] == [
            ("say", "d2", "declared", {"type": "object"})]
        assert sorted(r["name"] for r in b.binding_rows(conn, "default")) == ["greet", "wave"]
        b.delete_bindings(conn, "default", "wave")
        assert [r["name"] for r in b.binding_rows(conn, "default")] == ["greet"]
        assert b.binding_rows(conn, "acme") == []
        assert sorted(b.code_versions_with_status(conn, "default", ["active"])) == [("greet", 1, []), ("wave", 1, [])]
        assert b.code_versions_with_status(conn, "default", ["suspended"], code_only=False) == []
        assert b.version_statuses(conn, "default", [("greet", 1), ("greet", 9)]) == {("greet", 1): "active"}
        assert b.pointers(conn, "default", ["greet", "nobody"]) == {"greet": 1}
        b.write_statuses(conn, "default", [("greet", 1), ("wave", 1)], "suspended", now)
        canary_rows.start(conn, "default", "wave", 1, share=0.1, cohort=None, actor="ann")
        assert b.canary_keys(conn, "default", ["greet", "wave"]) == {("wave", 1)}
        assert b.canary_keys(conn, "acme", ["wave"]) == set()
    assert store.get("greet", 1).status == "suspended" and store.get("wave", 1).status == "suspended"
    with pytest.raises(RuntimeError, match="rolled back"):
        with store.transaction(write=True) as conn:
            b.write_statuses(conn, "default", [("greet", 1)], "active", now)
            raise RuntimeError("rolled back")
    assert store.get("greet", 1).status == "suspended"


def test_a_record_store_url_that_cannot_be_parsed_is_a_named_error():
    from skill_library.errors import RecordStoreURLError

    with pytest.raises(RecordStoreURLError, match="Could not parse") as info:
        SQLRecordStore("not a url at all", create=True)
    assert isinstance(info.value, ValueError)


# -- the unit of work (storage.interface.UnitOfWork): writes a caller composes in one transaction
def test_it_is_a_unit_of_work_and_a_store_without_transactions_is_refused_by_name(store):
    from skill_library.errors import SkillLibraryError
    from skill_library.storage.interface import UnitOfWork, unit_of_work

    assert isinstance(store, UnitOfWork) and unit_of_work(store) is store

    class Plain(RecordStore):  # a record store with no transactions: abstract methods left out
        pass

    Plain.__abstractmethods__ = frozenset()
    with pytest.raises(SkillLibraryError, match="governance needs a record store with transactions.*Plain"):
        unit_of_work(Plain(), "governance")


def test_versions_are_read_inserted_and_moved_on_the_callers_connection(store):
    with store.transaction(write=True) as conn:
        first, superseded = store.insert_version(conn, skill(value="one"))
        assert (first.version, superseded) == (1, [])
        second, superseded = store.insert_version(conn, skill(value="two"), status="draft")
        assert (second.version, second.status, superseded) == (2, "draft", [])  # a draft supersedes nothing
        assert store.pointer(conn, "greet") == 1
        assert store.read_version(conn, "greet").version == 1
        assert store.read_version(conn, "greet", 2).status == "draft"
        assert store.versions_with_status(conn, "greet", "draft") == [2]
        store.write_status(conn, "greet", 2, "active")
        store.write_status(conn, "greet", 1, "superseded")
        store.write_pointer(conn, "greet", 2)
        with pytest.raises(SkillNotFoundError):
            store.read_version(conn, "greet", 9)
        with pytest.raises(ValueError, match="active or draft"):
            store.insert_version(conn, skill(value="three"), status="approved")
    assert store.get("greet").version == 2 and store.get("greet").status == "active"
    assert store.get("greet", 1).status == "superseded"
    with store.transaction(write=False) as conn:
        assert store.versions_with_status(conn, "greet", "active") == [2]
        assert store.versions_with_status(conn, "greet", "superseded") == [1]


def test_a_block_that_raises_writes_nothing_and_retrying_commits_its_work_once(store):
    with pytest.raises(RuntimeError, match="midway"):
        with store.transaction(write=True) as conn:
            store.insert_version(conn, skill(name="kept_out"))
            raise RuntimeError("midway")
    assert store.names() == []

    def fails(conn):
        store.insert_version(conn, skill(name="kept_out"))
        raise RuntimeError("midway")

    with pytest.raises(RuntimeError, match="midway"):
        store.retrying(fails)  # not a race with another writer: raised, not retried
    assert store.names() == []
    calls = []

    def work(conn):
        calls.append(1)
        stored, _ = store.insert_versions(conn, [skill(name="one"), skill(name="two"),
                                                 skill(name="one", value="again")])
        return [(s.name, s.version) for s in stored]

    assert store.retrying(work) == [("one", 1), ("two", 1), ("one", 2)]
    assert len(calls) == 1 and store.names() == ["one", "two"]
    assert store.get("one", 1).status == "superseded"


def test_tenants_their_filter_purge_and_compact(store):
    from skill_library.storage.tables import skills_table

    store.add_version(skill(name="mine"))
    acme = store.for_tenant("acme")
    acme.add_version(skill(name="theirs"))
    acme.add_version(skill(name="other"))
    assert store.tenants() == ["acme", "default"] == acme.tenants()
    with store.transaction(write=False) as conn:
        import sqlalchemy as sa

        mine = conn.execute(sa.select(skills_table.c.name).where(store.tenant_filter(skills_table))).scalars()
        assert sorted(mine) == ["mine"]
    assert acme.purge(["theirs", "absent"]) == 1
    assert acme.names() == ["other"] and store.names() == ["mine"]
    with pytest.raises(SkillNotFoundError):
        acme.get("theirs")
    store.compact()  # the files are rewritten, the rows are kept
    assert store.names() == ["mine"] and acme.names() == ["other"]
