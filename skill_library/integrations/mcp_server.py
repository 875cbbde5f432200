"""An MCP server over a skill library (``mcp`` 2.x; install the ``[mcp]`` extra).

Tools: ``fetch_skills``, ``run_skill``, ``learn_trace``, ``record_outcome``, ``list_skills``,
``show_skill``, and one tool per active code skill (its name; description from ``when``;
input schema from its parameters). When that list changes (a trace learned here, or a skill
added, retired or imported by another process and noticed on the next call) the server
publishes a tools-list-changed event: to ``subscriptions/listen`` streams (protocol
2026-07-28) and as ``notifications/tools/list_changed`` on handshake-era sessions.

Every failure is a tool error (``is_error``) with a one-line message; the server keeps
serving. Library calls run on worker threads (at most :data:`MAX_CONCURRENT_CALLS` at a
time), so the event loop stays free and the embedding model, loaded once, is shared by every
call. Reads and runs are served concurrently: a fetch never waits behind another client's
run or learn. Calls that change what the server offers (``learn_trace``, ``record_outcome``,
re-reading the active skills) take one lock, one at a time. Every request is bounded by its
own named limit: a run by the sandbox ``Limits``, a trace by ``MAX_TRACE_CALLS`` (and its
replay's limits), a fetch by :data:`MAX_K`.

    skills serve-mcp --dir D --tools MODULE                    # stdio
    SKILLS_MCP_TOKEN=... skills serve-mcp --dir D --tools MODULE --http 127.0.0.1:8765   # HTTP, /mcp

Over HTTP every request must carry ``Authorization: Bearer <token>`` (the SDK's
``TokenVerifier`` and resource-server settings, :class:`BearerToken`): a request without
it, or with another token, gets 401 before it reaches a tool. The server refuses to build an
HTTP app with no token. Stdio needs none: its client is the process that started it.
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
import os
import threading
from typing import Any, Callable, Mapping

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from skill_library.errors import SkillLibraryError
from skill_library.library import SkillLibrary
from skill_library.models import Skill, SkillStatus
from skill_library.presentation.openai_tools import argument_problem, description_of
from skill_library.serialize import match_json, run_json, skill_json

__all__ = ["FIXED_TOOLS", "BearerToken", "SkillServer", "build_server", "http_token", "parse_http", "serve"]

log = logging.getLogger(__name__)

FIXED_TOOLS = ("fetch_skills", "run_skill", "learn_trace", "record_outcome", "list_skills", "show_skill")
MAX_K = 50
#: library calls served at the same time (worker threads); more wait for a free one
MAX_CONCURRENT_CALLS = 8
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
#: the environment variable holding the HTTP transport's bearer token
TOKEN_ENV = "SKILLS_MCP_TOKEN"
#: the shortest bearer token accepted (``secrets.token_urlsafe(32)`` makes 43 characters)
MIN_TOKEN_CHARS = 32
#: the scope every accepted token carries, and every HTTP request needs
SCOPE = "skills"
INSTRUCTIONS = (
    "A library of verified, reusable skills. Call fetch_skills(task) before planning; call a "
    "skill's own tool (or run_skill) to run it; record_outcome(name, succeeded, trace_id) after "
    "checking its result; learn_trace(trace) to save a verified successful trace as a new skill."
)

# errors a caller can act on: their message goes back as the tool error
_CALLER_ERRORS = (SkillLibraryError, ValueError, KeyError, TypeError)


class BearerToken:
    """A :class:`mcp.server.auth.provider.TokenVerifier` accepting one shared secret.

    The comparison takes the same time whatever the token sent (``hmac.compare_digest``);
    the secret never appears in a repr or a log."""

    def __init__(self, token: str) -> None:
        problem = token_problem(token)
        if problem is not None:
            raise ValueError(problem)
        self._token = token.encode()

    def __repr__(self) -> str:
        return "BearerToken(***)"

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access of ``token``: ``None`` (401) unless it is the secret."""
        if not hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self._token):
            return None
        return AccessToken(token="***", client_id="skills-mcp", scopes=[SCOPE])


def token_problem(token: str | None) -> str | None:
    """Why ``token`` cannot be the HTTP transport's bearer token, or None."""
    if not token:
        return (
            f"the MCP server over HTTP needs a bearer token: set {TOKEN_ENV} (for example to the "
            "output of: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if len(token) < MIN_TOKEN_CHARS or token != token.strip() or not token.isprintable():
        return (
            f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} printable characters with no surrounding "
            "spaces (python -c 'import secrets; print(secrets.token_urlsafe(32))' makes one)"
        )
    return None


def http_token(token: str | None = None) -> str:
    """The HTTP transport's bearer token: ``token``, else ``$SKILLS_MCP_TOKEN``; ValueError
    (one line saying how to make one) when there is none or it is too weak."""
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    problem = token_problem(token)
    if problem is not None:
        raise ValueError(problem)
    assert token is not None
    return token


class _Server(MCPServer):
    """MCPServer whose tool errors are one line, without the SDK's "Error executing tool" prefix,
    and which serves HTTP only with a token verifier."""

    def streamable_http_app(self, **kwargs: Any) -> Any:
        self._require_auth()
        return super().streamable_http_app(**kwargs)

    def sse_app(self, *args: Any, **kwargs: Any) -> Any:
        self._require_auth()
        return super().sse_app(*args, **kwargs)

    def _require_auth(self) -> None:
        if self._token_verifier is None:
            raise ValueError(token_problem(None))

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash: the SDK logs it and keeps its text on the server
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):  # arguments that do not fit the input schema
                raise ToolError("; ".join(_validation_line(e) for e in cause.errors())) from cause
            text = str(exc).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(" ".join(text.split())) from cause


def _validation_line(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
    return f"{where}: {error.get('msg', 'invalid')}"


class _SkillTool(Tool):
    """A registered tool whose schema is the skill's own and whose call runs the skill."""

    handler: Callable[[dict[str, Any]], Any] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        return await self.handler(arguments)


async def _placeholder(**kwargs: Any) -> None:  # only lends its metadata to a _SkillTool
    return None


class SkillServer:
    """The MCP server for ``library``; ``tools`` are the host tools skills may call."""

    def __init__(
        self,
        library: SkillLibrary,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        name: str = "skill-library",
        token: str | None = None,
        url: str = "http://127.0.0.1",
    ) -> None:
        """``token``: the bearer token HTTP requests must carry (required to serve HTTP;
        see :func:`http_token`); ``url``: where the server is reached (its OAuth issuer)."""
        self.library = library
        self.tools = dict(tools or {})
        self.tool_schemas = dict(tool_schemas or {}) or None
        auth: dict[str, Any] = {}
        if token is not None:
            auth = {
                "token_verifier": BearerToken(token),
                "auth": AuthSettings(issuer_url=url, resource_server_url=None,  # type: ignore[arg-type]
                                     required_scopes=[SCOPE]),
            }
        self.server: MCPServer = _Server(name=name, instructions=INSTRUCTIONS, log_level="WARNING", **auth)
        self._lock = threading.Lock()  # calls that change what the server offers: one at a time
        self._limiter = anyio.CapacityLimiter(MAX_CONCURRENT_CALLS)
        self._skill_tools: dict[str, tuple[int, str]] = {}  # name -> (version, when) registered
        self._synced_generation: int | None = None
        for fn in (self.fetch_skills, self.run_skill, self.learn_trace, self.record_outcome,
                   self.list_skills, self.show_skill):
            self.server.add_tool(fn, name=fn.__name__, description=(fn.__doc__ or "").strip())
        self._advertise_tools_list_changed()
        self._sync_skill_tools()

    def _advertise_tools_list_changed(self) -> None:
        """Handshake-era sessions: say ``tools.listChanged`` (modern ones derive it themselves)."""
        lowlevel = self.server._lowlevel_server  # noqa: SLF001 (the SDK asks for the flag per call)
        capabilities = lowlevel.get_capabilities

        def get_capabilities(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
            options = notification_options or NotificationOptions()
            options.tools_changed = True
            return capabilities(options, *args, **kwargs)

        lowlevel.get_capabilities = get_capabilities  # type: ignore[method-assign]

    # -- plumbing -----------------------------------------------------------------------
    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` on a worker thread beside other reads and runs; caller errors become ToolErrors."""
        try:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._limiter)
        except _CALLER_ERRORS as exc:
            raise ToolError(_one_line(exc)) from exc

    async def _exclusive(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` as :meth:`_call` does, under the server's lock (one such call at a time)."""

        def locked() -> Any:
            with self._lock:
                return fn(*args, **kwargs)

        return await self._call(locked)

    def _sync_skill_tools(self) -> bool:
        """Register a tool per active code skill, drop stale ones; True when the list changed."""
        read = self._active_skills()
        return read is not None and self._apply_skill_tools(*read)

    def _active_skills(self) -> tuple[int, dict[str, Skill]] | None:
        """(generation, the active code skills by name), or None when nothing changed since
        the last sync. Reads the library only (safe on any thread, beside other calls).

        Every change of the active skills bumps the store's index generation first, so an
        unchanged generation (one small query) means there is nothing to re-read.
        """
        generation = self.library.context.store.index_generation()
        if generation == self._synced_generation:
            return None
        wanted = {
            s.name: s
            for s in self.library.list(status="active")
            if s.kind == "code" and s.name not in FIXED_TOOLS
        }
        return generation, wanted

    def _apply_skill_tools(self, generation: int, wanted: dict[str, Skill]) -> bool:
        """Make the registered tools ``wanted``; on the event loop's thread (or before serving),
        where the SDK reads the tool table, so no request sees it half changed."""
        if self._synced_generation is not None and generation < self._synced_generation:
            return False  # a slower, older read: a newer one is applied already
        self._synced_generation = generation
        changed = False
        for gone in set(self._skill_tools) - set(wanted):
            self.server.remove_tool(gone)
            del self._skill_tools[gone]
            changed = True
        for skill in wanted.values():
            if self._skill_tools.get(skill.name) == (skill.version, skill.when):
                continue
            if skill.name in self._skill_tools:
                self.server.remove_tool(skill.name)
            self.server._tool_manager._tools[skill.name] = self._skill_tool(skill)  # noqa: SLF001
            self._skill_tools[skill.name] = (skill.version, skill.when)
            changed = True
        return changed

    def _skill_tool(self, skill: Skill) -> _SkillTool:
        base = Tool.from_function(_placeholder, name=skill.name, structured_output=False)
        fields = {f: getattr(base, f) for f in Tool.model_fields}
        fields.update(
            description=description_of(skill),
            parameters=skill.parameters or {"type": "object", "properties": {}},
            handler=functools.partial(self._run_skill_tool, skill.name),
            # the tool schemas this version was verified against (governance.tool_schemas)
            meta={**(base.meta or {}), "skill_library/tool_schemas": self.library.tool_schema_digests(
                skill.name, skill.version), "skill_library/version": skill.version},
        )
        return _SkillTool(**fields)

    async def _refresh(self, ctx: Context | None) -> None:
        """Re-read the active skills (on a worker thread, beside other calls), apply them here
        on the loop; tell clients when the tool list changed."""
        read = await self._call(self._active_skills)
        changed = read is not None and self._apply_skill_tools(*read)
        if not changed or ctx is None:
            return
        await ctx.notify_tools_changed()  # subscriptions/listen streams (2026-07-28)
        try:  # handshake-era sessions; dropped by the SDK on modern connections
            await ctx.session.send_tool_list_changed()
        except Exception as exc:  # a notification is best effort
            log.debug("tools/list_changed not sent: %s", exc)

    async def _run(self, name: str, args: Any, session: str | None = None) -> CallToolResult:
        skill = await self._call(self.library.get, name)
        if skill.status != "active" or skill.kind != "code":
            raise ToolError(f"skill {name!r} cannot run (it is {skill.status}, {skill.kind})")
        problem = argument_problem(skill, args)
        if problem is not None:
            raise ToolError(problem)
        run = await self._call(
            self.library.run, name, args, self.tools, tool_schemas=self.tool_schemas, session=session
        )
        data = run_json(run)
        text = json.dumps(data["value"]) if run.ok else f"skill {name} v{run.version} failed: {run.error or run.limit}"
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=data, is_error=not run.ok
        )

    async def _run_skill_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self._run(name, arguments)

    # -- the tools ----------------------------------------------------------------------
    async def fetch_skills(
        self, task: str, k: int = 3, min_reliability: float | None = None, session: str | None = None,
        args: dict[str, Any] | None = None, ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The k best skills for a task: name, when, parameters, similarity, reliability
        (with session: record_outcome may name that session). abstained / ambiguous and the
        reason: the library is not sure any of them applies, or cannot tell them apart; then
        use one only if it does exactly what the task asks. args: the task's values by
        parameter name (the email, the order id): the candidates' preconditions are then
        checked with this server's read-only tools (applies, applies_reason)."""
        await self._refresh(ctx)
        if not 1 <= k <= MAX_K:
            raise ToolError(f"k must be between 1 and {MAX_K}, got {k}")
        if args is not None and not isinstance(args, dict):
            raise ToolError("args must be an object of parameter name -> value")
        options: dict[str, Any] = {"min_reliability": min_reliability, "session": session}
        reads = {name: fn for name, fn in self.tools.items() if name in self.library.read_only_tools}
        if args:
            options["args"] = args
            if reads:
                options["read_tools"] = reads
        result = await self._call(self.library.fetch, task, k, **options)
        return {"matches": [match_json(m) for m in result], "abstained": bool(getattr(result, "abstained", False)),
                "ambiguous": bool(getattr(result, "ambiguous", False)), "reason": getattr(result, "reason", None)}

    async def run_skill(
        self, name: str, args: dict[str, Any] | None = None, session: str | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Run a skill in the sandbox with named arguments; returns its value, trace_id and
        outcome_kind (misuse: an input you passed was not found or invalid)."""
        return await self._run(name, args or {}, session=session)

    async def learn_trace(self, trace: dict[str, Any], ctx: Context | None = None) -> dict[str, Any]:
        """Learn a skill from a verified successful trace (trace fields or an OpenAI transcript)."""
        result = await self._exclusive(self.library.learn, trace)
        await self._refresh(ctx)
        return {
            "status": result.status,
            "skill": skill_json(result.skill) if result.skill else None,
            "duplicate_of": result.duplicate_of,
            "reasons": list(result.reasons),
        }

    async def record_outcome(
        self,
        name: str,
        succeeded: bool,
        version: int | None = None,
        trace_id: str | None = None,
        session: str | None = None,
        kind: str | None = None,
        wrong_skill: bool = False,
        reason: str | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record how a run of a skill went (after checking its result): name the run
        (trace_id from run_skill) or the session that fetched or ran it. kind: success,
        failure, misuse (your input was wrong), not_applicable; wrong_skill=true if the
        skill was the wrong one for the task (not held against it). One outcome per run."""
        from skill_library.outcomes import record_external

        skill = await self._exclusive(
            record_external, self.library, name, kind if kind is not None else succeeded,
            trace_id=trace_id, session=session, version=version, wrong_skill=wrong_skill, reason=reason,
        )
        return skill_json(skill)

    async def list_skills(self, status: SkillStatus | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """Every skill's current version (optionally only those with a status)."""
        await self._refresh(ctx)
        skills = await self._call(self.library.list, status=status)
        return {"skills": [skill_json(s) for s in skills]}

    async def show_skill(self, name: str, version: int | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """One skill (its active version, or a given version) with code and counts."""
        return skill_json(await self._call(self.library.get, name, version))


def build_server(
    library: SkillLibrary,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    **options: Any,
) -> MCPServer:
    """The :class:`MCPServer` of a :class:`SkillServer` (``options``: ``tool_schemas``, ``name``,
    ``token``, ``url``)."""
    return SkillServer(library, tools, **options).server


def _one_line(exc: BaseException) -> str:
    plain_key_error = isinstance(exc, KeyError) and not isinstance(exc, SkillLibraryError)
    text = str(exc.args[0]) if plain_key_error and exc.args else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def serve(
    library: SkillLibrary,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    *,
    http: str | None = None,
    token: str | None = None,
) -> None:
    """Serve over stdio, or streamable HTTP on ``http`` ("127.0.0.1:PORT", path ``/mcp``).

    Over HTTP every request must carry the bearer ``token`` (default ``$SKILLS_MCP_TOKEN``;
    ValueError when there is none), and the server binds to a loopback address only: the
    token travels in clear over plain HTTP.
    """
    if http is None:
        build_server(library, tools).run("stdio")
        return
    host, port = parse_http(http)
    secret = http_token(token)
    where = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    build_server(library, tools, token=secret, url=where).run("streamable-http", host=host, port=port)


def parse_http(http: str) -> tuple[str, int]:
    """``(host, port)`` of "HOST:PORT"; ValueError unless the host is a loopback address."""
    host, _, port = http.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http must be HOST:PORT, got {http!r}")
    if host not in LOOPBACK:
        raise ValueError(
            f"--http host {host!r} is not a loopback address: the bearer token travels in clear "
            f"over plain HTTP, bind it to {', '.join(sorted(LOOPBACK))} (with TLS in front for others)"
        )
    return host, int(port)
