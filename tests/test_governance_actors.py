"""Governance actor resolution (issue 23, item 8): the public ``transition()`` resolves its
actor from the registry (an Actor object is only an id); a ghost actor with forged roles,
and a registered one claiming roles it does not hold, are refused; the library's own
actors (system, generalizer) are refused on every per-call ``actor=``."""

from __future__ import annotations

import pytest

from skill_library import Skill, SkillLibrary
from skill_library.errors import PermissionDenied
from skill_library.governance import Actor, generalizer_actor, system_actor, transition

CODE = '''def tally_votes(ballots: list) -> dict:
    """Count the votes of a list of ballots."""
    counts = {}
    for ballot in ballots:
        counts[ballot] = counts.get(ballot, 0) + 1
    return counts
'''
VIEWER = Actor(id="viewer", kind="user", permissions=frozenset())


@pytest.fixture
def gov(tmp_path, embedder):
    with SkillLibrary(tmp_path / "gov", embedder=embedder) as lib:
        lib.actors.add(VIEWER)
        yield lib


def draft(lib: SkillLibrary) -> Skill:
    return lib.propose(Skill.from_function(CODE, when="count the votes of an election"), actor=None)


def test_a_ghost_actor_with_forged_roles_is_refused_by_transition(gov):
    skill = draft(gov)
    ghost = Actor(id="ghost", kind="user", permissions=frozenset({"skill.admin"}))
    with pytest.raises(PermissionDenied, match="actor 'ghost' is not registered in tenant"):
        transition(gov, skill.name, skill.version, "evaluated", actor=ghost)
    forged = Actor(id="viewer", kind="user", permissions=frozenset({"skill.admin"}))
    with pytest.raises(PermissionDenied, match="actor 'viewer' \\(user\\) may not move"):
        transition(gov, skill.name, skill.version, "evaluated", actor=forged)
    assert gov.get(skill.name, skill.version).status == "draft"
    assert [e.to_status for e in gov.audit(skill.name)] == ["draft"]


@pytest.mark.parametrize("who", ["system", "generalizer", system_actor(), generalizer_actor()],
                         ids=["system", "generalizer", "system-object", "generalizer-object"])
def test_the_librarys_own_actors_are_refused_on_every_per_call_actor(gov, who):
    skill = draft(gov)
    refused = "is the library's own"
    calls = [
        lambda: transition(gov, skill.name, skill.version, "evaluated", actor=who),
        lambda: gov.approve(skill.name, skill.version, actor=who),
        lambda: gov.reject(skill.name, skill.version, actor=who, reason="no"),
        lambda: gov.retire(skill.name, actor=who),
        lambda: gov.promote(skill.name, skill.version, actor=who),
        lambda: gov.propose(Skill.from_function(CODE.replace("tally_votes", "count_ballots"),
                                                when="count ballots"), actor=who),
        lambda: gov.set_policy(gov.policy, actor=who),
        lambda: gov.actors.add(Actor(id="eve", kind="user"), by=who),
        lambda: gov.add(Skill.from_function(CODE.replace("tally_votes", "count_ballots"),
                                            when="count ballots"), actor=who),
        lambda: gov.add_many([Skill.from_function(CODE.replace("tally_votes", "count_ballots"),
                                                  when="count ballots")], actor=who),
    ]
    for call in calls:
        with pytest.raises(PermissionDenied, match=refused):
            call()
    assert gov.get(skill.name, skill.version).status == "draft"


def test_add_takes_actor_and_a_viewer_may_not_add_an_active_version(gov):
    ballots = Skill.from_function(CODE.replace("tally_votes", "count_ballots"), when="count ballots")
    for call in (lambda: gov.add(ballots, actor="viewer"), lambda: gov.add_many([ballots], actor="viewer")):
        with pytest.raises(PermissionDenied, match="skill.admin"):
            call()
    assert [s.name for s in gov.list()] == []
    added = gov.add(ballots, actor=gov.resolve_actor(None).id)
    assert added.status == "added"
    assert [e.actor for e in gov.audit("count_ballots")] == [gov.resolve_actor(None).id]


def test_actor_is_an_optional_keyword_on_every_governed_call():
    import inspect

    governed = ["add", "add_many", "set_policy", "propose", "reject", "approve", "approve_many",
                "promote_many", "start_canary", "canary", "promote", "rollback", "delete", "retire",
                "resume", "register_tools", "configure_uplift", "lift_quarantine", "evaluate",
                "import_draft"]
    for name in governed:
        parameter = inspect.signature(getattr(SkillLibrary, name)).parameters["actor"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameter.default is None, name


def test_the_registry_resolves_callers_as_the_workflow_does(tmp_path, embedder):
    """``library.actors.resolve``/``caller`` (what the concept modules use now that they no
    longer take the facade) give the same actors as ``governance.workflow``'s, the library's
    ``actor=`` as the default, in the root and in a tenant view."""
    from skill_library.governance import workflow

    with SkillLibrary(tmp_path / "reg", embedder=embedder) as root:
        root.actors.add(VIEWER)
    with SkillLibrary(tmp_path / "reg", embedder=embedder, actor="viewer") as lib:
        assert lib.actors.resolve(None) == workflow.resolve_actor(lib, None) == VIEWER
        assert lib.actors.caller("viewer") == workflow.caller_actor(lib, "viewer") == VIEWER
        assert lib.actors.resolve("system") == system_actor()  # the library's own moves
        for own in ("system", "generalizer", system_actor(), generalizer_actor()):
            with pytest.raises(PermissionDenied, match="is the library's own"):
                lib.actors.caller(own)
        with pytest.raises(PermissionDenied, match="registered as a user, not a service"):
            lib.actors.resolve(Actor(id="viewer", kind="service"))
        with pytest.raises(PermissionDenied, match="not registered in tenant 'default'"):
            lib.actors.resolve("ghost")
        view = lib.for_tenant("acme")
        assert view.actors.default == "viewer"  # the view acts as the library's actor= too
        with pytest.raises(PermissionDenied, match="'viewer' is not registered in tenant 'acme'"):
            view.actors.resolve(None)  # ... which acme has not registered
        assert view.actors.resolve(view.resolve_actor(system_actor().id)) == system_actor()
