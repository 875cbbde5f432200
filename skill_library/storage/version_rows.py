"""Version rows read as :class:`~skill_library.models.Skill` objects, importing no SQLAlchemy:
the SQL store (``storage.rows``) and the CLI's light reads (``storage.light_reads`` rows) share
it, so both make the same Skill of the same row."""

from __future__ import annotations

from typing import Any

from skill_library.models import Provenance, Skill
from skill_library.storage.light_reads import current_when


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
