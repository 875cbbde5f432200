"""The misuse step: ten wrong inputs must not quarantine a correct skill, a real failure burst must.

Run on a slice (two train traces of the password-reset workflow); the full step is
`python -m benchmarks misuse`. Tested here: the step feeds what it says and reports what
happened, the library records each misuse input as ``misuse`` and never quarantines for
them (outcome kinds, issue 21 item 5), and a burst of the skill's own failures still
quarantines it.
"""

from __future__ import annotations

import pytest

from benchmarks import misuse
from benchmarks.worlds import ToolError, load_tasks
from benchmarks.worlds.helpdesk import HelpdeskWorld


def test_the_ten_misuse_inputs_all_fail_the_lookup():
    tasks = [t for t in load_tasks("helpdesk") if t.workflow == misuse.WORKFLOW and t.split == "test"]
    world = HelpdeskWorld()
    world.reset(tasks[0].seed)
    email = tasks[0].params["email"]
    employee = world.get_employee(world.find_employee_by_email(email))
    inputs = misuse.misuse_inputs(email, employee["employee_id"], employee["first_name"], employee["last_name"])
    assert len(inputs) == misuse.MISUSE_INPUTS == 10 and len({v for _, v in inputs}) == 10
    for _what, value in inputs:
        with pytest.raises(ToolError, match="no employee has the email"):
            world.find_employee_by_email(value)


def test_the_step_reports_each_half_from_its_runs(tmp_path, embedder):
    tasks = load_tasks("helpdesk")
    train = [t for t in tasks if t.split == "train" and t.workflow == misuse.WORKFLOW][:2]
    test = [t for t in tasks if t.split == "test" and t.workflow == misuse.WORKFLOW][:2]
    results = misuse.run_misuse(misuse.MisuseConfig(out=tmp_path), tasks=train + test, embedder=embedder)
    m, b, log = results["misuse"], results["burst"], results["log"]
    fed = [e for e in log if e["phase"] == "misuse"]
    assert m["fed"] == len(fed) <= misuse.MISUSE_INPUTS and all(not e["ok"] for e in fed)
    assert m["quarantined_at"] == next((i + 1 for i, e in enumerate(fed) if e["status"] == "quarantined"), None)
    assert m["passed"] == (m["quarantined_at"] is None and m["after"] is not None and m["after"]["ok"])
    if m["quarantined_at"] is None:
        assert m["fed"] == misuse.MISUSE_INPUTS
    # with outcome kinds (issue 21 item 5): every misuse input is misuse, none quarantines
    assert m["passed"] and m["outcome_kinds"] == {"misuse": misuse.MISUSE_INPUTS}
    assert all(e["failures"] == m["before"]["failures"] for e in fed)
    assert {e["outcome_kind"] for e in log if e["phase"] == "failure burst"} == {"failure"}
    # the skill's own state-changing call breaking quarantines it, and it is no longer fetched
    assert b["passed"] and b["final_status"] == "quarantined" and b["fetched_after"] is False
    burst = [e for e in log if e["phase"] == "failure burst"]
    assert len(burst) == b["runs"] == b["quarantined_at"] and all(not e["ok"] for e in burst)
    assert all("password store unavailable" in (e["error"] or "") for e in burst)
    text = misuse.write(results, tmp_path)
    assert "| failure burst" in text and "## Privacy" in text
