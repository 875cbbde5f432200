"""The record store as schema 3 wrote it (before tenants), frozen: tests build a v3 store
with it and check that today's code upgrades it in place (tests/test_tenancy.py).

Copied from skill_library/record_store.py and skill_library/patterns/tables.py at schema 3;
never edit it to follow the current schema.
"""

from __future__ import annotations

from datetime import datetime, timezone

import sqlalchemy as sa

metadata = sa.MetaData()
T = sa.DateTime(timezone=True)

skills = sa.Table(
    "skills", metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("active_version", sa.Integer, nullable=False),
    sa.Column("created_at", T, nullable=False),
    sa.Column("updated_at", T, nullable=False),
)
versions = sa.Table(
    "skill_versions", metadata,
    sa.Column("name", sa.String(200), sa.ForeignKey("skills.name"), primary_key=True),
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
    sa.Column("created_at", T, nullable=False),
)
outcomes = sa.Table(
    "outcomes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("trace_id", sa.String(64)),
    sa.Column("recorded_at", T, nullable=False),
    sa.ForeignKeyConstraint(["name", "version"], ["skill_versions.name", "skill_versions.version"]),
    sa.Index("ix_outcomes_skill", "name", "version"),
)
traces = sa.Table(
    "traces", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("source", sa.String(200), nullable=False),
    sa.Column("body", sa.JSON, nullable=False),
    sa.Column("created_at", T, nullable=False),
)
examples = sa.Table(
    "skill_examples", metadata,
    sa.Column("name", sa.String(200), sa.ForeignKey("skills.name"), primary_key=True),
    sa.Column("trace_id", sa.String(64), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("indexed", sa.Boolean, nullable=False),
    sa.Column("created_at", T, nullable=False),
)
profiles = sa.Table(
    "skill_profiles", metadata,
    sa.Column("name", sa.String(200), sa.ForeignKey("skills.name"), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("when_text", sa.Text, nullable=False),
    sa.Column("updated_at", T, nullable=False),
)
vectors = sa.Table(
    "text_vectors", metadata,
    sa.Column("model", sa.String(200), primary_key=True),
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("vector", sa.LargeBinary, nullable=False),
)
meta = sa.Table(
    "library_meta", metadata,
    sa.Column("key", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
migrations = sa.Table(
    "schema_migrations", metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("applied_at", T, nullable=False),
)
transitions = sa.Table(
    "pattern_transitions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("subject", sa.String(200), nullable=False),
    sa.Column("from_state", sa.String(200), nullable=False),
    sa.Column("to_state", sa.String(200), nullable=False),
    sa.Column("session", sa.String(200), nullable=False),
    sa.Column("at", T, nullable=False),
    sa.Index("ix_pattern_transitions", "subject", "from_state", "id"),
)
opt_outs = sa.Table(
    "pattern_opt_outs", metadata,
    sa.Column("subject", sa.String(200), primary_key=True),
    sa.Column("at", T, nullable=False),
)
procedures = sa.Table(
    "procedures", metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("initial_confidence", sa.Float, nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("actor", sa.String(200)),
    sa.Column("subject", sa.String(200)),
    sa.Column("source", sa.String(20), nullable=False),
    sa.Column("created_at", T, nullable=False),
)

CODE = ('def water_plants(target: str) -> dict:\n    """water the plants in the garden"""\n'
        '    return {"target": target}\n')
PARAMETERS = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}


def make_v3_store(url: str) -> None:
    """A schema-3 store at ``url``: ``water_plants`` v1 (retired) and v2 (active, 3 successes
    and 1 failure, one trace, one example), a subject's transitions and an opt-out."""
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        metadata.create_all(conn)
        conn.execute(migrations.insert(), [
            {"version": 1, "name": "initial: skills, versions, outcomes, traces, meta", "applied_at": now},
            {"version": 2, "name": "evidence: skill_examples, skill_profiles", "applied_at": now},
            {"version": 3, "name": "text_vectors: stored vectors of the index texts", "applied_at": now},
        ])
        conn.execute(meta.insert(), [{"key": "schema_version", "value": "3"},
                                     {"key": "index_generation", "value": "7"}])
        conn.execute(skills.insert().values(name="water_plants", active_version=2, created_at=now, updated_at=now))
        for version, status, when in ((1, "retired", "water the plants"),
                                      (2, "active", "water the plants in the garden")):
            conn.execute(versions.insert().values(
                name="water_plants", version=version, kind="code", when_text=when, description=when, code=CODE,
                parameters=PARAMETERS, tools=[], depends_on=[],
                provenance={"trace_ids": ["t1"], "generalizer": "hand-written", "created_at": now.isoformat()},
                status=status, successes=3 if version == 2 else 0, failures=1 if version == 2 else 0,
                created_at=now,
            ))
        conn.execute(outcomes.insert(), [
            {"name": "water_plants", "version": 2, "success": ok, "trace_id": "t1" if i == 0 else None,
             "recorded_at": now}
            for i, ok in enumerate([True, True, False, True])
        ])
        conn.execute(traces.insert().values(
            id="t1", task="water the roses", source="agent",
            body={"id": "t1", "task": "water the roses", "source": "agent", "created_at": now.isoformat()},
            created_at=now,
        ))
        conn.execute(examples.insert().values(name="water_plants", trace_id="t1", text="water the roses",
                                              params={"target": "roses"}, indexed=True, created_at=now))
        conn.execute(transitions.insert(), [
            {"subject": "ann", "from_state": "water_plants", "to_state": "water_plants", "session": f"s{i}",
             "at": now}
            for i in range(3)
        ])
        conn.execute(opt_outs.insert().values(subject="bob", at=now))
    engine.dispose()
