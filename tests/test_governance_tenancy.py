"""Governance inside tenants (issue 10): actors, policy, tool declarations, the lifecycle,
the audit log and delete of one tenant never reach another's, even for a skill of the
same name."""

from __future__ import annotations

import pytest

from skill_library import Skill, SkillLibrary
from skill_library.errors import PermissionDenied, SkillNotFoundError
from skill_library.governance import Actor, Policy, ToolSpec, library_transition, system_actor

ALICE = Actor(id="alice", kind="user", permissions=frozenset({"skill.propose", "skill.approve"}))
BOB = Actor(id="bob", kind="user", permissions=frozenset({"skill.approve"}))
CODE = '''def tally_votes(ballots: list) -> dict:
    """Count the votes of a list of ballots."""
    counts = {}
    for ballot in ballots:
        counts[ballot] = counts.get(ballot, 0) + 1
    return counts
'''
WHEN = "count the votes of an election from its ballots"


@pytest.fixture
def pair(tmp_path, embedder):
    """(home, acme) on one folder; alice and bob are registered in home only."""
    with SkillLibrary(tmp_path / "lib", embedder=embedder) as home:
        home.actors.add(ALICE)
        home.actors.add(BOB)
        yield home, home.for_tenant("acme")


def released(lib: SkillLibrary, proposer: str, approver: str) -> Skill:
    draft = lib.propose(Skill.from_function(CODE, when=WHEN), actor=proposer)
    library_transition(lib, draft.name, draft.version, "evaluated", actor=system_actor(), reason="passed")
    lib.approve(draft.name, draft.version, actor=approver)
    return lib.promote(draft.name, draft.version, actor=approver)


def test_actors_are_registered_per_tenant(pair):
    home, acme = pair
    assert {"alice", "bob"} <= {a.id for a in home.actors.list()}
    assert not {"alice", "bob"} & {a.id for a in acme.actors.list()}
    with pytest.raises(PermissionDenied, match="alice"):  # unknown in acme
        acme.propose(Skill.from_function(CODE, when=WHEN), actor="alice")
    assert acme.review_queue() == []


def test_policy_and_tool_declarations_are_per_tenant(pair):
    home, acme = pair
    home.set_policy(Policy(auto_approve="all"), actor=None)
    home.register_tools({"lookup": ToolSpec(side_effects=False)})
    assert home.policy.auto_approve == "all" and acme.policy.auto_approve == "read_only"
    assert "lookup" in home.tool_specs() and "lookup" not in acme.tool_specs()


def test_a_release_and_its_audit_stay_in_their_tenant(pair):
    home, acme = pair
    released(home, "alice", "bob")
    acme.actors.add(ALICE)
    acme.actors.add(BOB)
    acme.propose(Skill.from_function(CODE, when=WHEN), actor="alice")  # the same name, a draft
    assert home.get("tally_votes").status == "active" and acme.get("tally_votes").status == "draft"
    assert [m.skill.name for m in home.fetch(WHEN, min_reliability=0)] == ["tally_votes"]
    assert acme.fetch(WHEN, min_reliability=0) == []
    assert [e.to_status for e in home.audit("tally_votes")] == ["draft", "evaluated", "approved", "active"]
    assert [e.to_status for e in acme.audit("tally_votes")] == ["draft"]
    assert {e.tenant for e in home.audit()} == {"default"} and {e.tenant for e in acme.audit()} == {"acme"}
    assert [(s.name, s.version) for s in acme.review_queue()] == [("tally_votes", 1)]
    assert home.review_queue() == []


def test_delete_removes_only_its_tenants_skill(pair):
    home, acme = pair
    acme.actors.add(ALICE)
    acme.actors.add(BOB)
    for lib in (home, acme):
        released(lib, "alice", "bob")
        lib.feedback("tally_votes", True)
    event = acme.delete("tally_votes", actor=None)
    assert (event.tenant, event.to_status) == ("acme", "deleted")
    with pytest.raises(SkillNotFoundError):
        acme.get("tally_votes")
    assert acme.fetch(WHEN, min_reliability=0) == []
    kept = home.get("tally_votes")
    assert (kept.status, kept.successes) == ("active", 1)
    assert len(home.outcomes("tally_votes")) == 1
    assert [m.skill.name for m in home.fetch(WHEN, min_reliability=0)] == ["tally_votes"]
    assert [e.to_status for e in home.audit("tally_votes")] == ["draft", "evaluated", "approved", "active"]
    assert [e.to_status for e in acme.audit("tally_votes")] == ["deleted"]
