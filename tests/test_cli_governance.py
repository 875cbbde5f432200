"""The governance commands, round trip through the CLI: each mirrors one SkillLibrary call."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from skill_library.cli import app

runner = CliRunner()

CODE = '''def tally_votes(ballots: list) -> dict:
    """Count the votes of a list of ballots."""
    counts = {}
    for ballot in ballots:
        counts[ballot] = counts.get(ballot, 0) + 1
    return counts
'''


def invoke(*args: str, env_dir: Path, actor: str | None = None) -> tuple[int, str]:
    env = {"SKILLS_DIR": str(env_dir)}
    if actor is not None:
        env["SKILLS_ACTOR"] = actor
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


def evaluate(lib_dir: Path, name: str, version: int) -> None:
    """What `skills evaluate` (E) records when an evaluation passes."""
    from skill_library import SkillLibrary
    from skill_library.governance import library_transition, system_actor

    with SkillLibrary(lib_dir, create=False) as lib:
        library_transition(lib, name, version, "evaluated", actor=system_actor(), reason="evaluation passed",
                   evidence={"passed": True})


def test_governance_commands_round_trip(tmp_path):
    lib = tmp_path / "lib"
    v1, v2 = tmp_path / "v1.py", tmp_path / "v2.py"
    v1.write_text(CODE)
    v2.write_text(CODE.replace("    return counts", "    return dict(sorted(counts.items()))"))
    when = "count the votes of an election"
    assert invoke("init", "--auto-approve", "never", env_dir=lib)[0] == 0
    code, out = invoke("policy", "show", "--json", env_dir=lib)
    assert json.loads(out)["auto_approve"] == "never"
    assert invoke("actors", "add", "alice", "--permissions", "skill.propose,skill.approve", env_dir=lib)[0] == 0
    assert invoke("actors", "add", "bob", "--permissions", "skill.approve", env_dir=lib)[0] == 0
    code, out = invoke("actors", "list", "--json", env_dir=lib)
    assert {a["id"] for a in json.loads(out)} >= {"alice", "bob", "generalizer", "system"}
    code, out = invoke("propose", str(v1), "--when", when, "--json", env_dir=lib, actor="mallory")
    assert code == 1 and "'mallory' is not registered" in out
    code, out = invoke("propose", str(v1), "--when", when, "--json", env_dir=lib, actor="alice")
    assert code == 0 and (json.loads(out)["version"], json.loads(out)["status"]) == (1, "draft")
    code, out = invoke("approve", "tally_votes", "1", env_dir=lib, actor="bob")
    assert code == 1 and "must pass an evaluation first" in out
    evaluate(lib, "tally_votes", 1)
    code, out = invoke("approve", "tally_votes", "1", env_dir=lib, actor="alice")
    assert code == 1 and "nobody approves their own proposal" in out
    code, out = invoke("approve", "tally_votes", "1", "--actor", "bob", "--reason", "looks right", env_dir=lib)
    assert code == 0 and "approved tally_votes v1 (approved)" in out
    code, out = invoke("promote", "tally_votes", "1", "--json", env_dir=lib, actor="bob")
    assert code == 0 and json.loads(out)["status"] == "active"
    invoke("propose", str(v2), "--when", when, env_dir=lib, actor="alice")
    evaluate(lib, "tally_votes", 2)
    invoke("approve", "tally_votes", "2", env_dir=lib, actor="bob")
    assert invoke("promote", "tally_votes", "2", env_dir=lib, actor="bob")[0] == 0
    code, out = invoke("diff", "tally_votes", "1", "2", env_dir=lib)
    assert code == 0 and "+    return dict(sorted(counts.items()))" in out
    code, out = invoke("rollback", "tally_votes", "--json", env_dir=lib, actor="bob")
    assert code == 0 and (json.loads(out)["version"], json.loads(out)["status"]) == (1, "active")
    code, out = invoke("rollback", "tally_votes", "--to", "2", env_dir=lib, actor="bob")
    assert code == 1 and "v2 is retired" in out
    invoke("propose", str(v2), "--when", when, env_dir=lib, actor="alice")
    code, out = invoke("review", "--json", env_dir=lib)
    queue = json.loads(out)
    assert [(q["version"], q["status"]) for q in queue] == [(3, "draft")]
    assert queue[0]["needs_human"] == ["the tenant's policy (auto_approve='never') approves nothing automatically"]
    code, out = invoke("reject", "tally_votes", "3", "--reason", "same as v2", env_dir=lib, actor="bob")
    assert code == 0 and "(rejected)" in out
    code, out = invoke("audit", "tally_votes", "--json", env_dir=lib)
    steps = [(e["version"], e["from_status"], e["to_status"]) for e in json.loads(out)]
    assert steps[-3:] == [(1, "superseded", "active"), (3, None, "draft"), (3, "draft", "rejected")]
    assert invoke("audit", env_dir=lib)[0] == 0
    specs = tmp_path / "tools.json"
    specs.write_text(json.dumps({"lookup": {"schema": {"type": "object"}, "side_effects": False}}))
    code, out = invoke("tools", "register", str(specs), env_dir=lib, actor="bob")
    assert code == 1 and "lacks the permission 'skill.admin'" in out
    assert invoke("tools", "register", str(specs), env_dir=lib)[0] == 0
    code, out = invoke("tools", "list", "--json", env_dir=lib)
    assert json.loads(out) == {"lookup": {"schema": {"type": "object"}, "side_effects": False}}
    code, out = invoke("policy", "set", "--auto-approve", "all", env_dir=lib, actor="bob")
    assert code == 1 and "lacks the permission 'skill.admin'" in out
    code, out = invoke("policy", "set", "--auto-approve", "all", "--json", env_dir=lib)
    assert code == 0 and json.loads(out)["auto_approve"] == "all"
    code, out = invoke("delete", "tally_votes", "--yes", env_dir=lib, actor="bob")
    assert code == 1 and "lacks the permission 'skill.admin'" in out
    code, out = invoke("delete", "tally_votes", "--yes", "--json", env_dir=lib)
    assert code == 0 and json.loads(out)["to_status"] == "deleted"
    code, out = invoke("audit", "tally_votes", "--json", env_dir=lib)
    assert [e["to_status"] for e in json.loads(out)] == ["deleted"]
    code, out = invoke("show", "tally_votes", env_dir=lib)
    assert code == 1
    assert invoke("actors", "remove", "alice", env_dir=lib)[0] == 0
    code, out = invoke("actors", "list", "--json", env_dir=lib)
    assert "alice" not in {a["id"] for a in json.loads(out)}


def test_add_verified_grants_a_success_only_on_a_stored_verified_trace(tmp_path):
    from skill_library import SkillLibrary
    from skill_library.models import Outcome, Trace

    lib = tmp_path / "lib"
    source = tmp_path / "tally.py"
    source.write_text(CODE)
    when = "count the votes of an election"
    code, out = invoke("add", str(source), "--when", when, "--verified", "--create", env_dir=lib)
    assert code == 1 and "--verified needs --trace ID" in " ".join(out.split())
    with SkillLibrary(lib) as library:
        unjudged = Trace(task="count the votes", outcome=Outcome(success=True))
        proven = Trace(task="count the votes", outcome=Outcome(success=True, verifier="returning-officer"))
        library.context.store.save_trace(unjudged)
        library.context.store.save_trace(proven)
    for trace_id, why in (("nope", "no stored trace 'nope'"), (unjudged.id, "not a success judged by a named verifier")):
        code, out = invoke("add", str(source), "--when", when, "--verified", "--trace", trace_id, env_dir=lib)
        assert code == 1 and why in " ".join(out.split())
    code, out = invoke("add", str(source), "--when", when, "--verified", "--trace", proven.id, "--json", env_dir=lib)
    assert code == 0 and json.loads(out)["skill"]["successes"] == 1
    with SkillLibrary(lib) as library:
        assert library.outcomes("tally_votes")[0]["trace_id"] == proven.id
        assert library.audit("tally_votes")[0].evidence == {"verified": True, "trace": proven.id}


def test_nobody_acts_as_or_replaces_the_librarys_own_actors(tmp_path, embedder):
    import pytest

    from skill_library import SkillLibrary
    from skill_library.errors import PermissionDenied
    from skill_library.governance import Actor

    lib = tmp_path / "lib"
    assert invoke("init", env_dir=lib)[0] == 0
    for claimed in ("system", "generalizer"):
        code, out = invoke("policy", "set", "--auto-approve", "all", env_dir=lib, actor=claimed)
        assert code == 1 and "the library's own" in out and len(out.strip().splitlines()) == 1
    with SkillLibrary(lib, embedder=embedder, create=False) as library:
        with pytest.raises(PermissionDenied, match="library's own"):
            library.actors.add(Actor(id="system", kind="system", permissions=frozenset({"skill.admin"})))
        with pytest.raises(PermissionDenied, match="library's own"):
            library.actors.add(Actor(id="cron", kind="system", permissions=frozenset({"skill.approve"})))
        with pytest.raises(PermissionDenied, match="cannot be removed"):
            library.actors.remove("generalizer", by=None)
        assert {a.id: a.kind for a in library.actors.list()}["system"] == "system"


def test_every_command_acts_as_the_actor_it_is_given(tmp_path):
    lib = tmp_path / "lib"
    skill_file = tmp_path / "tally.py"
    skill_file.write_text(CODE)
    assert invoke("init", env_dir=lib)[0] == 0
    assert invoke("actors", "add", "alice", "--permissions", "skill.propose", env_dir=lib)[0] == 0
    code, out = invoke("add", str(skill_file), "--when", "count the votes of ballots", env_dir=lib, actor="alice")
    assert code == 1 and "alice" in out and "skill.admin" in out  # add is the administrator's path
    code, out = invoke("add", str(skill_file), "--when", "count the votes of ballots", env_dir=lib, actor="nobody")
    assert code == 1 and "'nobody' is not registered" in out
    assert invoke("add", str(skill_file), "--when", "count the votes of ballots", env_dir=lib)[0] == 0
    code, out = invoke("audit", "tally_votes", "--json", env_dir=lib)
    assert code == 0 and [e["to_status"] for e in json.loads(out)] == ["active"]


def test_review_names_each_rows_decision_and_a_quarantines_evidence(tmp_path, embedder):
    from skill_library import Skill, SkillLibrary
    from skill_library.patterns.reliability import QUARANTINE_FAILURES, QUARANTINE_MIN_OUTCOMES

    lib_dir = tmp_path / "lib"
    with SkillLibrary(lib_dir, embedder=embedder) as lib:
        lib.add(Skill.from_function("def add_up(xs: list) -> int:\n    return sum(xs)\n", when="add up numbers"))
        lib.propose(Skill.from_function(CODE, when="count the votes of ballots"), actor=None)
        for ok in [True] * QUARANTINE_MIN_OUTCOMES + [False] * QUARANTINE_FAILURES:
            lib.feedback("add_up", ok)
        assert lib.get("add_up").status == "quarantined"
        reason = lib.audit("add_up")[-1].reason
    code, out = invoke("review", "--json", env_dir=lib_dir)
    assert code == 0
    rows = {q["name"]: q for q in json.loads(out)}
    assert (rows["add_up"]["status"], rows["add_up"]["decision"]) == ("quarantined", "lift the quarantine or retire")
    assert rows["add_up"]["reason"] == reason != ""
    assert (rows["tally_votes"]["decision"], rows["tally_votes"]["reason"]) == ("approve or reject", "")
    code, out = invoke("review", env_dir=lib_dir)
    assert code == 0 and "lift the quarantine" in out and "approve or reject" in out
