"""The vector index: derived data, rebuilt from the records whenever in doubt.

One ChromaDB collection with cosine distance holds, for the active version of each active
skill, its ``when`` text (id = the skill name) and its indexed example tasks (id =
``name#trace_id``); metadata: name, version, kind. Only fetchable skills are in it, so
queries need no ``where`` filter on the hot path; a query returns entries, which callers
group by skill (:func:`best_per_skill`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from skill_library.embeddings import Embedder, same_model
from skill_library.errors import IndexCorruptError

if TYPE_CHECKING:  # chromadb is imported when an index is opened, not with this module
    import chromadb

COLLECTION = "skills"
INDEX_FORMAT = 2  # 2: several entries (when + examples) per skill
# Chroma refuses batches larger than its max batch size (5,461 here); stay well under it.
UPSERT_BATCH = 1000
#: entries embedded per batch when the index is rebuilt from the records
REBUILD_BATCH = 256


@dataclass(frozen=True)
class IndexEntry:
    """One embedded text of a skill: its ``when`` (``key == name``) or an example task."""

    name: str
    version: int
    kind: str
    when: str  # the embedded text
    key: str = ""

    @property
    def id(self) -> str:
        return self.key or self.name


@dataclass(frozen=True)
class IndexHit:
    """One nearest neighbour of a query."""

    name: str
    version: int
    kind: str
    similarity: float


class VectorIndex:
    """A persistent Chroma collection of skill ``when`` embeddings."""

    def __init__(self, folder: Path, embedder: Embedder) -> None:
        import chromadb
        from chromadb.config import Settings

        from skill_library.chroma_embedding import SkillEmbeddingFunction

        self.folder = Path(folder)
        self.embedder = embedder
        self._function = SkillEmbeddingFunction(embedder)
        self._client: Any = None
        try:
            self._client = chromadb.PersistentClient(
                path=str(self.folder),
                settings=Settings(anonymized_telemetry=False, allow_reset=True),
            )
            self._collection = self._open_collection()
        except Exception as exc:  # chroma raises many types for damaged files
            self.close()
            _forget_chroma_system(self.folder)
            if isinstance(exc, IndexCorruptError):
                raise
            raise IndexCorruptError(f"cannot open the vector index in {self.folder}: {exc}") from exc

    def _open_collection(self) -> chromadb.Collection:
        collection = self._client.get_or_create_collection(
            COLLECTION,
            embedding_function=self._function,  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"model": self.embedder.model_name, "format": INDEX_FORMAT},
        )
        found = collection.metadata or {}
        if not same_model(found.get("model"), self.embedder.model_name) or found.get("format") != INDEX_FORMAT:
            raise IndexCorruptError(
                f"the vector index was built with model {found.get('model')!r} "
                f"(format {found.get('format')}); this library uses {self.embedder.model_name!r}"
            )
        return collection

    # -- reads --------------------------------------------------------------------------
    def count(self) -> int:
        """How many texts are indexed (a skill has one or more)."""
        return self._collection.count()

    def entries(self) -> dict[str, int]:
        """Indexed entry id -> skill version."""
        got = self._collection.get(include=["metadatas"])
        return {
            id_: int((meta or {}).get("version", -1))
            for id_, meta in zip(got["ids"], got["metadatas"] or [])
        }

    def texts_of(self, name: str) -> dict[str, tuple[str, int]]:
        """Entry id -> (text, version) of every entry of skill ``name``."""
        return self.texts_of_many([name])

    def texts_of_many(self, names: Sequence[str]) -> dict[str, tuple[str, int]]:
        """Entry id -> (text, version) of every entry of the skills ``names``."""
        if not names:
            return {}
        where: Any = {"name": names[0]} if len(names) == 1 else {"name": {"$in": list(names)}}
        got = self._collection.get(where=where, include=["documents", "metadatas"])
        return {
            id_: (doc or "", int((meta or {}).get("version", -1)))
            for id_, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }

    def query(self, embedding: Sequence[float], n: int) -> list[IndexHit]:
        """The ``n`` nearest skills to ``embedding`` by cosine similarity, best first."""
        return self.query_many([embedding], n)[0]

    def query_many(self, embeddings: Sequence[Sequence[float]], n: int) -> list[list[IndexHit]]:
        """:meth:`query` for several embeddings in one call."""
        if n < 1 or not embeddings:
            return [[] for _ in embeddings]
        got = self._collection.query(
            query_embeddings=[list(e) for e in embeddings],
            n_results=n,
            include=["metadatas", "distances"],
        )
        return [
            [
                IndexHit(
                    name=str(meta.get("name", id_)),
                    version=int(meta["version"]),
                    kind=str(meta["kind"]),
                    similarity=1.0 - float(distance),
                )
                for id_, meta, distance in zip(ids, metas, distances)
            ]
            for ids, metas, distances in zip(got["ids"], got["metadatas"], got["distances"])
        ]

    # -- writes -------------------------------------------------------------------------
    def upsert(self, entries: Sequence[IndexEntry], embeddings: Sequence[Sequence[float]]) -> None:
        """Insert or replace entries whose embeddings are already computed."""
        for start in range(0, len(entries), UPSERT_BATCH):
            batch = entries[start : start + UPSERT_BATCH]
            self._collection.upsert(
                ids=[e.id for e in batch],
                embeddings=[list(v) for v in embeddings[start : start + UPSERT_BATCH]],
                metadatas=[{"name": e.name, "version": e.version, "kind": e.kind} for e in batch],
                documents=[e.when for e in batch],
            )

    def delete(self, name: str) -> None:
        """Remove every entry of a skill from the index (no error when absent)."""
        self._collection.delete(where={"name": name})
        self._collection.delete(ids=[name])  # entries written before metadata named skills

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Remove entries by id."""
        if ids:
            self._collection.delete(ids=list(ids))

    def replace(self, name: str, entries: Sequence[IndexEntry],
                embeddings: Sequence[Sequence[float]]) -> None:
        """Make ``entries`` the only entries of skill ``name``."""
        keep = {e.id for e in entries}
        got = self._collection.get(where={"name": name}, include=[])
        stale = [i for i in got["ids"] if i not in keep]
        if stale:
            self._collection.delete(ids=stale)
        if entries:
            self.upsert(entries, embeddings)

    def rebuild(
        self,
        entries: Sequence[IndexEntry],
        *,
        batch_size: int = REBUILD_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Replace the whole collection with ``entries``, embedding their ``when`` texts."""
        self._client.delete_collection(COLLECTION)
        self._collection = self._open_collection()
        for start in range(0, len(entries), batch_size):
            batch = entries[start : start + batch_size]
            self.upsert(batch, self.embedder.embed([e.when for e in batch]))
            if progress is not None:
                progress(len(batch))

    def close(self) -> None:
        """Release the Chroma client (its system stops when no other client uses it)."""
        client, self._client = self._client, None
        self._collection = None  # type: ignore[assignment]
        if client is not None:
            try:
                client.close()
            except Exception:  # closing a damaged client must not hide the real error
                pass


def _forget_chroma_system(folder: Path) -> None:
    """Drop Chroma's per-process cached system for ``folder`` after a failed open.

    Chroma caches one system per persist directory; after a failure the cached one is
    half-built and would poison the next open of the same path (after a rebuild).
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    for key in (str(folder), str(Path(folder).resolve())):
        system = SharedSystemClient._identifier_to_system.pop(key, None)
        SharedSystemClient._identifier_to_refcount.pop(key, None)
        if system is not None:
            try:
                system.stop()
            except Exception:
                pass


def remove_index_folder(folder: Path) -> None:
    """Delete a damaged index folder so that it can be rebuilt from scratch."""
    shutil.rmtree(folder, ignore_errors=True)


def entries_for(
    skills: Iterable[object], examples: Mapping[str, Sequence[object]] | None = None
) -> list[IndexEntry]:
    """Index entries for skill records (name, version, kind, when) and their examples.

    Each skill gets its ``when`` and each of its indexed examples, in their embedded form
    (:func:`~skill_library.induction.description.index_text`; an example less the chatter
    that varies between the skill's examples), each distinct text once.
    """
    from skill_library.induction import description

    out: list[IndexEntry] = []
    for s in skills:
        name, version, kind, when = s.name, s.version, s.kind, s.when  # type: ignore[attr-defined]
        found = list((examples or {}).get(name, ()))
        # the when's placeholders read like the first example's values did
        text = description.index_text(when, found[0].params if found else None)  # type: ignore[attr-defined]
        out.append(IndexEntry(name=name, version=version, kind=kind, when=text))
        seen = {text}
        shared = description.shared_sentences([e.text for e in found])  # type: ignore[attr-defined]
        for example, masked in zip(found, shared):
            if not example.indexed:  # type: ignore[attr-defined]
                continue
            text = description.index_text(masked, example.params)  # type: ignore[attr-defined]
            if text in seen:
                continue
            seen.add(text)
            key = f"{name}#{example.trace_id}"  # type: ignore[attr-defined]
            out.append(IndexEntry(name=name, version=version, kind=kind, when=text, key=key))
    return out


def best_per_skill(hits: Sequence[IndexHit]) -> list[IndexHit]:
    """One hit per skill, its best-matching text, in the order of the input (best first)."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.name not in seen:
            seen.add(hit.name)
            out.append(hit)
    return out
