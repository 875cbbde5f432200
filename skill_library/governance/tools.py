"""Tool specs: the tools a tenant declares, with their argument schema and whether they
have side effects. A tool nobody declared counts as having side effects."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skill_library.storage import governance_rows
from skill_library.storage.tool_digests import DESCRIPTION_KEY
from skill_library.storage.transactions import Connection


class ToolSpec(BaseModel):
    """One declared tool: the JSON Schema of its arguments, whether it changes state, and
    what it does in words (``description``: its first sentence is how a learned skill's
    description names the step; stored as the schema's top-level ``description``)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    side_effects: bool = True
    description: str = ""


def side_effect_tools(tools: list[str], specs: dict[str, ToolSpec]) -> list[str]:
    """The ``tools`` that have side effects under ``specs`` (undeclared ones count)."""
    return [t for t in tools if t not in specs or specs[t].side_effects]


def load(conn: Connection, tenant: str) -> dict[str, ToolSpec]:
    """The tools declared in ``tenant``, by name."""
    rows = governance_rows.tool_spec_rows(conn, tenant)
    return {r["name"]: _spec(r["schema"], bool(r["side_effects"])) for r in rows}


def _spec(schema: dict[str, Any], side_effects: bool) -> ToolSpec:
    schema = dict(schema or {})
    described = schema.pop(DESCRIPTION_KEY, "")
    return ToolSpec(schema=schema, side_effects=side_effects,
                    description=described if isinstance(described, str) else "")


def save(conn: Connection, tenant: str, specs: dict[str, ToolSpec]) -> None:
    """Declare (or redeclare) ``specs`` in ``tenant``."""
    from skill_library.models import utc_now

    governance_rows.save_tool_specs(conn, tenant, {
        name: (spec.side_effects,
               {**spec.schema_, **({DESCRIPTION_KEY: spec.description} if spec.description else {})})
        for name, spec in specs.items()}, utc_now())


def remove(conn: Connection, tenant: str, names: list[str]) -> None:
    """Remove the declarations of ``names`` in ``tenant``."""
    governance_rows.remove_tool_specs(conn, tenant, names)
