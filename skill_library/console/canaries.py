"""The Canaries page: each canary's share, outcomes per version and significance test
state; promote the canary or roll it back (the library's governance calls, as the actor)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skill_library.console.app import Console, page, redirect
from skill_library.console.auth import Session

__all__ = ["routes"]


@page()
def canaries_page(console: Console, request: Request, session: Session) -> Response:
    """``/canaries``: ``library.canaries()``."""
    tenant = console.tenant_of(request)
    library = console.view(tenant)
    states = library.canaries()
    return console.render(request, session, "canaries.html", tenant=tenant, canaries=states, page_name="canaries")


@page(write=True)
def promote(console: Console, request: Request, session: Session) -> Response:
    """``POST /canaries/{name}/{version}/promote``: ``library.promote(name, version, actor=)``."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = request.path_params["name"], int(request.path_params["version"])
    skill = library.promote(name, version, actor=console.actor_id)
    return redirect(session, "/canaries", tenant=tenant, notice=f"promoted {name} v{version}: now {skill.status}")


@page(write=True)
def rollback(console: Console, request: Request, session: Session) -> Response:
    """``POST /canaries/{name}/{version}/rollback``: the canary goes back to ``approved``
    and the active version keeps every session (the governance primitive
    ``transition(..., "approved")``, as the actor: audited)."""
    from skill_library.governance.lifecycle import transition

    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = request.path_params["name"], int(request.path_params["version"])
    transition(library, name, version, "approved", actor=library.resolve_actor(console.actor_id),
               reason=str(form.get("reason", "")).strip() or "canary rolled back from the console")
    return redirect(session, "/canaries", tenant=tenant, notice=f"rolled back the canary {name} v{version}")


def routes() -> list[Route]:
    return [
        Route("/canaries", canaries_page),
        Route("/canaries/{name}/{version:int}/promote", promote, methods=["POST"]),
        Route("/canaries/{name}/{version:int}/rollback", rollback, methods=["POST"]),
    ]
