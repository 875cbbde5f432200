"""Uplift with a holdout arm (issue 26 item 1): deterministic per-skill holdout independent of
the canary's routing, look-alikes left out with the held-back skill, session outcomes for
both arms, the Newcombe interval, suppression of a reliably harmful skill (audited), the
positive mark, bad input. Real library folder, real embedding, real sandbox runs."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from skill_library import uplift
from skill_library.errors import PermissionDenied, SkillLibraryError
from skill_library.governance import Actor, ToolSpec
from skill_library.governance import canary as canary_routing
from skill_library.models import Skill

WEATHER = '''
def check_weather(city: str):
    return forecast(city=city)
'''
WEATHER_COPY = '''
def weather_report(city: str):
    return forecast(city=city)
'''
RESET = '''
def reset_password(email: str):
    return reset(email=email)
'''
TASK = "what is the weather forecast for Oslo"


def forecast(city: str) -> dict:
    return {"city": city, "sky": "clear"}


@pytest.fixture
def lib(library):
    library.register_tools({"forecast": ToolSpec(side_effects=False)})
    library.add(Skill.from_function(WEATHER, when="check the weather forecast for {city}",
                                    tools=["forecast"]), verified=True)
    library.add(Skill.from_function(WEATHER_COPY, when="give a weather report of tomorrow in {city}",
                                    tools=["forecast"]), verified=True)
    library.add(Skill.from_function(RESET, when="reset the password of the account {email}",
                                    tools=["reset"]), verified=True)
    return library


def sessions_in(lib, name, arm, count, share=0.05):
    """``count`` session ids in ``name``'s ``arm`` at ``share``."""
    found = []
    for i in range(100_000):
        session = f"s-{i}"
        if (uplift.bucket(lib.tenant, name, session) < share) == (arm == "held_back"):
            found.append(session)
            if len(found) == count:
                return found
    raise AssertionError("not enough sessions")


def test_newcombe_matches_the_published_example():
    # Newcombe (1998), Statistics in Medicine 17:873, table II, example (a): 56/70 vs 48/80,
    # method 10 gives 0.0524 to 0.3339
    d, low, high = uplift.newcombe(56, 70, 48, 80)
    assert d == pytest.approx(0.2)
    assert low == pytest.approx(0.0524, abs=5e-4)
    assert high == pytest.approx(0.3339, abs=5e-4)
    assert uplift.wilson(0, 0) == (0.0, 1.0)


def test_a_share_outside_zero_to_half_is_refused_in_one_line(lib):
    for bad in (0.7, -0.1, float("nan"), "5%", True):
        with pytest.raises(ValueError, match=r"holdout share must be a number within \[0, 0.5\]") as error:
            lib.configure_uplift(share=bad)
        assert "\n" not in str(error.value)
    assert lib.uplift_settings().share == 0.0  # nothing stored: off


def test_configuring_needs_an_admin_and_is_audited(lib):
    lib.actors.add(Actor(id="rita", kind="user", permissions=frozenset({"skill.approve"})))
    with pytest.raises(PermissionDenied):
        lib.configure_uplift(share=0.05, actor="rita")
    stored = lib.configure_uplift(share=0.1, side_effects=True)
    assert lib.uplift_settings() == stored == uplift.UpliftSettings(share=0.1, side_effects=True)
    event = lib.audit(uplift.AUDIT_NAME)[-1]
    assert (event.from_status, event.to_status) == ("0", "0.1")
    assert event.evidence["to"]["side_effects"] is True


def test_off_by_default_nothing_is_held_back(lib):
    for i in range(200):
        result = lib.fetch(TASK, k=2, session=f"s-{i}")
        assert result and result[0].skill.name in {"check_weather", "weather_report"}
        assert result.held_back == []


def test_holdout_share_is_deterministic_and_independent_of_the_canary(lib):
    lib.configure_uplift(share=0.2)
    weather = lib.get("check_weather")
    found = lib.uplift_settings()
    held = [f"s-{i}" for i in range(5000) if uplift.held(lib, weather, f"s-{i}", found)]
    assert abs(len(held) / 5000 - 0.2) <= 0.02
    # the canary's bucket of the same skill says nothing about the holdout's
    in_canary = [f"s-{i}" for i in range(5000) if canary_routing.session_bucket("check_weather", f"s-{i}") < 0.5]
    both = set(held) & set(in_canary)
    assert abs(len(both) / len(in_canary) - 0.2) <= 0.03
    # every process agrees: the same sessions again from the hash alone
    assert held == [s for s in (f"s-{i}" for i in range(5000)) if uplift.bucket("default", "check_weather", s) < 0.2]


def test_a_held_back_session_gets_no_skill_of_that_workflow_and_is_told(lib):
    lib.configure_uplift(share=0.05)
    top = lib.fetch(TASK, k=2)[0].skill.name
    out = sessions_in(lib, top, "held_back", 3)
    for session in out:
        result = lib.fetch(TASK, k=3, session=session)
        assert result.held_back == [top]
        names = {m.skill.name for m in result}
        assert not names & {"check_weather", "weather_report"}  # nor its look-alike in its place
        assert result.abstained and "held back for this session to measure uplift" in result.reason
        assert uplift.exposures(lib, session)[top][0] == "held_back"
        # an outside outcome cannot credit a version the session was never given
        assert (session, top) not in lib._session_versions
    served = sessions_in(lib, top, "served", 3)
    for session in served:
        result = lib.fetch(TASK, k=2, session=session)
        assert result[0].skill.name == top and result.held_back == []
        assert uplift.exposures(lib, session)[top][0] == "served"
    assert lib.fetch(TASK, k=2).held_back == []  # no session: no holdout


def test_skills_with_side_effects_take_part_only_when_the_tenant_says_so(lib):
    task = "reset the password of the account ana@example.org"
    lib.configure_uplift(share=0.5)
    out = sessions_in(lib, "reset_password", "held_back", 5, share=0.5)
    assert all(lib.fetch(task, k=1, session=s)[0].skill.name == "reset_password" for s in out)
    lib.configure_uplift(share=0.5, side_effects=True)
    assert all(lib.fetch(task, k=1, session=s).held_back == ["reset_password"] for s in out)
    lib.configure_uplift(share=0.5, side_effects=True, skills=["check_weather"])
    assert all(lib.fetch(task, k=1, session=s).held_back == [] for s in out)


def test_session_outcomes_of_both_arms_and_too_few_says_how_many_more(lib):
    lib.configure_uplift(share=0.05)
    name = lib.fetch(TASK, k=1)[0].skill.name
    for session in sessions_in(lib, name, "served", 3):
        lib.fetch(TASK, k=1, session=session)
        run = lib.run(name, {"city": "Oslo"}, {"forecast": forecast}, session=session)  # the real sandbox
        assert run.ok and run.value == {"city": "Oslo", "sky": "clear"}
        assert lib.record_session_outcome(session, True, cost={"tool_calls": 1, "seconds": 2.0}) == {name: "served"}
    held = sessions_in(lib, name, "held_back", 1)[0]
    lib.fetch(TASK, k=1, session=held)
    assert lib.record_session_outcome(held, "failure", cost={"tool_calls": 5, "seconds": 9.0}) == {name: "held_back"}
    found = lib.uplift(name)
    assert (found.served.n, found.served.successes, found.held_back.n, found.held_back.successes) == (3, 3, 1, 0)
    assert found.verdict == "collecting" and found.needs == {"served": 17, "held_back": 19}
    assert "needs 17 more served and 19 more held-back, about 380 more sessions of its workflow" in found.describe()
    assert found.cost["tool_calls"] == {"served": 1.0, "held_back": 5.0, "difference": -4.0}
    # one outcome per session and skill; an unknown session is refused with what to do
    with pytest.raises(SkillLibraryError, match="already has its outcome"):
        lib.record_session_outcome(held, True)
    with pytest.raises(SkillLibraryError, match="fetch with session= first, or name the skills"):
        lib.record_session_outcome("never-fetched", True)
    with pytest.raises(ValueError, match="must be a non-negative number"):
        lib.record_session_outcome("other", True, skills=[name], cost={"tokens": -1})
    # another process names the skill; its arm comes from the hash
    other = sessions_in(lib, name, "held_back", 2)[1]
    assert lib.record_session_outcome(other, "misuse", skills=[name]) == {name: "held_back"}
    assert lib.uplift(name).held_back.other == 1  # kept, not counted
    # sessions are stored as digests only
    engine = sa.create_engine(f"sqlite:///{lib.path / 'records.db'}")
    with engine.connect() as conn:
        stored = set(conn.execute(sa.text("SELECT session FROM session_outcomes")).scalars())
    engine.dispose()
    assert held not in stored and uplift.session_digest(held) in stored
    lib.delete(name, actor=None)  # every record of the skill, its session outcomes too
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT COUNT(*) FROM session_outcomes WHERE name = :n"), {"n": name}).scalar()
    engine.dispose()
    assert left == 0


def test_a_reliably_harmful_skill_leaves_fetch_for_review_with_the_evidence(lib):
    lib.configure_uplift(share=0.05)
    name = lib.fetch(TASK, k=1)[0].skill.name
    served = sessions_in(lib, name, "served", 40)
    held = sessions_in(lib, name, "held_back", 20)
    for session in held:
        lib.fetch(TASK, k=1, session=session)
        lib.record_session_outcome(session, True)
    for i, session in enumerate(served):
        lib.fetch(TASK, k=1, session=session)
        lib.feedback(name, True, session=session)  # its runs succeed: reliability stays high
        lib.record_session_outcome(session, i % 2 == 0)  # the tasks do not
        if lib.get(name).status != "active":
            break
    skill = lib.get(name)
    assert skill.status == "quarantined" and skill.failures == 0
    event = lib.audit(name)[-1]
    assert event.actor == "system" and event.to_status == "quarantined"
    assert event.evidence["test"] == "uplift" and event.evidence["verdict"] == "negative"
    assert event.evidence["high"] < 0 and "uplift reliably negative" in event.reason
    found = lib.uplift(name)
    assert found.suppressed and "taken out of fetch" in found.describe()
    assert name not in {m.skill.name for m in lib.fetch(TASK, k=3)}
    # it waits in the review queue, the uplift interval as its reason
    from skill_library.governance.workflow import DECISIONS, queue_reason

    waiting = [s for s in lib.review_queue() if s.name == name]
    assert [s.status for s in waiting] == ["quarantined"]
    assert DECISIONS["quarantined"] == "lift the quarantine or retire"
    assert queue_reason(lib, waiting[0]) == event.reason
    # a person who lifts it judged that evidence: it is not suppressed again on it
    lib.lift_quarantine(name)
    extra = sessions_in(lib, name, "served", 41)[-1]
    lib.fetch(TASK, k=1, session=extra)
    lib.record_session_outcome(extra, False)
    assert lib.get(name).status == "active"


def test_a_reliably_helpful_skill_is_marked_once(lib):
    lib.configure_uplift(share=0.05)
    name = lib.fetch(TASK, k=1)[0].skill.name
    for session in sessions_in(lib, name, "held_back", 20):
        lib.fetch(TASK, k=1, session=session)
        lib.record_session_outcome(session, False)
    for session in sessions_in(lib, name, "served", 25):
        lib.fetch(TASK, k=1, session=session)
        lib.record_session_outcome(session, True)
    found = lib.uplift(name)
    assert found.verdict == "positive" and found.marked and found.low > 0
    marks = [e for e in lib.audit(name) if e.evidence.get("mark") == uplift.POSITIVE_MARK]
    assert len(marks) == 1 and lib.get(name).status == "active"
    assert "reliably positive (marked)" in found.describe()


def test_tenants_are_measured_apart(lib):
    other = lib.for_tenant("acme")
    lib.configure_uplift(share=0.5)
    assert other.uplift_settings().share == 0.0
    other.add(Skill.from_function(WEATHER, when="check the weather forecast for {city}",
                                  tools=["forecast"]), verified=True)
    assert all(other.fetch(TASK, k=1, session=f"s-{i}").held_back == [] for i in range(20))


def test_cli_uplift_holdout_show_and_stats_mirror_the_calls(lib):
    import json

    from typer.testing import CliRunner

    from skill_library.cli import app

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, list(args), env={"SKILLS_DIR": str(lib.path)})
        return result.exit_code, result.output

    code, out = invoke("holdout", "--share", "0.7")
    assert code != 0 and "holdout share must be a number within [0, 0.5]" in " ".join(out.split())
    assert invoke("holdout") == (0, "uplift holdout: off (skills holdout --share 0.05 opts the tenant in)\n")
    code, out = invoke("holdout", "--share", "0.05")
    assert code == 0 and "5% of sessions per skill; skills without side effects only" in out
    lib.fetch(TASK, k=1, session="s-1")  # another library object on the same folder: reads the setting
    name = lib.fetch(TASK, k=1)[0].skill.name
    session = sessions_in(lib, name, "served", 1)[0]
    lib.fetch(TASK, k=1, session=session)
    lib.record_session_outcome(session, True)
    code, out = invoke("uplift", name)
    assert code == 0 and out == lib.uplift(name).describe() + "\n" and "needs 19 more served and 20" in out
    code, out = invoke("uplift", name, "--json")
    assert code == 0 and json.loads(out)["needs"] == {"served": 19, "held_back": 20}
    code, out = invoke("show", name)
    assert code == 0 and f"# uplift of {name} v1: too few sessions" in out
    code, out = invoke("stats")
    assert code == 0 and f"uplift: holdout 5% of sessions per skill; 1 skill(s) measured: 1 collecting: {name}" in out
    code, out = invoke("uplift", "no_such_skill")
    assert code != 0 and "no_such_skill" in out


def test_the_harness_reports_uplift_per_skill_in_every_with_without_comparison():
    from benchmarks import report

    def row(condition, task, ok, seed=0, used=None):
        return {"condition": condition, "phase": "test", "seed": seed, "task_id": task, "workflow": task[0],
                "success": ok, "stopped": None, "skills_used": [{"name": used}] if used else []}

    records = [row("none", f"a{i}", True) for i in range(10)] + [row("none", f"b{i}", False) for i in range(10)]
    records += [row("skills", f"a{i}", i < 5, used="do_a") for i in range(10)]  # worse with it
    records += [row("skills", f"b{i}", True, used="do_b") for i in range(10)]  # better with it
    by_skill = report.paired(records, ["none", "skills"])["skills"]["uplift_by_skill"]
    assert by_skill["do_a"]["n"] == 10 and (by_skill["do_a"]["with"], by_skill["do_a"]["without"]) == (5, 10)
    assert by_skill["do_a"]["difference"] == -0.5 and by_skill["do_a"]["high"] < 0
    assert by_skill["do_b"]["difference"] == 1.0 and by_skill["do_b"]["low"] > 0


@pytest.mark.slow
def test_the_benchmark_step_suppresses_the_harmful_skill_and_keeps_the_good_ones(tmp_path, embedder):
    """`python -m benchmarks uplift` in small: real learning, fetch, sandbox runs and outcomes;
    a 50% holdout so that 120 sessions per workflow are enough (the full step uses 5%, 1,000)."""
    from benchmarks.uplift import HARMFUL, UpliftConfig, markdown, run_uplift

    results = run_uplift(UpliftConfig(out=tmp_path / "uplift", seeds=1, sessions=120, share=0.5), embedder=embedder)
    [seed] = results["seeds"]
    harmful = seed["workflows"][HARMFUL]
    assert harmful["suppressed_at"] is not None and harmful["status"] == "quarantined"
    assert harmful["run_failures"] == 0 and harmful["uplift"]["high"] < 0  # its runs succeeded
    for workflow, entry in seed["workflows"].items():
        if workflow != HARMFUL:
            assert entry["suppressed_at"] is None and entry["status"] == "active"
        u = entry["uplift"]
        assert (u["served"]["n"], u["held_back"]["n"]) == (entry["served"], entry["held_back"])  # the library's arms
    assert results["passed"] and results["privacy"]["leaks"] == 0
    assert "harmful skill suppressed within 120 sessions of its workflow in every seed: yes" in markdown(results)
