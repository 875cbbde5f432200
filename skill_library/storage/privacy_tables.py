"""The tables of erasure and redaction (skill_library.erasure, skill_library.redaction), on
the record store's metadata (created by the schema step ``memory and privacy``, 11, in
skill_library.migrations; a store that created them on first use before that step keeps
them as they are)."""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.storage.tables import metadata, tenant_column

#: one row per erased trace identity: sha256(salt + identity), never the trace itself
tombstones_table = sa.Table(
    "forgotten_traces",
    metadata,
    tenant_column(),
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
)

#: old name -> new name of a skill renamed by redaction, with the release that made it
aliases_table = sa.Table(
    "skill_aliases",
    metadata,
    tenant_column(),
    sa.Column("alias", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("made_in", sa.String(40), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

PRIVACY_TABLES = (tombstones_table, aliases_table)
