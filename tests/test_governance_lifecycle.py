"""Governance (issue 10): every transition, every refusal, the audit log, diff, delete,
the policy and the tool declarations, on a library with the default (fail-closed) policy."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from skill_library import Skill, SkillLibrary
from skill_library.errors import LifecycleError, PermissionDenied, SkillLibraryError
from skill_library.governance import Actor, Policy, ToolSpec, library_transition, system_actor
from skill_library.governance.actors import os_user
from skill_library.models import Outcome, ToolCall, Trace

ADMIN = os_user()
ALICE = Actor(id="alice", kind="user", permissions=frozenset({"skill.propose", "skill.approve"}))
BOB = Actor(id="bob", kind="user", permissions=frozenset({"skill.approve"}))
BOT = Actor(id="ci-bot", kind="service", permissions=frozenset({"skill.propose", "skill.approve"}))
VIEWER = Actor(id="viewer", kind="user", permissions=frozenset())

CODE_V1 = '''def tally_votes(ballots: list) -> dict:
    """Count the votes of a list of ballots."""
    counts = {}
    for ballot in ballots:
        counts[ballot] = counts.get(ballot, 0) + 1
    return counts
'''
CODE_V2 = CODE_V1.replace("    return counts", "    return dict(sorted(counts.items()))")
WHEN = "count the votes of an election from its ballots"


@pytest.fixture
def gov(tmp_path, embedder):
    with SkillLibrary(tmp_path / "gov", embedder=embedder) as lib:
        for actor in (ALICE, BOB, BOT, VIEWER):
            lib.actors.add(actor)
        yield lib


def skill(code: str = CODE_V1, **fields) -> Skill:
    return Skill.from_function(code, when=WHEN, **fields)


def evaluated(lib: SkillLibrary, name: str, version: int, passed: bool = True) -> Skill:
    """What E's evaluate() records: the evaluation's verdict as a transition."""
    if passed:
        return library_transition(lib, name, version, "evaluated", actor=system_actor(),
                          reason="evaluation passed", evidence={"passed": True, "suite": "votes"})
    return lib.context.store.get(name, version)


def fetched(lib: SkillLibrary) -> list[tuple[str, int]]:
    return [(m.skill.name, m.skill.version) for m in
            lib.fetch("count the votes of the club election", k=3, min_reliability=0)]


def test_a_new_library_registers_its_creator_as_admin_and_fails_closed(gov):
    actors = {a.id: a for a in gov.actors.list()}
    assert actors[ADMIN].kind == "user" and actors[ADMIN].permissions == {"skill.admin"}
    assert actors["generalizer"].permissions == {"skill.propose"}
    assert actors["system"].kind == "system"
    assert gov.policy.auto_approve == "read_only"
    assert [e.to_status for e in gov.audit("@policy")] == ["set"]


def test_every_transition_is_audited_from_proposal_to_rollback(gov):
    draft = gov.propose(skill(), actor="alice", reason="hand-written")
    assert (draft.version, draft.status, draft.provenance.created_by) == (1, "draft", "alice")
    assert fetched(gov) == []  # a draft is never fetched
    evaluated(gov, "tally_votes", 1)
    assert gov.approve("tally_votes", 1, actor="bob").status == "approved"
    assert fetched(gov) == []
    assert gov.promote("tally_votes", 1, actor="bob").status == "active"
    assert fetched(gov) == [("tally_votes", 1)]
    gov.propose(skill(CODE_V2), actor="alice")
    assert gov.get("tally_votes").version == 1  # a revision is a new draft: v1 stays current
    assert gov.history("tally_votes")[1].status == "draft"  # and never inherits approval
    evaluated(gov, "tally_votes", 2)
    gov.approve("tally_votes", 2, actor="bob")
    canary = gov.start_canary("tally_votes", 2, actor="bob", share=0.25)
    assert canary.status == "canary"
    with gov.context.store.transaction(write=False) as conn:
        row = conn.execute(sa.text("SELECT version, share, cohort FROM canaries")).one()
    assert tuple(row) == (2, 0.25, None)
    assert gov.promote("tally_votes", 2, actor="bob").status == "active"
    assert [(s.version, s.status) for s in gov.history("tally_votes")] == [(1, "superseded"), (2, "active")]
    assert fetched(gov) == [("tally_votes", 2)]
    back = gov.rollback("tally_votes", actor="bob")
    assert (back.version, back.status) == (1, "active")
    assert [(s.version, s.status) for s in gov.history("tally_votes")] == [(1, "active"), (2, "retired")]
    assert fetched(gov) == [("tally_votes", 1)]
    steps = [(e.version, e.from_status, e.to_status, e.actor) for e in gov.audit("tally_votes")]
    assert steps == [
        (1, None, "draft", "alice"), (1, "draft", "evaluated", "system"),
        (1, "evaluated", "approved", "bob"), (1, "approved", "active", "bob"),
        (2, None, "draft", "alice"), (2, "draft", "evaluated", "system"),
        (2, "evaluated", "approved", "bob"), (2, "approved", "canary", "bob"),
        (1, "active", "superseded", "bob"), (2, "canary", "active", "bob"),
        (2, "active", "retired", "bob"), (1, "superseded", "active", "bob"),
    ]
    assert all(e.at.tzinfo is not None and e.tenant == "default" for e in gov.audit("tally_votes"))
    with gov.context.store.transaction(write=False) as conn:  # the canary's row went with its promotion
        assert conn.execute(sa.text("SELECT count(*) FROM canaries")).scalar() == 0


def test_a_canary_rolled_back_returns_to_approved_and_rollback_to_a_version(gov):
    gov.add(skill())
    gov.add(skill(CODE_V2))
    gov.propose(skill(CODE_V2.replace("sorted(", "reversed(sorted(").replace("items()))", "items())))")),
                actor="alice")
    evaluated(gov, "tally_votes", 3)
    gov.approve("tally_votes", 3, actor="bob")
    gov.start_canary("tally_votes", 3, actor="bob", cohort="beta")
    assert library_transition(gov, "tally_votes", 3, "approved", actor=system_actor(),
                      reason="canary failed").status == "approved"
    assert gov.rollback("tally_votes", actor="bob", to_version=1).version == 1
    assert [s.status for s in gov.history("tally_votes")] == ["active", "retired", "approved"]
    with pytest.raises(LifecycleError, match="no earlier released version"):
        gov.rollback("tally_votes", actor="bob")


def test_refusals_name_the_actor_the_permission_or_the_transition(gov):
    with pytest.raises(PermissionDenied, match="'mallory' is not registered"):
        gov.propose(skill(), actor="mallory")
    with pytest.raises(PermissionDenied, match="'viewer'.*lacks the permission 'skill.propose'"):
        gov.propose(skill(), actor="viewer")
    with pytest.raises(PermissionDenied, match="registered as a user, not a service"):
        gov.propose(skill(), actor=Actor(id="alice", kind="service", permissions=frozenset({"skill.admin"})))
    gov.propose(skill(), actor="alice")
    with pytest.raises(LifecycleError, match="must pass an evaluation first"):
        gov.approve("tally_votes", 1, actor="bob")
    with pytest.raises(LifecycleError, match="'tally_votes' v1 is draft; it cannot become active"):
        gov.promote("tally_votes", 1, actor="bob")
    evaluated(gov, "tally_votes", 1)
    with pytest.raises(PermissionDenied, match="nobody approves their own proposal"):
        gov.approve("tally_votes", 1, actor="alice")
    with pytest.raises(PermissionDenied, match="approvals need a user actor"):
        gov.approve("tally_votes", 1, actor="ci-bot")
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.approve'"):
        gov.approve("tally_votes", 1, actor="viewer")
    with pytest.raises(ValueError, match="a rejection says why"):
        gov.reject("tally_votes", 1, actor="bob", reason=" ")
    assert gov.reject("tally_votes", 1, actor="bob", reason="counts ties wrong").status == "rejected"
    with pytest.raises(LifecycleError, match="is rejected; it cannot become approved"):
        gov.approve("tally_votes", 1, actor="bob")
    with pytest.raises(LifecycleError, match="has no active version to roll back"):
        gov.rollback("tally_votes", actor="bob")
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.admin'"):
        gov.delete("tally_votes", actor="bob")
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.admin'"):
        gov.set_policy(Policy(auto_approve="all"), actor="bob")
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.admin'"):
        gov.register_tools({"tally": ToolSpec(side_effects=False)}, actor="alice")
    with pytest.raises(PermissionDenied, match="lacks the permission 'skill.admin'"):
        gov.actors.add(Actor(id="eve", kind="user", permissions=frozenset({"skill.admin"})), by="bob")
    assert fetched(gov) == []
    refused = [e for e in gov.audit("tally_votes") if e.to_status == "rejected"]
    assert refused[0].reason == "counts ties wrong" and refused[0].actor == "bob"


def test_a_side_effect_version_needs_a_human_approval(gov):
    wipe = '''def purge_ballots(box: str) -> int:
    """Delete every ballot of a box."""
    return delete_all(box)
'''
    gov.propose(Skill.from_function(wipe, when="delete the ballots of a box", infer_tools=True), actor="alice")
    evaluated(gov, "purge_ballots", 1)
    reasons = gov.needs_human("purge_ballots", 1)
    assert reasons == ["it calls tools with side effects: delete_all (delete_all undeclared: "
                       "counted as side effects)"]
    with pytest.raises(PermissionDenied, match="needs a human approval: it calls tools with side effects"):
        library_transition(gov, "purge_ballots", 1, "approved", actor=system_actor(), reason="auto")
    gov.register_tools({"delete_all": ToolSpec(schema={"type": "object"}, side_effects=True)})
    assert "delete_all" in gov.needs_human("purge_ballots", 1)[0]
    assert gov.approve("purge_ballots", 1, actor="bob", reason="reviewed").status == "approved"
    read_only = gov.propose(skill(), actor="alice")
    evaluated(gov, read_only.name, 1)
    assert gov.needs_human(read_only.name, 1) == []  # no tools: the policy may approve it
    assert library_transition(gov, read_only.name, 1, "approved", actor=system_actor(),
                      reason="auto-approved").status == "approved"


def test_read_only_tools_feed_the_specs_but_never_widen_a_declaration(tmp_path, embedder):
    with SkillLibrary(tmp_path / "t", embedder=embedder, read_only_tools={"lookup", "wipe"}) as lib:
        assert lib.tool_specs() == {"lookup": ToolSpec(side_effects=False), "wipe": ToolSpec(side_effects=False)}
        lib.register_tools({"wipe": ToolSpec(side_effects=True)})
        assert lib.read_only_tools == {"lookup"}
        from skill_library.governance.tool_schemas import digest

        assert [e.evidence for e in lib.audit("@tools")] == [{"wipe": {"side_effects": True, "digest": digest({})}}]


def test_the_policy_is_stored_and_changed_only_by_an_audited_admin_call(tmp_path, embedder):
    path = tmp_path / "p"
    with SkillLibrary(path, embedder=embedder, policy=Policy(auto_approve="never")) as lib:
        assert lib.policy.auto_approve == "never"
    with SkillLibrary(path, embedder=embedder) as lib:  # no policy=: the stored one
        assert lib.policy.auto_approve == "never"
        gov_skill = lib.propose(skill(), actor=ADMIN)
        evaluated(lib, gov_skill.name, 1)
        assert lib.needs_human(gov_skill.name, 1) == [
            "the tenant's policy (auto_approve='never') approves nothing automatically"]
    with pytest.raises(SkillLibraryError, match="applies only when a library is created"):
        SkillLibrary(path, embedder=embedder, policy=Policy(auto_approve="all"))
    with SkillLibrary(path, embedder=embedder) as lib:
        lib.set_policy(Policy(auto_approve="all"), actor=ADMIN)
        event = lib.audit("@policy")[-1]
        assert (event.from_status, event.to_status, event.actor, event.reason) == (
            "never", "all", ADMIN, "policy widened")
    with SkillLibrary(path, embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        assert lib.policy.auto_approve == "all"


def test_diff_shows_code_when_tools_and_parameters(gov):
    gov.add(skill())
    gov.add(Skill.from_function(CODE_V2.replace("ballots: list", "ballots: list, box: str = 'main'"),
                                when="count the votes of one ballot box", tools=["audit_log"]))
    text = gov.diff("tally_votes", 1, 2)
    assert "--- tally_votes v1 (superseded)" in text and "+++ tally_votes v2 (active)" in text
    assert f"when: {WHEN!r} -> 'count the votes of one ballot box'" in text
    assert "tools: +audit_log" in text
    assert "parameters: {" in text and '"box"' in text
    assert "-    return counts" in text and "+    return dict(sorted(counts.items()))" in text
    assert gov.diff("tally_votes", 1, 1).endswith("code: unchanged")


def test_add_is_the_audited_direct_path_of_the_local_admin(gov):
    gov.add(skill())
    gov.add(skill(CODE_V2))
    assert [(e.version, e.from_status, e.to_status, e.actor) for e in gov.audit("tally_votes")] == [
        (1, None, "active", ADMIN), (1, "active", "superseded", ADMIN), (2, None, "active", ADMIN)]
    assert [(s.version, s.status) for s in gov.history("tally_votes")] == [(1, "superseded"), (2, "active")]
    gov.retire("tally_votes")
    assert gov.audit("tally_votes")[-1].to_status == "retired" and fetched(gov) == []


def test_review_queue_lists_drafts_and_evaluated_versions_oldest_first(gov):
    gov.propose(skill(), actor="alice")
    gov.propose(Skill.from_function("def add_up(xs: list) -> int:\n    return sum(xs)\n",
                                    when="add up numbers"), actor="alice")
    evaluated(gov, "add_up", 1)
    assert [(s.name, s.status) for s in gov.review_queue()] == [("tally_votes", "draft"), ("add_up", "evaluated")]
    gov.reject("tally_votes", 1, actor="bob", reason="duplicate of a builtin")
    assert [s.name for s in gov.review_queue()] == ["add_up"]


def quarantine_by_a_burst(lib: SkillLibrary, name: str) -> None:
    """A long success record, then failures until the failure-burst rule quarantines it."""
    from skill_library.patterns.reliability import QUARANTINE_FAILURES, QUARANTINE_MIN_OUTCOMES

    for _ in range(QUARANTINE_MIN_OUTCOMES):
        lib.feedback(name, True)
    for _ in range(QUARANTINE_FAILURES):
        lib.feedback(name, False)
    assert lib.get(name).status == "quarantined"


def test_review_queue_lists_quarantined_versions_with_the_decision_and_the_evidence(gov):
    from skill_library.governance.workflow import DECISIONS, queue_reason

    gov.add(Skill.from_function("def add_up(xs: list) -> int:\n    return sum(xs)\n", when="add up numbers"))
    gov.propose(skill(), actor="alice")
    assert [s.name for s in gov.review_queue()] == ["tally_votes"]
    quarantine_by_a_burst(gov, "add_up")
    queue = gov.review_queue()
    assert [(s.name, s.status) for s in queue] == [("add_up", "quarantined"), ("tally_votes", "draft")]
    assert [DECISIONS[s.status] for s in queue] == ["lift the quarantine or retire", "approve or reject"]
    assert queue_reason(gov, queue[0]) == gov.audit("add_up")[-1].reason != ""
    gov.lift_quarantine("add_up", actor="bob")
    assert [s.name for s in gov.review_queue()] == ["tally_votes"]


def _rows(lib: SkillLibrary, name: str) -> dict[str, int]:
    counts = {}
    with lib.context.store.transaction(write=False) as conn:
        for table in ("skills", "skill_versions", "outcomes", "skill_examples", "skill_profiles"):
            counts[table] = conn.execute(sa.text(f"SELECT count(*) FROM {table} WHERE name = :n"), {"n": name}).scalar()
        counts["traces"] = conn.execute(sa.text("SELECT count(*) FROM traces")).scalar()
    return counts


def test_delete_leaves_no_rows_no_index_entries_and_one_audit_event(gov):
    gov.set_policy(Policy(auto_approve="all"), actor=ADMIN)
    trace = Trace(task="count the votes of the club election", params={"ballots": ["a", "b", "a"]},
                  calls=[ToolCall(name="tally", arguments={"ballots": ["a", "b", "a"]}, result={"a": 2, "b": 1})],
                  outcome=Outcome(success=True, verifier="returning-officer"))
    learned = gov.learn(trace)
    assert learned.status == "saved"
    name = learned.skill.name
    run = gov.run(name, {"ballots": ["x"]}, {"tally": lambda ballots: {"x": 1}})
    gov.feedback(name, True, trace_id=run.trace.id)
    gov.add(skill())  # another skill: untouched
    assert _rows(gov, name)["outcomes"] == 2 and gov.index.texts_of(name)
    event = gov.delete(name, actor=ADMIN)
    assert (event.name, event.to_status, event.actor) == (name, "deleted", ADMIN)
    assert _rows(gov, name) == {"skills": 0, "skill_versions": 0, "outcomes": 0, "skill_examples": 0,
                                "skill_profiles": 0, "traces": 0}
    assert gov.index.texts_of(name) == {} and gov.index.count() == 1
    assert gov.audit(name) == [event]
    with pytest.raises(KeyError):
        gov.get(name)
    assert [m.skill.name for m in gov.fetch(WHEN, min_reliability=0)] == ["tally_votes"]


def test_an_old_library_migrates_replaced_retired_versions_to_superseded(tmp_path, embedder):
    path = tmp_path / "old"
    with SkillLibrary(path, embedder=embedder) as lib:
        lib.add(skill())
        lib.add(skill(CODE_V2))
        lib.add(Skill.from_function("def add_up(xs: list) -> int:\n    return sum(xs)\n", when="add up numbers"))
        lib.retire("add_up")
    engine = sa.create_engine(f"sqlite:///{path / 'records.db'}")
    with engine.begin() as conn:  # what a library written before governance holds
        conn.execute(sa.text("UPDATE skill_versions SET status = 'retired' WHERE status = 'superseded'"))
        for table in ("audit_events", "actors", "tool_specs", "policies", "canaries"):
            conn.execute(sa.text(f"DROP TABLE {table}"))
        conn.execute(sa.text("DELETE FROM schema_migrations WHERE version >= 5"))
        conn.execute(sa.text("UPDATE library_meta SET value = '4' WHERE key = 'schema_version'"))
    engine.dispose()
    with SkillLibrary(path, embedder=embedder) as lib:
        assert [s.status for s in lib.history("tally_votes")] == ["superseded", "active"]
        assert lib.get("add_up").status == "retired"  # retired by someone stays retired
        assert ADMIN in {a.id for a in lib.actors.list()} and lib.policy.auto_approve == "read_only"
