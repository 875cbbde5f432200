"""Keeping the derived vector index in step with the records, across threads and processes.

Rules:
- every index write happens under the store's write lock (``write.lock`` in a library
  folder, an advisory lock on a PostgreSQL server: :mod:`skill_library.write_lock`),
  together with the record change it follows;
- a writer bumps the store's *index generation* before it touches the index, so other
  processes (whose Chroma clients hold their own in-memory copy of the index) notice the
  change on their next read and reopen the index;
- opening (or reopening) checks the index against the records and rebuilds it, with an
  :class:`IndexRebuiltWarning`, when it is missing, damaged or out of step, but only when
  the records pass their integrity check and are at least as new as the index (the
  generation the index was last written at, kept in ``chroma/generation``, or in the
  collection's metadata on an index server): fewer records
  never silently win; an older or damaged records file is an error, and rebuilding from it
  takes ``rebuild(force=True)``;
- an index write that fails after its record change was committed drops the open index, so
  the next use checks and rebuilds it;
- readers never wait for the write lock: a reader that finds the generation changed reopens
  the index without it when the index is marked with the records' generation (the writer
  finished), and otherwise, while another writer is at work, reads the index as it was
  (fetch checks every hit against the records); only a first open, which may rebuild,
  takes the lock, and every lock gives up after its timeout (:class:`LockTimeoutError`);
- a process that has not opened a folder's index may leave a write's index change to the next
  reader (:meth:`SyncedIndex.deferring`: a governance transition, which must not pay for
  opening Chroma or loading a model): it names the skills in ``chroma/deferred`` and bumps the
  generation, so the next open (under the lock) brings exactly those skills' entries up to date
  (embedding any new text) before its usual check, with no warning;
- an index handed out (:attr:`SkillLibrary.index`) stays usable: a reopen reloads the
  folder's one Chroma client in this process (:class:`~skill_library.vector_index.FolderClient`)
  for every tenant together, and never closes an index another thread may still hold.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from skill_library import prototypes
from skill_library.embeddings import Embedder
from skill_library.errors import IndexCorruptError, IndexUnavailableError, RecordsBehindIndexError
from skill_library.models import Skill
from skill_library.record_store import RecordStore
from skill_library.tenancy import DEFAULT_TENANT, collection_name
from skill_library.vector_index import (
    COLLECTION,
    IndexEntry,
    IndexServer,
    VectorIndex,
    entries_for,
    remove_folder_collection,
    remove_server_collection,
    server_collection_exists,
)

#: file in the index folder holding the records generation the index was written at
GENERATION_FILE = "generation"
#: file in the index folder naming the skills whose index entries a write left to the next
#: reader (:meth:`SyncedIndex.deferring`), with the generation the index was marked at then
DEFERRED_FILE = "deferred"


class IndexRebuiltWarning(UserWarning):
    """The vector index was missing, damaged or stale and has been rebuilt from the records."""


class SyncedIndex:
    """The vector index of a library (a ``chroma`` folder, or a collection on a Chroma
    server when ``server`` is given), kept in step with its record store.

    The index is the store's tenant's: its own collection (``skills`` in the folder, or the
    server URL's collection, for the default tenant; :func:`collection_name` for another),
    its own generation marker (``chroma/generation``, ``chroma/generation.TENANT``) and
    the tenant's index generation in the records."""

    def __init__(self, folder: Path | None, store: RecordStore, embedder: Embedder,
                 *, server: IndexServer | None = None) -> None:
        if folder is None and server is None:
            raise ValueError("an index needs a folder or a server")
        self.folder = Path(folder) if folder is not None else None
        self.tenant = store.tenant
        self.server = (dataclasses.replace(server, collection=collection_name(server.collection, self.tenant))
                       if server is not None else None)
        #: the tenant's collection in a folder index
        self.collection = collection_name(COLLECTION, self.tenant)
        self.index_path = self.folder / "chroma" if self.folder is not None else None
        self.store = store
        self.embedder = embedder
        self._index: VectorIndex | None = None
        self._generation: int | None = None
        self._thread_lock = threading.RLock()
        self._lock_depth = 0
        #: the thread holding the write lock through this index (None: none)
        self._writer: int | None = None

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """The store's write lock: exclusive across processes and threads, re-entrant."""
        with self._thread_lock:
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            lock = self.store.write_lock()
            lock.acquire()
            self._lock_depth = 1
            self._writer = threading.get_ident()
            try:
                yield
            finally:
                self._writer = None
                self._lock_depth = 0
                lock.release()

    @contextmanager
    def _lock_if_free(self) -> Iterator[bool]:
        """The write lock if no other writer holds it now (True), never waiting (False)."""
        if not self._thread_lock.acquire(blocking=False):
            yield False
            return
        try:
            if self._lock_depth:  # this thread holds it (re-entrant)
                with self._lock():
                    yield True
                return
            lock = self.store.write_lock()
            if not lock.try_acquire():
                yield False
                return
            self._lock_depth = 1
            self._writer = threading.get_ident()
            try:
                yield True
            finally:
                self._writer = None
                self._lock_depth = 0
                lock.release()
        finally:
            self._thread_lock.release()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's write lock (re-entrant) around work that must not interleave
        with another writer's, such as adding records an index rebuild reads."""
        with self._lock():
            yield

    @property
    def where(self) -> str:
        """The index's folder (and tenant) or server URL, for messages."""
        if self.server is not None:
            return self.server.url
        return str(self.index_path) if self.tenant == DEFAULT_TENANT else f"{self.index_path} (tenant {self.tenant})"

    def _open(self) -> VectorIndex:
        return VectorIndex(self.index_path, self.embedder, server=self.server, collection=self.collection)

    def _exists(self) -> bool:
        if self.server is not None:
            return server_collection_exists(self.server)
        assert self.index_path is not None
        if self.tenant == DEFAULT_TENANT:  # as before tenants: the folder is the default's index
            return self.index_path.exists()
        return self._marker.exists()

    def _remove(self) -> None:
        if self.server is not None:
            remove_server_collection(self.server)
        else:
            assert self.index_path is not None
            remove_folder_collection(self.index_path, self.collection)

    # -- reading ------------------------------------------------------------------------
    @property
    def seen_generation(self) -> int | None:
        """The records generation last read or written here (what :meth:`current` checked)."""
        return self._generation

    def opened(self) -> VectorIndex:
        """The index as last opened here, unchecked (the caller compares the generation it
        reads with the records to :attr:`seen_generation`, as fetch does); opened and
        checked by :meth:`current` when it is not open yet."""
        return self._index if self._index is not None else self.current()

    def current(self) -> VectorIndex:
        """The index, opened on first use and reopened when another writer changed it.

        A reopen never waits for the write lock: when the index is marked with the
        records' generation it is reloaded as it is; while another writer is at work (the
        mark is behind), it is checked under the lock if the lock is free now, and otherwise
        read as it was until that writer is done."""
        generation = self.store.index_generation()
        index = self._index
        if index is not None and generation == self._generation:
            return index
        if self._writer == threading.get_ident():  # inside this thread's own write
            return self._fresh()
        if index is not None:
            if self._reload_marked(index, generation):
                with self._lock_if_free() as locked:  # a reload wrote the files: scrub them
                    if locked:
                        self._scrub(index)
                return index
            with self._lock_if_free() as locked:
                if not locked:
                    return index  # the index as it was, until the writer at work is done
                return self._fresh()
        with self._lock():  # a first open checks the index and may rebuild it
            return self._fresh()

    def _reload_marked(self, index: VectorIndex, generation: int) -> bool:
        """Reload ``index`` when it is marked with ``generation`` (a finished write), with
        no lock; False when it is not (a write at work, or one that failed: check it)."""
        if self.server is None and self.indexed_generation() != generation:
            return False
        try:
            index.reload()
            marked = index.stored_generation() if self.server is not None else generation
            empty = index.count() == 0  # a lost collection under a kept mark: check (cheap then)
        except Exception:
            return False
        if marked != generation or empty:
            return False
        if self._index is index and not self._lock_depth:  # a writer here sets its own
            self._generation = generation
        return True

    def _fresh(self) -> VectorIndex:
        """Under the lock: the index, (re)opened and checked if it may be stale.

        A first open checks the index against the records. A reopen because another
        writer changed it skips that check when the index is marked with the records'
        generation: writers bump the generation, write and mark under this lock, so the mark
        says the write finished (one that failed left the old mark, and is checked)."""
        generation = self.store.index_generation()
        if self._index is None or generation != self._generation:
            if self._index is not None and self._reload_marked(self._index, generation):
                self._generation = generation
                self._scrub(self._index)
                return self._index
            self._drop()
            self._index = self._open_checked()
            self._generation = self.store.index_generation()  # a repair bumps it
            self._scrub(self._index)
        return self._index

    def scrub(self) -> None:
        """Zero the unused capacity of the index's HNSW files now, under the write lock
        (after a maintenance step closed and reopened the folder's client, as erasure does)."""
        with self._lock():
            self._scrub(self._fresh())

    def _scrub(self, index: VectorIndex) -> None:
        """Under the lock, after an open or reload: zero what Chroma wrote of uncleared
        memory into the HNSW files (:meth:`VectorIndex.scrub_unused_slots`). A scrub that
        cannot read the files leaves them as they are; it never fails a read."""
        try:
            index.scrub_unused_slots()
        except (OSError, sqlite3.Error, IndexUnavailableError):
            pass

    # -- writing ------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[VectorIndex]:
        """Hold the write lock around a record change and the index write that follows it."""
        with self._lock():
            index = self._fresh()
            self._generation = generation = self.store.bump_index_generation()
            try:
                yield index
            except BaseException:
                self._drop()
                raise
            self._mark(generation)

    def can_defer(self) -> bool:
        """Whether a write may leave its index change to the next reader: a folder index,
        marked, that this process has not opened (a process holding it writes at once)."""
        return (self.server is None and self._index is None and self.index_path is not None
                and self.index_path.is_dir() and self.indexed_generation() is not None)

    @contextmanager
    def deferring(self, names: list[str]) -> Iterator[None]:
        """Hold the write lock around a record change whose index change (the entries of
        ``names``) the next open makes (:meth:`_catch_up`); only when :meth:`can_defer`.

        The names are written down before the records change and the generation bumped, so
        a write cut short leaves at worst a name with nothing to change, never a change the
        index misses."""
        with self._lock():
            mark = self.indexed_generation()
            owed = self._owed(mark) or set()
            tmp = self._deferred_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"mark": mark, "names": sorted(owed | set(names))}))
            os.replace(tmp, self._deferred_path)
            self.store.bump_index_generation()
            yield

    @property
    def _deferred_path(self) -> Path:
        assert self.index_path is not None
        name = DEFERRED_FILE if self.tenant == DEFAULT_TENANT else f"{DEFERRED_FILE}.{self.tenant}"
        return self.index_path / name

    def _owed(self, mark: int | None) -> set[str] | None:
        """The skills whose entries deferred writes left to the next open, when they were
        deferred from an index marked ``mark`` (else None: the file is stale or absent)."""
        if self.server is not None or self.index_path is None:
            return None
        try:
            data = json.loads(self._deferred_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("mark") != mark or mark is None:
            return None
        return {n for n in data.get("names", []) if isinstance(n, str)}

    def _clear_deferred(self) -> None:
        if self.server is None and self.index_path is not None:
            try:
                self._deferred_path.unlink()
            except FileNotFoundError:
                pass

    def _catch_up(self, index: VectorIndex, names: set[str], wanted: list[IndexEntry]) -> None:
        """Make the entries of ``names`` in ``index`` what the records give them (``wanted``,
        the entries of every active skill), embedding only text with no stored vector."""
        mine = [e for e in wanted if e.name in names]
        active = sorted({e.name for e in mine})
        for name in sorted(names - set(active)):
            index.delete(name)
        have = index.texts_of_many(active)
        changed = prototypes.fill([e for e in mine if have.get(e.id) != (e.when, e.version)],
                                  self.store, self.embedder.model_name)
        missing = list(dict.fromkeys(e.when for e in changed if e.vector is None))
        known = dict(zip(missing, self.embedder.embed(missing))) if missing else {}
        keep = {e.id for e in mine}
        stale = [i for i in have if i not in keep]
        if stale:
            index.delete_ids(stale)
        if changed:
            index.upsert(changed, [e.vector if e.vector is not None else known[e.when] for e in changed])

    def rebuild(self, progress: Callable[[int], None] | None = None, *, force: bool = False) -> int:
        """Rebuild the index from the records (under the lock); returns its size.

        Refuses (:class:`RecordsBehindIndexError`, :class:`RecordStoreCorruptError`) when the
        records are damaged or older than the index, unless ``force``."""
        with self._lock():
            if not force:
                self._check_records_may_rebuild()
            self._generation = generation = self.store.bump_index_generation()
            skills = self.store.list(status="active")
            if self._index is None:
                self._index = self._open_or_recreate()
            try:
                wanted = prototypes.fill(self.expected_entries(skills), self.store, self.embedder.model_name)
                self._index.rebuild(wanted, progress=progress)
            except BaseException:
                self._drop()
                raise
            self._mark(generation)
            return len(skills)

    # -- the generation the index was written at ---------------------------------------
    @property
    def _marker(self) -> Path:
        assert self.index_path is not None
        name = GENERATION_FILE if self.tenant == DEFAULT_TENANT else f"{GENERATION_FILE}.{self.tenant}"
        return self.index_path / name

    def _mark(self, generation: int) -> None:
        """Record that the index holds the records of ``generation`` (atomic replace)."""
        if self.server is not None:
            if self._index is not None:
                self._index.store_generation(generation)
            return
        assert self.index_path is not None
        if not self.index_path.is_dir():
            return
        tmp = self._marker.with_suffix(".tmp")
        tmp.write_text(str(generation))
        os.replace(tmp, self._marker)
        self._clear_deferred()  # every mark follows a write or a check: nothing is owed

    def indexed_generation(self) -> int | None:
        """The records generation the index was last written at (None: unknown)."""
        if self.server is not None:
            if self._index is not None:
                return self._index.stored_generation()
            try:
                index = self._open()
            except IndexCorruptError:
                return None
            try:
                return index.stored_generation()
            finally:
                index.close()
        try:
            return int(self._marker.read_text().strip())
        except (OSError, ValueError):
            return None

    def _check_records_may_rebuild(self) -> None:
        """Raise when rebuilding from the records could lose what the index holds."""
        self.store.check_integrity()
        indexed = self.indexed_generation()
        records = self.store.index_generation()
        if indexed is not None and records < indexed:
            raise RecordsBehindIndexError(
                f"the records in {self.store_where} (generation {records}) are older than the vector "
                f"index (generation {indexed}): a records file restored from an older copy or "
                "cut short? Nothing was rebuilt; restore the newer records, or rebuild the index "
                "from these with `skills reindex --force` (SkillLibrary.reindex(force=True))"
            )

    def close(self) -> None:
        """Release the Chroma client."""
        with self._thread_lock:
            index = self._index
            self._drop()
            if index is not None:
                index.close()

    # -- helpers ------------------------------------------------------------------------
    def _drop(self) -> None:
        """Forget the open index (the next use opens and checks it again); it is not
        closed: another thread may hold it, and it releases its client when collected."""
        self._index = None
        self._generation = None

    @property
    def store_where(self) -> str:
        """The records' folder or (password-masked) URL, for messages."""
        return str(self.folder) if self.folder is not None and not getattr(self.store, "shared", False) \
            else str(getattr(self.store, "url", type(self.store).__name__))

    def _open_or_recreate(self) -> VectorIndex:
        try:
            return self._open()
        except IndexCorruptError:
            self._remove()
            return self._open()

    def expected_entries(self, skills: list[Skill] | None = None) -> list[IndexEntry]:
        """What the index must hold, read from the records: every text of every active skill."""
        if skills is None:
            skills = self.store.list(status="active")
        examples = self.store.examples([s.name for s in skills])
        return entries_for(skills, examples, prototypes.vectored(self.store, self.embedder.model_name, examples))

    def _open_checked(self) -> VectorIndex:
        wanted = self.expected_entries()
        expected = {e.id: e.version for e in wanted}
        existed = self._exists()
        index: VectorIndex | None
        try:
            index = self._open()
            if index.shared:  # another index of the folder opened the client: it may be stale
                index.reload()
            try:
                found = index.entries()
            except Exception as exc:
                index.close()
                raise IndexCorruptError(str(exc)) from exc
            owed = self._owed(self.indexed_generation()) if existed and found != expected else None
            if owed:  # what deferred writes left to this open (kept, should this fail)
                self._catch_up(index, owed, wanted)
                found = index.entries()
            if found == expected and self._prototypes_current(index, wanted):
                generation = self.store.index_generation()
                if self._marked(index) != generation:  # checked: a mark never outlives a check
                    self._mark_index(index, generation)
                return index
            reason = "is out of step with the records" if existed else "is missing"
        except IndexCorruptError as exc:
            reason = f"could not be used ({exc})"
            index = None
        if existed:
            self._check_records_may_rebuild()  # fewer records never silently win
        # a repair cut short must not leave a mark equal to the records' generation
        generation = self.store.bump_index_generation()
        if index is None:
            self._remove()
            index = self._open()
        if expected or existed:
            warnings.warn(
                f"the vector index in {self.where} {reason}; rebuilding it from "
                f"{len({e.name for e in wanted})} skill record(s)",
                IndexRebuiltWarning,
                stacklevel=5,
            )
        index.rebuild(prototypes.fill(wanted, self.store, self.embedder.model_name))
        self._index = index
        self._mark(generation)
        return index

    def _marked(self, index: VectorIndex) -> int | None:
        """The generation ``index`` is marked with (None: none)."""
        if self.server is not None:
            try:
                return index.stored_generation()
            except Exception:
                return None
        return self.indexed_generation()

    def _mark_index(self, index: VectorIndex, generation: int) -> None:
        if self.server is not None:
            index.store_generation(generation)
        else:
            self._mark(generation)

    @staticmethod
    def _prototypes_current(index: VectorIndex, wanted: list[IndexEntry]) -> bool:
        """Whether each prototype entry holds the traces the records give it: a merge keeps
        its id and version but changes its document (a write that failed after the records
        committed would otherwise leave the old mean)."""
        expected = {e.id: e.when for e in wanted if prototypes.is_prototype(e)}
        if not expected:
            return True
        found = index.documents(sorted(expected))
        return found == expected
