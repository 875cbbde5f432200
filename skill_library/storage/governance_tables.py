"""The governance tables, on the record store's metadata (created by the migration steps
``governance`` and ``evaluations`` in skill_library.migrations). Every row carries its
``tenant``. They live in the storage layer, beside the record tables, so the migrations need
not import governance; :mod:`skill_library.governance.tables` re-exports them."""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.storage.tables import metadata

#: one row per transition of a version (and per policy, actor or tool change)
audit_table = sa.Table(
    "audit_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer),
    sa.Column("from_status", sa.String(20)),
    sa.Column("to_status", sa.String(20), nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("evidence", sa.JSON, nullable=False),
    sa.Index("ix_audit_events_name", "tenant", "name", "id"),
)

#: the actors registered in a tenant
actors_table = sa.Table(
    "actors",
    metadata,
    sa.Column("tenant", sa.String(200), primary_key=True),
    sa.Column("id", sa.String(200), primary_key=True),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("permissions", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

#: the tools declared in a tenant (register_tools)
tool_specs_table = sa.Table(
    "tool_specs",
    metadata,
    sa.Column("tenant", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("schema", sa.JSON, nullable=False),
    sa.Column("side_effects", sa.Boolean, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

#: the policy of a tenant (one row; absent: the default, read_only)
policies_table = sa.Table(
    "policies",
    metadata,
    sa.Column("tenant", sa.String(200), primary_key=True),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

#: the running canary of a skill: which version, for which share of sessions or cohort
canaries_table = sa.Table(
    "canaries",
    metadata,
    sa.Column("tenant", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("share", sa.Float),
    sa.Column("cohort", sa.String(200)),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
)

#: one row per evaluation of a candidate version on a suite (skill_library.governance.evaluation)
evaluations_table = sa.Table(
    "evaluations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("active_version", sa.Integer),
    sa.Column("suite_id", sa.String(200), nullable=False),
    sa.Column("suite_hash", sa.String(64), nullable=False),
    sa.Column("passed", sa.Boolean, nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_evaluations_skill", "tenant", "name", "version"),
)

ALL_TABLES = (audit_table, actors_table, tool_specs_table, policies_table, canaries_table)
