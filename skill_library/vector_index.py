"""The vector index: derived data, rebuilt from the records whenever in doubt.

One ChromaDB collection with cosine distance holds, for the active version of each active
skill, its ``when`` text (id = the skill name) and its indexed example tasks (id =
``name#trace_id``); metadata: name, version, kind. Only fetchable skills are in it, so
queries need no ``where`` filter on the hot path; a query returns entries, which callers
group by skill (:func:`best_per_skill`).
"""

from __future__ import annotations

import ipaddress
import shutil
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit

from skill_library.embeddings import Embedder, same_model
from skill_library.errors import IndexCorruptError, IndexUnavailableError, SkillLibraryError
from skill_library.storage import chroma_file

if TYPE_CHECKING:  # chromadb is imported when an index is opened, not with this module
    import chromadb

COLLECTION = "skills"
INDEX_FORMAT = 2  # 2: several entries (when + examples) per skill
# Chroma refuses batches larger than its max batch size (5,461 here); stay well under it.
UPSERT_BATCH = 1000
#: entries embedded per batch when the index is rebuilt from the records
REBUILD_BATCH = 256
#: how long a call to an index server keeps retrying while the server cannot be reached
#: (a restart takes a second or two) before it raises IndexUnavailableError
INDEX_RECONNECT_SECONDS = 15.0
#: pause between those retries
INDEX_RETRY_PAUSE_SECONDS = 0.25
#: the HTTP timeout of one request to an index server
INDEX_REQUEST_TIMEOUT_SECONDS = 30.0
#: collection metadata key holding the records generation a server index was written at
GENERATION_KEY = "generation"

T = TypeVar("T")


@dataclass(frozen=True)
class IndexServer:
    """Where a Chroma server index lives: ``http(s)://HOST:PORT[/COLLECTION]``.

    The path names the collection (default ``skills``), so several libraries can share
    one server. ``token`` (never part of the URL, never logged) is sent as a bearer token
    for an authenticating proxy in front of the server.
    """

    host: str
    port: int
    ssl: bool = False
    collection: str = COLLECTION
    token: str | None = field(default=None, repr=False)  # never in a repr or a log

    @classmethod
    def parse(cls, url: str, token: str | None = None) -> "IndexServer":
        """The server of an index URL; ValueError for anything but http(s)://HOST:PORT[/NAME]."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"index URL must be http(s)://HOST:PORT[/COLLECTION], got {url!r}")
        if parts.username or parts.password:
            raise ValueError("index URL: pass the token as index_token / SKILLS_INDEX_TOKEN, not in the URL")
        name = parts.path.strip("/") or COLLECTION
        port = parts.port or (443 if parts.scheme == "https" else 8000)
        return cls(parts.hostname, port, parts.scheme == "https", name, token)

    @property
    def url(self) -> str:
        """The URL (never the token)."""
        return f"{'https' if self.ssl else 'http'}://{self.host}:{self.port}/{self.collection}"

    @property
    def loopback(self) -> bool:
        """True for localhost / 127.0.0.0/8 / ::1."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


class InsecureIndexError(SkillLibraryError, ValueError):
    """An index server beyond loopback with no token: it would be reached unauthenticated."""


def check_index_server(server: IndexServer) -> IndexServer:
    """``server``, or :class:`InsecureIndexError` when it is not on loopback and no token is
    set: Chroma's own server authenticates nobody (and up to 1.5.9 has an unauthenticated
    remote-code-execution flaw, CVE-2026-45829), so beyond loopback it must sit behind an
    authenticating proxy (:mod:`skill_library.index_proxy`) whose token the library sends."""
    if not server.loopback and not server.token:
        raise InsecureIndexError(
            f"the index server {server.host} is not on loopback and no token is set: set SKILLS_INDEX_TOKEN "
            "(or index_token=) to the token of the authenticating proxy in front of it "
            "(python -m skill_library.index_proxy), or use a loopback index URL"
        )
    return server


class IndexAuthError(IndexUnavailableError):
    """The index server (its authenticating proxy) refused the library's token, or asked for one."""


def _refused(exc: BaseException) -> bool:
    """True when ``exc`` is the server's refusal of the credentials (401/403)."""
    from chromadb.errors import AuthorizationError, ChromaAuthError

    return isinstance(exc, (AuthorizationError, ChromaAuthError))


def _refusal(server: IndexServer) -> IndexAuthError:
    return IndexAuthError(
        f"the index server {server.url} refused this library's token: set SKILLS_INDEX_TOKEN (or "
        "index_token=) to the token of its authenticating proxy"
    )


def _unreachable(exc: BaseException) -> bool:
    """True when ``exc`` means the index server could not be reached."""
    import httpx

    if isinstance(exc, (httpx.TransportError, ConnectionError)):
        return True
    return isinstance(exc, ValueError) and "Could not connect" in str(exc)


class _ReadersWriterLock:
    """Many readers or one writer; readers may re-enter (a reader never waits for a reader)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._writing:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._readers:
                self._cond.wait()
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class FolderClient:
    """The one Chroma client of an index folder in this process, shared by every tenant's
    :class:`VectorIndex` on the folder (and every ``SkillLibrary`` opened on it).

    Chroma keeps one in-memory system per folder and process; a second client of the folder
    gets the first one's system, whose in-memory index does not see other processes' writes
    until every client of it has closed. So there is one client here, and :meth:`reload`
    replaces it (with a fresh system, read from disk) for all of them together. Each call
    on the client runs inside :meth:`lease` (shared); a reload waits for the calls in flight
    and bumps :attr:`epoch`, and each index gets its collection again on its next call.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        #: bumped at every reload: a collection got at an older epoch is stale
        self.epoch = 0
        self._client: Any = None
        self._lock = _ReadersWriterLock()
        self._users = 0

    def _make(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(path=str(self.path),
                                         settings=Settings(anonymized_telemetry=False, allow_reset=True))

    @contextmanager
    def lease(self) -> Iterator[Any]:
        """The client, for one call (no reload replaces it meanwhile)."""
        with self._lock.reading():
            client = self._client
            if client is None:
                with _FOLDERS_LOCK:  # the first call after open or a discard: make it once
                    if self._client is None:
                        self._client = self._make()
                    client = self._client
            yield client

    def reload(self, seen_epoch: int | None = None) -> None:
        """A fresh client (and Chroma system) for every index of the folder, unless it was
        reloaded since ``seen_epoch``."""
        with self._lock.writing():
            if seen_epoch is not None and seen_epoch != self.epoch:
                return
            self._close_client()
            self._client = self._make()
            self.epoch += 1

    @property
    def shared(self) -> bool:
        """True when more than one index of this process uses the client."""
        return self._users > 1

    def renew(self) -> None:
        """Make every index get its collection again (one was deleted and recreated)."""
        with _FOLDERS_LOCK:
            self.epoch += 1

    def discard(self) -> None:
        """Drop the client after a failure (the next call makes a new one)."""
        with self._lock.writing():
            self._close_client()
            _forget_chroma_system(self.path)
            self.epoch += 1

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing a damaged client must not hide the real error
                pass


_FOLDERS: dict[str, FolderClient] = {}
_FOLDERS_LOCK = threading.RLock()


def folder_client(folder: Path) -> FolderClient:
    """The shared client of ``folder`` (counted: give it back with :func:`release_folder_client`)."""
    key = str(Path(folder).resolve())
    with _FOLDERS_LOCK:
        shared = _FOLDERS.get(key)
        if shared is None:
            shared = _FOLDERS[key] = FolderClient(Path(key))
        shared._users += 1
        return shared


def release_folder_client(shared: FolderClient) -> None:
    """One user less; the last one closes the client."""
    with _FOLDERS_LOCK:
        shared._users -= 1
        if shared._users > 0:
            return
        if _FOLDERS.get(str(shared.path)) is shared:
            del _FOLDERS[str(shared.path)]
    with shared._lock.writing():
        shared._close_client()


@contextmanager
def closed_for_maintenance(folder: Path) -> Iterator[None]:
    """Run the block with this process's client of ``folder`` closed and no other thread using
    it (erasure rewrites Chroma's own file); the next call through the client opens a fresh
    one. With no client of the folder open here, the block just runs."""
    with _FOLDERS_LOCK:
        shared = _FOLDERS.get(str(Path(folder).resolve()))
    if shared is None:
        yield
        return
    with shared._lock.writing():
        shared._close_client()
        _forget_chroma_system(shared.path)
        try:
            yield
        finally:
            shared.epoch += 1


@dataclass(frozen=True)
class IndexEntry:
    """One embedded text of a skill: its ``when`` (``key == name``), its phrase
    (``name~phrase``: skill_library.phrases), an example task, or its prototype (``traces``
    set: the mean of their task vectors, ``when`` a label)."""

    name: str
    version: int
    kind: str
    when: str  # the embedded text (a prototype's: its label, see skill_library.prototypes)
    key: str = ""
    shapes: str = ""  # value_fit.encode of the example's params ("": none known)
    traces: tuple[str, ...] = ()  # a prototype's traces
    vector: tuple[float, ...] | None = field(default=None, compare=False, repr=False)  # a prototype's, once computed

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
    shapes: str | None = None  # the entry's value shapes (value_fit.encode), if kept
    key: str = ""  # the entry's id: the skill name (its when), name#trace (an example), a prototype's


class VectorIndex:
    """A persistent Chroma collection of skill ``when`` embeddings."""

    def __init__(self, folder: Path | None, embedder: Embedder, *, server: IndexServer | None = None,
                 collection: str = COLLECTION) -> None:
        import chromadb
        from chromadb.config import Settings

        from skill_library.chroma_embedding import SkillEmbeddingFunction

        self.folder = Path(folder) if folder is not None else None
        self.server = server
        #: the collection: the server's, else ``collection`` in the folder (one per tenant)
        self.name = server.collection if server is not None else collection
        self.embedder = embedder
        # a server index gets no embedding function: vectors are always passed explicitly,
        # so the server never needs (or rebuilds) a model
        self._function = SkillEmbeddingFunction(embedder) if server is None else None
        self._server_client: Any = None
        #: a folder index's client is the folder's, shared in this process (FolderClient)
        self._shared: FolderClient | None = None
        self._coll: Any = None
        self._coll_epoch = -1
        self._closed = False
        try:
            if server is None:
                assert self.folder is not None
                self._shared = shared = folder_client(self.folder)
                self._finalizer = weakref.finalize(self, release_folder_client, shared)
            else:
                settings = Settings(anonymized_telemetry=False, allow_reset=False)
                headers = {"Authorization": f"Bearer {server.token}"} if server.token else None
                self._server_client = client = self._retry(lambda: chromadb.HttpClient(
                    host=server.host, port=server.port, ssl=server.ssl, headers=headers, settings=settings,
                ))
                self._finalizer = weakref.finalize(self, _close_client, client)
                session = getattr(getattr(client, "_server", None), "_session", None)
                if session is not None:  # chromadb's default is no timeout at all
                    session.timeout = INDEX_REQUEST_TIMEOUT_SECONDS
            self._collection = self._retry(self._open_collection)
        except IndexUnavailableError:
            self.close()
            raise
        except Exception as exc:  # chroma raises many types for damaged files
            if self._shared is not None:
                self._shared.discard()  # a half-built system would poison the next open
            self.close()
            if isinstance(exc, IndexCorruptError):
                raise
            raise IndexCorruptError(f"cannot open the vector index in {self.where}: {exc}") from exc

    # -- the client and collection, current across reloads -------------------------------
    @property
    def _client(self) -> Any:
        """The Chroma client (call inside :meth:`_retry`, which holds the folder's lease)."""
        if self._closed:
            raise IndexUnavailableError(f"the vector index in {self.where} was closed")
        if self._shared is None:
            return self._server_client
        with self._shared.lease() as client:  # re-entrant: _retry holds it already
            return client

    @property
    def _collection(self) -> Any:
        """The collection, got again from the current client after a :meth:`reload`."""
        if self._shared is not None and self._coll_epoch != self._shared.epoch and not self._closed:
            epoch = self._shared.epoch
            self._coll = self._client.get_collection(self.name, embedding_function=self._function)
            self._coll_epoch = epoch
        if self._coll is None:
            raise IndexUnavailableError(f"the vector index in {self.where} was closed")
        return self._coll

    @_collection.setter
    def _collection(self, value: Any) -> None:
        self._coll = value
        self._coll_epoch = self._shared.epoch if self._shared is not None else 0

    @property
    def shared(self) -> bool:
        """True when another index of this process uses this one's client (a folder's)."""
        return self._shared is not None and self._shared.shared

    def reload(self) -> None:
        """Read the index afresh: for a folder index, a new client of the folder (for every
        index of it in this process: :class:`FolderClient`), so that other processes'
        writes are seen; a server index is always read afresh."""
        if self._shared is not None:
            self._shared.reload(self._coll_epoch)

    @property
    def where(self) -> str:
        """The index's folder or server URL, for messages."""
        return self.server.url if self.server is not None else str(self.folder)

    def _retry(self, call: Callable[[], T]) -> T:
        """``call()``; for a server index, retried while the server cannot be reached, for
        up to :data:`INDEX_RECONNECT_SECONDS`, then :class:`IndexUnavailableError`; for a
        folder index, under the folder client's lease (no reload in between)."""
        if self.server is None:
            if self._shared is None:
                raise IndexUnavailableError(f"the vector index in {self.where} was closed")
            with self._shared.lease():
                return call()
        deadline = time.monotonic() + INDEX_RECONNECT_SECONDS
        while True:
            try:
                return call()
            except Exception as exc:
                if _refused(exc):
                    raise _refusal(self.server) from None
                if not _unreachable(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise IndexUnavailableError(
                        f"the index server {self.server.url} cannot be reached "
                        f"(for {INDEX_RECONNECT_SECONDS:g} s: {type(exc).__name__}): nothing was "
                        "written to the index; records already stored are kept"
                    ) from None
                time.sleep(INDEX_RETRY_PAUSE_SECONDS)

    def _open_collection(self) -> chromadb.Collection:
        collection = self._client.get_or_create_collection(
            self.name,
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

    # -- the records generation of a server index (a folder index keeps a file) ---------
    def stored_generation(self) -> int | None:
        """The records generation kept in the collection's metadata (None: none)."""
        meta = self._retry(lambda: self._client.get_collection(self.name, embedding_function=self._function).metadata)
        value = (meta or {}).get(GENERATION_KEY)
        return int(value) if value is not None else None

    def store_generation(self, generation: int) -> None:
        """Keep ``generation`` in the collection's metadata."""
        meta = {"model": self.embedder.model_name, "format": INDEX_FORMAT, GENERATION_KEY: generation}
        self._retry(lambda: self._collection.modify(metadata=meta))

    def scrub_unused_slots(self) -> int:
        """Zero the unused capacity of this collection's HNSW files in a folder index (the
        bytes zeroed; 0 for a server index, whose files are the server's).

        Chroma 1.5 rewrites a collection's HNSW files at full capacity on its first call
        after a client opens it, the slots past the last element straight from memory it
        never cleared, so freed texts of this process (an erased email, say) can land on
        disk. Call it with the write lock held (no other writer grows the files
        meanwhile): it makes that first call, then zeroes the tails."""
        if self._shared is None or self.folder is None:
            return 0
        collection_id = str(self._retry(lambda: self._collection.id))
        self.count()  # the first call: Chroma loads the segment and writes its files now
        return sum(chroma_file.zero_unused_hnsw_slots(self.folder / segment)
                   for segment in chroma_file.vector_segments(self.folder / "chroma.sqlite3", collection_id))

    # -- reads --------------------------------------------------------------------------
    def count(self) -> int:
        """How many texts are indexed (a skill has one or more)."""
        return self._retry(self._collection.count)

    def entries(self) -> dict[str, int]:
        """Indexed entry id -> skill version."""
        got = self._retry(lambda: self._collection.get(include=["metadatas"]))
        return {
            id_: int((meta or {}).get("version", -1))
            for id_, meta in zip(got["ids"], got["metadatas"] or [])
        }

    def documents(self, ids: Sequence[str]) -> dict[str, str]:
        """Entry id -> document of the entries ``ids`` that exist."""
        if not ids:
            return {}
        got = self._retry(lambda: self._collection.get(ids=list(ids), include=["documents"]))
        return {id_: doc or "" for id_, doc in zip(got["ids"], got["documents"] or [])}

    def texts_of(self, name: str) -> dict[str, tuple[str, int]]:
        """Entry id -> (text, version) of every entry of skill ``name``."""
        return self.texts_of_many([name])

    def texts_of_many(self, names: Sequence[str]) -> dict[str, tuple[str, int]]:
        """Entry id -> (text, version) of every entry of the skills ``names``."""
        if not names:
            return {}
        where: Any = {"name": names[0]} if len(names) == 1 else {"name": {"$in": list(names)}}
        got = self._retry(lambda: self._collection.get(where=where, include=["documents", "metadatas"]))
        return {
            id_: (doc or "", int((meta or {}).get("version", -1)))
            for id_, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [])
        }

    def vectors(self) -> list[tuple[str, str, list[float]]]:
        """Every entry as ``(id, skill name, vector)`` (abstention's calibration reads them)."""
        got = self._retry(lambda: self._collection.get(include=["metadatas", "embeddings"]))
        embeddings = got.get("embeddings")
        if embeddings is None:
            return []
        return [(id_, str((meta or {}).get("name", id_)), [float(x) for x in vector])
                for id_, meta, vector in zip(got["ids"], got["metadatas"] or [], embeddings)]

    def query(self, embedding: Sequence[float], n: int) -> list[IndexHit]:
        """The ``n`` nearest skills to ``embedding`` by cosine similarity, best first."""
        return self.query_many([embedding], n)[0]

    def query_many(self, embeddings: Sequence[Sequence[float]], n: int) -> list[list[IndexHit]]:
        """:meth:`query` for several embeddings in one call."""
        if n < 1 or not embeddings:
            return [[] for _ in embeddings]
        got = self._retry(lambda: self._collection.query(
            query_embeddings=[list(e) for e in embeddings],
            n_results=n,
            include=["metadatas", "distances"],
        ))
        return [
            [
                IndexHit(
                    name=str(meta.get("name", id_)),
                    version=int(meta["version"]),
                    kind=str(meta["kind"]),
                    similarity=1.0 - float(distance),
                    shapes=meta.get("shapes") or None,  # type: ignore[arg-type]
                    key=str(id_),
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
            vectors = [list(v) for v in embeddings[start : start + UPSERT_BATCH]]
            self._retry(lambda: self._collection.upsert(
                ids=[e.id for e in batch],  # noqa: B023 (called at once)
                embeddings=vectors,  # noqa: B023
                metadatas=[_metadata(e) for e in batch],  # noqa: B023
                documents=[e.when for e in batch],  # noqa: B023
            ))

    def delete(self, name: str) -> None:
        """Remove every entry of a skill from the index (no error when absent)."""
        self._retry(lambda: self._collection.delete(where={"name": name}))
        self._retry(lambda: self._collection.delete(ids=[name]))  # entries written before metadata named skills

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Remove entries by id."""
        if ids:
            self._retry(lambda: self._collection.delete(ids=list(ids)))

    def replace(self, name: str, entries: Sequence[IndexEntry],
                embeddings: Sequence[Sequence[float]]) -> None:
        """Make ``entries`` the only entries of skill ``name``."""
        keep = {e.id for e in entries}
        got = self._retry(lambda: self._collection.get(where={"name": name}, include=[]))
        stale = [i for i in got["ids"] if i not in keep]
        if stale:
            self._retry(lambda: self._collection.delete(ids=stale))
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
        self._retry(lambda: self._client.delete_collection(self.name))
        if self._shared is not None:  # other indexes of this collection in this process get the new one
            self._shared.renew()
        self._collection = self._retry(self._open_collection)
        missing = [e.id for e in entries if e.traces and e.vector is None]
        if missing:  # a prototype's document is a label: embedding it would index nonsense
            raise ValueError(f"prototype entries without their vector (prototypes.fill): {missing[:3]}")
        for start in range(0, len(entries), batch_size):
            batch = entries[start : start + batch_size]
            texts = iter(self.embedder.embed([e.when for e in batch if e.vector is None]))
            self.upsert(batch, [e.vector if e.vector is not None else next(texts) for e in batch])
            if progress is not None:
                progress(len(batch))

    def close(self) -> None:
        """Release the Chroma client (a folder's shared client closes with its last index).
        An index that is only dropped (not closed) releases it when it is collected."""
        self._closed = True
        self._coll = None
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()


def _close_client(client: Any) -> None:
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


def remove_folder_collection(folder: Path, name: str) -> None:
    """Delete one collection of a folder index (other tenants' collections stay); when the
    folder cannot even be opened, the whole folder goes (every collection is rebuilt from
    the records on its next use)."""
    from chromadb.errors import NotFoundError

    if not Path(folder).exists():
        return
    shared = folder_client(folder)  # the process's client of the folder, not a second one
    try:
        try:
            with shared.lease() as client:
                client.delete_collection(name)
        except NotFoundError:
            pass
        except Exception:  # chroma raises many types for damaged files
            shared.discard()
            remove_index_folder(folder)
    finally:
        release_folder_client(shared)


def remove_server_collection(server: IndexServer) -> None:
    """Delete a server index's collection (no error when it is absent)."""
    import chromadb
    from chromadb.config import Settings
    from chromadb.errors import NotFoundError

    headers = {"Authorization": f"Bearer {server.token}"} if server.token else None
    try:
        client = chromadb.HttpClient(host=server.host, port=server.port, ssl=server.ssl, headers=headers,
                                     settings=Settings(anonymized_telemetry=False))
        client.delete_collection(server.collection)
    except NotFoundError:
        pass
    except Exception as exc:
        if _refused(exc):
            raise _refusal(server) from None
        if _unreachable(exc):
            raise IndexUnavailableError(f"the index server {server.url} cannot be reached") from None
        raise


def server_collection_exists(server: IndexServer) -> bool:
    """True when the server has the index's collection."""
    import chromadb
    from chromadb.config import Settings
    from chromadb.errors import NotFoundError

    headers = {"Authorization": f"Bearer {server.token}"} if server.token else None
    try:
        client = chromadb.HttpClient(host=server.host, port=server.port, ssl=server.ssl, headers=headers,
                                     settings=Settings(anonymized_telemetry=False))
        client.get_collection(server.collection)
    except NotFoundError:
        return False
    except Exception as exc:
        if _refused(exc):
            raise _refusal(server) from None
        if _unreachable(exc):
            raise IndexUnavailableError(f"the index server {server.url} cannot be reached") from None
        raise
    return True


def _metadata(entry: IndexEntry) -> dict[str, str | int]:
    meta: dict[str, str | int] = {"name": entry.name, "version": entry.version, "kind": entry.kind}
    if entry.shapes:
        meta["shapes"] = entry.shapes
    return meta


def entries_for(
    skills: Iterable[object], examples: Mapping[str, Sequence[object]] | None = None,
    vectored: set[str] | None = None,
) -> list[IndexEntry]:
    """Index entries for skill records (name, version, kind, when) and their examples.

    Each skill gets its ``when``, its phrase (the action and inputs of a description:
    :mod:`skill_library.phrases`) and each of its indexed examples, in their embedded form
    (:func:`~skill_library.shapes.index_text`; an example less the chatter
    that varies between the skill's examples), each distinct text once; and its prototype
    when enough of its example traces are in ``vectored`` (the trace ids with a task
    vector: :mod:`skill_library.prototypes`; its vector is filled in before writing).
    """
    from skill_library import phrases, prototypes, value_fit
    from skill_library.shapes import index_text, shared_sentences

    out: list[IndexEntry] = []
    for s in skills:
        name, version, kind, when = s.name, s.version, s.kind, s.when  # type: ignore[attr-defined]
        found = list((examples or {}).get(name, ()))
        # the when's placeholders read like the first example's values did
        text = index_text(when, found[0].params if found else None)  # type: ignore[attr-defined]
        shapes = value_fit.encode(found[0].params) if found else ""  # type: ignore[attr-defined]
        out.append(IndexEntry(name=name, version=version, kind=kind, when=text, shapes=shapes))
        seen = {text}
        phrase = phrases.phrase_text(text)
        if phrase is not None and phrase not in seen:
            seen.add(phrase)
            out.append(IndexEntry(name=name, version=version, kind=kind, when=phrase, key=phrases.key(name),
                                  shapes=shapes))
        shared = shared_sentences([e.text for e in found])  # type: ignore[attr-defined]
        for example, masked in zip(found, shared):
            if not example.indexed:  # type: ignore[attr-defined]
                continue
            text = index_text(masked, example.params)  # type: ignore[attr-defined]
            if text in seen:
                continue
            seen.add(text)
            key = f"{name}#{example.trace_id}"  # type: ignore[attr-defined]
            shapes = value_fit.encode(example.params)  # type: ignore[attr-defined]
            out.append(IndexEntry(name=name, version=version, kind=kind, when=text, key=key, shapes=shapes))
        traces = prototypes.traces_of(found, vectored) if vectored and found else []  # type: ignore[arg-type]
        if traces:
            # the value shapes its traces bound, all of them (it stands for them all)
            mine = set(traces)
            shapes = value_fit.encode_many([e.params for e in found if e.trace_id in mine])  # type: ignore[attr-defined]
            out.append(IndexEntry(
                name=name, version=version, kind=kind, when=prototypes.document(traces),
                key=prototypes.key(name), shapes=shapes, traces=tuple(traces),
            ))
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
