"""The record store's tables: skills, versions, outcomes, traces and their derived rows.

Every record carries the ``tenant`` it belongs to (``skill_library.tenancy``); the text
vector cache is the one table shared by all tenants. Changing a table means a new step
in ``skill_library.storage.migrations`` and a new :data:`SCHEMA_VERSION` (``storage.layout``).
"""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.storage.layout import SCHEMA_VERSION as SCHEMA_VERSION  # its one home
from skill_library.tenancy import DEFAULT_TENANT, TENANT_MAX_LENGTH

metadata = sa.MetaData()

def tenant_column(*, primary_key: bool = True) -> sa.Column[str]:
    """The ``tenant`` column every record carries (first in each key where names are keys)."""
    return sa.Column("tenant", sa.String(TENANT_MAX_LENGTH), primary_key=primary_key, nullable=False,
                     server_default=DEFAULT_TENANT)


skills_table = sa.Table(
    "skills",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("active_version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

versions_table = sa.Table(
    "skill_versions",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(20), nullable=False),
    sa.Column("when_text", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("code", sa.Text),
    sa.Column("parameters", sa.JSON, nullable=False),
    sa.Column("tools", sa.JSON, nullable=False),
    sa.Column("depends_on", sa.JSON, nullable=False),
    sa.Column("provenance", sa.JSON, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("successes", sa.Integer, nullable=False, default=0),
    sa.Column("failures", sa.Integer, nullable=False, default=0),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(["tenant", "name"], ["skills.tenant", "skills.name"]),
)

outcomes_table = sa.Table(
    "outcomes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    tenant_column(primary_key=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("trace_id", sa.String(64)),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    # the OutcomeKind (NULL in rows no migration filled: read as success/failure), why, and
    # who reported it: run (SkillLibrary.run judged it), feedback (in-process caller),
    # external (MCP/HTTP, tied to a recorded run or session), learned (a merged trace)
    sa.Column("kind", sa.String(20)),
    sa.Column("reason", sa.Text),
    sa.Column("origin", sa.String(20)),
    sa.ForeignKeyConstraint(
        ["tenant", "name", "version"],
        ["skill_versions.tenant", "skill_versions.name", "skill_versions.version"],
    ),
    sa.Index("ix_outcomes_skill", "tenant", "name", "version"),
)

traces_table = sa.Table(
    "traces",
    metadata,
    tenant_column(),
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("source", sa.String(200), nullable=False),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

# Derived per-skill data, recomputed as evidence arrives (not a new version): the masked
# example tasks fetch matches against, and the ``when`` recomputed from them for one version.
examples_table = sa.Table(
    "skill_examples",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("trace_id", sa.String(64), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("indexed", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(["tenant", "name"], ["skills.tenant", "skills.name"]),
)

# The vector of a trace's task in the form fetch embeds a query, per model: a skill's
# *prototype* index entry is the mean of its example traces' vectors (skill_library.prototypes).
# Kept in the tenant's records beside the traces they come from (a task may hold personal
# data, so these never enter the shared text_vectors cache) and deleted with them.
task_vectors_table = sa.Table(
    "task_vectors",
    metadata,
    tenant_column(),
    sa.Column("trace_id", sa.String(64), primary_key=True),
    sa.Column("model", sa.String(200), primary_key=True),
    sa.Column("vector", sa.LargeBinary, nullable=False),
)

profiles_table = sa.Table(
    "skill_profiles",
    metadata,
    tenant_column(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("when_text", sa.Text, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(["tenant", "name"], ["skills.tenant", "skills.name"]),
)

# Vectors of the library's own index texts per model (skill_library.text_vectors). Each row
# is one tenant's: its digest is the text's digest salted with the tenant
# (text_vectors.tenant_key, applied by the store), so no tenant can look up another's text.
vectors_table = sa.Table(
    "text_vectors",
    metadata,
    sa.Column("model", sa.String(200), primary_key=True),
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("vector", sa.LargeBinary, nullable=False),
)

# Per-tenant settings (the index generation); ``schema_version`` is the store's own and
# lives in the default tenant's rows.
meta_table = sa.Table(
    "library_meta",
    metadata,
    tenant_column(),
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

#: the tables whose rows belong to a tenant, parents before children
TENANT_TABLES = (skills_table, versions_table, outcomes_table, traces_table, examples_table,
                 profiles_table, meta_table)
