"""The SELECT of version rows; :func:`row_to_skill` reads one as a
:class:`~skill_library.models.Skill` (its home: ``storage.version_rows``, which imports no
SQLAlchemy, so the CLI's light reads share it)."""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from skill_library.storage.tables import profiles_table, versions_table
from skill_library.storage.version_rows import row_to_skill as row_to_skill  # re-exported


@functools.cache
def versions_query() -> Any:
    """SELECT of version rows with the skill's derived ``when`` (for the version it fits).
    Built once: a SELECT is immutable (``.where`` and the rest return a new one), and
    building the join at every read cost 50-100 us (three reads per fetch + feedback)."""
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
