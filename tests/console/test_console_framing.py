"""The console is never framed and reads only tenants its actor is registered in (issue 23,
item 9): X-Frame-Options DENY and a CSP with frame-ancestors 'none' and no inline script on
every response; a page of another tenant is refused (403) and its name is not suggested."""

from __future__ import annotations

import html

from conftest import ACTOR, message_of


def test_every_response_forbids_framing_and_inline_script(client, anonymous, skill_name):
    for response in (client.get("/skills"), client.get(f"/skills/{skill_name}"), client.get("/review"),
                     client.get("/static/code.css"), client.get("/no-such-page"), anonymous.get("/skills")):
        assert response.headers["x-frame-options"] == "DENY", response.url
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"


def test_reads_are_limited_to_the_tenants_the_actor_is_registered_in(client, library, skill_name):
    from skill_library.models import Skill

    other = library.for_tenant("globex")  # the console's actor is not registered there
    assert not any(a.id == ACTOR for a in other.actors.list())
    other.add(Skill.from_function("def shout(text: str) -> str:\n    return text.upper()\n",
                                  when="turn a message into capital letters"))
    for path in ("/skills", "/skills/shout", "/review", "/subjects"):
        page = client.get(path, params={"tenant": "globex", "subject": "carol"})
        assert page.status_code == 403, path
        assert f"actor {ACTOR!r} is not registered in tenant 'globex'" in html.unescape(message_of(page.text))
        assert ">shout</a>" not in page.text
    home = client.get("/skills").text
    assert '<option value="globex">' not in home and f">{skill_name}</a>" in home
