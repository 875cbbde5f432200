"""What a version's tool bindings hold, computed where they are stored: the digest of a
tool's schema, the schema seen in recorded calls when none was declared, and the binding
rows of stored versions (skill_library.governance.tool_schemas re-exports these and holds
the rules around them: suspension on a schema change, re-verification).

They live in storage because a schema migration computes them too (step 10 binds the
versions stored before bindings existed); nothing here imports governance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill_library.models import Skill, utc_now
from skill_library.storage import governance_rows
from skill_library.storage import tool_binding_rows as rows_of
from skill_library.storage.transactions import Connection

#: where a binding's schema came from
DECLARED = "declared"
TRACES = "traces"
#: the key under which a declared tool's description is stored in its schema
DESCRIPTION_KEY = "x-tool-description"


@dataclass(frozen=True)
class Binding:
    """One tool a version calls and the schema it was verified against."""

    tool: str
    digest: str
    source: str
    schema: dict[str, Any]


def digest(schema: Mapping[str, Any]) -> str:
    """The SHA-256 of ``schema``'s canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seen_schema(tool: str, calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The schema of ``tool`` seen in recorded ``calls`` (dicts of a trace's calls): an
    object whose properties are the argument names passed, each with the JSON types seen;
    the names passed in every call are required. Values never enter it."""
    seen: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    n = 0
    for call in calls:
        if call.get("name") != tool or call.get("kind", "tool") != "tool":
            continue
        n += 1
        for key, value in (call.get("arguments") or {}).items():
            seen.setdefault(key, set()).add(_json_type(value))
            counts[key] = counts.get(key, 0) + 1
    properties = {k: {"type": sorted(t)[0] if len(t) == 1 else sorted(t)} for k, t in sorted(seen.items())}
    return {"type": "object", "properties": properties,
            "required": sorted(k for k, c in counts.items() if c == n)}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"


def bindings(skill: Skill, declared: Mapping[str, Mapping[str, Any]],
             calls: Sequence[Mapping[str, Any]]) -> list[Binding]:
    """The binding of every tool ``skill`` calls: its declared schema (``declared``: tool ->
    argument schema; an empty one counts as undeclared), else the schema seen in ``calls``
    (its traces' calls)."""
    tools = list(dict.fromkeys([*skill.tools, *(c["name"] for c in calls if c.get("kind", "tool") == "tool"
                                                and c.get("name") in skill.tools)]))
    found = []
    for tool in tools:
        schema = declared.get(tool)
        if schema:
            found.append(Binding(tool, digest(schema), DECLARED, dict(schema)))
        else:
            seen = seen_schema(tool, calls)
            found.append(Binding(tool, digest(seen), TRACES, seen))
    return found


def trace_calls(conn: Connection, tenant: str, trace_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The recorded calls of the stored traces ``trace_ids`` (raw dicts), by trace id."""
    return {t: list(body.get("calls") or []) for t, body in rows_of.trace_bodies(conn, tenant, trace_ids).items()}


def record(conn: Connection, tenant: str, skills: Sequence[Skill], declared: Mapping[str, Mapping[str, Any]],
           extra_calls: Sequence[Mapping[str, Any]] = ()) -> None:
    """Store the bindings of the stored versions ``skills`` on ``conn`` (inside the
    transaction that stored them): ``declared`` schemas, else the schemas seen in their
    traces (``provenance.trace_ids`` read on ``conn``, plus ``extra_calls``)."""
    coded = [s for s in skills if s.tools]
    if not coded:
        return
    calls = trace_calls(conn, tenant, (t for s in coded for t in s.provenance.trace_ids))
    now = utc_now()
    rows: list[dict[str, Any]] = []
    for skill in coded:
        mine = [c for t in skill.provenance.trace_ids for c in calls.get(t, [])] + list(extra_calls)
        rows.extend({"tenant": tenant, "name": skill.name, "version": skill.version, "tool": b.tool,
                     "digest": b.digest, "source": b.source, "schema": b.schema, "bound_at": now}
                    for b in bindings(skill, declared, mine))
    rows_of.add_bindings(conn, rows)


def declared_schemas(conn: Connection, tenant: str) -> dict[str, dict[str, Any]]:
    """The argument schemas of the tools ``tenant`` declared (their stored description left
    out), by name: what :func:`bindings` takes."""
    out = {}
    for row in governance_rows.tool_spec_rows(conn, tenant):
        schema = dict(row["schema"] or {})
        schema.pop(DESCRIPTION_KEY, None)
        out[row["name"]] = schema
    return out
