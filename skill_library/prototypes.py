"""A skill's prototype: the mean of its example tasks, as one more index entry.

A skill's example texts are masked (values as placeholders, persona and chatter dropped),
while the tasks agents fetch with are not: "I'm Wen Varga from 53772, wen@example.com.
Kindly stop order #W8660744 ...". Nearest-example matching then turns on which example
happens to share the query's persona and phrasing. The *prototype* of a skill is the
normalized mean of its example traces' task vectors, each embedded the way fetch embeds a
query (:func:`~skill_library.induction.description.query_text`), so it meets a query in
the query's own form. Averaged over many customers, what varies between them (names,
moods, chatter, request wording) cancels, and what the skill's requests share stays,
including how the customer is identified (an email, or a name and zip). Fetch scores a
skill by its best entry, so the prototype competes with the ``when`` and the examples under
the same value fit and similarity floor.

Privacy: the prototype is a vector, never text; it exists only for a skill with at least
:data:`PROTOTYPE_MIN_TRACES` example traces (an average over several tasks, not the vector of
one person's message), and its document names only the count and a digest of the trace ids.
The per-trace vectors it is computed from are kept in the tenant's records beside the
traces (``task_vectors``), deleted with them, and never in the shared text cache; so a
rebuild or a new prototype needs no model, and a library whose skills lack them gets them
from ``reindex()``.

Measured on the users suite: ``python -m benchmarks users`` (README, benchmarks/README.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from skill_library.text_vectors import pack, unpack

if TYPE_CHECKING:
    from skill_library.embeddings import Embedder
    from skill_library.models import Example, Trace
    from skill_library.record_store import RecordStore
    from skill_library.vector_index import IndexEntry

#: A skill gets a prototype entry once at least this many of its example traces have a task
#: vector (fewer would make the mean too close to one customer's message).
PROTOTYPE_MIN_TRACES = 5
#: At most this many of a skill's example traces, its most recent, make its prototype (it
#: follows how the skill is asked for now, and a merge recomputes a bounded mean).
PROTOTYPE_MAX_TRACES = 64
#: The prototype entry's id is the skill's name with this suffix.
KEY_SUFFIX = "#prototype"


def key(name: str) -> str:
    """The index id of ``name``'s prototype entry."""
    return name + KEY_SUFFIX


def is_prototype(entry: "IndexEntry") -> bool:
    """Whether ``entry`` is a prototype (its vector is a mean, not an embedded text)."""
    return entry.key.endswith(KEY_SUFFIX) and bool(entry.traces)


def document(trace_ids: Sequence[str]) -> str:
    """The prototype entry's document: the count and a digest of its traces, never text
    (it changes exactly when the set of traces does, so syncing compares documents)."""
    digest = hashlib.sha256("\n".join(sorted(trace_ids)).encode()).hexdigest()[:16]
    return f"(prototype: the mean of {len(trace_ids)} example tasks, {digest})"


def traces_of(examples: Sequence["Example"], vectored: set[str]) -> list[str]:
    """The trace ids that make the prototype of a skill with ``examples`` (oldest first):
    the most recent :data:`PROTOTYPE_MAX_TRACES` with a task vector, or [] below
    :data:`PROTOTYPE_MIN_TRACES`."""
    ids = list(dict.fromkeys(e.trace_id for e in examples if e.trace_id in vectored))[-PROTOTYPE_MAX_TRACES:]
    return sorted(ids) if len(ids) >= PROTOTYPE_MIN_TRACES else []


def vectored(store: "RecordStore", model: str, examples: Mapping[str, Sequence["Example"]]) -> set[str]:
    """The example trace ids of ``examples`` that have a task vector of ``model``."""
    ids = [e.trace_id for found in examples.values() for e in found]
    return store.task_vector_ids(model, ids) if ids else set()


def mean(vectors: Iterable[Sequence[float]]) -> list[float]:
    """The normalized mean of ``vectors`` (unit vectors in, a unit vector out)."""
    total: list[float] = []
    for vector in vectors:
        if not total:
            total = [0.0] * len(vector)
        for i, value in enumerate(vector):
            total[i] += value
    norm = math.sqrt(sum(v * v for v in total)) or 1.0
    return [v / norm for v in total]


def fill(entries: Sequence["IndexEntry"], store: "RecordStore", model: str) -> list["IndexEntry"]:
    """``entries`` with each prototype's vector computed from the stored task vectors."""
    wanted = sorted({t for e in entries if is_prototype(e) and e.vector is None for t in e.traces})
    if not wanted:
        return list(entries)
    stored = store.load_task_vectors(model, wanted)
    out = []
    for entry in entries:
        if is_prototype(entry) and entry.vector is None:
            vectors = [unpack(stored[t]) for t in entry.traces if t in stored]
            entry = dataclasses.replace(entry, vector=tuple(mean(vectors)))
        out.append(entry)
    return out


def task_vectors(embedder: "Embedder", traces: Sequence["Trace"]) -> dict[str, bytes]:
    """Trace id -> the packed vector of its task in fetch's query form (one batch)."""
    from skill_library.induction import description

    if not traces:
        return {}
    vectors = embedder.embed([description.query_text(t.task) for t in traces])
    return {t.id: pack(v) for t, v in zip(traces, vectors)}


def backfill(store: "RecordStore", embedder: "Embedder", names: Sequence[str]) -> int:
    """Embed and store the task vectors the example traces of ``names`` lack (a library
    learned before prototypes existed); returns how many were added."""
    examples = store.examples(list(names))
    have = vectored(store, embedder.model_name, examples)
    missing = sorted({e.trace_id for found in examples.values() for e in found} - have)
    traces = []
    for trace_id in missing:
        try:
            traces.append(store.get_trace(trace_id))
        except KeyError:
            continue
    added = task_vectors(embedder, traces)
    store.save_task_vectors(embedder.model_name, added)
    return len(added)
