"""Preconditions mined from contrasting traces (issue 21 item 3): mining, the check in the
run before the first state-changing call, the description's sentence, learn -> fetch -> run."""

from __future__ import annotations

import pytest

from skill_library import Condition, OutcomeKind, Policy, SkillLibrary, ToolSpec
from skill_library.induction import preconditions as pre
from skill_library.induction.describe import with_conditions
from skill_library.models import Outcome, Skill, ToolCall, Trace

READ_ONLY = frozenset({"find_user", "get_user"})
DEPARTMENTS = ["Finance", "Sales", "Design", "Legal", "People", "Support", "Engineering", "Ops"]


def user(n: int, status: str, role: str = "staff") -> dict:
    return {"user_id": f"U{100 + n}", "name": f"Person {chr(65 + n)}", "email": f"p{n}@corp.example",
            "status": status, "role": role, "department": DEPARTMENTS[n % len(DEPARTMENTS)],
            "groups": ["all-staff", "book-club"][: 1 + n % 2]}


def trace(action: str, record: dict, task: str | None = None) -> Trace:
    email, uid = record["email"], record["user_id"]
    return Trace(
        task=task or f"Please {action.replace('_', ' ')} for {email}",
        params={"email": email},
        calls=[ToolCall(name="find_user", arguments={"email": email}, result=uid),
               ToolCall(name="get_user", arguments={"user_id": uid}, result=record),
               ToolCall(name=action, arguments={"user_id": uid}, result={"user_id": uid, "done": True})],
        outcome=Outcome(success=True, verifier="directory-audit"),
    )


# -- mining ---------------------------------------------------------------------------------------
def test_contrasting_traces_give_each_skill_the_condition_that_tells_it_apart():
    traces = {
        "unlock": [trace("unlock_account", user(n, "locked")) for n in range(5)],
        "reset": [trace("reset_password", user(n, "active")) for n in range(5, 10)],
    }
    mined = pre.mine(traces, READ_ONLY)
    # on the read of the user the change acts on (get_user was given the id unlock_account is)
    assert mined["unlock"] == [Condition(tool="get_user", occurrence=pre.TARGET, path=["status"], op="eq",
                                         value="locked", against="reset", against_all=["reset"])]
    assert mined["reset"] == [Condition(tool="get_user", occurrence=pre.TARGET, path=["status"], op="eq",
                                        value="active", against="unlock", against_all=["unlock"])]
    # it holds in every trace of its skill and fails in the look-alike's
    for name, other in (("unlock", "reset"), ("reset", "unlock")):
        condition = mined[name][0]
        assert all(pre.holds(condition, t.calls[1].result) for t in traces[name])
        assert not any(pre.holds(condition, t.calls[1].result) for t in traces[other])
    assert pre.sentence(mined["unlock"]) == "Applies when the user's status is locked."


def test_a_set_of_values_when_the_skill_takes_several():
    grant = [trace("grant_access", user(n, "active", role)) for n, role in
             enumerate(["staff", "manager", "staff", "manager", "staff", "manager"])]
    request = [trace("submit_access_request", user(n, "active", "contractor")) for n in range(6, 12)]
    mined = pre.mine({"grant": grant, "request": request}, READ_ONLY)
    assert mined["grant"] == [Condition(tool="get_user", occurrence=pre.TARGET, path=["role"], op="in",
                                        value=["manager", "staff"], against="request", against_all=["request"])]
    assert pre.render(mined["grant"][0]) == "the user's role is manager or staff"
    assert mined["request"][0].value == "contractor"


def test_no_condition_when_no_read_separates_the_look_alikes():
    # same status and role on both sides, departments and names at random: nothing to mine
    one = [trace("revoke_access", user(n, "active")) for n in range(6)]
    every = [trace("offboard", user(n, "active")) for n in range(6, 12)]
    assert pre.mine({"one": one, "every": every}, READ_ONLY) == {}


def test_one_trace_cannot_tell_a_category_from_a_coincidence():
    traces = {"unlock": [trace("unlock_account", user(0, "locked"))],
              "reset": [trace("reset_password", user(n, "active")) for n in range(1, 9)]}
    mined = pre.mine(traces, READ_ONLY)
    assert "unlock" not in mined  # its one trace: no condition
    assert mined["reset"][0].path == ["status"]  # eight traces against one: status is a category


def test_ids_emails_and_the_callers_values_are_never_conditions():
    traces = {"unlock": [trace("unlock_account", user(n, "locked")) for n in range(5)],
              "reset": [trace("reset_password", user(n, "active")) for n in range(5, 10)]}
    for t in traces["unlock"]:  # one more read whose result is the same id and email every time
        t.calls.insert(2, ToolCall(name="get_user", arguments={"user_id": "U1"},
                                   result={"user_id": "U1", "email": "help@corp.example", "tier": "gold"}))
    observed = pre._observations(traces["unlock"][0], READ_ONLY)
    assert observed is not None
    named = {(tool, path) for tool, _, path, _, _ in observed}
    assert ("get_user", ("email",)) not in named and ("get_user", ("user_id",)) not in named
    assert ("find_user", ()) not in named  # the id find_user returned
    assert ("get_user", ("tier",)) in named
    assert pre.mine(traces, READ_ONLY)["unlock"][0].path == ["status"]


def test_the_same_caller_repeated_is_one_piece_of_evidence():
    same = user(1, "locked")
    traces = {"unlock": [trace("unlock_account", same, task=f"unlock {same['email']} ({n})") for n in range(5)],
              "reset": [trace("reset_password", user(n, "active")) for n in range(5, 10)]}
    assert "unlock" not in pre.mine(traces, READ_ONLY)  # one person five times: their department is no category


def test_skills_that_open_differently_are_not_look_alikes():
    lock = [Trace(task=f"lock {n}", params={"tag": f"LT-{n}"},
                  calls=[ToolCall(name="list_devices", arguments={}, result=[{"status": "assigned"}]),
                         ToolCall(name="lock_device", arguments={"tag": f"LT-{n}"}, result=True)],
                  outcome=Outcome(success=True)) for n in range(5)]
    reset = [trace("reset_password", user(n, "active")) for n in range(5)]
    assert pre.mine({"lock": lock, "reset": reset}, READ_ONLY | {"list_devices"}) == {}


def order_trace(action: str, n: int, wanted: str) -> Trace:
    """A customer with three orders looked at in turn; ``action`` acts on the one in state
    ``wanted`` (its place among the reads differs from trace to trace)."""
    states = ["delivered", "pending", "processed"]
    states = states[n % 3:] + states[: n % 3]
    orders = [{"order_id": f"#W{n}{i}", "status": st, "items": [{"item_id": f"{n}{i}"}]} for i, st in enumerate(states)]
    chosen = next(o for o in orders if o["status"] == wanted)
    calls = [ToolCall(name="find_user_id_by_email", arguments={"email": f"c{n}@shop.example"}, result=f"u{n}")]
    calls += [ToolCall(name="get_order_details", arguments={"order_id": o["order_id"]}, result=o) for o in orders]
    calls.append(ToolCall(name=action, arguments={"order_id": chosen["order_id"]}, result={"ok": True}))
    return Trace(task=f"{action} my order", params={"email": f"c{n}@shop.example", "order_id": chosen["order_id"]},
                 calls=calls, outcome=Outcome(success=True))


def test_the_condition_is_on_the_read_of_what_the_change_acts_on():
    reads = frozenset({"find_user_id_by_email", "get_order_details"})
    traces = {"cancel": [order_trace("cancel_pending_order", n, "pending") for n in range(6)],
              "ret": [order_trace("return_delivered_order_items", n, "delivered") for n in range(6, 12)]}
    mined = pre.mine(traces, reads)
    assert mined["cancel"] == [Condition(tool="get_order_details", occurrence=pre.TARGET, path=["status"],
                                         op="eq", value="pending", against="ret", against_all=["ret"])]
    assert pre.sentence(mined["ret"]) == "Applies when the order's status is delivered."
    # the guard picks the read of the order the change is given, wherever it came
    guard = pre.Guard(mined["cancel"], reads)
    def details(order_id: str) -> dict:
        return {"order_id": order_id, "status": "pending" if order_id == "#A" else "delivered"}

    tools = guard.wrap({"get_order_details": details, "cancel_pending_order": lambda order_id: "cancelled"})
    tools["get_order_details"](order_id="#A")
    tools["get_order_details"](order_id="#B")
    assert tools["cancel_pending_order"](order_id="#A") == "cancelled" and guard.refused is None
    other = pre.Guard(mined["cancel"], reads)
    tools = other.wrap({"get_order_details": lambda order_id: {"status": "delivered"},
                        "cancel_pending_order": lambda order_id: "cancelled"})
    tools["get_order_details"](order_id="#B")
    with pytest.raises(pre.Refused, match="does not apply: the order's status is pending"):
        tools["cancel_pending_order"](order_id="#B")


def test_checking_a_condition_on_read_results():
    status = Condition(tool="get_user", path=["status"], op="eq", value="locked")
    assert pre.holds(status, {"status": "Locked "}) and not pre.holds(status, {"status": "active"})
    assert not pre.holds(status, {"state": "locked"})  # a missing path does not hold
    size = Condition(tool="get_user", path=["groups"], op="len_eq", value=1)
    assert pre.holds(size, {"groups": ["a"]}) and not pre.holds(size, {"groups": ["a", "b"]})
    reads = {("get_user", 0): {"status": "active"}}
    assert pre.unmet([status], reads) is status
    assert pre.unmet([status], {("get_user", 0): {"status": "locked"}}) is None
    assert pre.unmet([status], {}) is status  # the read was not made before the change
    assert pre.render(size) == "the user's groups has 1 item"
    assert pre.subject("get_order_details") == "order"
    assert pre.subject("find_user_id_by_email") == "user id"


def test_the_description_sentence_replaces_the_last_one():
    when = "Unlock a locked account (after: find user, get user). Needs the email."
    first = with_conditions(when, "Applies when the user's status is locked.")
    assert first == ("Unlock a locked account (after: find user, get user). Applies when the user's status "
                     "is locked. Needs the email.")
    assert with_conditions(first, "Applies when the user's role is staff.").count("Applies when") == 1
    assert with_conditions(first, "") == when
    assert with_conditions("Unlock an account.", "Applies when x is y.") == "Unlock an account. Applies when x is y."


# -- a real library: learn -> fetch -> run in the sandbox -------------------------------------------
class Directory:
    """A small user directory whose tools the skills call (real callables, real sandbox)."""

    def __init__(self) -> None:
        self.users = {u["email"]: dict(u) for u in
                      [user(n, "locked") for n in range(5)] + [user(n, "active") for n in range(5, 12)]}
        self.changes: list[tuple[str, str]] = []

    def find_user(self, email: str) -> str:
        """Find a user's id from their email."""
        if email not in self.users:
            raise LookupError(f"no user has the email {email!r}")
        return self.users[email]["user_id"]

    def get_user(self, user_id: str) -> dict:
        """A user's record: name, status (active or locked), role, department and groups."""
        return dict(next(u for u in self.users.values() if u["user_id"] == user_id))

    def unlock_account(self, user_id: str) -> dict:
        """Unlock a locked account."""
        self.changes.append(("unlock_account", user_id))
        return {"user_id": user_id, "done": True}

    def reset_password(self, user_id: str) -> dict:
        """Reset an account's password."""
        self.changes.append(("reset_password", user_id))
        return {"user_id": user_id, "done": True}

    def tools(self) -> dict:
        return {"find_user": self.find_user, "get_user": self.get_user,
                "unlock_account": self.unlock_account, "reset_password": self.reset_password}


@pytest.fixture
def directory_library(tmp_path, embedder):
    library = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"))
    directory = Directory()
    library.register_tools({
        name: ToolSpec(side_effects=name not in READ_ONLY, description=(fn.__doc__ or "").strip())
        for name, fn in directory.tools().items()
    })
    yield library, directory
    library.close()


def learned(library: SkillLibrary, directory: Directory, action: str, status: str) -> str:
    records = [u for u in directory.users.values() if u["status"] == status][:5]
    verb = {"unlock_account": "unlock the account", "reset_password": "reset the password"}[action]
    results = library.learn_many([trace(action, r, task=f"Hi, please {verb} of {r['email']}. Thanks")
                                  for r in records])
    assert results[0].status == "saved" and {r.status for r in results[1:]} == {"merged"}, results
    return results[0].skill.name


def test_a_failed_precondition_changes_nothing_and_is_not_applicable(directory_library):
    library, directory = directory_library
    unlock = learned(library, directory, "unlock_account", "locked")
    assert library.get(unlock).provenance.preconditions == []  # no look-alike yet: nothing to contrast
    reset = learned(library, directory, "reset_password", "active")
    # the look-alike's traces arrived: both skills are re-mined
    assert [c.model_dump(exclude={"against", "against_all"}) for c in library.get(unlock).provenance.preconditions] == [
        {"tool": "get_user", "occurrence": -1, "path": ["status"], "op": "eq", "value": "locked"}]
    assert library.get(reset).provenance.preconditions[0].value == "active"
    assert "Applies when the user's status is locked." in library.get(unlock).when
    before = library.get(unlock)
    active = next(u for u in directory.users.values() if u["status"] == "active")

    run = library.run(unlock, {"email": active["email"]}, directory.tools())

    assert not run.ok and directory.changes == []  # the state-changing call never ran
    assert run.outcome_kind == "not_applicable"
    assert run.outcome_reason == "does not apply: the user's status is locked"
    assert [c.name for c in run.trace.calls] == ["find_user", "get_user"]
    after = library.get(unlock)
    assert (after.successes, after.failures) == (before.successes, before.failures)  # reliability unchanged
    assert library.outcome_counts(unlock)[OutcomeKind.NOT_APPLICABLE.value] == 1

    locked = next(u for u in directory.users.values() if u["status"] == "locked")
    assert library.run(unlock, {"email": locked["email"]}, directory.tools()).ok
    assert directory.changes == [("unlock_account", locked["user_id"])]


def test_learn_fetch_run_picks_the_workflow_whose_precondition_holds(directory_library):
    library, directory = directory_library
    unlock = learned(library, directory, "unlock_account", "locked")
    reset = learned(library, directory, "reset_password", "active")
    matches = library.fetch("My account is locked after too many tries, please unlock it: p11@corp.example",
                            k=2, abstain=False)
    assert matches[0].skill.name == unlock
    assert "status is locked" in matches[0].skill.when
    # the agent runs the top match for an active user: it stops, so the agent turns to the other
    active = "p11@corp.example"
    first = library.run(matches[0].skill.name, {"email": active}, directory.tools())
    assert first.outcome_kind == "not_applicable" and directory.changes == []
    second = library.run(reset, {"email": active}, directory.tools())
    assert second.ok and directory.changes == [("reset_password", "U111")]


def test_fetch_with_the_callers_read_tools_ranks_the_applicable_look_alike_first(directory_library):
    library, directory = directory_library
    unlock = learned(library, directory, "unlock_account", "locked")
    reset = learned(library, directory, "reset_password", "active")
    reads = {"find_user": directory.find_user, "get_user": directory.get_user}
    task = "I cannot sign in, my account seems locked, please help: p11@corp.example"
    plain = library.fetch(task, k=2, abstain=False)
    assert [m.skill.name for m in plain] == [unlock, reset] and plain[0].applies is None
    # p11 is active: its unlock does not apply, so reset comes first; nothing was changed
    checked = library.fetch(task, k=2, abstain=False, args={"email": "p11@corp.example"}, read_tools=reads)
    assert [m.skill.name for m in checked] == [reset, unlock]
    assert (checked[0].applies, checked[1].applies) == (True, False)
    assert checked[1].applies_reason == "does not apply: the user's status is locked"
    assert not checked.abstained and not checked.ambiguous  # abstain=False: the order only
    # with abstention on: the failed top's condition was mined against reset, and reset's own
    # condition holds on the same read, so reset comes first, unflagged, the reason saying why
    told = library.fetch(task, k=2, args={"email": "p11@corp.example"}, read_tools=reads)
    assert [m.skill.name for m in told] == [reset, unlock], told.reason
    assert not told.abstained and not told.ambiguous
    assert "does not apply: the user's status is locked" in told.reason and "same read" in told.reason
    assert told[-1].applies is False
    assert directory.changes == []
    # a locked user: unlock applies and stays first
    locked = library.fetch(task.replace("p11", "p1"), k=2, abstain=False, args={"email": "p1@corp.example"},
                           read_tools=reads)
    assert [m.skill.name for m in locked] == [unlock, reset] and locked[0].applies is True
    # without the caller's values nothing can be checked: the order stays
    unknown = library.fetch(task, k=2, abstain=False, read_tools=reads)
    assert [m.skill.name for m in unknown] == [unlock, reset] and unknown[0].applies is None
    assert directory.changes == []


def test_look_alikes_too_close_to_call_are_told_apart_when_exactly_one_applies(monkeypatch):
    from skill_library.abstention import FetchResult
    from skill_library.models import Match, Skill

    class Lib:  # only what rank_applicable reads; probe is replaced below
        pass

    def skill(name: str) -> Skill:
        return Skill.from_function(f"def {name}(email: str) -> str:\n    return email\n", when=f"{name} when")

    def match(name: str, ambiguous: bool) -> Match:
        return Match(skill=skill(name), similarity=0.6, reliability=0.9, score=0.6, ambiguous=ambiguous)

    answers = {"unlock": (False, "does not apply: the user's status is locked"), "reset": (True, None),
               "offboard": (None, "no preconditions")}
    monkeypatch.setattr(pre, "probe_reads", lambda lib, s, args, tools: (*answers[s.name], []))
    result = FetchResult([match("unlock", True), match("reset", True), match("offboard", False)])
    result.ambiguous, result.reason = True, "too close to call"
    told = pre.rank_applicable(Lib(), result, {"email": "a@b.c"}, {})  # type: ignore[arg-type]
    assert [m.skill.name for m in told] == ["reset", "offboard", "unlock"]
    assert not told.ambiguous and not told.abstained and not told[0].ambiguous
    assert "told apart by their preconditions" in told.reason
    # the only other close one has no preconditions: nothing is told apart, it abstains
    result = FetchResult([match("unlock", True), match("offboard", True)])
    result.ambiguous = True
    kept = pre.rank_applicable(Lib(), result, {}, {})  # type: ignore[arg-type]
    assert kept.abstained and [m.skill.name for m in kept] == ["offboard", "unlock"]


def _conditioned(name: str, *conditions: Condition) -> Skill:
    skill = Skill.from_function(f"def {name}(email: str) -> str:\n    return email\n", when=f"{name} when")
    provenance = skill.provenance.model_copy(update={"preconditions": list(conditions)})
    return skill.model_copy(update={"provenance": provenance})


def test_a_failed_top_is_replaced_only_by_the_look_alike_its_condition_was_mined_against(monkeypatch):
    """The top fails a condition on a read; only the skill that condition was mined against
    (``Condition.against``), applying and with a condition holding on that same read, takes
    its place. Another skill that merely applies is no stand-in: the result abstains."""
    from skill_library.abstention import FetchResult
    from skill_library.models import Match

    def status(value: str, against: str) -> Condition:
        return Condition(tool="get_user", occurrence=-1, path=["status"], op="eq", value=value, against=against)

    enable = _conditioned("enable", status("disabled", against="grant"))
    reset = _conditioned("reset", status("active", against="enable"))
    unlock = _conditioned("unlock", status("locked", against="reset"))
    read = [("get_user", {"status": "active"})]
    answers = {"enable": (False, f"does not apply: {pre.render(enable.provenance.preconditions[0])}", read),
               "unlock": (False, f"does not apply: {pre.render(unlock.provenance.preconditions[0])}", read),
               "reset": (True, None, read), "remove_groups": (None, "no preconditions", [])}
    monkeypatch.setattr(pre, "probe_reads", lambda lib, s, args, tools: answers[s.name])

    def fetched(*skills: tuple[Skill, float]) -> FetchResult:
        result = FetchResult([Match(skill=s, similarity=v, reliability=0.9, score=v) for s, v in skills])
        result.margin = 0.005
        return result

    def rank(result: FetchResult) -> FetchResult:
        return pre.rank_applicable(object(), result, {"email": "a@b.c"}, {})  # type: ignore[arg-type]

    # unlock's condition was mined against reset, whose condition holds on the status read
    told = rank(fetched((unlock, 0.7), (reset, 0.66)))
    assert [m.skill.name for m in told] == ["reset", "unlock"] and not told.abstained and not told.ambiguous
    # enable's condition was mined against grant: reset applies too, but is no stand-in
    kept = rank(fetched((enable, 0.7), (reset, 0.66)))
    assert kept.abstained and "the nearest match enable does not apply" in kept.reason
    # a rival within the margin of the one told apart: both returned, flagged too close to call
    close = rank(fetched((unlock, 0.7), (reset, 0.66), (_conditioned("remove_groups"), 0.658)))
    assert [m.skill.name for m in close][:2] == ["reset", "remove_groups"]
    assert close.ambiguous and not close.abstained and close[0].ambiguous and "too close to call" in close.reason
    # the read that failed the top also returned another record (two users, one disabled):
    # reset's condition does not hold on every result of that tool, so nothing is told apart
    answers["unlock"] = (answers["unlock"][0], answers["unlock"][1],
                         [("get_user", {"status": "active"}), ("get_user", {"status": "disabled"})])
    assert rank(fetched((unlock, 0.7), (reset, 0.66))).abstained
    # the look-alike the condition was mined against was cut by k: fetch's runners-up hold it
    answers["unlock"] = (answers["unlock"][0], answers["unlock"][1], read)
    runner = Match(skill=reset, similarity=0.6, reliability=0.9, score=0.6)
    cut = pre.rank_applicable(object(), fetched((unlock, 0.7), (_conditioned("remove_groups"), 0.5)),  # type: ignore[arg-type]
                              {"email": "a@b.c"}, {}, runners_up=[runner])
    assert cut[0].skill.name == "reset" and cut[0].applies is True and not cut.abstained
    assert rank(fetched((unlock, 0.7), (_conditioned("remove_groups"), 0.5))).abstained  # without it: abstains


def copy_trace(n: int, colleague: dict, employee: dict) -> Trace:
    """Copy a colleague's access: the colleague's record is read (for its systems), the
    employee's never; the change acts on the employee."""
    return Trace(
        task=f"copy access of {colleague['email']} to {employee['email']}",
        params={"email": employee["email"], "colleague_email": colleague["email"]},
        calls=[ToolCall(name="find_user", arguments={"email": employee["email"]}, result=employee["user_id"]),
               ToolCall(name="find_user", arguments={"email": colleague["email"]}, result=colleague["user_id"]),
               ToolCall(name="get_user", arguments={"user_id": colleague["user_id"]}, result=colleague),
               ToolCall(name="grant_access", arguments={"user_id": employee["user_id"], "system": "crm"},
                        result={"ok": True})],
        outcome=Outcome(success=True),
    )


def test_a_read_of_another_persons_record_is_no_condition_on_the_employee():
    """Two skills' reads are compared only when they read the same subject: copy access reads
    the colleague's record (found by ``colleague_email``), re-enable reads the employee's.
    Every colleague copied from was active or locked and every account re-enabled disabled,
    but that says nothing about whom copy access may be run for (a departed colleague's
    access is copied too)."""
    colleagues = [user(n, "active" if n % 2 else "locked") for n in range(6)]
    employees = [user(n, "active") for n in range(6, 12)]
    copies = [copy_trace(n, c, e) for n, (c, e) in enumerate(zip(colleagues, employees))]
    enables = [trace("enable_account", user(n, "disabled")) for n in range(12, 18)]
    subjects = pre.read_subjects(copies[0], READ_ONLY)
    assert subjects == {("find_user", 0): "email", ("find_user", 1): "colleague_email",
                        ("get_user", 0): "colleague_email"}
    assert pre.read_subjects(enables[0], READ_ONLY)[("get_user", 0)] == "email"
    # a small integer is no one's (a page, a count); a value two parameters share is both's
    paged = copies[0].model_copy(update={"params": {**copies[0].params, "n": 1}}, deep=True)
    paged.calls.insert(0, ToolCall(name="find_user", arguments={"page": 1}, result=None))
    assert pre.read_subjects(paged, READ_ONLY)[("find_user", 0)] == ""
    same = copies[0].model_copy(update={"params": {"email": "x@corp.example", "colleague_email": "x@corp.example"}},
                               deep=True)
    same.calls[:] = [ToolCall(name="find_user", arguments={"email": "x@corp.example"}, result="U1"),
                     ToolCall(name="get_user", arguments={"user_id": "U1"}, result={"status": "active"})]
    assert pre.read_subjects(same, READ_ONLY) == {("find_user", 0): "colleague_email+email",
                                                  ("get_user", 0): "colleague_email+email"}
    mined = pre.mine({"copy": copies, "enable": enables}, READ_ONLY)
    # before: copy got "the user's status is active or locked" (the colleague's), and re-enable
    # "disabled", told apart from copy by a read copy's traces never made
    assert "copy" not in mined and "enable" not in mined
    # the same traces with the employee read as well: that read is comparable, and mined
    for t in copies:
        employee = next(u for u in employees if u["email"] == t.params["email"])
        t.calls.insert(3, ToolCall(name="get_user", arguments={"user_id": employee["user_id"]}, result=employee))
    mined = pre.mine({"copy": copies, "enable": enables}, READ_ONLY)
    assert mined["copy"] == [Condition(tool="get_user", occurrence=pre.TARGET, path=["status"], op="eq",
                                       value="active", against="enable", against_all=["enable"])]


def test_a_condition_mined_against_several_look_alikes_hands_over_to_the_one_that_applies(monkeypatch):
    """One condition can tell a skill from several look-alikes (``against_all``: "the status
    is locked" against a password reset and a re-enable). When the top fails it, the one of
    them whose condition on the same read holds takes its place; when two of them hold (the
    reset and the offboarding both apply to an active account) nothing is told apart."""
    from skill_library.abstention import FetchResult
    from skill_library.models import Match

    def status(value: str, *against: str) -> Condition:
        return Condition(tool="get_user", occurrence=-1, path=["status"], op="eq", value=value,
                         against=sorted(against)[0], against_all=sorted(against))

    unlock = _conditioned("unlock", status("locked", "enable", "offboard", "reset"))
    reset = _conditioned("reset", status("active", "unlock"))
    enable = _conditioned("enable", status("disabled", "reset"))
    offboard = _conditioned("offboard", status("active", "unlock"))
    read = [("get_user", {"status": "active"})]
    answers = {"unlock": (False, f"does not apply: {pre.render(unlock.provenance.preconditions[0])}", read),
               "enable": (False, f"does not apply: {pre.render(enable.provenance.preconditions[0])}", read),
               "reset": (True, None, read), "offboard": (True, None, read)}
    monkeypatch.setattr(pre, "probe_reads", lambda lib, s, args, tools: answers[s.name])

    def rank(*skills: tuple[Skill, float], runners_up: tuple[Skill, ...] = (),
             floor: float | None = None) -> FetchResult:
        result = FetchResult([Match(skill=s, similarity=v, reliability=0.9, score=v) for s, v in skills])
        result.margin, result.floor = 0.005, floor
        extra = [Match(skill=s, similarity=0.5, reliability=0.9, score=0.5) for s in runners_up]
        return pre.rank_applicable(object(), result, {"email": "a@b.c"}, {},  # type: ignore[arg-type]
                                   runners_up=[*result, *extra])

    # mined against enable first, reset too: the reset applies and takes the failed unlock's place
    told = rank((unlock, 0.74), (reset, 0.67), (enable, 0.60))
    assert told[0].skill.name == "reset" and not told.abstained and not told.ambiguous
    assert "reset applies where the nearest match unlock does not apply" in told.reason
    # a stand-in under the library's calibrated floor is none (the top cleared it, the reset does
    # not), unless it is the condition's first look-alike (``against``: as before against_all)
    low = rank((unlock, 0.74), (reset, 0.67), (enable, 0.60), floor=0.7)
    assert low.abstained and low[0].skill.name == "reset" and "the nearest match unlock does not apply" in low.reason
    first = _conditioned("unlock", status("locked", "reset", "enable").model_copy(update={"against": "reset"}))
    answers["unlock"] = (False, f"does not apply: {pre.render(first.provenance.preconditions[0])}", read)
    handed = rank((first, 0.74), (reset, 0.67), (enable, 0.60), floor=0.7)
    assert handed[0].skill.name == "reset" and not handed.abstained
    # ... but not for a top answered under the floor itself (skill_library.mentions): the
    # stand-in would then run on the strength of nothing
    assert rank((first, 0.68), (reset, 0.67), (enable, 0.60), floor=0.7).abstained
    # the offboarding, cut by k, also applies on that read: it is probed, and nothing is told apart
    both = rank((unlock, 0.74), (reset, 0.67), (enable, 0.60), runners_up=(offboard,))
    assert both.abstained and "the nearest match unlock does not apply" in both.reason
    assert {m.skill.name for m in both if m.applies} == {"reset", "offboard"}
    # ... unless the offboarding is under the calibrated floor (0.5 here) and the reset over it
    over = rank((unlock, 0.74), (reset, 0.67), (enable, 0.60), runners_up=(offboard,), floor=0.55)
    assert over[0].skill.name == "reset" and not over.abstained


def test_look_alikes_that_both_apply_are_told_apart_by_the_verb_the_task_asks_for(monkeypatch):
    """Unlock fails on an active account; the reset and the offboarding both apply on that read.
    "Revoke everything and close the account" asks for the offboarding's revoke, not the reset's
    reset: the offboarding takes the task, and the reset (within the margin, but not asked for)
    is no rival. Without the verb, or with both verbs asked, nothing is told apart."""
    from skill_library import intent
    from skill_library.abstention import FetchResult
    from skill_library.models import Match

    def status(value: str, *against: str) -> Condition:
        return Condition(tool="get_user", occurrence=-1, path=["status"], op="eq", value=value,
                         against=sorted(against)[0], against_all=sorted(against))

    def acting(skill: Skill, *tools: str) -> Skill:
        return skill.model_copy(update={"tools": ["find_user", "get_user", *tools]})

    unlock = acting(_conditioned("unlock", status("locked", "offboard", "reset")), "unlock_account")
    reset = acting(_conditioned("reset", status("active", "unlock")), "reset_password")
    offboard = acting(_conditioned("offboard", status("active", "unlock")), "revoke_access", "disable_account")
    read = [("get_user", {"status": "active"})]
    answers = {"unlock": (False, f"does not apply: {pre.render(unlock.provenance.preconditions[0])}", read),
               "reset": (True, None, read), "offboard": (True, None, read)}
    monkeypatch.setattr(pre, "probe_reads", lambda lib, s, args, tools: answers[s.name])

    def rank(text: str | None) -> FetchResult:
        result = FetchResult([Match(skill=s, similarity=v, reliability=0.9, score=v)
                              for s, v in ((unlock, 0.72), (reset, 0.69), (offboard, 0.68))])
        result.margin = 0.02
        reading = None if text is None else intent.Reading(text=text, vocabulary=intent.Vocabulary(),
                                                           read_only=frozenset({"find_user", "get_user"}))
        return pre.rank_applicable(object(), result, {"email": "a@b.c"}, {}, reading=reading)  # type: ignore[arg-type]

    told = rank("a@b.c no longer works here: please revoke everything and close the account")
    assert told[0].skill.name == "offboard" and not told.abstained and not told.ambiguous
    assert rank("a@b.c cannot get in, please help").abstained  # no verb of either
    assert rank(None).abstained  # no reading: as before
    assert rank("please reset the password and revoke the rest").abstained  # both asked
    assert rank("please don't revoke anything, just help").abstained  # negated: not asked
