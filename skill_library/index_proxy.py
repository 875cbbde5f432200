"""An authenticating proxy in front of a Chroma server: no request reaches it without the token.

Chroma's Rust server (``chroma run``, what a shared deployment starts) has no authenticator:
every request is served, as the default tenant. Its versions up to 1.5.9 also carry an
unauthenticated remote-code-execution flaw (CVE-2026-45829). So the server binds to
loopback, and other hosts reach it only through this proxy, which refuses (401) every
request that does not carry ``Authorization: Bearer <token>``, before anything is sent on.

    chroma run --path DATA --host 127.0.0.1 --port 8001
    SKILLS_INDEX_TOKEN=... python -m skill_library.index_proxy --listen 10.0.0.5:8000 \\
        --upstream http://127.0.0.1:8001

The library then opens ``SkillLibrary(index="http://10.0.0.5:8000/NAME", index_token=...)``
(or ``SKILLS_INDEX_TOKEN``). Only Chroma's API (paths under ``/api/``) is forwarded; the
token is compared in constant time and removed before the request goes on; bodies are
size-capped. Put TLS in front (or use it on a private network only): the token travels in
clear over plain HTTP.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["MAX_BODY_BYTES", "IndexProxy", "main"]

#: the largest request body forwarded (an upsert of a big batch of vectors fits easily)
MAX_BODY_BYTES = 64 * 1024 * 1024
#: the environment variable holding the token (the same the library sends)
TOKEN_ENV = "SKILLS_INDEX_TOKEN"
#: the shortest token accepted
MIN_TOKEN_CHARS = 32
#: the only paths forwarded (Chroma's HTTP API)
API_PREFIX = "/api/"
#: seconds one upstream request may take
UPSTREAM_TIMEOUT_SECONDS = 60.0
#: headers never forwarded (hop-by-hop, and the credential itself)
_DROPPED = frozenset({
    b"authorization", b"host", b"connection", b"keep-alive", b"proxy-authorization", b"proxy-connection",
    b"te", b"trailer", b"transfer-encoding", b"upgrade", b"content-length",
})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def token_problem(token: str | None) -> str | None:
    """Why ``token`` cannot guard the index server, or None."""
    if not token:
        return (f"the index proxy needs a token: set {TOKEN_ENV} (python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))' makes one)")
    if len(token) < MIN_TOKEN_CHARS or token != token.strip() or not token.isprintable():
        return f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} printable characters with no surrounding spaces"
    return None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class IndexProxy:
    """The ASGI app: check the bearer token, forward ``/api/`` requests to ``upstream``.

    ``upstream`` must be on loopback (the Chroma server is never exposed itself). Every
    refusal is one line of JSON in Chroma's error shape (``{"error": KIND, "message": ...}``:
    its client raises ``AuthorizationError`` for the 401): 401 without the right token, 404 for a
    path outside the API, 413 for a body over :data:`MAX_BODY_BYTES`, 502 when Chroma
    cannot be reached."""

    def __init__(self, upstream: str, token: str) -> None:
        problem = token_problem(token)
        if problem is not None:
            raise ValueError(problem)
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream must be http(s)://HOST:PORT, got {upstream!r}")
        if not _loopback(parts.hostname):
            raise ValueError(
                f"--upstream host {parts.hostname!r} is not loopback: run the Chroma server on 127.0.0.1 "
                "behind this proxy (its own port is unauthenticated)"
            )
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self._expected = b"Bearer " + token.encode()
        self._client: Any = None

    def __repr__(self) -> str:
        return f"IndexProxy(upstream={self.upstream!r}, token=***)"

    def authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """True when exactly one Authorization header carries the token."""
        given = [value for name, value in headers if name.lower() == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # websockets and anything else: closed unanswered
            return
        headers = list(scope.get("headers", []))
        if not self.authorized(headers):
            await _answer(send, 401, "the index server needs the bearer token (SKILLS_INDEX_TOKEN / index_token=)",
                          [(b"www-authenticate", b'Bearer realm="skills-index"')], kind="AuthorizationError")
            return
        path = scope.get("path", "")
        if not path.startswith(API_PREFIX) or ".." in path.split("/"):
            await _answer(send, 404, f"only Chroma's API (paths under {API_PREFIX}) is served here")
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _answer(send, 413, f"request body over {MAX_BODY_BYTES} bytes")
                return
            if not message.get("more_body", False):
                break
        await self._forward(scope, headers, bytes(body), send)

    async def _forward(self, scope: Scope, headers: list[tuple[bytes, bytes]], body: bytes, send: Send) -> None:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_SECONDS, follow_redirects=False)
        url = self.upstream + scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        query = scope.get("query_string", b"")
        if query:
            url += "?" + query.decode("latin-1")
        sent = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers if k.lower() not in _DROPPED]
        try:
            response = await self._client.request(scope["method"], url, headers=sent, content=body)
        except httpx.HTTPError:
            await _answer(send, 502, "the Chroma server behind the proxy cannot be reached")
            return
        out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()
               if k.lower().encode() not in _DROPPED and k.lower() != "content-encoding"]
        content = response.content
        out.append((b"content-length", str(len(content)).encode()))
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        await send({"type": "http.response.body", "body": content})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                    self._client = None
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _answer(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None,
                  kind: str = "ProxyError") -> None:
    """A refusal in Chroma's error shape (``kind``: the error class its client raises)."""
    body = json.dumps({"error": kind, "message": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main(argv: list[str] | None = None) -> int:
    """``python -m skill_library.index_proxy --listen HOST:PORT --upstream URL`` (token: $SKILLS_INDEX_TOKEN)."""
    parser = argparse.ArgumentParser(prog="python -m skill_library.index_proxy", description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT the proxy serves on")
    parser.add_argument("--upstream", default="http://127.0.0.1:8001", help="the Chroma server (loopback)")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        print(f"error: --listen must be HOST:PORT, got {args.listen!r}", file=sys.stderr)
        return 2
    try:
        app = IndexProxy(args.upstream, os.environ.get(TOKEN_ENV, ""))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    uvicorn.run(app, host=host.strip("[]"), port=int(port), log_level="warning", server_header=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
