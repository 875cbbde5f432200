"""The rows ``redact_stored()`` reads and rewrites (skill_library.redaction), and the aliases
of renamed skills.

:class:`RedactionRows` is a unit of work: every method runs on the one transaction that
:meth:`RedactionRows.writing` opens, so a redacted version, its erased predecessors, its
moved evidence, its alias and its audit events are written together or not at all. What
personal data is and how a text is redacted is the concept's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import Skill, SkillStatus, Trace, utc_now
from skill_library.storage import audit
from skill_library.storage.privacy_tables import aliases_table
from skill_library.storage.tables import (
    examples_table,
    profiles_table,
    skills_table,
    traces_table,
    vectors_table,
    versions_table,
)

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


def stored_keys(tenant: str, digests: Iterable[str]) -> list[str]:
    """The keys the store may keep the vectors of the texts with ``digests`` under: the
    tenant's (skill_library.text_vectors.tenant_key) and the unsalted one of older libraries."""
    from skill_library.text_vectors import tenant_key

    plain = set(digests)
    return sorted(plain | {tenant_key(tenant, d) for d in plain})


def alias_of(store: "UnitOfWork", alias: str) -> tuple[str, str] | None:
    """The skill ``alias`` names and the release that made the alias (None: not an alias)."""
    with store.transaction(write=False) as conn:
        row = conn.execute(sa.select(aliases_table.c.name, aliases_table.c.made_in)
                           .where(aliases_table.c.tenant == store.tenant)
                           .where(aliases_table.c.alias == alias)).first()
    return None if row is None else (str(row[0]), str(row[1]))


def aliases(store: "UnitOfWork") -> dict[str, str]:
    """Every alias of the tenant: old name -> new name."""
    with store.transaction(write=False) as conn:
        return {str(a): str(n) for a, n in conn.execute(
            sa.select(aliases_table.c.alias, aliases_table.c.name).where(aliases_table.c.tenant == store.tenant))}


class RedactionRows:
    """The skill rows of ``store``'s tenant, on one write transaction (``conn``)."""

    def __init__(self, store: "UnitOfWork", conn: sa.Connection) -> None:
        self.store = store
        self.conn = conn
        self.tenant = store.tenant
        self._t = store.tenant_filter

    @classmethod
    @contextmanager
    def writing(cls, store: "UnitOfWork") -> Iterator["RedactionRows"]:
        """The rows on a new write transaction (committed when the block ends)."""
        with store.transaction(write=True) as conn:
            yield cls(store, conn)

    # -- reads ----------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every skill name of the tenant, sorted."""
        return sorted(self.conn.execute(sa.select(skills_table.c.name).where(self._t(skills_table))).scalars())

    def aliases(self) -> set[str]:
        """The tenant's aliases (old names of renamed skills)."""
        return set(self.conn.execute(sa.select(aliases_table.c.alias)
                                     .where(aliases_table.c.tenant == self.tenant)).scalars())

    def versions(self, name: str) -> list[dict[str, Any]]:
        """Every version row of ``name`` (all columns), oldest first."""
        return [dict(r) for r in self.conn.execute(
            sa.select(versions_table).where(self._t(versions_table)).where(versions_table.c.name == name)
            .order_by(versions_table.c.version)).mappings()]

    def examples(self, name: str) -> list[dict[str, Any]]:
        """Every example row of ``name`` (all columns)."""
        return [dict(r) for r in self.conn.execute(
            sa.select(examples_table).where(self._t(examples_table)).where(examples_table.c.name == name)).mappings()]

    def traces(self, ids: set[str]) -> list[Trace]:
        """The stored traces of ``ids`` (unknown ids skipped)."""
        if not ids:
            return []
        rows = self.conn.execute(sa.select(traces_table.c.body).where(self._t(traces_table))
                                 .where(traces_table.c.id.in_(sorted(ids)))).scalars()
        return [Trace.model_validate(b) for b in rows]

    def active_version(self, name: str) -> int:
        """The version ``name``'s active pointer names."""
        return int(self.conn.execute(sa.select(skills_table.c.active_version).where(self._t(skills_table))
                                     .where(skills_table.c.name == name)).scalar_one())

    # -- writes ---------------------------------------------------------------------------
    def set_example(self, name: str, trace_id: str, *, text: str, params: Any) -> None:
        """Replace the text and params of ``name``'s example of ``trace_id``."""
        self.conn.execute(examples_table.update().where(self._t(examples_table))
                          .where(examples_table.c.name == name).where(examples_table.c.trace_id == trace_id)
                          .values(text=text, params=params))

    def add_version(self, skill: Skill, *, status: SkillStatus, successes: int, failures: int) -> Skill:
        """Store ``skill`` as the next version of its name (``status`` active or draft) with
        the given outcome counts."""
        stored, _ = self.store.insert_version(self.conn, skill, status=status)
        self.conn.execute(versions_table.update().where(self._t(versions_table))
                          .where(versions_table.c.name == stored.name)
                          .where(versions_table.c.version == stored.version)
                          .values(successes=successes, failures=failures))
        return stored

    def rewrite_version(self, name: str, version: int, values: dict[str, Any]) -> None:
        """Overwrite columns of one stored version (an erased version's texts and code)."""
        self.conn.execute(versions_table.update().where(self._t(versions_table))
                          .where(versions_table.c.name == name)
                          .where(versions_table.c.version == version).values(**values))

    def forget_derived(self, name: str, digests: Sequence[str]) -> None:
        """Drop ``name``'s derived ``when`` and the tenant's cached text vectors of the texts
        with ``digests`` (under the tenant's key and the unsalted key of older libraries)."""
        self.conn.execute(profiles_table.delete().where(self._t(profiles_table)).where(profiles_table.c.name == name))
        if digests:
            self.conn.execute(vectors_table.delete().where(vectors_table.c.digest.in_(
                stored_keys(self.tenant, digests))))

    def rename(self, name: str, new_name: str, made_in: str) -> None:
        """Move ``name``'s examples to ``new_name`` and make ``name`` an alias of it (made in
        release ``made_in``); older aliases of ``name`` follow it."""
        moved = self.examples(name)
        self.conn.execute(examples_table.delete().where(self._t(examples_table)).where(examples_table.c.name == name))
        if moved:
            self.conn.execute(examples_table.insert(), [{**e, "name": new_name} for e in moved])
        self.conn.execute(aliases_table.delete().where(aliases_table.c.tenant == self.tenant)
                          .where(aliases_table.c.alias == name))
        self.conn.execute(aliases_table.insert().values(tenant=self.tenant, alias=name, name=new_name,
                                                        made_in=made_in, created_at=utc_now()))
        self.conn.execute(aliases_table.update().where(aliases_table.c.tenant == self.tenant)
                          .where(aliases_table.c.name == name).values(name=new_name))

    def audit(self, name: str, version: int | None, from_status: str | None, to_status: str, *,
              actor: str, reason: str, evidence: dict[str, Any]) -> None:
        """An audit event, on this transaction."""
        audit.write(self.conn, self.tenant, name, version, from_status, to_status, actor=actor,
                    reason=reason, evidence=evidence)
