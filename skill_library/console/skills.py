"""The Skills page (search, filters, sortable table) and the page of one skill."""

from __future__ import annotations

from typing import Any, cast, get_args

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skill_library.console.app import Console, page
from skill_library.console.auth import Session
from skill_library.console.charts import reliability_png, uplift_png
from skill_library.console.evidence import parameter_rows, precondition_lines, tool_rows
from skill_library.console.review import decision_of
from skill_library.models import SkillStatus

__all__ = ["CODE_FORMATTER", "RECENT_TRACES", "SEARCH_K", "SORT_KEYS", "routes"]

#: how many skills the search box asks ``fetch`` for
SEARCH_K = 20
#: how many of a skill's traces its page shows (newest first)
RECENT_TRACES = 10
#: the pygments formatter of highlighted code (its stylesheet is /static/code.css)
CODE_FORMATTER = HtmlFormatter(cssclass="code", linenos=False)
#: sortable columns -> sort key of a row
SORT_KEYS: dict[str, Any] = {
    "name": lambda r: r["name"],
    "version": lambda r: r["version"],
    "status": lambda r: r["status"],
    "reliability": lambda r: r["reliability"],
    "runs": lambda r: r["runs"],
    "last": lambda r: (r["last"] is not None, r["last"] or ""),
    "similarity": lambda r: r["similarity"] or 0.0,
}


def _row(library: Any, skill: Any, similarity: float | None = None) -> dict[str, Any]:
    log = library.outcomes(skill.name)
    last = log[-1] if log else None
    return {
        "name": skill.name, "version": skill.version, "status": skill.status, "kind": skill.kind,
        "reliability": skill.reliability, "runs": skill.outcomes,
        "last": None if last is None else last.get("kind") or ("success" if last["success"] else "failure"),
        "last_at": None if last is None else last["recorded_at"], "similarity": similarity,
    }


@page()
def skills_page(console: Console, request: Request, session: Session) -> Response:
    """``/skills?q=&status=&tenant=&sort=&order=``: every skill's current version, or the
    search box's fetch results (any reliability: a reviewer looks for weak skills too)."""
    tenant = console.tenant_of(request)
    library = console.view(tenant)
    query = request.query_params.get("q", "").strip()
    status = request.query_params.get("status", "").strip()
    sort = request.query_params.get("sort", "similarity" if query else "name")
    order = request.query_params.get("order", "desc" if sort in ("similarity", "reliability", "runs") else "asc")
    if status and status not in get_args(SkillStatus):
        raise ValueError(f"status must be one of {', '.join(get_args(SkillStatus))}, got {status!r}")
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    if query:
        matches = library.fetch(query, SEARCH_K, min_reliability=0.0)
        rows = [_row(library, m.skill, m.similarity) for m in matches if not status or m.skill.status == status]
    else:
        rows = [_row(library, s) for s in library.list(status=cast(SkillStatus, status) if status else None)]
    rows.sort(key=SORT_KEYS[sort], reverse=order == "desc")
    return console.render(
        request, session, "skills.html", tenant=tenant, rows=rows, query=query, status=status,
        statuses=get_args(SkillStatus), sort=sort, order=order, page_name="skills",
    )


def _trace_versions(history: list[Any], outcomes: list[dict[str, Any]]) -> dict[str, int]:
    """trace id -> the version it ran (its outcome's), else the version learned from it."""
    versions: dict[str, int] = {}
    for skill in history:
        for trace_id in skill.provenance.trace_ids:
            versions.setdefault(trace_id, skill.version)
    for outcome in outcomes:
        if outcome["trace_id"]:
            versions[outcome["trace_id"]] = outcome["version"]
    return versions


def audit_of(library: Any, name: str) -> list[Any]:
    """The audit trail of ``name``, oldest first."""
    return [e for e in library.audit(name) if e.name == name]


@page()
def skill_page(console: Console, request: Request, session: Session) -> Response:
    """``/skills/{name}``: versions and audit trail, code, its docstring as written, when,
    examples, parameters with their descriptions, tools with their side effects,
    preconditions, the reliability chart and recent traces; a version waiting for a decision
    says which (the review queue's words)."""
    tenant = console.tenant_of(request)
    library = console.view(tenant)
    name = request.path_params["name"]
    history = library.history(name)
    requested = request.query_params.get("version")
    try:
        current = next(s for s in history if s.version == int(requested)) if requested else library.get(name)
    except (StopIteration, ValueError):
        raise ValueError(f"skill {name!r} has no version {requested}") from None
    outcomes = library.outcomes(name)
    trace_versions = _trace_versions(history, outcomes)
    traces = sorted(library.traces(name), key=lambda t: t.created_at, reverse=True)[:RECENT_TRACES]
    code = highlight(current.code, PythonLexer(), CODE_FORMATTER) if current.code else None
    evaluations = library.evaluations(name, current.version)
    decision, hint, _ = decision_of(current, evaluations[-1] if evaluations else None)
    return console.render(
        request, session, "skill.html", tenant=tenant, skill=current, history=list(reversed(history)),
        parameters=parameter_rows(current), tools=tool_rows(current, library.tool_specs()),
        preconditions=precondition_lines(current), decision=decision, hint=hint,
        audit=audit_of(library, name), code=code, examples=library.examples(name), outcomes=outcomes,
        traces=[(t, getattr(t, "version", None) or trace_versions.get(t.id)) for t in traces],
        uplift=library.uplift(name, current.version), page_name="skills",
    )


@page()
def chart(console: Console, request: Request, session: Session) -> Response:
    """``/skills/{name}/chart.png``: reliability per version over its outcomes."""
    library = console.view(console.tenant_of(request))
    name = request.path_params["name"]
    return Response(reliability_png(name, library.outcomes(name)), media_type="image/png",
                    headers={"Cache-Control": "no-store"})


@page()
def uplift_chart(console: Console, request: Request, session: Session) -> Response:
    """``/skills/{name}/uplift.png?version=``: task success with and without the skill."""
    library = console.view(console.tenant_of(request))
    name = request.path_params["name"]
    requested = request.query_params.get("version")
    if requested is not None and not requested.isdigit():
        raise ValueError(f"version must be a number, got {requested!r}")
    found = library.uplift(name, int(requested) if requested else None)
    return Response(uplift_png(found), media_type="image/png", headers={"Cache-Control": "no-store"})


def routes() -> list[Route]:
    return [
        Route("/skills", skills_page),
        Route("/skills/{name}", skill_page),
        Route("/skills/{name}/chart.png", chart),
        Route("/skills/{name}/uplift.png", uplift_chart),
    ]
