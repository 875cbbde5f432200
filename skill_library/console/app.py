"""The review console's ASGI app: routes, login, the page wrapper and error pages.

``create_app(library, actor_id=...)`` builds a Starlette app over one open library. Pages
are server-rendered jinja2 templates (``templates/``); every asset is served by the app
(``static/``, the pygments stylesheet, charts as PNG). Handlers are plain functions run in
Starlette's thread pool, one at a time (:attr:`Console.lock`): the library is one local
store used by one person, and serialising keeps its connections and sandbox simple.

Refusals and errors are rendered as plain messages with a fitting status (the library's
own errors 400/403/404, anything else 500 with its type only); a traceback never reaches
the browser (it goes to the server's log).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from skill_library.console.auth import (
    COOKIE_NAME,
    CSRF_FIELD,
    SESSION_SECONDS,
    ConsoleRefusal,
    Session,
    Sessions,
    has_permission,
    same_origin,
)
from skill_library.errors import PermissionDenied, SkillLibraryError, SkillNotFoundError
from skill_library.governance.actors import Actor, Permission

if TYPE_CHECKING:
    from skill_library.library import SkillLibrary

__all__ = ["Console", "create_app"]

log = logging.getLogger("skill_library.console")

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))

Handler = Callable[["Console", Request, Session], Response]


class Console:
    """What every page needs: the library (and its tenant views), the actor, sessions."""

    def __init__(self, library: "SkillLibrary", actor_id: str, sessions: Sessions) -> None:
        self.library = library
        self.actor_id = actor_id
        self.sessions = sessions
        self.lock = threading.Lock()

    @property
    def home_tenant(self) -> str:
        """The tenant the library was opened on (``default`` before tenancy)."""
        return str(getattr(self.library, "tenant", "default"))

    def tenant_of(self, request: Request, form: dict[str, Any] | None = None) -> str:
        """The tenant a request names (query ``tenant`` or the form's), default the home one."""
        value = (form or {}).get("tenant") or request.query_params.get("tenant") or ""
        return str(value).strip() or self.home_tenant

    def view(self, tenant: str) -> "SkillLibrary":
        """The library as seen by ``tenant`` (``library.for_tenant``, which keeps its views)."""
        if tenant == self.home_tenant:
            return self.library
        for_tenant = getattr(self.library, "for_tenant", None)
        if for_tenant is None:
            raise ConsoleRefusal(f"this library has no tenants; only {self.home_tenant!r} exists", 400)
        view: SkillLibrary = for_tenant(tenant)
        return view

    def known_tenants(self) -> list[str]:
        """Tenants holding at least one skill in which the console's actor is registered
        (suggestions for the tenant box: other tenants' names are not shown)."""
        tenants = getattr(self.library.context.store, "tenants", None)
        found = sorted({self.home_tenant, *(tenants() if tenants is not None else ())})
        readable = []
        for tenant in found:
            try:
                self.check_reader(tenant)
            except (PermissionDenied, ConsoleRefusal, ValueError):
                continue
            readable.append(tenant)
        return readable

    def check_reader(self, tenant: str) -> None:
        """Refuse every page (reads too) of another tenant in which the console's actor is
        not registered: :class:`PermissionDenied` names the actor and the tenant. (The
        home tenant's registration is checked when the console starts: console.server.)"""
        if tenant != self.home_tenant:
            self.actor(self.view(tenant))

    def actor(self, library: "SkillLibrary") -> Actor:
        """The console's actor as ``library`` registers it (:class:`PermissionDenied` when
        it is not registered in that tenant)."""
        return library.resolve_actor(self.actor_id)

    def require(self, library: "SkillLibrary", action: str, permission: Permission) -> None:
        """Refuse ``action`` unless the console's actor holds ``permission``."""
        if not has_permission(self.actor(library), permission):
            raise PermissionDenied(f"actor {self.actor_id!r} may not {action}: it lacks the permission {permission!r}")

    def render(self, request: Request, session: Session, template: str, status_code: int = 200,
               **context: Any) -> Response:
        """A page: ``template`` with the shared context (actor, tenant, CSRF token, links)."""
        tenant = context.pop("tenant", None) or self.tenant_of(request)
        notice, session.notice = session.notice, None
        shared = {
            "actor_id": self.actor_id, "tenant": tenant, "home_tenant": self.home_tenant,
            "csrf": session.csrf, "csrf_field": CSRF_FIELD, "notice": notice,
            "location": self.library.location, "link": _link, "tenants": self.known_tenants(),
        }
        return templates.TemplateResponse(request, template, {**shared, **context}, status_code=status_code)


def _link(path: str, **params: Any) -> str:
    """``path`` with the non-empty ``params`` as its query string."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{path}?{query}" if query else path


def message_page(request: Request, message: str, status_code: int, *, title: str = "Refused") -> Response:
    """A plain message page (used for refusals and errors, also without a session), with the
    navigation to every page (which asks for the login when there is no session)."""
    tenant = request.query_params.get("tenant") or None
    return templates.TemplateResponse(
        request, "message.html",
        {"title": title, "message": message, "link": _link, "csrf": None, "nav": True, "tenant": tenant},
        status_code=status_code,
    )


def session_message(console: Console, request: Request, session: Session, message: str, status_code: int,
                    *, title: str) -> Response:
    """A message page for a logged-in browser: the whole header (navigation, tenant box,
    actor, log out), as on every other page; the plain :func:`message_page` when that
    header cannot be drawn (the library itself failing)."""
    try:
        with console.lock:
            return console.render(request, session, "message.html", status_code=status_code,
                                  title=title, message=message, nav=True)
    except Exception:  # the plain page needs nothing of the library
        log.exception("console: the message page's header failed on %s", request.url.path)
        return message_page(request, message, status_code, title=title)


def error_status(exc: BaseException) -> int | None:
    """The status a library error is shown with (None: not one of the library's errors)."""
    if isinstance(exc, ConsoleRefusal):
        return exc.status_code
    name = type(exc).__name__
    if isinstance(exc, SkillNotFoundError) or name.endswith("NotFoundError"):
        return 404
    if isinstance(exc, PermissionDenied):
        return 403
    if isinstance(exc, (SkillLibraryError, ValidationError, ValueError)):
        return 400
    return None


def page(*, write: bool = False) -> Callable[[Handler], Callable[[Request], Response]]:
    """Wrap a handler: a live session is required, writes need the CSRF token and the same
    origin; the library is used by one handler at a time; errors become plain messages."""

    def wrap(handler: Handler) -> Callable[[Request], Response]:
        @functools.wraps(handler)
        def endpoint(request: Request) -> Response:
            console: Console = request.app.state.console
            session = console.sessions.get(request.cookies.get(COOKIE_NAME))
            if session is None:
                return message_page(
                    request, "not logged in: open the login URL that `skills ui` printed", 401,
                    title="Log in",
                )
            try:
                with console.lock:  # reads too: only tenants the actor is registered in
                    console.check_reader(console.tenant_of(request, request.state.form if write else None))
                    if write:
                        if not same_origin(request.headers.get("origin"), request.headers.get("host")):
                            raise ConsoleRefusal("a form from another site was refused")
                        form = request.state.form
                        session.check_csrf(form.get(CSRF_FIELD))
                    return handler(console, request, session)
            except Exception as exc:  # every failure is a plain message, never a traceback
                status = error_status(exc)
                if status is None:
                    log.exception("console: unexpected error on %s %s", request.method, request.url.path)
                    return message_page(request, f"internal error ({type(exc).__name__}); see the server log",
                                        500, title="Error")  # plain: the library may be what failed
                if isinstance(exc, ValidationError):
                    text = "; ".join(str(e.get("msg", "")) for e in exc.errors())
                else:
                    plain_key_error = type(exc) is KeyError and exc.args
                    text = str(exc.args[0]) if plain_key_error else str(exc)
                return session_message(console, request, session, text, status,
                                       title="Refused" if status == 403 else "Error")

        return endpoint

    return wrap


#: headers on every console response: it is never framed (clickjacking from another local
#: port: SameSite cookies do not help, it is the same site) and runs no inline script
SECURITY_HEADERS: dict[str, str] = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'self'; frame-ancestors 'none'; script-src 'self'; "
                                "object-src 'none'; base-uri 'none'; form-action 'self'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a browser send Origin: null on a form post
}


class _SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response (pages, messages, static files)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.decode("latin-1").lower() not in _HEADER_NAMES]
                headers += [(k.lower().encode("latin-1"), v.encode("latin-1"))
                            for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


_HEADER_NAMES = frozenset(k.lower() for k in SECURITY_HEADERS)


class _FormMiddleware:
    """Reads a POST's form before the (sync) handler runs: ``request.state.form`` (each
    field's last value) and ``request.state.form_lists`` (every value of each field: the
    review queue's checked rows)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            request = Request(scope, receive)
            try:
                form = await request.form()
                values = {k: v for k, v in form.items() if isinstance(v, str)}
                lists = {k: [v for v in form.getlist(k) if isinstance(v, str)] for k in form}
            except Exception:  # an unparsable body is an empty form (refused by the CSRF check)
                values, lists = {}, {}
            scope.setdefault("state", {}).update(form=values, form_lists=lists)

            async def empty() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            await self.app(scope, empty, send)
            return
        await self.app(scope, receive, send)


def login(request: Request) -> Response:
    """``/login?token=...``: spend the one-time token, set the session cookie."""
    console: Console = request.app.state.console
    try:
        session = console.sessions.login(request.query_params.get("token"))
    except ConsoleRefusal as exc:
        return message_page(request, str(exc), exc.status_code)
    response = RedirectResponse("/skills", status_code=303)
    response.set_cookie(COOKIE_NAME, session.id, max_age=SESSION_SECONDS, httponly=True, samesite="strict")
    return response


@page(write=True)
def logout(console: Console, request: Request, session: Session) -> Response:
    console.sessions.end(session.id)
    response = message_page(request, "logged out; restart `skills ui` for a new login link", 200, title="Logged out")
    response.delete_cookie(COOKIE_NAME)
    return response


def code_css(request: Request) -> Response:
    """The pygments stylesheet for highlighted code."""
    from skill_library.console.skills import CODE_FORMATTER

    return PlainTextResponse(CODE_FORMATTER.get_style_defs(".code"), media_type="text/css")


def home(request: Request) -> Response:
    return RedirectResponse("/skills", status_code=303)


def not_found(request: Request, exc: Exception) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.get(request.cookies.get(COOKIE_NAME))
    text = f"no page at {request.url.path}"
    if session is None:
        return message_page(request, text, 404, title="Not found")
    return session_message(console, request, session, text, 404, title="Not found")


def server_error(request: Request, exc: Exception) -> Response:
    log.exception("console: unexpected error", exc_info=exc)
    return message_page(request, f"internal error ({type(exc).__name__}); see the server log", 500, title="Error")


def create_app(library: "SkillLibrary", *, actor_id: str, token: str | None = None) -> Starlette:
    """The console over ``library``, acting as ``actor_id``; ``token`` is the one-time login
    token (random when not given; read it back from ``app.state.console.sessions.token``)."""
    from skill_library.console import canaries, review, skills, subjects

    routes = [
        Route("/", home),
        Route("/login", login),
        Route("/logout", logout, methods=["POST"]),
        Route("/static/code.css", code_css),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        *skills.routes(), *review.routes(), *canaries.routes(), *subjects.routes(),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found, 500: server_error})
    app.add_middleware(_FormMiddleware)
    app.add_middleware(_SecurityHeadersMiddleware)
    app.state.console = Console(library, actor_id, Sessions(token))
    return app


def redirect(session: Session, path: str, *, notice: str, **params: Any) -> Response:
    """A 303 back to a page after a write; that page shows ``notice`` once."""
    session.notice = notice
    return RedirectResponse(_link(path, **params), status_code=303)
