"""Fixtures of the review console's tests: a library with a learned, run skill; the app;
a logged-in HTTP client; a live server on loopback for the browser tests."""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest

from skill_library.models import Outcome, ToolCall, Trace

TOKEN = "test-login-token"
ACTOR = "alice"
STOCK: dict[str, int] = {}


def check(item: str) -> dict:
    return {"item": item, "stock": STOCK.get(item, 0)}


def restock(item: str, count: int) -> dict:
    STOCK[item] = STOCK.get(item, 0) + count
    return {"item": item, "stock": STOCK[item]}


TOOLS = {"check": check, "restock": restock}


def restock_trace() -> Trace:
    calls = [ToolCall(name="restock", arguments={"item": "apple", "count": 3}, result={"item": "apple", "stock": 3})]
    return Trace(task="restock 3 apples in the fruit aisle", params={"count": 3}, calls=calls,
                 outcome=Outcome(success=True, verifier="stock-audit"))


def seed(library) -> str:
    """Learn the restock skill and run it: two successes and a failure. Returns its name.
    The tenant's policy is widened first (an audited admin action) so the learned version
    activates rather than waiting for approval."""
    from skill_library.governance import Policy

    library.set_policy(Policy(auto_approve="all"), actor=None)
    learned = library.learn(restock_trace())
    assert learned.skill is not None, learned.reasons
    name = learned.skill.name
    for count, ok in ((5, True), (2, False), (4, True)):
        run = library.run(name, {"count": count}, TOOLS)
        library.feedback(name, ok, trace_id=run.trace.id)
    return name


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def message_of(html: str) -> str:
    match = re.search(r'id="message">(.*?)</p>', html, re.S)
    assert match, "not a message page"
    return match.group(1)


@pytest.fixture
def library(tmp_path, embedder):
    """A new library with the default, fail-closed policy (``auto_approve="read_only"``),
    as a deployment the console reviews would have; closed after the test."""
    from skill_library.library import SkillLibrary

    lib = SkillLibrary(tmp_path / "lib", embedder=embedder)
    yield lib
    lib.close()


@pytest.fixture
def skill_name(library) -> str:
    return seed(library)


@pytest.fixture
def app(library):
    from skill_library.console import create_app

    return create_app(library, actor_id=ACTOR, token=TOKEN)


@pytest.fixture
def anonymous(app):
    """A client that has not logged in."""
    from starlette.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def client(anonymous):
    """A client logged in with the one-time token."""
    response = anonymous.get(f"/login?token={TOKEN}")
    assert response.status_code == 200 and response.url.path == "/skills"
    return anonymous


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_server(app):
    """The app served by uvicorn on a free loopback port (base URL), stopped afterwards."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the console did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
