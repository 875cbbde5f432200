"""The console's governance pages over HTTP: the Review queue (approve, reject), the
Canaries page (promote, roll back), and permissions: every write is the console actor's
governance call, refused when the actor lacks the permission."""

from __future__ import annotations

import pytest
from conftest import ACTOR, TOKEN, csrf_of, message_of
from governed_world import APPROVER, SUITE, V_BAD, held, proposed
from markupsafe import escape

from skill_library.governance import Actor


@pytest.fixture
def governed(library):
    library.actors.add(APPROVER)
    return library


def login(anonymous):
    assert anonymous.get(f"/login?token={TOKEN}").status_code == 200
    return anonymous


def test_review_queue_shows_diff_evidence_and_why_a_human_is_needed(governed, client):
    name, version = held(governed)
    html = client.get("/review").text
    assert f'id="review-{name}-{version}"' in html
    reasons = governed.needs_human(name, version)
    assert len(reasons) == 2  # side effects (restock, check undeclared) and widened tools
    assert all(str(escape(r)) in html for r in reasons)
    assert '<span class="add">+    check(item=&#39;apple&#39;)</span>' in html  # the diff against v1
    assert "the active v1" in html
    section = html[html.index(f'id="review-{name}-{version}"'):]
    assert '<span class="success">passed</span>' in section and "suite <code>shelf</code>" in section
    assert "candidate 100% vs active v1 50%" in section
    assert '<tr class="critical"><td>apple-3 <b class="critical">critical</b>' in section
    assert '<code>restock(item="apple", count=8)</code>' in section  # the candidate's calls
    assert '<code>restock(item="apple", count=5)</code>' in section  # the active version's
    assert "Approve" in html and "Reject" in html


def test_the_queue_is_one_row_per_version_with_its_decision_and_its_example_tasks(governed, client):
    """Compact: the version's row holds the approve and reject buttons; the diff, the example
    tasks and the evaluation fold below it (issue 25)."""
    import re

    from skill_library.models import Example

    name, version = held(governed)
    governed.context.store.save_evidence(name, examples=[
        Example(trace_id="t1", text="restock {item} by {count}", params={"item": "pear", "count": 2})])
    html = client.get("/review").text
    section = html[html.index(f'id="review-{name}-{version}"'):html.index("<h2>Approved")]
    row = re.search(r'<tr class="row">(.*?)</tr>', section, re.S).group(1)
    assert f'action="/review/{name}/{version}/approve"' in row and f'action="/review/{name}/{version}/reject"' in row
    assert "1 example task(s)" in row and "Needs a human because" in row
    details = section[section.index('<tr class="details">'):]
    assert "<details>" in details and "<li>restock {item} by {count}</li>" in details
    assert html.count('<tr class="row">') == len(governed.review_queue())


def test_a_critical_regression_shows_and_approval_is_refused(governed, client):
    name, version = proposed(governed, V_BAD, ["restock"])
    assert governed.get(name, version).status == "draft"  # the failed evaluation did not move it
    html = client.get("/review").text
    section = html[html.index(f'id="review-{name}-{version}"'):]
    assert '<span class="failure">failed</span>' in section
    assert '<b class="critical">critical</b> <b class="failure">regression</b>' in section
    refused = client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(html)})
    assert refused.status_code == 400 and "critical task &#39;apple-3&#39; regressed" in message_of(refused.text)
    assert governed.get(name, version).status == "draft"


def test_approve_from_the_queue_is_the_actors_audited_call(governed, client):
    name, version = held(governed)
    page = client.get("/review")
    done = client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text), "reason": "looked fine"})
    assert done.status_code == 200 and f"approved {name} v{version}" in done.text
    assert governed.get(name, version).status != "evaluated"
    last = governed.audit(name)[-1]
    assert (last.actor, last.from_status, last.reason) == (ACTOR, "evaluated", "looked fine")
    assert f'id="review-{name}-{version}"' not in client.get("/review").text
    trail = client.get(f"/skills/{name}").text
    trail = trail[trail.index('id="audit"'):]
    assert f"evaluated → approved</td><td>{ACTOR}</td><td>looked fine</td>" in trail
    assert "draft → evaluated" in trail and "<td>bob</td><td>proposed</td>" in trail


def test_reject_needs_a_reason_and_csrf(governed, client):
    name, version = held(governed)
    page = client.get("/review")
    assert client.post(f"/review/{name}/{version}/reject", data={"reason": "no"}).status_code == 403
    blank = client.post(f"/review/{name}/{version}/reject", data={"csrf": csrf_of(page.text), "reason": " "})
    assert blank.status_code == 400 and "a reason is required" in message_of(blank.text)
    done = client.post(f"/review/{name}/{version}/reject", data={"csrf": csrf_of(page.text), "reason": "calls restock"})
    assert done.status_code == 200 and f"rejected {name} v{version}" in done.text
    assert governed.get(name, version).status == "rejected"
    assert governed.audit(name)[-1].actor == ACTOR


def test_an_actor_without_approve_is_refused_and_nothing_changes(library, anonymous):
    from starlette.testclient import TestClient

    from skill_library.console import create_app

    library.actors.add(Actor(id="intern", kind="user", permissions=frozenset({"skill.propose"})))
    name, version = held(library)
    with TestClient(create_app(library, actor_id="intern", token=TOKEN), raise_server_exceptions=False) as client:
        login(client)
        page = client.get("/review")
        refused = client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text)})
        assert refused.status_code == 403
        assert "intern" in message_of(refused.text) and "skill.approve" in message_of(refused.text)
        subjects = client.get("/subjects", params={"subject": "carol"})
        forget = client.post("/subjects/forget", data={"subject": "carol", "csrf": csrf_of(subjects.text)})
        assert forget.status_code == 403 and "skill.admin" in message_of(forget.text)
    assert library.get(name, version).status == "evaluated"


def test_an_unregistered_actor_is_refused(library):
    from starlette.testclient import TestClient

    from skill_library.console import create_app

    name, version = held(library)
    with TestClient(create_app(library, actor_id="stranger", token=TOKEN), raise_server_exceptions=False) as client:
        login(client)
        page = client.get("/review")
        refused = client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text)})
        assert refused.status_code == 403 and "stranger" in message_of(refused.text)
    assert library.get(name, version).status == "evaluated"


def test_review_queue_empty_state(governed, client):
    html = client.get("/review").text
    assert "Nothing awaits review" in html and "No approved version waits for release." in html


def test_an_approved_version_is_promoted_or_canaried_from_the_review_page(governed, client):
    name, version = held(governed)
    page = client.get("/review")
    client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text)})
    page = client.get("/review")
    assert f'id="approved-{name}-{version}"' in page.text
    bad = client.post(f"/review/{name}/{version}/release", data={"csrf": csrf_of(page.text), "how": "canary",
                                                                 "share": "lots"})
    assert bad.status_code == 400 and "share must be a percentage" in message_of(bad.text)
    client.post(f"/review/{name}/{version}/release", data={"csrf": csrf_of(page.text), "how": "canary", "share": "20"})
    assert governed.get(name, version).status == "canary"
    assert governed.audit(name)[-1].actor == ACTOR
    assert f'id="approved-{name}-{version}"' not in client.get("/review").text


def test_promote_from_the_review_page_supersedes_the_active_version(governed, client):
    name, version = held(governed)
    page = client.get("/review")
    client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text)})
    done = client.post(f"/review/{name}/{version}/release", data={"csrf": csrf_of(page.text), "how": "promote"})
    assert done.status_code == 200 and f"promoted {name} v{version}: now active" in done.text
    assert governed.get(name).version == version
    assert governed.get(name, 1).status == "superseded"
    again = client.post(f"/review/{name}/{version}/release", data={"csrf": csrf_of(page.text), "how": "promote"})
    assert again.status_code == 400 and "cannot become active" in message_of(again.text)


def canaried(library, client, share: str = "20") -> tuple[str, int]:
    name, version = held(library)
    page = client.get("/review")
    client.post(f"/review/{name}/{version}/approve", data={"csrf": csrf_of(page.text)})
    client.post(f"/review/{name}/{version}/release", data={"csrf": csrf_of(page.text), "how": "canary", "share": share})
    assert library.get(name, version).status == "canary"
    return name, version


def test_canaries_page_shows_share_outcomes_and_the_test(governed, client):
    assert "No canary is running." in client.get("/canaries").text
    name, version = canaried(governed, client)
    for ok in (True, False, True):
        governed.feedback(name, ok, version=version)
    governed.feedback(name, True, version=1)
    html = client.get("/canaries").text
    section = html[html.index(f'id="canary-{name}-{version}"'):]
    assert "share 20% of sessions" in section and "against active v1" in section
    assert "<tr><td>v2 (canary)</td><td>2</td><td>1</td></tr>" in section
    [state] = governed.canaries()
    assert f"p = {state.p_value:.3f}" in section and f"decision: <b class=\"decision {state.decision}\">" in section


def test_promote_a_canary(governed, client):
    name, version = canaried(governed, client)
    page = client.get("/canaries")
    done = client.post(f"/canaries/{name}/{version}/promote", data={"csrf": csrf_of(page.text)})
    assert done.status_code == 200 and f"promoted {name} v{version}: now active" in done.text
    assert governed.get(name).version == version and governed.canaries() == []
    assert governed.audit(name)[-1].actor == ACTOR


def test_roll_back_a_canary_keeps_the_active_version(governed, client):
    name, version = canaried(governed, client)
    page = client.get("/canaries")
    assert client.post(f"/canaries/{name}/{version}/rollback", data={}).status_code == 403
    done = client.post(f"/canaries/{name}/{version}/rollback", data={"csrf": csrf_of(page.text)})
    assert done.status_code == 200 and f"rolled back the canary {name} v{version}" in done.text
    assert governed.get(name, version).status == "approved" and governed.get(name).version == 1
    last = governed.audit(name)[-1]
    assert (last.from_status, last.to_status, last.actor) == ("canary", "approved", ACTOR)
    assert "No canary is running." in done.text


def test_an_actor_without_approve_cannot_promote_a_canary(governed, client, library):
    from starlette.testclient import TestClient

    from skill_library.console import create_app

    name, version = canaried(governed, client)
    with TestClient(create_app(library, actor_id="bob", token=TOKEN), raise_server_exceptions=False) as other:
        login(other)
        page = other.get("/canaries")
        refused = other.post(f"/canaries/{name}/{version}/promote", data={"csrf": csrf_of(page.text)})
        assert refused.status_code == 403 and "skill.approve" in message_of(refused.text)
        refused = other.post(f"/canaries/{name}/{version}/rollback", data={"csrf": csrf_of(page.text)})
        assert refused.status_code == 403 and "skill.approve" in message_of(refused.text)
    assert library.get(name, version).status == "canary"


# -- bulk approve and what each row says -------------------------------------------------
def _row(html: str, name: str, version: int) -> str:
    start = html.index(f'id="review-{name}-{version}"')
    return html[start:html.index('<tr class="details">', start)]


def test_bulk_approve_of_the_checked_rows_reports_each_refusal_on_its_row(library, client):
    """Two checked rows: bob's v2 is approved, the console actor's own v3 is refused (nobody
    approves their own proposal); the refusal is on v3's row, v2 moved to the approved list."""
    from governed_world import V2, WHEN, shelf

    from skill_library.governance.suite import Suite
    from skill_library.models import Skill

    library.actors.add(Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.approve", "skill.propose"})))
    name, bobs = held(library)
    own = library.propose(Skill.from_function(V2.replace("check(item='apple')", "check(item='apple')\n    "
                                                           "check(item='pear')"), when=WHEN,
                                              tools=["check", "restock"]), actor=ACTOR)
    library.evaluate(own.name, own.version, Suite.model_validate(SUITE), shelf, actor=None)
    assert library.get(name, own.version).status == "evaluated"
    page = client.get("/review").text
    for version in (bobs, own.version):
        assert f'name="pick" value="{name}:{version}" form="bulk"' in _row(page, name, version)
    done = client.post("/review/approve", data={"csrf": csrf_of(page), "reason": "both read fine",
                                                "pick": [f"{name}:{bobs}", f"{name}:{own.version}"]})
    assert done.status_code == 200, message_of(done.text)
    assert f"approved 1 of 2 selected: {name} v{bobs}; 1 refused (the reason is on each row)" in done.text
    assert library.get(name, bobs).status == "approved" and library.get(name, own.version).status == "evaluated"
    assert library.audit(name)[-1].reason == "both read fine"
    row = _row(done.text, name, own.version)
    assert '<tr class="row refused">' in row
    assert f"refused: actor {ACTOR!r} proposed {name!r} v{own.version}".replace("'", "&#39;") in row
    assert f'id="approved-{name}-{bobs}"' in done.text
    again = client.get("/review").text  # shown once
    assert "refused:" not in _row(again, name, own.version)


def test_bulk_approve_needs_a_checked_row_and_the_csrf_token(governed, client):
    name, version = held(governed)
    page = client.get("/review").text
    assert client.post("/review/approve", data={"pick": f"{name}:{version}"}).status_code == 403
    none = client.post("/review/approve", data={"csrf": csrf_of(page)})
    assert none.status_code == 400 and "select at least one row to approve" in message_of(none.text)
    bad = client.post("/review/approve", data={"csrf": csrf_of(page), "pick": "nonsense"})
    assert bad.status_code == 400 and "NAME:VERSION" in message_of(bad.text)
    assert governed.get(name, version).status == "evaluated"


def test_a_row_offers_only_what_its_status_allows_and_its_hint_names_the_required_options(governed, client):
    """A draft that failed its evaluation has no Approve button and no checkbox; its hint
    says why and gives `skills evaluate` with --suite and --world (statuses and hints agree)."""
    name, version = proposed(governed, V_BAD, ["restock"])
    row = _row(client.get("/review").text, name, version)
    assert governed.get(name, version).status == "draft"
    assert "/approve" not in row and 'name="pick"' not in row and f"/review/{name}/{version}/reject" in row
    assert "reject, or evaluate it again" in row
    assert f"skills evaluate {name} {version} --suite FILE --world MODULE:NAME" in row


def test_an_unevaluated_draft_is_evaluated_before_it_is_approved(governed, client):
    from governed_world import PROPOSER, V2

    from skill_library.models import Skill

    pear = V2.replace("restock_apple", "restock_pear").replace("'apple'", "'pear'")
    governed.actors.add(PROPOSER)
    draft = governed.propose(Skill.from_function(pear, when="restock pears in the fruit aisle",
                                                 tools=["check", "restock"]), actor="bob")
    assert draft.status == "draft"
    row = _row(client.get("/review").text, draft.name, draft.version)
    assert "/approve" not in row and 'name="pick"' not in row and "evaluate, then approve; or reject" in row
    assert f"skills evaluate {draft.name} {draft.version} --suite FILE --world MODULE:NAME" in row
    assert '<span class="status draft">draft</span>' in row and "not evaluated" in row


def test_a_row_shows_its_tools_with_their_side_effects_and_its_preconditions(governed, client):
    """check is declared read-only (and new since v1), restock is undeclared: counted as
    having side effects; the version's mined precondition is shown in words."""
    from governed_world import PROPOSER, V2, WHEN, shelf

    from skill_library.governance import ToolSpec
    from skill_library.governance.suite import Suite
    from skill_library.models import Condition, Provenance, Skill

    governed.register_tools({"check": ToolSpec(side_effects=False, description="Reads an item's stock.")})
    held(governed)  # v1 active, bob's v2 evaluated
    governed.actors.add(PROPOSER)
    condition = Condition(tool="check", path=["stock"], op="eq", value=0, against="restock_pear")
    v3 = governed.propose(Skill.from_function(V2, when=WHEN, tools=["check", "restock"],
                                              provenance=Provenance(preconditions=[condition])), actor="bob")
    governed.evaluate(v3.name, v3.version, Suite.model_validate(SUITE), shelf, actor=None)
    html = client.get("/review").text
    row = _row(html, v3.name, v3.version)
    assert '<code class="reads" title="read-only">check</code> <b class="new">new</b>' in row
    assert '<code class="changes" title="undeclared: counted as side effects">restock</code><b class="effect"' in row
    assert "1 precondition(s)" in row
    start = html.index(f'id="review-{v3.name}-{v3.version}"')
    details = html[html.index('<tr class="details">', start):]
    details = details[:details.index("</details>")]
    assert '<td class="success">read-only</td><td>Reads an item&#39;s stock.</td>' in details
    assert '<td class="failure">undeclared: counted as side effects</td>' in details
    assert "<b class=\"new\">new since v1</b>" in details
    assert "<li>the check&#39;s stock is 0 (tells it apart from restock_pear)</li>" in details
