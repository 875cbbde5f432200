"""The learning pipeline behind ``SkillLibrary.learn`` and ``learn_many``.

A batch of traces is checked, its tasks embedded, each trace generalized and replayed, its
masked example texts embedded, and then each candidate is admitted (merged, revised,
duplicate or saved: :mod:`skill_library.induction.admission`) under the library's write
lock, the index written once per batch. Functions take the library they work for; the
facade delegates here.

The embedding overlaps the rest (:class:`EmbedAhead`): one thread of its own embeds the task
texts of the next :data:`EMBED_LOOKAHEAD` batches (compound traces split first, so only
the parts' texts) and each candidate's example text as soon as it is generalized, while
the caller's thread generalizes, replays in the sandbox and admits. torch releases the GIL
while it computes, so the model and the Python work share the machine's cores. Results and
stored state are those of the serial pipeline: every vector is the embedder's for the same
text, and the traces are generalized and admitted in the same order.
"""

from __future__ import annotations

import ast
import builtins
import functools
import heapq
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skill_library import erasure, fetching, prototypes, settings
from skill_library.errors import LLMError, SkillNotFoundError
from skill_library.induction import describe, description
from skill_library.models import LearnResult, Skill, Trace
from skill_library.text_vectors import pack, text_digest, unpack
from skill_library.vector_index import VectorIndex, best_per_skill

if TYPE_CHECKING:
    from sandbox import Limits
    from skill_library.embeddings import Embedder
    from skill_library.induction import Generalizer
    from skill_library.protocols import Learning

#: How many nearest fetchable skills a learned candidate may call (besides those the trace
#: invoked).
RELATED_SKILLS = 3
#: Index entries read when looking for a skill of the same workflow as a new trace.
WORKFLOW_QUERY_ENTRIES = 24
#: Statuses whose trace is kept as a skill's evidence (its task vector is stored for the
#: skill's prototype: skill_library.prototypes).
EVIDENCE_STATUSES = frozenset({"saved", "merged", "revised", "held"})
#: batches of ``learn_many`` whose task texts are embedded ahead of the one being learned
EMBED_LOOKAHEAD = 2
#: texts per call of the embedder on the embedding thread: a trace waits for its own chunk
#: only, not for its whole batch
EMBED_CHUNK = 16

#: whether the embedding runs on a thread of its own (False: the same jobs, in the same
#: order, on the caller's thread when it needs their vectors)
EMBED_THREAD = True

_Priority = tuple[int, int]
#: before anything queued: a text a trace needs now that nobody asked for ahead
_NOW: _Priority = (-1, 0)


class EmbedAhead:
    """Texts embedded on a thread of its own, ahead of when they are needed.

    :meth:`submit` queues texts at a priority (lower first: ``(batch, 0)`` for a batch's
    task texts, ``(batch, 1)`` for its example texts, so a batch's examples come before the
    next batch's tasks); :meth:`get` returns their vectors, waiting for the chunks that hold
    them (a text nobody queued is queued first of all). Each distinct text is embedded once.
    An error of the embedder is raised by :meth:`get` in the caller's thread.
    """

    def __init__(self, embedder: "Embedder", *, chunk: int = EMBED_CHUNK, threaded: bool | None = None) -> None:
        self._embedder = embedder
        self._threaded = EMBED_THREAD if threaded is None else threaded
        self._chunk = chunk
        self._ready = threading.Condition()
        # (priority, order, texts, or a function giving them: run on the embedding thread)
        self._queue: builtins.list[tuple[_Priority, int, Any]] = []
        self._order = itertools.count()
        self._vectors: dict[str, builtins.list[float]] = {}
        self._queued: set[str] = set()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="skill-library-learn-embed", daemon=True)
        if self._threaded:
            # the model's imports (torch, numpy) happen here, not on two threads at once: a
            # package with circular imports half-imported by one thread fails in the other
            getattr(embedder, "dimension", None)
            import numpy  # noqa: F401  (chromadb's, imported later by the caller's thread)

            self._thread.start()

    def __enter__(self) -> "EmbedAhead":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def submit(self, texts: Sequence[str], priority: _Priority) -> None:
        """Queue the ``texts`` not embedded or queued yet."""
        with self._ready:
            new = [t for t in dict.fromkeys(texts) if t not in self._vectors and t not in self._queued]
            for start in range(0, len(new), self._chunk):
                heapq.heappush(self._queue, (priority, next(self._order), new[start : start + self._chunk]))
            self._queued.update(new)
            if new:
                self._ready.notify_all()

    def submit_later(self, texts: Callable[[], Sequence[str]], priority: _Priority) -> None:
        """:meth:`submit` what ``texts()`` returns, called on the embedding thread (work
        the caller's thread then does not do)."""
        with self._ready:
            heapq.heappush(self._queue, (priority, next(self._order), texts))
            self._ready.notify_all()

    def get(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        """The vectors of ``texts``, in order (waiting for them)."""
        self.submit([t for t in texts if t not in self._vectors], _NOW)
        with self._ready:
            while True:
                if self._error is not None:
                    raise self._error
                if all(t in self._vectors for t in texts):
                    return [self._vectors[t] for t in texts]
                if not self._threaded:  # the queue's next job, on this thread
                    self._ready.release()
                    try:
                        self._step()
                    finally:
                        self._ready.acquire()
                    continue
                self._ready.wait()

    def close(self) -> None:
        """Stop the thread (what is still queued is not embedded)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        if self._threaded:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
            if not self._step():
                return

    def _step(self) -> bool:
        """Do the queue's next job; False after an error of the embedder (kept for get())."""
        with self._ready:
            if not self._queue:
                return True
            priority, _n, texts = heapq.heappop(self._queue)
        try:
            if callable(texts):
                self.submit(list(texts()), priority)
                return True
            vectors = self._embedder.embed(texts)
        except BaseException as exc:  # handed to the caller's thread by get()
            with self._ready:
                self._error = exc
                self._ready.notify_all()
            return False
        with self._ready:
            self._vectors.update(zip(texts, vectors))
            self._ready.notify_all()
        return True


def learn_all(
    lib: "Learning",
    items: Sequence[Trace | Mapping[str, Any]],
    generalizer: "Generalizer",
    verifier: Callable[..., Any] | None,
    limits: "Limits | None" = None,
    *,
    advance: Callable[[int], None] = lambda _n: None,
) -> builtins.list[LearnResult]:
    """``learn_many``: ``items`` in batches of ``settings.LEARN_BATCH``, in order, the task
    texts of the next :data:`EMBED_LOOKAHEAD` batches embedded meanwhile; ``advance(n)``
    is told of each batch learned."""
    batches = [items[start : start + settings.LEARN_BATCH]
               for start in range(0, len(items), settings.LEARN_BATCH)]
    results: builtins.list[LearnResult] = []
    read_only = lib.read_only_tools
    with EmbedAhead(lib.embedder) as ahead:
        for number, batch in enumerate(batches):
            for later in range(number, min(number + 1 + EMBED_LOOKAHEAD, len(batches))):
                if number == 0 or later == number + EMBED_LOOKAHEAD:  # each batch once
                    ahead.submit_later(functools.partial(task_texts, batches[later], read_only), (later, 0))
            results.extend(learn_batch(lib, batch, generalizer, verifier, limits, ahead=ahead, batch=number))
            advance(len(batch))
    return results


def task_texts(items: Sequence[Trace | Mapping[str, Any]], read_only: frozenset[str]) -> builtins.list[str]:
    """The texts :func:`learn_batch` will embed for ``items``' tasks: a compound trace's
    parts' tasks instead of its own (the checks and the split are cheap; a trace they
    refuse gives no text)."""
    from skill_library.induction import check_trace, coerce_trace
    from skill_library.induction import parts as compound

    texts: builtins.list[str] = []
    for item in items:
        trace, _reasons = coerce_trace(item)
        if trace is None or check_trace(trace):
            continue
        found = compound.split(trace.identified(), read_only)
        texts.extend(description.query_text(t.task) for t in (found or [trace]))
    return texts


def learn_batch(
    lib: "Learning",
    items: Sequence[Trace | Mapping[str, Any]],
    generalizer: "Generalizer",
    verifier: Callable[..., Any] | None,
    limits: "Limits | None" = None,
    *,
    split_parts: bool = True,
    ahead: EmbedAhead | None = None,
    batch: int = 0,
) -> builtins.list[LearnResult]:
    """Learn ``items`` as one batch (see the module docstring); ``ahead`` embeds (one of its
    own for the call when None), ``batch`` is the batch's number for its priorities."""
    if ahead is None:
        with EmbedAhead(lib.embedder) as own:
            return learn_batch(lib, items, generalizer, verifier, limits, split_parts=split_parts,
                               ahead=own, batch=batch)
    from skill_library.induction import admission, check_trace, coerce_trace, learn_from_trace
    from skill_library.induction import parts as compound

    out: builtins.list[LearnResult | None] = [None] * len(items)
    read_only = lib.read_only_tools
    checked: dict[int, Trace] = {}
    for n, item in enumerate(items):
        trace, reasons = coerce_trace(item)  # a Trace, its fields, or an OpenAI transcript
        if trace is None or (reasons := check_trace(trace)):
            out[n] = LearnResult(status="rejected", reasons=reasons)
        else:
            checked[n] = trace.identified()  # no id given: the hash of its content
    for n, result in already_learned(lib, checked).items():  # idempotent: evidence counts once
        out[n] = result
        del checked[n]
    for n, result in erasure.forgotten(lib, checked).items():  # erased by forget: never again
        out[n] = result
        del checked[n]
    if split_parts:  # a compound trace is learned as the workflows it combines
        split = {n: found for n, t in checked.items()
                 if (found := compound.split(t, read_only))}
        if split:
            flat = [p for found in split.values() for p in found]
            results = iter(learn_batch(lib, flat, generalizer, verifier, limits, split_parts=False,
                                       ahead=ahead, batch=batch))
            for n, found in split.items():
                out[n] = combined([next(results) for _ in found])
                del checked[n]
    if not checked:
        return [r for r in out if r is not None]
    queries = {n: description.query_text(t.task) for n, t in checked.items()}
    ahead.submit(list(queries.values()), (batch, 0))  # queued ahead already, unless parts
    vectors: dict[int, builtins.list[float]] = {}
    prepared: dict[int, tuple[Any, Any, builtins.list[Skill]]] = {}
    docs = describe.tool_docs(lib.tool_specs())
    vocabulary = admission.vocabulary(docs)
    index = lib.context.index.current()
    indexed = index.count() > 0
    texts: dict[int, str] = {}
    examples: dict[int, Any] = {}
    model = lib.context.vectors.model_name
    stored: dict[str, bytes] = {}  # example texts' vectors the records hold already
    for n, trace in checked.items():
        [vectors[n]] = ahead.get([queries[n]])
        related = related_skills(lib, trace, vectors[n], index if indexed else None)
        candidate, report, reasons = learn_from_trace(
            trace, generalizer=generalizer, sandbox=lib.sandbox, related=related,
            live_verifier=verifier, read_only=read_only, limits=limits,
            tool_docs=docs,
        )
        if reasons or candidate is None or report is None:
            out[n] = LearnResult(status="rejected", reasons=reasons, report=report)
            continue
        prepared[n] = (candidate, report, related)
        # the example text is embedded (on the embedding thread) while the next trace is
        # generalized and replayed
        examples[n] = admission.example_for(trace, candidate, vocabulary=vocabulary)
        texts[n] = description.index_text(examples[n].text, examples[n].params)
        digest = text_digest(texts[n])
        if digest not in stored:
            stored.update(lib.context.store.load_vectors(model, [digest]))
        if digest not in stored:
            ahead.submit([texts[n]], (batch, 1))
    unique = list(dict.fromkeys(texts.values()))
    fresh = [t for t in unique if text_digest(t) not in stored]
    known: dict[str, Any] = dict(zip(fresh, ahead.get(fresh)))
    if fresh:
        lib.context.store.save_vectors(model, {text_digest(t): pack(known[t]) for t in fresh})
    known.update((t, unpack(stored[text_digest(t)])) for t in unique if t not in known)
    if prepared:
        with lib.context.index.writing() as index:
            pending: set[str] = set()  # skills whose index entries are written at the end
            entries = index.count() > 0  # admission writes no index entries until the end
            for n, (candidate, report, related) in prepared.items():
                out[n] = admit(lib, candidate, report, checked[n], related, generalizer,
                               index, known, pending, docs=docs, vocabulary=vocabulary,
                               read_only=read_only, entries=entries, example=examples[n])
            # the task vectors of the traces kept as evidence: the skills' prototypes
            prototypes.save(lib.context.store, lib.embedder.model_name, {
                checked[n].id: pack(vectors[n]) for n in prepared
                if (r := out[n]) is not None and r.status in EVIDENCE_STATUSES
            })
            lib.context.sync(index, sorted(pending), known=known)
    return [r for r in out if r is not None]

def after_learning(lib: "Learning", results: Sequence[LearnResult]) -> None:
    """After traces were learned: re-mine the preconditions when any was kept as evidence
    (a look-alike's new traces can add, change or remove a condition)."""
    from skill_library.induction import preconditions

    if any(r.status in EVIDENCE_STATUSES for r in results):
        preconditions.refresh(lib)


def already_learned(lib: "Learning", traces: Mapping[int, Trace]) -> dict[int, LearnResult]:
    """The traces (by position) that are stored already or repeat an earlier one of the
    batch: each a ``duplicate`` naming the skill it is evidence of, where known."""
    stored = lib.context.store.known_traces([t.id for t in traces.values()])
    seen: set[str] = set()
    found: dict[int, LearnResult] = {}
    for n, trace in traces.items():
        if trace.id in stored or trace.id in seen:
            earlier = lib.context.store.trace_outcome(trace.id) if trace.id in stored else None
            found[n] = LearnResult(status="duplicate", duplicate_of=earlier["name"] if earlier else None, reasons=[
                f"trace {trace.id} was learned before (same task, params, calls and outcome): nothing added"])
        seen.add(trace.id)
    return found


def admit(
    lib: "Learning",
    candidate: Any,
    report: Any,
    trace: Trace,
    related: builtins.list[Skill],
    generalizer: Any,
    index: VectorIndex,
    known: dict[str, Any],
    pending: set[str],
    *,
    docs: Mapping[str, Any] | None = None,
    vocabulary: frozenset[str] = frozenset(),
    read_only: frozenset[str] | None = None,
    entries: bool | None = None,
    example: Any = None,
) -> LearnResult:
    """Under the write lock: decide merge / revise / save and write the records; the
    names whose index entries must change are added to ``pending``. ``read_only`` (the
    library's read-only tools) and ``entries`` (whether the index has any) are read from
    the library when not given; ``example`` is the trace's example for the candidate
    (:func:`admission.example_for`), computed when not given."""
    from skill_library.governance import learned as governed
    from skill_library.induction import admission, revision

    if read_only is None:
        read_only = lib.read_only_tools
    names = lib.context.store.names(prefix=candidate.name)
    # the trace's task with its values masked, as it would be stored: what reads alike
    # is compared on what the workflow asks, not on who asked
    if example is None:
        example = admission.example_for(trace, candidate, vocabulary=vocabulary)
    example_text = description.index_text(example.text, example.params)
    if example_text not in known:
        known[example_text] = lib.context.vectors.embed([example_text])[0]
    near = {h.name: h.similarity for h in best_per_skill(
        index.query(known[example_text], WORKFLOW_QUERY_ENTRIES)
    )[: admission.WORKFLOW_NEIGHBOURS]} if (index.count() > 0 if entries is None else entries) else {}
    wanted = list(dict.fromkeys([*admission.family(candidate.name, names), *near]))
    found = lib.context.store.get_many_active(wanted)
    # a draft (imported, not yet verified) is no evidence of a workflow: never merged into
    neighbours = [found[n] for n in wanted if n in found and found[n].status != "draft"]
    # a held revision leaves the active version current: evidence merged meanwhile is its
    evidence = lib.context.store.examples([s.name for s in neighbours])

    def example_traces(skill: Skill) -> builtins.list[Trace]:
        found = []
        for example in evidence[skill.name]:
            try:
                found.append(lib.context.store.get_trace(example.trace_id))
            except KeyError:
                continue
        return found

    def revise(traces: builtins.list[Trace], skill: Skill) -> Any:
        return revision.revise(
            traces, generalizer=generalizer, sandbox=lib.sandbox,
            related=[r for r in related if r.name != skill.name], extra=[candidate],
            read_only=read_only, tool_docs=docs,
        )

    for skill in neighbours:
        if any(e.trace_id == trace.id for e in evidence[skill.name]):
            return LearnResult(
                status="duplicate", skill=skill, report=report, duplicate_of=skill.name,
                reasons=[f"trace {trace.id} is already evidence for {skill.name!r}"],
            )
    decision = admission.decide(
        candidate, trace, report=report, neighbours=neighbours, sandbox=lib.sandbox,
        related=related, min_reliability=lib.min_reliability,
        example_traces=example_traces, revise=revise,
        same_task=lambda s: near.get(s.name, 0.0) > settings.DUPLICATE_SIMILARITY,
        read_only=read_only,
    )
    if decision.status in ("duplicate", "rejected"):
        return LearnResult(
            status=decision.status, skill=decision.skill, report=decision.report,  # type: ignore[arg-type]
            reasons=decision.reasons,
            duplicate_of=decision.skill.name if decision.status == "duplicate" and decision.skill else None,
        )
    if decision.status == "merged":
        assert decision.skill is not None
        skill = decision.skill
        params = list((skill.parameters or {}).get("properties", {}))
        examples = evidence[skill.name]
        examples = admission.choose_indexed(
            [*examples, admission.example_for(trace, candidate, params, vocabulary=vocabulary)]
        )
        stored = lib.context.store.save_evidence(
            skill.name, version=skill.version, trace=trace, success=True, examples=examples,
        )
        pending.add(stored.name)
        return LearnResult(status="merged", skill=stored, report=decision.report,
                           reasons=decision.reasons)
    new = decision.candidate
    assert new is not None
    if decision.status == "revised":
        assert decision.skill is not None
        old = decision.skill
        examples = [] if len(decision.traces) == 1 else evidence[old.name]
        version = _renamed(new.to_skill(trace_ids=[t.id for t in decision.traces]), old.name)
    else:
        examples = []
        version = new.to_skill(trace_ids=[trace.id])
        if version.name in names:
            version = _renamed(version, free_name(lib, version.name, names))
        names.append(version.name)
    params = list((version.parameters or {}).get("properties", {}))
    examples = admission.choose_indexed(
        [*examples, admission.example_for(trace, new, params, vocabulary=vocabulary)])
    lib.context.store.save_trace(trace)
    admitted = governed.admit_learned(lib, version, trace, decision.report)
    stored = admitted.skill
    if admitted.activated or not admitted.revision:
        stored = lib.context.store.save_evidence(
            stored.name, version=stored.version, trace=trace, success=True, examples=examples,
        )
    else:  # a held revision: the active version keeps its examples and its when
        stored = lib.context.store.save_evidence(stored.name, version=stored.version, trace=trace, success=True)
    pending.add(stored.name)
    if not admitted.activated:
        return LearnResult(status="held", skill=stored, report=decision.report,
                           reasons=[*admitted.reasons, *decision.reasons])
    return LearnResult(status=decision.status, skill=stored, report=decision.report,  # type: ignore[arg-type]
                       reasons=decision.reasons)

def combined(results: Sequence[LearnResult]) -> LearnResult:
    """One result for a compound trace learned as ``results`` (its parts, in order)."""
    stored = [r for r in results if r.status in EVIDENCE_STATUSES]
    lead = stored[0] if stored else results[0]
    reasons = [f"learned as {len(results)} parts: "
               + ", ".join(f"{r.status} {r.skill.name if r.skill else ''}".strip() for r in results)]
    return LearnResult(status=lead.status, skill=lead.skill, report=lead.report,
                       duplicate_of=lead.duplicate_of, reasons=reasons + lead.reasons,
                       parts=list(results))


def related_skills(
    lib: "Learning", trace: Trace, task_vector: Sequence[float], index: VectorIndex | None
) -> builtins.list[Skill]:
    """Skills the trace invoked, plus the nearest fetchable skills to its task."""
    related: dict[str, Skill] = {}
    for call in trace.calls:
        if call.kind == "skill" and call.name not in related:
            try:
                related[call.name] = lib.context.store.get(call.name)
            except SkillNotFoundError:
                pass
    if index is not None:
        for match in fetching.searched(lib, task_vector, RELATED_SKILLS,
                                       lib.min_reliability, None, index).matches:
            related.setdefault(match.skill.name, match.skill)
    return list(related.values())

def free_name(
    lib: "Learning", name: str, taken: Sequence[str] | None = None) -> str:
    used = set(taken if taken is not None else [s.name for s in lib.context.store.list()])
    suffix = 2
    while f"{name}_{suffix}" in used:
        suffix += 1
    return f"{name}_{suffix}"


def _renamed(skill: Skill, new_name: str) -> Skill:
    """``skill`` under another name: its function definition is renamed too."""
    assert skill.code is not None
    tree = ast.parse(skill.code)
    lines = skill.code.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == skill.name:
            row = node.lineno - 1
            lines[row] = lines[row].replace(f"def {skill.name}(", f"def {new_name}(", 1)
    if new_name == skill.name:
        return skill
    data = skill.model_dump()
    data.update(name=new_name, code="".join(lines))
    return Skill.model_validate(data)


def resolve_generalizer(generalizer: "str | Generalizer | None", default: "str | Generalizer") -> "Generalizer":
    """A generalizer from a name (``"dataflow"``, ``"llm"``), an instance, or ``None``
    (``default``, the library's setting); ``"llm"`` without an endpoint raises
    :class:`LLMError` (``SkillLibrary.resolve_generalizer``)."""
    from skill_library.induction import DataflowGeneralizer, LLMGeneralizer

    if generalizer is None:
        generalizer = default
    if generalizer == "dataflow":
        return DataflowGeneralizer()
    if generalizer == "llm":
        if not LLMGeneralizer.configured():
            raise LLMError(
                "the LLM generalizer needs an endpoint: set OPENAI_BASE_URL and/or "
                "OPENAI_API_KEY (and SKILL_LIBRARY_MODEL)"
            )
        return LLMGeneralizer()
    if isinstance(generalizer, str):
        raise ValueError(f"generalizer must be 'dataflow' or 'llm', got {generalizer!r}")
    return generalizer
