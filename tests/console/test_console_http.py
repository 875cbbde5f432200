"""The review console over HTTP (Starlette's TestClient against the ASGI app): login
token, sessions, CSRF, every page and action, and errors shown as plain messages."""

from __future__ import annotations

import re

import pytest
from conftest import ACTOR, TOKEN, csrf_of, message_of
from typer.testing import CliRunner

from skill_library.cli import app as cli_app
from skill_library.console import is_loopback, login_url
from skill_library.console.auth import COOKIE_NAME


# -- login, sessions ---------------------------------------------------------------------
def test_every_page_needs_a_session(anonymous):
    for path in ("/skills", "/skills/anything", "/review", "/canaries", "/subjects"):
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert "open the login URL" in message_of(response.text)


def test_the_login_token_works_once_and_sets_a_strict_httponly_cookie(anonymous):
    assert anonymous.get("/login?token=wrong").status_code == 403
    assert anonymous.get("/login").status_code == 403
    response = anonymous.get(f"/login?token={TOKEN}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/skills"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert TOKEN not in cookie  # the session id is not the login token
    assert anonymous.get("/skills").status_code == 200
    anonymous.cookies.clear()
    spent = anonymous.get(f"/login?token={TOKEN}")
    assert spent.status_code == 403 and "already used" in message_of(spent.text)
    assert anonymous.get("/skills").status_code == 401


def test_a_random_token_is_made_when_none_is_given(library):
    from skill_library.console import create_app

    first = create_app(library, actor_id=ACTOR).state.console.sessions.token
    second = create_app(library, actor_id=ACTOR).state.console.sessions.token
    assert first != second and len(first) >= 40
    assert login_url("127.0.0.1", 8765, first) == f"http://127.0.0.1:8765/login?token={first}"


def test_logout_ends_the_session(client):
    page = client.get("/skills")
    assert client.post("/logout", data={"csrf": csrf_of(page.text)}).status_code == 200
    assert client.get("/skills").status_code == 401


# -- the Skills page ---------------------------------------------------------------------
def test_skills_page_lists_name_version_status_reliability_runs_last_outcome(client, skill_name):
    html = client.get("/skills").text
    row = html[html.index(f">{skill_name}</a>"):]
    row = row[: row.index("</tr>")]
    assert ">v1<" in row and "active" in row
    assert ">0.67<" in row  # Laplace (3 + 1) / (4 + 2): the learning success plus two of three runs
    assert "<td>4</td>" in row and "success" in row  # four outcomes, the last one a success
    assert f'acting as <b id="actor">{ACTOR}</b>' in html


def test_skills_search_runs_fetch_and_filters_and_sorts(client, library, skill_name):
    from skill_library.models import Skill

    library.add(Skill.from_function("def shout(text: str) -> str:\n    return text.upper()\n",
                                    when="turn a message into capital letters"))
    found = client.get("/skills", params={"q": "restock 7 apples"}).text
    assert f">{skill_name}</a>" in found and "similarity" in found
    first_row = found[found.index("<tbody>"):].split("</tr>")[0]
    assert f">{skill_name}</a>" in first_row  # the best match comes first
    by_name = client.get("/skills", params={"sort": "name", "order": "desc"}).text
    assert by_name.index(">shout</a>") < by_name.index(f">{skill_name}</a>")
    by_name = client.get("/skills", params={"sort": "name", "order": "asc"}).text
    assert by_name.index(f">{skill_name}</a>") < by_name.index(">shout</a>")
    none_retired = client.get("/skills", params={"status": "retired"}).text
    assert "No skill is retired." in none_retired and ">shout</a>" not in none_retired
    library.retire("shout")
    retired = client.get("/skills", params={"status": "retired"}).text
    assert ">shout</a>" in retired and f">{skill_name}</a>" not in retired


def test_skills_page_empty_state_and_bad_filters_are_plain_messages(client):
    assert "holds no skills yet" in client.get("/skills").text
    bad = client.get("/skills", params={"status": "bogus"})
    assert bad.status_code == 400 and "status must be one of" in message_of(bad.text)
    bad = client.get("/skills", params={"sort": "nope"})
    assert bad.status_code == 400 and "sort must be one of" in message_of(bad.text)
    assert "Traceback" not in bad.text


# -- a skill's page ----------------------------------------------------------------------
def test_skill_page_shows_code_when_examples_parameters_versions_chart_and_traces(client, library, skill_name):
    response = client.get(f"/skills/{skill_name}")
    assert response.status_code == 200
    html = response.text
    skill = library.get(skill_name)
    assert skill.when in html
    assert '<div class="code"><pre>' in html and '<span class="k">def</span>' in html  # pygments
    assert f'<span class="nf">{skill_name}</span>' in html
    assert 'id="parameters"' in html and "<code>count</code>" in html
    [example] = library.examples(skill_name)
    assert example.text in html
    assert f'src="/skills/{skill_name}/chart.png' in html
    assert 'id="versions"' in html
    assert html.count('<details class="trace">') == 4  # the learned trace and three runs
    assert html.count("· v1 ·") == 4  # each with the version it ran
    assert "Arguments: count=4." in html and "<code>restock</code>" in html  # a run's task names its arguments
    css = client.get("/static/code.css")
    assert css.status_code == 200 and ".code .k" in css.text
    assert client.get("/static/console.css").status_code == 200


def test_skill_page_shows_the_docstring_as_written_and_each_parameters_description(client, library, skill_name):
    """The docstring keeps its lines (a pre-wrapped block, not one run-on paragraph); each
    parameter's description comes from its Args: line; the tools say their side effects."""
    from markupsafe import escape

    skill = library.get(skill_name)
    assert "\n\nArgs:\n    count (int): the count" in skill.description
    html = client.get(f"/skills/{skill_name}").text
    assert f'<pre class="docstring" id="docstring">{escape(skill.description)}</pre>' in html
    params = html[html.index('id="parameters"'):]
    assert "<tr><td><code>count</code></td><td>integer</td><td>yes</td><td>the count</td></tr>" in params
    tools = html[html.index('id="tools"'):]
    assert '<td><code>restock</code></td><td class="failure">undeclared: counted as side effects</td>' in tools
    assert "None mined" in html and 'id="status-hint"' not in html  # active: nothing to decide


def test_parameter_descriptions_are_read_from_google_numpy_and_sphinx_docstrings():
    from skill_library.console.evidence import docstring_parameters, parameter_rows
    from skill_library.models import Skill

    google = "Restock.\n\nArgs:\n    item (str): the item\n        to restock.\n    count: how many\n\nCalls restock."
    numpy = "Restock.\n\nParameters\n----------\nitem : str\n    the item\ncount : int\n    how many\n"
    sphinx = "Restock.\n\n:param item: the item\n   to restock.\n:param int count: how many\n:returns: the stock"
    assert docstring_parameters(google) == {"item": "the item to restock.", "count": "how many"}
    assert docstring_parameters(numpy) == {"item": "the item", "count": "how many"}
    assert docstring_parameters(sphinx) == {"item": "the item to restock.", "count": "how many"}
    assert docstring_parameters("Restock an item.") == {}
    code = f'def restock(item: str, count: int = 1) -> dict:\n    """{google}"""\n    return {{}}\n'
    rows = parameter_rows(Skill.from_function(code, when="restock an item"))
    assert [(r["name"], r["required"], r["default"], r["description"]) for r in rows] == [
        ("item", True, None, "the item to restock."), ("count", False, 1, "how many")]


def test_a_waiting_versions_page_says_what_it_waits_for_as_the_queue_does(client, library):
    from governed_world import PROPOSER, V2, WHEN

    from skill_library.models import Skill

    library.actors.add(PROPOSER)
    draft = library.propose(Skill.from_function(V2, when=WHEN, tools=["check", "restock"]), actor="bob")
    html = client.get(f"/skills/{draft.name}", params={"version": draft.version}).text
    hint = html[html.index('id="status-hint"'):]
    hint = hint[:hint.index("</p>")]
    assert '<span class="status draft">draft</span>: waiting in the' in hint
    assert "evaluate, then approve; or reject" in hint
    assert f"skills evaluate {draft.name} {draft.version} --suite FILE --world MODULE:NAME" in hint


def test_the_chart_is_a_png_of_the_outcomes(client, skill_name):
    from skill_library.console.charts import reliability_series

    response = client.get(f"/skills/{skill_name}/chart.png")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG\r\n\x1a\n") and len(response.content) > 5000
    outcomes = [{"version": 1, "success": s} for s in (True, True, False, True)]
    assert [round(y, 3) for _, y, _ in reliability_series(outcomes)[1]] == [0.667, 0.75, 0.6, 0.667]


def test_unknown_skill_and_version_are_plain_404_and_400(client, skill_name):
    missing = client.get("/skills/no_such_skill")
    assert missing.status_code == 404 and message_of(missing.text) == "no skill named &#39;no_such_skill&#39;"
    bad = client.get(f"/skills/{skill_name}", params={"version": "9"})
    assert bad.status_code == 400 and "has no version 9" in message_of(bad.text)
    assert client.get("/no/such/page").status_code == 404


def has_navigation(html: str) -> bool:
    """Whether the page's header links to every page (with or without the tenant)."""
    return re.search(r'<nav>\s*<a href="/skills[?"].*href="/review[?"].*href="/canaries[?"].*'
                     r'href="/subjects[?"].*</nav>', html, re.S) is not None


def test_every_error_page_has_the_navigation(client, app, library, monkeypatch):
    """A 404, a refusal without a session and a 500 each lead back to every page."""
    from starlette.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as stranger:
        pages = [client.get("/no/such/page"), client.get("/skills/no_such_skill"), stranger.get("/skills")]

    def broken(**_):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(library, "list", broken)
    pages.append(client.get("/skills"))
    assert [p.status_code for p in pages][:2] == [404, 404] and pages[-1].status_code == 500
    for page in pages:
        message_of(page.text)  # a message page
        assert has_navigation(page.text), page.text[:600]
    assert 'href="/review?tenant=acme"' in client.get("/no/such/page", params={"tenant": "acme"}).text


def test_a_logged_in_error_page_has_the_whole_header(client, app):
    """A 404 or a refusal seen while logged in keeps the tenant box, the actor and log out;
    without a session the page has the navigation only."""
    from starlette.testclient import TestClient

    for page in (client.get("/no/such/page"), client.get("/skills/no_such_skill"),
                 client.post("/review/approve", data={"csrf": csrf_of(client.get("/review").text)})):
        assert page.status_code in (400, 404)
        message_of(page.text)
        assert f'<b id="actor">{ACTOR}</b>' in page.text and 'action="/logout"' in page.text
        assert has_navigation(page.text)
    with TestClient(app, raise_server_exceptions=False) as stranger:
        alone = stranger.get("/no/such/page")
    assert alone.status_code == 404 and has_navigation(alone.text)
    assert 'id="actor"' not in alone.text and 'action="/logout"' not in alone.text


def test_a_refusal_of_a_row_no_longer_in_the_queue_is_listed_above_it(client, library):
    """A bulk call's refusal for a version the queue no longer shows (it moved meanwhile)
    is listed above the queue, once."""
    from governed_world import APPROVER, held

    library.actors.add(APPROVER)
    name, version = held(library)
    page = client.get("/review").text
    library.approve(name, version, actor=ACTOR)  # someone else was quicker
    done = client.post("/review/approve", data={"csrf": csrf_of(page), "pick": f"{name}:{version}"})
    assert done.status_code == 200 and "approved 0 of 1 selected; 1 refused" in done.text
    listed = done.text[done.text.index('<ul class="refusals"'):]
    assert listed.startswith('<ul class="refusals" role="alert"><li>' + f"{name} v{version} refused: ")
    assert '<ul class="refusals"' not in client.get("/review").text


def test_an_unexpected_error_is_a_plain_500_without_traceback(client, library, monkeypatch):
    def broken(**_):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(library, "list", broken)
    response = client.get("/skills")
    assert response.status_code == 500
    assert message_of(response.text) == "internal error (RuntimeError); see the server log"
    assert "secret internals" not in response.text and "Traceback" not in response.text


# -- Subjects ----------------------------------------------------------------------------
@pytest.fixture
def carol(library):
    """Six transitions of carol; the console's actor is an administrator (forget and
    opt-out need skill.admin)."""
    if hasattr(library, "actors"):
        from skill_library.governance import Actor

        library.actors.add(Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.admin"})))
    for n in range(6):
        library.patterns.record_transition("carol", "browsing", "checkout", session=f"s{n}")
    return "carol"


def test_subjects_page_explains_patterns_and_what_they_influence(client, carol):
    assert "Name a subject" in client.get("/subjects").text
    html = client.get("/subjects", params={"subject": carol}).text
    assert 'id="patterns"' in html and "checkout (1.00, 6)" in html
    assert "<b>nothing</b>" in html  # checkout is a state, not a skill: it influences nothing
    assert "No procedures extracted for carol." in html
    assert 'id="forget"' in html and 'id="opt-out"' in html
    empty = client.get("/subjects", params={"subject": "nobody"}).text
    assert "No usage patterns recorded for nobody." in empty


def test_forget_needs_the_csrf_token(client, library, carol):
    page = client.get("/subjects", params={"subject": carol})
    for data in ({"subject": carol}, {"subject": carol, "csrf": "forged"}):
        refused = client.post("/subjects/forget", data=data)
        assert refused.status_code == 403 and "CSRF token" in message_of(refused.text)
    assert library.explain(carol)["patterns"]  # nothing was deleted
    cross_site = client.post("/subjects/forget", data={"subject": carol, "csrf": csrf_of(page.text)},
                             headers={"Origin": "http://evil.example"})
    assert cross_site.status_code == 403 and "another site" in message_of(cross_site.text)
    assert library.explain(carol)["patterns"]
    done = client.post("/subjects/forget", data={"subject": carol, "csrf": csrf_of(page.text)})
    assert done.status_code == 200
    assert "forgot carol: 0 trace(s), 0 example(s), 0 outcome link(s), 6 transition(s), 0 procedure(s)" in done.text
    assert library.explain(carol)["patterns"] == []
    page = client.get("/subjects", params={"subject": carol})
    again = client.post("/subjects/forget", data={"subject": carol, "csrf": csrf_of(page.text)})
    assert again.status_code == 200 and "nothing is known about carol: nothing was removed" in again.text


def test_opt_out_stops_recording(client, library, carol):
    page = client.get("/subjects", params={"subject": carol})
    done = client.post("/subjects/opt-out", data={"subject": carol, "csrf": csrf_of(page.text)})
    assert done.status_code == 200 and "carol is opted out" in done.text
    assert library.explain(carol)["opted_out"] is True
    assert 'id="opt-out"' not in done.text and "opted out</span>" in done.text
    recorded = library.patterns.record_transition(carol, "browsing", "checkout", session="later")
    assert recorded.recorded is False and "opted out" in recorded.reason
    blank = client.post("/subjects/opt-out", data={"subject": " ", "csrf": csrf_of(page.text)})
    assert blank.status_code == 400 and "name a subject" in message_of(blank.text)


# -- serving -----------------------------------------------------------------------------
def test_loopback_hosts_are_told_apart():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20")


def test_cli_ui_refuses_a_non_loopback_host_without_the_flag(tmp_path):
    result = CliRunner().invoke(cli_app, ["ui", "--dir", str(tmp_path / "lib"), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to serve the console on 0.0.0.0" in result.output and "--allow-remote" in result.output


def test_cli_ui_refuses_an_unregistered_actor(tmp_path):
    folder = str(tmp_path / "lib")
    assert CliRunner().invoke(cli_app, ["init", "--dir", folder]).exit_code == 0
    result = CliRunner().invoke(cli_app, ["ui", "--dir", folder, "--actor", "nobody"])
    assert result.exit_code == 1 and "actor 'nobody' is not registered" in result.output


def test_serve_refuses_non_loopback_and_warns_with_allow_remote(library, monkeypatch):
    import uvicorn

    from skill_library.console import serve
    from skill_library.governance import Actor

    library.actors.add(Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.approve"})))

    with pytest.raises(ValueError, match="not a loopback address"):
        serve(library, actor_id=ACTOR, host="0.0.0.0")
    served, lines = [], []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(options))
    serve(library, actor_id=ACTOR, host="0.0.0.0", port=9999, allow_remote=True, announce=lines.append)
    assert lines[0].startswith("warning: serving on 0.0.0.0")
    assert "acting as alice" in lines[1]
    assert lines[2].startswith("open this URL to log in (it works once): http://0.0.0.0:9999/login?token=")
    assert served == [{"host": "0.0.0.0", "port": 9999, "log_level": "warning"}]


# -- tenants -----------------------------------------------------------------------------
def test_each_tenant_sees_only_its_own_skills_and_subjects(client, library, skill_name):
    from skill_library.governance import Actor
    from skill_library.models import Skill

    acme = library.for_tenant("acme")
    admin = Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.admin"}))
    for tenant in (library, acme):  # actors are registered per tenant
        if not any(a.id == ACTOR for a in tenant.actors.list()):
            tenant.actors.add(admin)
    acme.add(Skill.from_function("def shout(text: str) -> str:\n    return text.upper()\n",
                                 when="turn a message into capital letters"))
    acme.patterns.record_transition("carol", "browsing", "support", session="a1")
    library.patterns.record_transition("carol", "browsing", "checkout", session="d1")

    home = client.get("/skills").text
    assert f">{skill_name}</a>" in home and ">shout</a>" not in home
    theirs = client.get("/skills", params={"tenant": "acme"}).text
    assert ">shout</a>" in theirs and f">{skill_name}</a>" not in theirs
    assert 'href="/skills/shout?tenant=acme"' in theirs  # links keep the tenant
    assert '<option value="acme">' in home  # the tenant box suggests the known tenants
    assert ">shout</a>" not in client.get("/skills", params={"q": "capital letters"}).text
    assert client.get("/skills/shout").status_code == 404
    assert client.get("/skills/shout", params={"tenant": "acme"}).status_code == 200
    assert client.get(f"/skills/{skill_name}", params={"tenant": "acme"}).status_code == 404
    assert client.get("/skills/shout/chart.png").status_code == 404

    page = client.get("/subjects", params={"subject": "carol", "tenant": "acme"})
    assert "support (1.00, 1)" in page.text and "checkout" not in page.text
    done = client.post("/subjects/forget", data={"subject": "carol", "tenant": "acme", "csrf": csrf_of(page.text)})
    assert done.status_code == 200 and "0 outcome link(s), 1 transition(s)" in done.text
    assert acme.explain("carol")["patterns"] == []
    assert library.explain("carol")["patterns"][0]["distribution"] == {"checkout": {"probability": 1.0, "count": 1}}

    bad = client.get("/skills", params={"tenant": "../etc"})
    assert bad.status_code == 400 and "tenant" in message_of(bad.text)


def test_a_notice_is_shown_once_and_never_taken_from_the_url(client, carol):
    assert "you approved everything" not in client.get("/skills", params={"notice": "you approved everything"}).text
    page = client.get("/subjects", params={"subject": carol})
    done = client.post("/subjects/opt-out", data={"subject": carol, "csrf": csrf_of(page.text)})
    assert '<p class="notice" role="status">carol is opted out' in done.text
    assert 'class="notice"' not in client.get("/subjects", params={"subject": carol}).text


# -- quarantined versions in the review queue ----------------------------------------------
def _quarantine(library, name: str) -> None:
    """A failure burst quarantines ``name``; the console's actor is registered as an approver."""
    from skill_library.governance import Actor
    from skill_library.patterns.reliability import QUARANTINE_FAILURES, QUARANTINE_MIN_OUTCOMES

    library.actors.add(Actor(id=ACTOR, kind="user", permissions=["skill.approve"]))

    for ok in [True] * QUARANTINE_MIN_OUTCOMES + [False] * QUARANTINE_FAILURES:
        library.feedback(name, ok)
    assert library.get(name).status == "quarantined"


def _row(html: str, name: str, version: int) -> str:
    start = html.index(f'id="review-{name}-{version}"')
    return html[start:html.index('<tr class="details">', start)]


def test_a_quarantined_row_offers_lift_and_retire_with_its_reason_not_approve(client, library, skill_name):
    _quarantine(library, skill_name)
    version = library.get(skill_name).version
    row = _row(client.get("/review").text, skill_name, version)
    assert f'action="/review/{skill_name}/{version}/lift"' in row
    assert f'action="/review/{skill_name}/{version}/retire"' in row
    assert "/approve" not in row and "/reject" not in row and "/resume" not in row
    assert "lift the quarantine or retire" in row
    reason = library.audit(skill_name)[-1].reason
    assert reason and f'class="reason">{reason}<' in row.replace("&#39;", "'").replace("&quot;", '"')


def test_lifting_a_quarantine_from_the_console_needs_csrf_and_is_audited(client, library, skill_name):
    _quarantine(library, skill_name)
    version = library.get(skill_name).version
    page = client.get("/review")
    refused = client.post(f"/review/{skill_name}/{version}/lift", data={})
    assert refused.status_code == 403 and library.get(skill_name).status == "quarantined"
    wrong = client.post(f"/review/{skill_name}/{version}/resume", data={"csrf": csrf_of(page.text)})
    assert wrong.status_code == 400 and "is quarantined, not suspended" in message_of(wrong.text)
    done = client.post(f"/review/{skill_name}/{version}/lift", data={"csrf": csrf_of(page.text)})
    assert done.status_code == 200, message_of(done.text)
    assert f"lifted the quarantine of {skill_name} v{version}: now active" in done.text
    assert library.get(skill_name).status == "active"
    event = library.audit(skill_name)[-1]
    assert (event.from_status, event.to_status, event.actor) == ("quarantined", "active", ACTOR)
    assert f'id="review-{skill_name}-{version}"' not in done.text


def test_retiring_a_quarantined_version_from_the_console(client, library, skill_name):
    _quarantine(library, skill_name)
    version = library.get(skill_name).version
    page = client.get("/review")
    done = client.post(f"/review/{skill_name}/{version}/retire", data={"csrf": csrf_of(page.text)})
    assert done.status_code == 200 and f"retired {skill_name} v{version}" in done.text
    assert library.get(skill_name, version).status == "retired"
    assert library.audit(skill_name)[-1].actor == ACTOR


def test_a_suspended_row_offers_resume_and_retire_and_resume_works(client, library, skill_name):
    from skill_library.governance import Actor, ToolSpec

    library.actors.add(Actor(id=ACTOR, kind="user", permissions=["skill.approve"]))
    stricter = {"type": "object", "required": ["item", "count", "aisle"],
                "properties": {"item": {"type": "string"}, "count": {"type": "integer"}, "aisle": {"type": "string"}}}
    library.register_tools({"restock": ToolSpec(schema=stricter, side_effects=True)})
    assert library.get(skill_name).status == "suspended"
    version = library.get(skill_name).version
    page = client.get("/review")
    row = _row(page.text, skill_name, version)
    assert f'action="/review/{skill_name}/{version}/resume"' in row
    assert f'action="/review/{skill_name}/{version}/retire"' in row
    assert "/approve" not in row and "/lift" not in row and "resume or retire" in row
    assert "held for a person" in row
    done = client.post(f"/review/{skill_name}/{version}/resume",
                       data={"csrf": csrf_of(page.text), "reason": "aisle has a default"})
    assert done.status_code == 200, message_of(done.text)
    assert f"resumed {skill_name} v{version}: now active" in done.text
    event = library.audit(skill_name)[-1]
    assert (event.to_status, event.actor, event.reason) == ("active", ACTOR, "aisle has a default")
