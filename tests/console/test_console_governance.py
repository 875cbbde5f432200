"""The console's governance pages over HTTP: the Review queue (approve, reject), the
Canaries page (promote, roll back), and permissions: every write is the console actor's
governance call, refused when the actor lacks the permission."""

from __future__ import annotations

import pytest
from conftest import ACTOR, TOKEN, csrf_of, message_of
from markupsafe import escape

governance = pytest.importorskip("skill_library.governance")
Actor = governance.Actor

APPROVER = Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.approve"}))
PROPOSER = Actor(id="bob", kind="user", permissions=frozenset({"skill.propose"}))
V1 = "def restock_apple(count: int) -> dict:\n    return restock(item='apple', count=count)\n"
V2 = ("def restock_apple(count: int) -> dict:\n    check(item='apple')\n"
      "    return restock(item='apple', count=count)\n")


def evaluated(library, name: str, version: int) -> None:
    """Mark a draft as having passed its evaluation (the primitive, as the system actor)."""
    from skill_library.governance.actors import system_actor
    from skill_library.governance.lifecycle import transition

    transition(library, name, version, "evaluated", actor=system_actor(), reason="passed its evaluation",
               evidence={"passed": True})


def held(library) -> tuple[str, int]:
    """An evaluated v2 of restock_apple proposed by bob, waiting for a human: it widens the
    tools of v1 (check) and calls restock, undeclared, so counted as having side effects."""
    from skill_library.models import Skill

    library.add(Skill.from_function(V1, when="restock apples in the fruit aisle", tools=["restock"]))
    if not any(a.id == PROPOSER.id for a in library.actors.list()):
        library.actors.add(PROPOSER)
    draft = library.propose(Skill.from_function(V2, when="restock apples in the fruit aisle",
                                               tools=["check", "restock"]), actor="bob")
    evaluated(library, draft.name, draft.version)
    return draft.name, draft.version


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
    assert "Approve" in html and "Reject" in html


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
