"""One tenant's working parts: what the concept modules use, without the facade.

A :class:`TenantContext` holds the narrow objects of one tenant of an open library: its
record store (bound to the tenant), its stored text vectors, its synced vector index with
one :meth:`TenantContext.sync`, and its canary routes (the running canaries cached per
index generation and the version fetch gave each recent session). ``SkillLibrary`` makes
one when it opens and ``for_tenant`` makes a new one for each view, so nothing of one
tenant's state (a session memo, a canary cache) can reach another's: a view shares the
root's engine, write lock, embedder and sandbox, never its context (docs/architecture.md).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_library import prototypes
from skill_library.index_sync import SyncedIndex
from skill_library.models import Skill
from skill_library.text_vectors import StoredVectors

if TYPE_CHECKING:
    from skill_library.embeddings import Embedder
    from skill_library.record_store import RecordStore
    from skill_library.vector_index import IndexServer, VectorIndex


@dataclass
class CanaryRoutes:
    """A tenant's canary routing state (read and written by skill_library.governance.canary):
    the tenant's running canaries with the index generation they were read at, and the
    version fetch or run gave each recent (session, skill), oldest first."""

    #: (index generation, canaries by skill name); None: not read yet
    cache: tuple[int, dict[str, Any]] | None = None
    #: (session, skill name) -> version, bounded by canary.SESSION_MEMO_SIZE
    sessions: OrderedDict[tuple[str, str], int] = field(default_factory=OrderedDict)

    def clear(self) -> None:
        """Forget the cached canaries and every session's version."""
        self.cache = None
        self.sessions.clear()


@dataclass
class TenantContext:
    """The record store, vectors, index and canary routes of one tenant (see the module)."""

    store: RecordStore
    vectors: StoredVectors
    index: SyncedIndex
    routes: CanaryRoutes = field(default_factory=CanaryRoutes)

    @classmethod
    def open(cls, folder: Path | None, store: RecordStore, embedder: Embedder,
             *, server: IndexServer | None = None) -> TenantContext:
        """The context of ``store``'s tenant: its vectors and its index (in ``folder``'s
        ``chroma``, or on ``server``), opened lazily on first use."""
        vectors = StoredVectors(embedder, store)
        return cls(store=store, vectors=vectors, index=SyncedIndex(folder, store, vectors, server=server))

    @property
    def tenant(self) -> str:
        """The tenant whose records and index this context reads and writes."""
        return self.store.tenant

    def sync(self, index: VectorIndex, skills: Sequence[Skill] | Sequence[str], *,
             known: dict[str, Any] | Mapping[str, Sequence[float]] | None = None) -> None:
        """Make ``index`` hold exactly the texts of ``skills`` (Skill records, or names read
        from the store), embedding only the texts it lacks, in one batch and one upsert.
        A skill that is not active leaves the index. ``known`` maps texts to vectors already
        computed; a dict given is filled with the ones computed here."""
        if not skills:
            return
        if isinstance(skills[0], str):
            names = [str(n) for n in skills]
            found = self.store.get_many_active(names)
            active = [found[n] for n in names if n in found and found[n].status == "active"]
        else:
            records = [s for s in skills if isinstance(s, Skill)]
            names = [s.name for s in records]
            active = [s for s in records if s.status == "active"]
        active_names = {s.name for s in active}
        for name in dict.fromkeys(names):
            if name not in active_names:
                index.delete(name)
        if not active:
            return
        vectors: dict[str, Any] = known if isinstance(known, dict) else dict(known or {})
        wanted = self.index.expected_entries(active)
        have = index.texts_of_many([s.name for s in active])
        changed = prototypes.fill([e for e in wanted if have.get(e.id) != (e.when, e.version)],
                                  self.store, self.vectors.model_name)
        missing = list(dict.fromkeys(e.when for e in changed if e.vector is None and e.when not in vectors))
        if missing:
            vectors.update(zip(missing, self.vectors.embed(missing)))
        keep = {e.id for e in wanted}
        stale = [i for i in have if i not in keep]
        if stale:
            index.delete_ids(stale)
        if changed:
            index.upsert(changed, [e.vector if e.vector is not None else vectors[e.when] for e in changed])
