"""Version rows read as :class:`~skill_library.models.Skill` objects."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from skill_library.models import Provenance, Skill
from skill_library.storage.light_reads import current_when
from skill_library.storage.tables import profiles_table, versions_table


def versions_query() -> Any:
    """SELECT of version rows with the skill's derived ``when`` (for the version it fits)."""
    return sa.select(
        versions_table,
        profiles_table.c.when_text.label("derived_when"),
        profiles_table.c.version.label("derived_version"),
    ).select_from(
        versions_table.outerjoin(profiles_table, sa.and_(
            profiles_table.c.tenant == versions_table.c.tenant,
            profiles_table.c.name == versions_table.c.name,
        ))
    )


def row_to_skill(row: Any) -> Skill:
    """A Skill from a stored row; stored rows were validated when added, so skip it."""
    return Skill.model_construct(
        name=row["name"],
        version=row["version"],
        kind=row["kind"],
        when=current_when(row),
        description=row["description"],
        code=row["code"],
        parameters=row["parameters"],
        tools=list(row["tools"]),
        depends_on=list(row["depends_on"]),
        status=row["status"],
        provenance=Provenance.model_validate(row["provenance"]),
        successes=row["successes"],
        failures=row["failures"],
    )
