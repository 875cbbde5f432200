"""The Review queue: versions awaiting a decision, with their evidence. Draft and
evaluated versions: approve or reject; quarantined ones (a failure burst or a reliably
negative uplift): lift the quarantine or retire; suspended ones (a tool schema change they
failed): resume or retire. A quarantined or suspended row shows the latest audit event's
reason (why it left fetch).

Each entry shows the diff against the active version (``library.diff``), the tools it
calls with their side effects and its preconditions (console.evidence), its latest
evaluation side by side with the active version per task (critical tasks marked), and why
a human must decide (``library.needs_human``). Approve and reject are the library's
governance calls, made as the console's actor: they check the actor's permissions and
write the audit event. Checked rows are approved together (``library.approve_many``), each
refused on its own: the reason shows on its row.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skill_library.console.app import Console, page, redirect
from skill_library.console.auth import Session
from skill_library.console.evidence import precondition_lines, tool_rows
from skill_library.errors import SkillLibraryError, SkillNotFoundError
from skill_library.governance.workflow import DECISIONS, queue_reason

__all__ = ["routes"]


def _active(library: Any, name: str) -> Any | None:
    """The active version of ``name`` (None: it has none)."""
    try:
        current = library.get(name)
    except SkillNotFoundError:
        return None
    return current if current.status == "active" else None


def evaluate_command(skill: Any) -> str:
    """The CLI call that evaluates ``skill`` (every option it requires)."""
    return f"skills evaluate {skill.name} {skill.version} --suite FILE --world MODULE:NAME"


def decision_of(skill: Any, evaluation: Any) -> tuple[str, str, bool]:
    """(decision, hint, approvable) of a waiting version, agreeing with its status and its
    latest evaluation: a draft code version cannot be approved before it passes one (the
    hint is the command, with its required options), nor a version whose latest failed."""
    if skill.status not in ("draft", "evaluated"):
        return DECISIONS.get(skill.status, ""), "", False
    if evaluation is not None and not evaluation.passed:
        return ("reject, or evaluate it again",
                f"its latest evaluation failed, so approval is refused; after a fix: {evaluate_command(skill)}",
                False)
    if skill.status == "draft" and skill.kind == "code" and evaluation is None:
        return ("evaluate, then approve; or reject",
                f"a draft is approved once it passes an evaluation: {evaluate_command(skill)}", False)
    if skill.status == "draft":
        return "approve or reject", "a procedure has no code to run: your review is its evaluation", True
    return DECISIONS["evaluated"], "", True


def entry(library: Any, skill: Any, refusals: dict[tuple[str, int], str] | None = None,
          specs: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the queue shows for one waiting version (``refusals``: the last bulk call's;
    ``specs``: the tenant's declared tools, ``library.tool_specs()``)."""
    active_skill = _active(library, skill.name)
    active = active_skill.version if active_skill is not None else None
    diff = library.diff(skill.name, active, skill.version) if active is not None and active != skill.version else None
    evaluations = library.evaluations(skill.name, skill.version)
    evaluation = evaluations[-1] if evaluations else None
    decision, hint, approvable = decision_of(skill, evaluation)
    return {
        "skill": skill, "active": active, "diff": diff, "evaluation": evaluation,
        "needs_human": library.needs_human(skill.name, skill.version),
        "examples": library.examples(skill.name),
        "decision": decision, "hint": hint, "approvable": approvable,
        "reason": queue_reason(library, skill) if skill.status not in ("draft", "evaluated") else "",
        "refusal": (refusals or {}).get((skill.name, skill.version), ""),
        "tools": tool_rows(skill, library.tool_specs() if specs is None else specs,
                           active_skill if active_skill is not None and active != skill.version else None),
        "preconditions": precondition_lines(skill),
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
    refusals, session.refusals = session.refusals, {}
    specs = library.tool_specs()
    entries = [entry(library, s, refusals, specs) for s in queue]
    shown = {(e["skill"].name, e["skill"].version) for e in entries}
    return console.render(request, session, "review.html", tenant=tenant, entries=entries,
                          approved=approved_versions(library), page_name="review",
                          other_refusals=[(k, why) for k, why in refusals.items() if k not in shown])


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


def _picked(values: list[str]) -> list[tuple[str, int]]:
    """The checked rows of the bulk form: ``name:version`` each."""
    picked = []
    for value in values:
        name, _, version = value.rpartition(":")
        if not name or not version.isdigit():
            raise ValueError(f"a selected row must be NAME:VERSION, got {value!r}")
        picked.append((name, int(version)))
    if not picked:
        raise ValueError("select at least one row to approve")
    return picked


@page(write=True)
def approve_selected(console: Console, request: Request, session: Session) -> Response:
    """``POST /review/approve`` with ``pick=NAME:VERSION`` per checked row:
    ``library.approve_many(rows, actor=, reason=)``, each row approved or refused on its
    own; the queue then shows each refusal on its row."""
    form = request.state.form
    tenant = console.tenant_of(request, form)
    library = console.view(tenant)
    picked = _picked(request.state.form_lists.get("pick", []))
    decisions = library.approve_many(picked, actor=console.actor_id, reason=str(form.get("reason", "")).strip())
    done = [f"{d.name} v{d.version}" for d in decisions if d.done]
    session.refusals = {(d.name, d.version or 0): d.error or "" for d in decisions if not d.done}
    notice = f"approved {len(done)} of {len(decisions)} selected"
    notice += f": {', '.join(done)}" if done else ""
    if session.refusals:
        notice += f"; {len(session.refusals)} refused (the reason is on each row)"
    return redirect(session, "/review", tenant=tenant, notice=notice)


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
        Route("/review/approve", approve_selected, methods=["POST"]),
        Route("/review/{name}/{version:int}/approve", approve, methods=["POST"]),
        Route("/review/{name}/{version:int}/reject", reject, methods=["POST"]),
        Route("/review/{name}/{version:int}/release", release, methods=["POST"]),
        Route("/review/{name}/{version:int}/lift", lift, methods=["POST"]),
        Route("/review/{name}/{version:int}/resume", resume, methods=["POST"]),
        Route("/review/{name}/{version:int}/retire", retire, methods=["POST"]),
    ]
