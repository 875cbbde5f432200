"""The Subjects page: what the library inferred about a subject, with forget and opt-out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skill_library.console.app import Console, page, redirect
from skill_library.console.auth import CONSOLE_PERMISSIONS, Session
from skill_library.erasure import ForgetReport

__all__ = ["routes"]


def _subject(value: object) -> str:
    subject = str(value or "").strip()
    if not subject:
        raise ValueError("name a subject (a user, an agent or a tenant)")
    return subject


@page()
def subjects_page(console: Console, request: Request, session: Session) -> Response:
    """``/subjects?subject=``: ``library.explain(subject)``."""
    tenant = console.tenant_of(request)
    library = console.view(tenant)
    subject = request.query_params.get("subject", "").strip()
    explained = library.explain(subject) if subject else None
    return console.render(request, session, "subjects.html", tenant=tenant, subject=subject,
                          explained=explained, page_name="subjects")


@page(write=True)
def forget(console: Console, request: Request, session: Session) -> Response:
    """``POST /subjects/forget``: ``library.forget(subject)`` (an administrator's action)."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    subject = _subject(form.get("subject"))
    console.require(library, f"forget subject {subject!r}", CONSOLE_PERMISSIONS["forget"])
    deleted = library.forget(subject)
    return redirect(session, "/subjects", subject=subject, tenant=tenant,
                    notice=ForgetReport(**deleted).summary())


@page(write=True)
def opt_out(console: Console, request: Request, session: Session) -> Response:
    """``POST /subjects/opt-out``: ``library.opt_out(subject)`` (an administrator's action)."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    subject = _subject(form.get("subject"))
    console.require(library, f"opt subject {subject!r} out", CONSOLE_PERMISSIONS["opt_out"])
    library.opt_out(subject)
    return redirect(session, "/subjects", subject=subject, tenant=tenant,
                    notice=f"{subject} is opted out: nothing about them is recorded or used")


def routes() -> list[Route]:
    return [
        Route("/subjects", subjects_page),
        Route("/subjects/forget", forget, methods=["POST"]),
        Route("/subjects/opt-out", opt_out, methods=["POST"]),
    ]
