"""Honest outcomes (issue 21 item 5): one kind per outcome, judged at run time in the real
sandbox; only the skill's own successes and failures count toward reliability and the
quarantine rule; a wrong fetch is retrieval's, not the skill's."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from skill_library import OutcomeKind
from skill_library.errors import SkillLibraryError
from skill_library.governance import Policy
from skill_library.library import SkillLibrary
from skill_library.models import Outcome, Skill, laplace_reliability
from skill_library.patterns.reliability import QUARANTINE_FAILURES, QUARANTINE_MIN_OUTCOMES
from skill_library.record_store import SCHEMA_VERSION

USERS = {"ada@example.com": "U1", "grace@example.com": "U2"}
RESETS: list[str] = []
DOWN: dict[str, str] = {}


class LookupError_(Exception):
    pass


def find_user(email: str) -> str:
    """Read-only: the id of the user with this email."""
    if "find_user" in DOWN:
        raise RuntimeError(DOWN["find_user"])
    if email not in USERS:
        raise LookupError_(f"no user has the email {email!r}; check the spelling")
    return USERS[email]


def reset_password(user_id: str) -> dict:
    """State-changing: reset a user's password."""
    if "reset_password" in DOWN:
        raise RuntimeError(DOWN["reset_password"])
    RESETS.append(user_id)
    return {"user_id": user_id, "reset": True}


TOOLS = {"find_user": find_user, "reset_password": reset_password}
CODE = '''def reset_user_password(email: str) -> dict:
    """Reset the password of the user with this email."""
    user_id = find_user(email=email)
    return reset_password(user_id=user_id)
'''
WHEN = "reset the password of the user with a given email"
GUARDED = '''def reset_if_allowed(email: str, allowed: bool) -> dict:
    """Reset a password, but only when resets are allowed."""
    class NotApplicable(Exception):
        pass
    if not allowed:
        raise NotApplicable("resets are not allowed for this account")
    user_id = find_user(email=email)
    return reset_password(user_id=user_id)
'''


@pytest.fixture
def lib(tmp_path, embedder):
    RESETS.clear()
    DOWN.clear()
    library = SkillLibrary(tmp_path / "lib", embedder=embedder, read_only_tools=["find_user"],
                           policy=Policy(auto_approve="all"))
    library.add(Skill.from_function(CODE, when=WHEN, tools=["find_user", "reset_password"]))
    yield library
    library.close()


def run(lib, email: str, **options):
    return lib.run("reset_user_password", {"email": email}, TOOLS, **options)


# -- the vocabulary -----------------------------------------------------------------------
def test_outcome_kind_and_success_agree():
    assert Outcome(success=True).kind is OutcomeKind.SUCCESS
    assert Outcome(success=False).kind is OutcomeKind.FAILURE
    assert Outcome(kind="misuse").success is False and Outcome(kind="success").success is True
    assert Outcome.model_validate({"success": False, "verifier": "x"}).kind is OutcomeKind.FAILURE  # stored before
    with pytest.raises(ValueError, match="contradicts kind 'misuse'"):
        Outcome(success=True, kind="misuse")
    with pytest.raises(ValueError, match="unknown outcome kind 'oops'; use one of success, failure, misuse"):
        OutcomeKind.of("oops")
    assert [k.counted for k in OutcomeKind] == [True, True, False, False, False]
    assert str(OutcomeKind.NOT_APPLICABLE) == "not_applicable"


# -- classification at run time, one test per kind ---------------------------------------
def test_a_correct_run_judged_by_its_verifier_is_a_success(lib):
    ran = run(lib, "ada@example.com", verifier=lambda r: r.value["reset"])
    assert ran.ok and ran.outcome_kind is OutcomeKind.SUCCESS and ran.outcome_reason is None
    assert lib.outcome_counts("reset_user_password")["success"] == 1
    assert lib.outcomes("reset_user_password")[-1]["origin"] == "run"


def test_a_mistyped_email_is_misuse_with_the_reason(lib):
    ran = run(lib, "ada@exmaple.com")
    assert not ran.ok and ran.outcome_kind is OutcomeKind.MISUSE
    assert ran.outcome_reason == "the read-only lookup find_user refused the caller's email (no user has)"
    assert "exmaple" not in ran.outcome_reason  # reasons name parameters, never values
    skill = lib.get("reset_user_password")
    assert (skill.successes, skill.failures) == (0, 0) and skill.reliability == 0.5
    assert lib.outcome_counts("reset_user_password") == {
        "success": 0, "failure": 0, "misuse": 1, "not_applicable": 0, "wrong_skill": 0}
    logged = lib.outcomes("reset_user_password")[-1]
    assert (logged["kind"], logged["success"], logged["reason"]) == ("misuse", False, ran.outcome_reason)
    assert RESETS == []


def test_a_state_changing_call_breaking_after_its_lookup_is_a_failure(lib):
    DOWN["reset_password"] = "password store unavailable"
    ran = run(lib, "ada@example.com")
    assert not ran.ok and ran.outcome_kind is OutcomeKind.FAILURE
    assert ran.outcome_reason == "the state-changing call reset_password raised"
    assert lib.get("reset_user_password").failures == 1


def test_a_lookup_outage_is_a_failure_not_misuse(lib):
    DOWN["find_user"] = "directory timed out"  # the caller's value is fine; the lookup is broken
    ran = run(lib, "ada@example.com")
    assert ran.outcome_kind is OutcomeKind.FAILURE
    assert "read-only call find_user failed" in ran.outcome_reason


def test_a_lookup_that_is_not_declared_read_only_is_never_misuse(tmp_path, embedder):
    with SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        library.add(Skill.from_function(CODE, when=WHEN, tools=["find_user", "reset_password"]))
        ran = library.run("reset_user_password", {"email": "nobody@example.com"}, TOOLS)
        assert ran.outcome_kind is OutcomeKind.FAILURE and library.get("reset_user_password").failures == 1


def test_a_wrong_result_by_the_verifier_is_a_failure(lib):
    ran = run(lib, "ada@example.com", verifier=lambda r: False)
    assert ran.ok and ran.outcome_kind is OutcomeKind.FAILURE
    assert ran.outcome_reason == "the verifier <lambda> judged the result wrong"


def test_a_precondition_that_does_not_hold_is_not_applicable(lib):
    lib.add(Skill.from_function(GUARDED, when="reset a password when resets are allowed",
                                tools=["find_user", "reset_password"]))
    ran = lib.run("reset_if_allowed", {"email": "ada@example.com", "allowed": False}, TOOLS)
    assert not ran.ok and ran.outcome_kind is OutcomeKind.NOT_APPLICABLE
    assert ran.outcome_reason == "does not apply: resets are not allowed for this account"
    assert RESETS == [] and lib.get("reset_if_allowed").failures == 0
    assert lib.outcome_counts("reset_if_allowed")["not_applicable"] == 1


def test_feedback_takes_a_kind_and_keeps_the_old_bool_form(lib):
    assert lib.feedback("reset_user_password", True).successes == 1
    assert lib.feedback("reset_user_password", False).failures == 1
    skill = lib.feedback("reset_user_password", "misuse", reason="the agent passed a name")
    assert (skill.successes, skill.failures) == (1, 1)
    skill = lib.feedback("reset_user_password", OutcomeKind.NOT_APPLICABLE)
    assert (skill.successes, skill.failures) == (1, 1) and skill.reliability == laplace_reliability(1, 1)
    assert [o["kind"] for o in lib.outcomes("reset_user_password")] == [
        "success", "failure", "misuse", "not_applicable"]
    with pytest.raises(ValueError, match="unknown outcome kind 'meh'"):
        lib.feedback("reset_user_password", "meh")
    with pytest.raises(TypeError, match="succeeded must be a bool or an OutcomeKind"):
        lib.feedback("reset_user_password", 1)  # type: ignore[arg-type]


def test_procedures_take_outcome_kinds(lib):
    proc = lib.add_procedure("Escalate outages", "when a tool is down", "Page the on-call engineer.")
    before = lib.procedures.get(proc.name).confidence
    lib.feedback(proc.name, "misuse")
    lib.feedback(proc.name, OutcomeKind.NOT_APPLICABLE)
    after = lib.procedures.get(proc.name)
    assert after.confidence == before and (after.successes, after.failures) == (0, 0)
    lib.feedback(proc.name, True)
    assert lib.procedures.get(proc.name).confidence > before
    assert [o["kind"] for o in lib.outcomes(proc.name)] == ["misuse", "not_applicable", "success"]
    assert len(lib.procedures.confidence_path(proc.name)) == 2


# -- reliability and the quarantine rule -----------------------------------------------------
def long_record(lib) -> None:
    for _ in range(QUARANTINE_MIN_OUTCOMES):
        assert run(lib, "ada@example.com", verifier=lambda r: True).outcome_kind is OutcomeKind.SUCCESS


def test_a_misuse_burst_never_quarantines_the_skill(lib):
    long_record(lib)
    typos = ["ada@exmaple.com", "ad@example.com", "U1", "Ada Lovelace", "adaexample.com",
             "grace@exmple.com", "nobody@example.com", "ada@northwind.com", "aada@example.com", "ada..x@example.com"]
    for typo in typos:
        ran = run(lib, typo)
        assert ran.outcome_kind is OutcomeKind.MISUSE, typo
        assert lib.get("reset_user_password").status == "active"
    skill = lib.get("reset_user_password")
    assert (skill.successes, skill.failures) == (QUARANTINE_MIN_OUTCOMES, 0)
    assert lib.outcome_counts("reset_user_password")["misuse"] == len(typos)
    assert [m.skill.name for m in lib.fetch("reset the password of grace@example.com")] == ["reset_user_password"]
    assert run(lib, "grace@example.com").ok


def test_a_failure_burst_of_its_own_state_changing_call_still_quarantines(lib):
    long_record(lib)
    DOWN["reset_password"] = "password store unavailable"
    statuses = []
    for _ in range(QUARANTINE_FAILURES):
        assert run(lib, "ada@example.com").outcome_kind is OutcomeKind.FAILURE
        statuses.append(lib.get("reset_user_password").status)
    assert statuses == ["active"] * (QUARANTINE_FAILURES - 1) + ["quarantined"]
    assert lib.fetch("reset the password of grace@example.com") == []


def test_misuse_between_failures_neither_hides_nor_adds_to_them(lib):
    long_record(lib)
    DOWN["reset_password"] = "password store unavailable"
    for _ in range(QUARANTINE_FAILURES - 1):
        run(lib, "ada@example.com")
        run(lib, "ada@exmaple.com")  # misuse: not in the window at all
    assert lib.get("reset_user_password").status == "active"
    run(lib, "ada@example.com")
    assert lib.get("reset_user_password").status == "quarantined"


# -- wrong_skill: retrieval's miss, not the skill's -------------------------------------------
def test_wrong_skill_feedback_counts_against_retrieval_not_the_skill(lib):
    long_record(lib)
    for _ in range(QUARANTINE_WINDOW_PLUS := QUARANTINE_FAILURES + 1):
        skill = lib.feedback("reset_user_password", False, wrong_skill=True)
        assert skill.status == "active"
    skill = lib.get("reset_user_password")
    assert (skill.successes, skill.failures) == (QUARANTINE_MIN_OUTCOMES, 0)
    assert lib.retrieval_misses("reset_user_password") == QUARANTINE_WINDOW_PLUS
    assert lib.outcomes("reset_user_password")[-1]["reason"] == (
        "the agent fetched the wrong workflow (counted against retrieval)")


def test_wrong_skill_after_a_failed_run_moves_that_failure_to_retrieval(lib):
    DOWN["reset_password"] = "the account is managed elsewhere"
    ran = run(lib, "ada@example.com")
    assert ran.outcome_kind is OutcomeKind.FAILURE and lib.get("reset_user_password").failures == 1
    skill = lib.feedback("reset_user_password", False, trace_id=ran.trace.id, wrong_skill=True)
    assert (skill.successes, skill.failures) == (0, 0)
    assert [o["kind"] for o in lib.outcomes("reset_user_password")] == ["wrong_skill"]
    assert lib.retrieval_misses("reset_user_password") == 1


# -- the migration of an old store -------------------------------------------------------------
def test_a_store_without_outcome_kinds_upgrades_in_place(tmp_path, embedder):
    path = tmp_path / "old"
    with SkillLibrary(path, embedder=embedder, read_only_tools=["find_user"],
                      policy=Policy(auto_approve="all")) as old:
        old.add(Skill.from_function(CODE, when=WHEN, tools=["find_user", "reset_password"]))
        old.feedback("reset_user_password", True)
        old.feedback("reset_user_password", False)
    engine = sa.create_engine(f"sqlite:///{path / 'records.db'}")
    with engine.begin() as conn:  # the outcomes table as schema 7 wrote it
        for column in ("kind", "reason", "origin"):
            conn.execute(sa.text(f"ALTER TABLE outcomes DROP COLUMN {column}"))
        conn.execute(sa.text("DELETE FROM schema_migrations WHERE version >= 8"))
        conn.execute(sa.text("UPDATE library_meta SET value = '7' WHERE key = 'schema_version'"))
    engine.dispose()
    with SkillLibrary(path, embedder=embedder, read_only_tools=["find_user"]) as lib:
        assert [(o["kind"], o["origin"]) for o in lib.outcomes("reset_user_password")] == [
            ("success", None), ("failure", None)]
        assert lib.outcome_counts("reset_user_password")["failure"] == 1
        assert run(lib, "ada@exmaple.com").outcome_kind is OutcomeKind.MISUSE
        assert lib.get("reset_user_password").failures == 1
    with sa.create_engine(f"sqlite:///{path / 'records.db'}").connect() as conn:
        assert conn.execute(sa.text("SELECT MAX(version) FROM schema_migrations")).scalar() == SCHEMA_VERSION


def test_refused_feedback_names_the_problem(lib):
    with pytest.raises(SkillLibraryError, match="no outcome of 'reset_user_password' to change"):
        lib.context.store.reclassify_outcome("nope", "reset_user_password", "wrong_skill", None)


# -- the CLI -------------------------------------------------------------------------------------
def test_the_cli_records_and_shows_outcome_kinds(lib):
    import json

    from typer.testing import CliRunner

    from skill_library.cli import app

    lib.feedback("reset_user_password", True)
    folder = str(lib.path)
    lib.close()

    def invoke(*args):
        result = CliRunner().invoke(app, list(args), env={"SKILLS_DIR": folder})
        return result.exit_code, result.output

    code, out = invoke("feedback", "reset_user_password", "--kind", "misuse", "--reason", "typo in the email")
    assert code == 0 and "(1 ok / 0 failed)" in out, out
    code, out = invoke("feedback", "reset_user_password", "--wrong-skill")
    assert code == 0, out
    code, out = invoke("feedback", "reset_user_password")
    assert code == 1 and "say what happened: --success, --failure, --kind KIND or --wrong-skill" in out
    code, out = invoke("feedback", "reset_user_password", "--kind", "bogus")
    assert code != 0 and "unknown outcome kind 'bogus'" in out
    code, out = invoke("show", "reset_user_password")
    assert "(1 ok / 0 failed; not counted against it: 1 misuse, 1 wrong_skill)" in out, out
    code, out = invoke("show", "reset_user_password", "--json")
    assert json.loads(out)["outcome_counts"]["misuse"] == 1
    code, out = invoke("outcomes", "reset_user_password", "--json")
    assert [(o["kind"], o["reason"]) for o in json.loads(out)][1:] == [
        ("misuse", "typo in the email"), ("wrong_skill", "the agent fetched the wrong workflow (counted against retrieval)")]


def test_a_postgres_store_without_outcome_kinds_upgrades_in_place(shared, embedder):
    with shared.open(embedder, read_only_tools=["find_user"]) as old:
        old.add(Skill.from_function(CODE, when=WHEN, tools=["find_user", "reset_password"]))
        old.feedback("reset_user_password", True)
        old.feedback("reset_user_password", False)
    engine = sa.create_engine(shared.spec["records"])
    try:
        with engine.begin() as conn:  # the outcomes table as schema 7 wrote it
            for column in ("kind", "reason", "origin"):
                conn.execute(sa.text(f"ALTER TABLE outcomes DROP COLUMN {column}"))
            conn.execute(sa.text("DELETE FROM schema_migrations WHERE version >= 8"))
            conn.execute(sa.text("UPDATE library_meta SET value = '7' WHERE key = 'schema_version'"))
        with shared.open(embedder, read_only_tools=["find_user"]) as lib:
            assert [o["kind"] for o in lib.outcomes("reset_user_password")] == ["success", "failure"]
            RESETS.clear()
            DOWN.clear()
            assert run(lib, "ada@exmaple.com").outcome_kind is OutcomeKind.MISUSE
            assert lib.outcome_counts("reset_user_password") == {
                "success": 1, "failure": 1, "misuse": 1, "not_applicable": 0, "wrong_skill": 0}
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT MAX(version) FROM schema_migrations")).scalar() == SCHEMA_VERSION
    finally:
        engine.dispose()


def test_the_consoles_reliability_chart_leaves_uncounted_kinds_out(lib):
    from skill_library.console.charts import reliability_series

    lib.feedback("reset_user_password", True)
    lib.feedback("reset_user_password", "misuse")
    lib.feedback("reset_user_password", False)
    series = reliability_series(lib.outcomes("reset_user_password"))
    assert series == {1: [(1, 2 / 3, True), (3, 0.5, False)]}


def test_the_outcome_is_one_argument_named_outcome_and_the_old_names_warn_one_release(library):
    """feedback, record_procedure_outcome and Procedures.record_outcome take the same
    ``outcome`` (a bool or an OutcomeKind); ``succeeded=`` / ``positive=`` still work, with a
    DeprecationWarning pointing at the caller's line (through the telemetry wrapper)."""
    library.add(Skill.from_function("def greet(name: str) -> str:\n    return 'hi ' + name\n", when="greet someone"))
    assert library.feedback("greet", outcome=True).successes == 1
    assert library.feedback("greet", OutcomeKind.FAILURE).failures == 1
    with pytest.warns(DeprecationWarning, match=r"feedback\(succeeded=\.\.\.\) is deprecated .* feedback\(outcome") as seen:
        assert library.feedback("greet", succeeded=True).successes == 2
    assert seen[0].filename == __file__
    with pytest.raises(TypeError, match="give outcome= only"):
        library.feedback("greet", True, succeeded=True)
    with pytest.raises(TypeError, match="missing the outcome"):
        library.feedback("greet")
    assert library.get("greet").successes == 2  # nothing recorded by the refused calls
    procedure = library.add_procedure("Cite sources", "When stating a figure", "Name the source of every figure.")
    confidence = library.procedures.get(procedure.name).confidence
    library.record_procedure_outcome(procedure.name, outcome=True)
    with pytest.warns(DeprecationWarning, match=r"record_procedure_outcome\(positive=") as seen:
        library.record_procedure_outcome(procedure.name, positive=True)
    assert seen[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=r"record_outcome\(positive="):
        library.procedures.record_outcome(procedure.name, positive=False)
    assert library.procedures.get(procedure.name).confidence == pytest.approx(min(1.0, confidence + 0.16) - 0.15)
