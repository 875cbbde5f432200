"""ScriptedChatServer: a fake OpenAI-compatible chat endpoint for tests (the only fake).

A real HTTP server (``http.server`` in a thread on 127.0.0.1, a free port) that answers
``POST /v1/chat/completions`` with scripted replies, in order, and records every request
it received, so tests drive the real ``openai`` client over real HTTP::

    with ScriptedChatServer([json_reply({"name": "x"}), "plain text",
                             tool_calls_reply(("search", {"q": "x"})),
                             HTTPErrorReply(503, "overloaded")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...
        server.requests[1]["messages"][-1]["content"]   # what the client sent

A scripted reply is a string (assistant content), a :class:`Reply` (content and/or tool
calls, finish reason, usage numbers, or ``usage=False`` for a response without a ``usage``
object), an :class:`HTTPErrorReply`, or a callable taking the request body and returning
one of those. When the script runs out the server answers HTTP 500 with
a message saying so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """An assistant message: ``content`` and/or ``tool_calls`` as (name, arguments) pairs.

    ``usage=False`` leaves ``usage`` out of the response (as some servers do); otherwise it
    reports ``prompt_tokens``/``completion_tokens`` (the server's defaults when None).
    """

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None
    usage: bool = True


@dataclass
class HTTPErrorReply:
    """Answer with an HTTP error status and an OpenAI-style error body."""

    status: int
    message: str = "scripted error"
    type: str = "server_error"


Scripted = str | Reply | HTTPErrorReply | Callable[[dict[str, Any]], Any]


def json_reply(obj: Any, **fields: Any) -> Reply:
    """A reply whose content is ``obj`` encoded as JSON."""
    return Reply(content=json.dumps(obj), **fields)


def tool_calls_reply(*calls: tuple[str, dict[str, Any] | str], content: str | None = None) -> Reply:
    """A reply in which the assistant calls tools: ``("name", {"arg": 1})`` pairs."""
    return Reply(content=content, tool_calls=list(calls))


class ScriptedChatServer:
    """A fake chat-completions endpoint answering from a script; see the module docstring.

    ``prompt_tokens``/``completion_tokens`` are the usage numbers reported for replies that
    do not set their own. ``delay`` (seconds) is waited before each answer (for timeouts).
    """

    def __init__(
        self,
        replies: Iterable[Scripted] = (),
        *,
        model: str = "scripted-model",
        prompt_tokens: int = 100,
        completion_tokens: int = 20,
        delay: float = 0.0,
    ) -> None:
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._script: list[Scripted] = list(replies)
        self._lock = threading.Lock()
        self._counter = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> "ScriptedChatServer":
        handler = _handler_for(self)
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
            name="ScriptedChatServer", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "ScriptedChatServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedChatServer is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give the ``openai`` client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- script ---------------------------------------------------------------------------

    def add(self, *replies: Scripted) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been served yet."""
        with self._lock:
            return len(self._script)

    def last_user_message(self, request: int = -1) -> str:
        """The content of the last user message of a recorded request."""
        messages = self.requests[request]["messages"]
        return next(m["content"] for m in reversed(messages) if m["role"] == "user")

    def _next(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            if not self._script:
                return 500, _error_body(
                    f"ScriptedChatServer: no scripted reply left for request "
                    f"{len(self.requests)}", "server_error"
                )
            scripted = self._script.pop(0)
            self._counter += 1
            number = self._counter
        if callable(scripted) and not isinstance(scripted, (Reply, HTTPErrorReply)):
            scripted = scripted(body)
        if isinstance(scripted, HTTPErrorReply):
            return scripted.status, _error_body(scripted.message, scripted.type)
        if isinstance(scripted, str):
            scripted = Reply(content=scripted)
        if not isinstance(scripted, Reply):
            raise TypeError(f"cannot serve scripted reply {scripted!r}")
        return 200, self._completion(scripted, number, body)

    def _completion(self, reply: Reply, number: int, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for i, (name, args) in enumerate(reply.tool_calls)
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        prompt = self.prompt_tokens if reply.prompt_tokens is None else reply.prompt_tokens
        completion = (
            self.completion_tokens if reply.completion_tokens is None else reply.completion_tokens
        )
        completion_body: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or body.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage:
            completion_body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return completion_body


class _QuietServer(ThreadingHTTPServer):
    """Does not print a traceback when a client hung up (for example after a timeout)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _handler_for(server: ScriptedChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            server.paths.append(self.path)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, _error_body(f"no route {self.path}", "not_found"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error_body("request body is not JSON", "invalid_request"))
                return
            if server.delay:
                time.sleep(server.delay)
            status, answer = server._next(body)
            self._send(status, answer)

        def do_GET(self) -> None:  # noqa: N802
            server.paths.append(self.path)
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": server.model, "object": "model", "created": 0, "owned_by": "tests"}
                ]})
            else:
                self._send(404, _error_body(f"no route {self.path}", "not_found"))

    return Handler
