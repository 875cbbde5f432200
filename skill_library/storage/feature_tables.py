"""Tables of features added in schema steps 9 and 10: the uplift holdout's settings and
session outcomes (skill_library.uplift) and the tool bindings (skill_library.governance.tool_schemas).
Defined here, in storage, so that migrations never import the concepts that use them."""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.storage.tables import metadata, tenant_column
from skill_library.tenancy import TENANT_MAX_LENGTH

uplift_settings_table = sa.Table(
    "uplift_settings",
    metadata,
    sa.Column("tenant", sa.String(TENANT_MAX_LENGTH), primary_key=True),
    sa.Column("share", sa.Float, nullable=False),
    sa.Column("side_effects", sa.Boolean, nullable=False),
    sa.Column("skills", sa.JSON),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

session_outcomes_table = sa.Table(
    "session_outcomes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("tenant", sa.String(TENANT_MAX_LENGTH), nullable=False),
    # sha256 of the session id (an id may carry a user's name; the digest still pairs outcomes)
    sa.Column("session", sa.String(64), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    # the version served, or the one fetch would have served (held back)
    sa.Column("version", sa.Integer),
    sa.Column("arm", sa.String(10), nullable=False),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("origin", sa.String(20), nullable=False),
    sa.Column("cost", sa.JSON),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("tenant", "session", "name", name="uq_session_outcomes_session"),
    sa.Index("ix_session_outcomes_skill", "tenant", "name", "version"),
)

UPLIFT_TABLES = (uplift_settings_table, session_outcomes_table)


#: per version and tool it calls: the digest (and text) of the schema it was verified against
tool_bindings_table = sa.Table(
    "tool_bindings",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("tool", sa.String(200), primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("source", sa.String(20), nullable=False),
    sa.Column("schema", sa.JSON, nullable=False),
    sa.Column("bound_at", sa.DateTime(timezone=True), nullable=False),
)
