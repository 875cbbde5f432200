"""The MCP server over HTTP authenticates every request with a bearer token (issue 23, servers).

Before, any local process with no credentials could run skills through ``--http``. Now the
HTTP app exists only with a token verifier (:class:`BearerToken`); a request without the
token, or with another one, is refused with 401 before any tool runs.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402
from desk_tools import CANCELLED, TOOLS  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from skill_library.integrations import mcp_server  # noqa: E402
from skill_library.integrations.mcp_server import BearerToken, SkillServer, http_token  # noqa: E402

TOKEN = secrets.token_urlsafe(32)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "attacker", "version": "1"}}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "cancel_every_order", "arguments": {"email": "alice@example.com"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextlib.contextmanager
def _serving(app):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            anyio.run(anyio.sleep, 0.02)
        assert server.started
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_an_http_app_without_a_token_is_refused(desk):
    with pytest.raises(ValueError, match="needs a bearer token: set SKILLS_MCP_TOKEN"):
        SkillServer(desk, TOOLS).server.streamable_http_app(host="127.0.0.1")
    with pytest.raises(ValueError, match="needs a bearer token"):
        SkillServer(desk, TOOLS).server.sse_app()


def test_requests_without_the_token_get_401_and_run_nothing(desk):
    CANCELLED.clear()
    app = SkillServer(desk, TOOLS, token=TOKEN).server.streamable_http_app(host="127.0.0.1")
    with _serving(app) as url:
        with httpx2.Client(timeout=30) as http:
            def post(body, authorization=None):
                extra = {"Authorization": authorization} if authorization else {}
                return http.post(url, json=body, headers={**HEADERS, **extra}).status_code

            statuses = {
                "none": post(INIT),
                "call": post(CALL),
                "wrong": post(INIT, f"Bearer {TOKEN}x"),
                "prefix": post(INIT, f"Bearer {TOKEN[:-1]}"),
                "basic": post(INIT, f"Basic {TOKEN}"),
                "get": http.get(url, headers={"Accept": "text/event-stream"}).status_code,
            }
            challenge = http.post(url, json=INIT, headers=HEADERS).headers.get("www-authenticate", "")
    assert statuses == dict.fromkeys(statuses, 401), statuses
    assert challenge.startswith("Bearer")
    assert CANCELLED == []  # no tool ran


def test_requests_with_the_token_pass(desk):
    CANCELLED.clear()
    app = SkillServer(desk, TOOLS, token=TOKEN).server.streamable_http_app(host="127.0.0.1")
    with _serving(app) as url:
        async def main():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    fetched = await client.call_tool("fetch_skills", {"task": "count the orders of alice", "k": 1})
                    ran = await client.call_tool("cancel_every_order", {"email": "alice@example.com"})
                    return fetched, ran

        fetched, ran = anyio.run(main)
    assert fetched.structured_content["matches"][0]["name"] == "count_orders"
    assert not ran.is_error and CANCELLED == ["W1", "W2"]


def test_the_token_is_required_strong_and_never_shown(monkeypatch):
    monkeypatch.delenv("SKILLS_MCP_TOKEN", raising=False)
    with pytest.raises(ValueError, match="needs a bearer token: set SKILLS_MCP_TOKEN"):
        http_token()
    for weak in ("short", " " + TOKEN, TOKEN + "\n", "a" * 31):
        with pytest.raises(ValueError, match="at least 32 printable characters"):
            http_token(weak)
    monkeypatch.setenv("SKILLS_MCP_TOKEN", TOKEN)
    assert http_token() == TOKEN
    assert TOKEN not in repr(BearerToken(TOKEN))

    async def check():
        verifier = BearerToken(TOKEN)
        good = await verifier.verify_token(TOKEN)
        return good, await verifier.verify_token(TOKEN.upper() + "!"), await verifier.verify_token("")

    good, bad, empty = anyio.run(check)
    assert good is not None and good.scopes == [mcp_server.SCOPE] and TOKEN not in repr(good)
    assert bad is None and empty is None


def test_serve_refuses_http_without_a_token_before_binding(desk, monkeypatch):
    monkeypatch.delenv("SKILLS_MCP_TOKEN", raising=False)
    with pytest.raises(ValueError, match="needs a bearer token"):
        mcp_server.serve(desk, TOOLS, http="127.0.0.1:1")
