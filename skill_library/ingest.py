"""The ingest pipeline behind ``SkillLibrary.add_many``: many skills into records and index.

Every skill is checked first (the sandbox policy for all sources at once, in a few
sandboxed children: :func:`sandbox.check_sources`), so a bad skill stores nothing. Then,
batch by batch of :data:`ADD_BATCH` skills, two stages overlap: the caller's thread
embeds batch n+1 while a writer thread stores batch n (its duplicate check against the
index and the batch, its records in one transaction, then its index entries). torch and
Chroma's core release the GIL while they work, so the stages run on two cores.

Results and stored state are those of adding the batches one after another: the writer
takes the batches in order, so each batch's duplicate check sees every earlier batch in
the index. Records are written before their index entries, inside the library's write
lock and index generation, so the index stays derived data: a crash between the two
leaves it out of step, and it is rebuilt from the records on next open. Functions take
the library they work for; the facade delegates here.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from skill_library import settings
from skill_library.errors import SkillPolicyError
from skill_library.induction import description
from skill_library.models import AddResult, Skill
from skill_library.text_vectors import pack, text_digest, unpack
from skill_library.vector_index import VectorIndex, entries_for

if TYPE_CHECKING:
    #: skill_library.settings.ADD_BATCH (read and written there)
    ADD_BATCH: int
    from skill_library.governance.actors import Actor
    from skill_library.protocols import Ingesting
    from skill_library.record_store import RecordStore

#: embedded batches that may wait for the writer (bounds the vectors held in memory)
PIPELINE_DEPTH = 2

_DONE = object()


def check_types(skills: Sequence[object]) -> None:
    """TypeError unless every item is a Skill."""
    for skill in skills:
        if not isinstance(skill, Skill):
            raise TypeError(f"add_many() takes Skills, got {type(skill).__name__}")


def check_addable_many(skills: Sequence[Skill]) -> None:
    """Refuse the first skill (in input order) :meth:`SkillLibrary.add` would refuse: a
    source the sandbox policy refuses (SkillPolicyError), not active or carrying outcomes
    (ValueError). All sources are checked in one call (:func:`sandbox.check_sources`)."""
    from sandbox import check_sources

    with_code = [s for s in skills if s.code is not None]
    verdicts = dict(zip((id(s) for s in with_code), check_sources([s.code for s in with_code])))  # type: ignore[misc]
    for skill in skills:
        violation = verdicts.get(id(skill))
        if violation is not None:
            raise SkillPolicyError(
                f"skill {skill.name!r} breaks the sandbox policy and could never run: {violation}"
            )
        check_state(skill)


def check_state(skill: Skill) -> None:
    """A new version is active and has no outcomes (ValueError otherwise)."""
    if skill.status != "active":
        raise ValueError(
            f"status: add() stores active versions; {skill.name!r} has status {skill.status!r}"
        )
    if skill.successes or skill.failures:
        raise ValueError(
            f"successes/failures: a new version starts with no outcomes; {skill.name!r} carries "
            f"{skill.successes}/{skill.failures} (use verified=True or feedback())"
        )


def add_many(
    lib: "Ingesting",
    skills: Sequence[Skill],
    *,
    verified: bool,
    actor: "Actor",
    advance: Callable[[int], None],
) -> list[AddResult]:
    """Check and add ``skills``; results in input order. ``advance(n)`` is told of each
    stored batch (from the writer thread).

    The checks (:func:`check_addable_many`; mostly waiting on sandboxed compiles) run while
    the first batches are embedded; the writer takes the write lock and stores its first
    batch only once every skill has passed, so a refused skill stores nothing and leaves
    the index as it was."""
    check_types(skills)
    checker = _Checker(skills)
    checker.start()
    texts = [description.index_text(s.when) for s in skills]
    model = lib.context.vectors.model_name
    # vectors the records already hold, read before the writer starts: from here on only
    # the writer thread uses the record store and the index
    digests = [text_digest(t) for t in texts]
    known = lib.context.store.load_vectors(model, list(dict.fromkeys(digests)))
    # a text of several skills is embedded once, in the first batch that has it
    repeated = {d for d, n in Counter(digests).items() if n > 1}
    writer = _Writer(lib, checker, model, verified, actor, advance)
    writer.start()
    try:
        for start in range(0, len(skills), settings.ADD_BATCH):
            if writer.error is not None:
                break
            batch_digests = digests[start : start + settings.ADD_BATCH]
            missing = {d: t for t, d in zip(texts[start : start + settings.ADD_BATCH], batch_digests)
                       if d not in known}
            fresh: dict[str, bytes] = {}
            if missing:
                computed = lib.embedder.embed(list(missing.values()))
                fresh = {d: pack(v) for d, v in zip(missing, computed)}
                known.update((d, v) for d, v in fresh.items() if d in repeated)
            vectors = [unpack(fresh[d]) if d in fresh else unpack(known[d]) for d in batch_digests]
            writer.put((skills[start : start + settings.ADD_BATCH], vectors, fresh))
    finally:
        writer.finish()
    if writer.error is not None:
        raise writer.error
    return writer.results


class _Checker(threading.Thread):
    """:func:`check_addable_many` beside the embedding; :meth:`outcome` waits for it."""

    def __init__(self, skills: Sequence[Skill]) -> None:
        super().__init__(name="skill-library-ingest-check", daemon=True)
        self.skills = skills
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            check_addable_many(self.skills)
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc

    def outcome(self) -> BaseException | None:
        self.join()
        return self.error


class _Writer(threading.Thread):
    """The second stage: per embedded batch, in order, duplicate check, records, index."""

    def __init__(self, lib: "Ingesting", checker: _Checker, model: str, verified: bool,
                 actor: "Actor", advance: Callable[[int], None]) -> None:
        super().__init__(name="skill-library-ingest", daemon=True)
        self.lib = lib
        self.checker = checker
        self.model = model
        self.verified = verified
        self.actor = actor
        self.advance = advance
        self.results: list[AddResult] = []
        self.error: BaseException | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=PIPELINE_DEPTH)

    def put(self, item: tuple[Sequence[Skill], list[list[float]], dict[str, bytes]]) -> None:
        self._queue.put(item)

    def finish(self) -> None:
        """Write what is queued (nothing more after an error), then stop."""
        self._queue.put(_DONE)
        self.join()

    def run(self) -> None:
        self.error = self.checker.outcome()
        if self.error is not None:
            self._drain()
            return
        try:
            with self.lib.context.index.writing() as index:
                while True:
                    item = self._queue.get()
                    if item is _DONE:
                        return
                    self.write(index, *item)
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc
            self._drain()

    def _drain(self) -> None:
        """Take what the embedding thread still queues (it never waits on a full queue)."""
        while self._queue.get() is not _DONE:
            pass

    def write(self, index: VectorIndex, batch: Sequence[Skill], vectors: list[list[float]],
              fresh: dict[str, bytes]) -> None:
        import numpy as np

        lib = self.lib
        if fresh:
            lib.context.store.save_vectors(self.model, fresh)
        neighbours = index.query_many(vectors, min(2, index.count()))
        # Earlier batches are in the index already; this batch is checked in memory.
        accepted: list[tuple[Skill, list[float]]] = []
        accepted_names: list[str] = []
        accepted_vectors = np.empty((len(batch), len(vectors[0]) if vectors else 0))
        verdicts: list[tuple[str, float] | None] = []
        for skill, vector, hits in zip(batch, vectors, neighbours):
            duplicate = next(
                (
                    (h.name, h.similarity)
                    for h in hits
                    if h.name != skill.name and h.similarity > settings.DUPLICATE_SIMILARITY
                ),
                None,
            )
            if duplicate is None and accepted_names:
                sims = accepted_vectors[: len(accepted_names)] @ np.asarray(vector)
                best = int(np.argmax(sims))
                if sims[best] > settings.DUPLICATE_SIMILARITY and accepted_names[best] != skill.name:
                    duplicate = (accepted_names[best], float(sims[best]))
            verdicts.append(duplicate)
            if duplicate is None:
                accepted_vectors[len(accepted_names)] = vector
                accepted.append((skill, vector))
                accepted_names.append(skill.name)
        from skill_library.governance import workflow

        # records and their audit events in one transaction, as add() writes them
        stored = workflow.add_active(lib, [s for s, _ in accepted],
                                     initial_success=self.verified,
                                     actor=self.actor, reason="added directly by the local administrator")
        saved = iter(stored)
        for duplicate in verdicts:
            if duplicate is None:
                # model_construct: the stored skill was validated when it was read
                self.results.append(AddResult.model_construct(status="added", skill=next(saved)))
            else:
                self.results.append(AddResult.model_construct(
                    status="duplicate", duplicate_of=duplicate[0], similarity=duplicate[1]
                ))
        # one index entry per name: a name added twice in a batch keeps its newest
        latest: dict[str, tuple[Skill, list[float]]] = {}
        for skill, (_, vector) in zip(stored, accepted):
            latest[skill.name] = (skill, vector)
        entries = entries_for([s for s, _ in latest.values()])
        # the when entries have their vectors; a description's phrase entry is embedded here
        others = list(dict.fromkeys(e.when for e in entries if e.id != e.name))
        known = dict(zip(others, lib.context.vectors.embed(others))) if others else {}
        index.upsert(entries, [latest[e.name][1] if e.id == e.name else known[e.when] for e in entries])
        self.advance(len(batch))


def add_one(
    library: "Ingesting", skill: Skill, *, verified: bool, actor: "Actor | str | None" = None
) -> AddResult:
    """``SkillLibrary.add``: check, refuse a duplicate, store as ``actor`` (default: the
    local administrator; it needs ``skill.admin``; audited) and index; see its docstring."""
    if not isinstance(skill, Skill):
        raise TypeError(f"add() takes a Skill, got {type(skill).__name__}")
    check_addable(skill)
    if verified and skill.provenance.trace_ids:
        check_verified(library.context.store, skill)
    from skill_library.governance import workflow

    admin = library.actors.caller(actor)
    embedding = library.context.vectors.embed([description.index_text(skill.when)])[0]
    with library.context.index.writing() as index:
        duplicate = duplicate_of(index, embedding, skill.name)
        if duplicate is not None:
            return AddResult(status="duplicate", duplicate_of=duplicate[0], similarity=duplicate[1])
        stored = workflow.add_active(library, [skill],
                                     initial_success=verified, actor=admin,
                                     reason="added directly by the local administrator")[0]
        library.context.sync(index, [stored], known={description.index_text(stored.when): embedding})
    return AddResult(status="added", skill=stored)


def check_addable(skill: Skill) -> None:
    """Refuse a skill whose code breaks the sandbox policy or whose state is not addable."""
    from skill_library.induction.validation import check_policy

    check_policy(skill)
    check_state(skill)


def check_verified(store: "RecordStore", skill: Skill) -> None:
    """``verified=True`` grants a success only on evidence: a stored verified trace."""
    from skill_library.errors import EvidenceError, TraceNotFoundError

    if not skill.provenance.trace_ids:
        raise EvidenceError(
            f"verified: {skill.name!r} names no trace; a success is granted only on evidence "
            "(provenance.trace_ids naming a stored trace a verifier judged a success; the "
            "CLI's --trace ID)"
        )
    trace_id = skill.provenance.trace_ids[0]
    try:
        trace = store.get_trace(trace_id)
    except TraceNotFoundError:
        raise EvidenceError(f"verified: no stored trace {trace_id!r} backs {skill.name!r}") from None
    if not trace.verified_success:
        raise EvidenceError(
            f"verified: trace {trace_id!r} is not a success judged by a named verifier"
        )


def duplicate_of(index: VectorIndex, embedding: Sequence[float], name: str) -> tuple[str, float] | None:
    """The other skill whose entry is more than ``settings.DUPLICATE_SIMILARITY`` similar
    to ``embedding`` (its name and similarity), if any."""
    for hit in index.query(embedding, min(2, index.count())):
        if hit.name != name and hit.similarity > settings.DUPLICATE_SIMILARITY:
            return hit.name, hit.similarity
    return None


settings.forward(__name__, "ADD_BATCH")



def add_many_checked(
    library: "Ingesting", skills: Sequence[Skill], *, verified: bool, advance: Callable[[int], None],
    actor: "Actor | str | None" = None,
) -> list[AddResult]:
    """``SkillLibrary.add_many``: check every skill (types, verified traces) and that the
    local administrator may add active versions, then :func:`add_many` (``advance``: the
    progress bar's step)."""
    from skill_library.governance.actors import require

    check_types(skills)
    if verified:
        for skill in skills:
            if skill.provenance.trace_ids:
                check_verified(library.context.store, skill)
    admin = library.actors.caller(actor)
    require(admin, "skill.admin", "add active versions directly (propose() is the governed path)")
    return add_many(library, skills, verified=verified, actor=admin, advance=advance)
