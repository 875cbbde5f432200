"""The Review queue: versions awaiting a decision, with their evidence. Draft and
evaluated versions: approve or reject; quarantined ones (a failure burst or a reliably
negative uplift): lift the quarantine or retire; suspended ones (a tool schema change they
failed): resume or retire. A quarantined or suspended row shows the latest audit event's
reason (why it left fetch).

Each entry shows the diff against the active version (``library.diff``), its latest
evaluation side by side with the active version per task (critical tasks marked), and why
a human must decide (``library.needs_human``). Approve and reject are the library's
governance calls, made as the console's actor: they check the actor's permissions and
write the audit event.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skill_library.console.app import Console, page, redirect
from skill_library.console.auth import Session
from skill_library.errors import SkillLibraryError, SkillNotFoundError
from skill_library.governance.workflow import DECISIONS, queue_reason

__all__ = ["routes"]


def _active_version(library: Any, name: str) -> int | None:
    try:
        current = library.get(name)
    except SkillNotFoundError:
        return None
    return current.version if current.status == "active" else None


def entry(library: Any, skill: Any) -> dict[str, Any]:
    """What the queue shows for one waiting version."""
    active = _active_version(library, skill.name)
    diff = library.diff(skill.name, active, skill.version) if active is not None and active != skill.version else None
    evaluations = library.evaluations(skill.name, skill.version)
    return {
        "skill": skill, "active": active, "diff": diff,
        "evaluation": evaluations[-1] if evaluations else None,
        "needs_human": library.needs_human(skill.name, skill.version),
        "examples": library.examples(skill.name),
        "decision": DECISIONS.get(skill.status, ""),
        "reason": queue_reason(library, skill) if skill.status not in ("draft", "evaluated") else "",
    }


def approved_versions(library: Any) -> list[Any]:
    """Approved versions not released yet (neither canary nor active), oldest approval
    first: the versions whose latest audit event approved them."""
    latest: dict[tuple[str, int], Any] = {}
    for event in library.audit():
        if event.version is not None:
            latest[(event.name, event.version)] = event
    waiting = []
    for (name, version), event in latest.items():
        if event.to_status == "approved":
            try:
                skill = library.get(name, version)
            except SkillNotFoundError:
                continue
            if skill.status == "approved":
                waiting.append((event, skill))
    return [skill for _, skill in sorted(waiting, key=lambda pair: pair[0].at)]


@page()
def review_page(console: Console, request: Request, session: Session) -> Response:
    """``/review``: ``library.review_queue()``, oldest first, then the approved versions
    waiting for release (promote, or start a canary)."""
    tenant = console.tenant_of(request)
    library = console.view(tenant)
    queue = library.review_queue()
    return console.render(request, session, "review.html", tenant=tenant,
                          entries=[entry(library, s) for s in queue], approved=approved_versions(library),
                          page_name="review")


def _target(request: Request) -> tuple[str, int]:
    name = request.path_params["name"]
    return name, int(request.path_params["version"])


@page(write=True)
def approve(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/approve``: ``library.approve(..., actor=, reason=)``."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    skill = library.approve(name, version, actor=console.actor_id,
                                          reason=str(form.get("reason", "")).strip())
    return redirect(session, "/review", tenant=tenant, notice=f"approved {name} v{version}: now {skill.status}")


@page(write=True)
def reject(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/reject``: ``library.reject(..., actor=, reason=)``; a
    reason is required."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    reason = str(form.get("reason", "")).strip()
    if not reason:
        raise ValueError(f"say why {name} v{version} is rejected: a reason is required")
    library.reject(name, version, actor=console.actor_id, reason=reason)
    return redirect(session, "/review", tenant=tenant, notice=f"rejected {name} v{version}")


@page(write=True)
def release(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/release``: ``library.promote(...)``, or with
    ``share`` (a percentage) ``library.start_canary(..., share=)``."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    share_text = str(form.get("share", "")).strip()
    if form.get("how") == "canary":
        try:
            share = float(share_text) / 100 if share_text else None
        except ValueError:
            raise ValueError(f"share must be a percentage, got {share_text!r}") from None
        library.start_canary(name, version, actor=console.actor_id, share=share)
        return redirect(session, "/canaries", tenant=tenant, notice=f"{name} v{version} is a canary")
    skill = library.promote(name, version, actor=console.actor_id)
    return redirect(session, "/review", tenant=tenant, notice=f"promoted {name} v{version}: now {skill.status}")


def _require_status(library: Any, name: str, version: int, statuses: tuple[str, ...]) -> None:
    """Refuse a decision on a version that is no longer in the state the button was for."""
    status = library.get(name, version).status
    if status not in statuses:
        raise SkillLibraryError(f"{name} v{version} is {status}, not {' or '.join(statuses)}: reload the queue")


@page(write=True)
def lift(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/lift``: ``library.lift_quarantine(name, actor=)``."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    _require_status(library, name, version, ("quarantined",))
    skill = library.lift_quarantine(name, actor=console.actor_id)
    return redirect(session, "/review", tenant=tenant,
                    notice=f"lifted the quarantine of {name} v{version}: now {skill.status}")


@page(write=True)
def resume(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/resume``: ``library.resume(name, actor=, reason=)``."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    _require_status(library, name, version, ("suspended",))
    skill = library.resume(name, actor=console.actor_id, reason=str(form.get("reason", "")).strip())
    return redirect(session, "/review", tenant=tenant, notice=f"resumed {name} v{version}: now {skill.status}")


@page(write=True)
def retire(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/{name}/{version}/retire``: ``library.retire(name, actor=)`` of a
    quarantined or suspended version (the skill's current one)."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    name, version = _target(request)
    _require_status(library, name, version, ("quarantined", "suspended"))
    if library.get(name).version != version:
        raise SkillLibraryError(f"{name} v{version} is not the skill's current version: "
                                f"retire it with skills retire after resolving the newer one")
    library.retire(name, actor=console.actor_id)
    return redirect(session, "/review", tenant=tenant, notice=f"retired {name} v{version}")


def routes() -> list[Route]:
    return [
        Route("/review", review_page),
        Route("/review/{name}/{version:int}/approve", approve, methods=["POST"]),
        Route("/review/{name}/{version:int}/reject", reject, methods=["POST"]),
        Route("/review/{name}/{version:int}/release", release, methods=["POST"]),
        Route("/review/{name}/{version:int}/lift", lift, methods=["POST"]),
        Route("/review/{name}/{version:int}/resume", resume, methods=["POST"]),
        Route("/review/{name}/{version:int}/retire", retire, methods=["POST"]),
    ]
