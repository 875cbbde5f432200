"""Tool specs: the tools a tenant declares, with their argument schema and whether they
have side effects. A tool nobody declared counts as having side effects."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field


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


def load(conn: "sa.Connection", tenant: str) -> dict[str, ToolSpec]:
    """The tools declared in ``tenant``, by name."""
    from skill_library.governance.tables import tool_specs_table

    rows = conn.execute(sa.select(tool_specs_table).where(tool_specs_table.c.tenant == tenant)
                        .order_by(tool_specs_table.c.name)).mappings()
    return {r["name"]: _spec(r["schema"], bool(r["side_effects"])) for r in rows}


def _spec(schema: dict[str, Any], side_effects: bool) -> ToolSpec:
    schema = dict(schema or {})
    described = schema.pop("x-tool-description", "")
    return ToolSpec(schema=schema, side_effects=side_effects,
                    description=described if isinstance(described, str) else "")


def save(conn: "sa.Connection", tenant: str, specs: dict[str, ToolSpec]) -> None:
    """Declare (or redeclare) ``specs`` in ``tenant``."""
    from skill_library.governance.tables import tool_specs_table
    from skill_library.models import utc_now

    now = utc_now()
    for name, spec in specs.items():
        conn.execute(tool_specs_table.delete().where(tool_specs_table.c.tenant == tenant)
                     .where(tool_specs_table.c.name == name))
        conn.execute(tool_specs_table.insert().values(
            tenant=tenant, name=name, side_effects=spec.side_effects,
            schema={**spec.schema_, **({"x-tool-description": spec.description} if spec.description else {})},
            updated_at=now))


def remove(conn: "sa.Connection", tenant: str, names: list[str]) -> None:
    """Remove the declarations of ``names`` in ``tenant``."""
    from skill_library.governance.tables import tool_specs_table

    if names:
        conn.execute(tool_specs_table.delete().where(tool_specs_table.c.tenant == tenant)
                     .where(tool_specs_table.c.name.in_(names)))
