"""The tables of usage-pattern memory, reliability events and instruction procedures, on
the record store's metadata (created by the schema step ``memory and privacy``, 11, in
skill_library.migrations; a store that created them on first use before that step keeps
them as they are). Every row belongs to a tenant (the ``tenant`` column, first in each key).
:mod:`skill_library.patterns.tables` re-exports them."""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.storage.tables import metadata, tenant_column

#: the product-defined state space (define_states)
states_table = sa.Table(
    "pattern_states",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("examples", sa.JSON, nullable=False),
)

#: one observed transition of a subject: from_state -> to_state in a session
transitions_table = sa.Table(
    "pattern_transitions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    tenant_column(primary_key=False),
    sa.Column("subject", sa.String(200), nullable=False),
    sa.Column("from_state", sa.String(200), nullable=False),
    sa.Column("to_state", sa.String(200), nullable=False),
    sa.Column("session", sa.String(200), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_pattern_transitions", "tenant", "subject", "from_state", "id"),
)

#: where the stable distribution of (subject, from_state) starts, and an emerging one
marks_table = sa.Table(
    "pattern_marks",
    metadata,
    tenant_column(),
    sa.Column("subject", sa.String(200), primary_key=True),
    sa.Column("from_state", sa.String(200), primary_key=True),
    sa.Column("stable_since", sa.Integer, nullable=False),
    sa.Column("emerging_since", sa.Integer),
)

#: the last state of each open session (record_invocation chains a session's skills)
sessions_table = sa.Table(
    "pattern_sessions",
    metadata,
    tenant_column(),
    sa.Column("subject", sa.String(200), primary_key=True),
    sa.Column("session", sa.String(200), primary_key=True),
    sa.Column("last_state", sa.String(200), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
)

#: subjects who opted out: nothing about them is recorded or used
opt_outs_table = sa.Table(
    "pattern_opt_outs",
    metadata,
    tenant_column(),
    sa.Column("subject", sa.String(200), primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
)

#: quarantines and lifts: which version, who acted (``library`` for the rule itself) and why
reliability_events_table = sa.Table(
    "reliability_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    tenant_column(primary_key=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("event", sa.String(20), nullable=False),
    sa.Column("actor", sa.String(200)),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
)

#: per procedure version: its title, confidence and who added it (for which subject)
procedures_table = sa.Table(
    "procedures",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("initial_confidence", sa.Float, nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("actor", sa.String(200)),
    sa.Column("subject", sa.String(200)),
    sa.Column("source", sa.String(20), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

#: every table above (each holds rows of many tenants)
TENANT_TABLES = (states_table, transitions_table, marks_table, sessions_table, opt_outs_table,
                 reliability_events_table, procedures_table)
