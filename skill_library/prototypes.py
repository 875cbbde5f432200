"""A skill's prototype: the mean of its example tasks, as one more index entry.

A skill's example texts are masked (values as placeholders, persona and chatter dropped),
while the tasks agents fetch with are not: "I'm Wen Varga from 53772, wen@example.com.
Kindly stop order #W8660744 ...". Nearest-example matching then turns on which example
happens to share the query's persona and phrasing. The *prototype* of a skill is the
normalized mean of its example traces' task vectors, each embedded the way fetch embeds a
query (:func:`~skill_library.shapes.query_text`), so it meets a query in
the query's own form. Averaged over many customers, what varies between them (names,
moods, chatter, request wording) cancels, and what the skill's requests share stays,
including how the customer is identified (an email, or a name and zip). Fetch scores a
skill by its best entry, so the prototype competes with the ``when`` and the examples under
the same value fit and similarity floor.

Privacy: the prototype is a vector, never text, and its document names only the count and
a digest of the trace ids. It averages whole blocks of :data:`PROTOTYPE_STEP` traces (at
least one block, at most :data:`PROTOTYPE_MAX_TRACES` traces): it changes only when a block
fills, so two snapshots of the index differ by the mean of at least 5 traces, never by
one person's task vector. (Five traces may still all be one customer's: the index is as
sensitive as the records of a skill learned from one person's traces.) The per-trace
vectors are kept in the tenant's records beside the traces (``task_vectors``), deleted with
them, never in the shared text cache, and keyed by the model's digest (:func:`model_key`),
so installs of one model share them; a rebuild needs no model, and ``reindex()`` embeds the
vectors a library learned before prototypes lacks.

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

#: A prototype averages whole blocks of this many traces (the newest traces wait until their
#: block is full), and a skill gets one once it has a block: a mean of fewer would be too
#: close to one customer's message, and a change by one trace would reveal that trace.
PROTOTYPE_STEP = 5
#: The least number of traces in a prototype (one block).
PROTOTYPE_MIN_TRACES = PROTOTYPE_STEP
#: At most this many of a skill's example traces, its most recent whole blocks, make its
#: prototype (it follows how the skill is asked for now, and recomputing it is bounded).
PROTOTYPE_MAX_TRACES = 60
#: The prototype entry's id is the skill's name with this suffix. Skill names are
#: ``[a-z][a-z0-9_]*`` and example entries are ``name#trace_id``: no entry id has it.
KEY_SUFFIX = "@prototype"


def key(name: str) -> str:
    """The index id of ``name``'s prototype entry."""
    return name + KEY_SUFFIX


def is_prototype(entry: "IndexEntry") -> bool:
    """Whether ``entry`` is a prototype (its vector is a mean, not an embedded text)."""
    return entry.key.endswith(KEY_SUFFIX) and bool(entry.traces)


def model_key(model: str) -> str:
    """The key task vectors of ``model`` are stored under: the digest of a model identity
    (``name@digest``; the folder name differs between installs of one model), else the name."""
    return "@" + model.rsplit("@", 1)[1] if "@" in model else model


def document(trace_ids: Sequence[str]) -> str:
    """The prototype entry's document: the count and a digest of its traces, never text
    (it changes exactly when the set of traces does, so syncing compares documents)."""
    digest = hashlib.sha256("\n".join(sorted(trace_ids)).encode()).hexdigest()[:16]
    return f"(prototype: the mean of {len(trace_ids)} example tasks, {digest})"


def traces_of(examples: Sequence["Example"], vectored: set[str]) -> list[str]:
    """The trace ids that make the prototype of a skill with ``examples`` (oldest first),
    sorted: of those with a task vector, the whole blocks of :data:`PROTOTYPE_STEP`, the
    most recent :data:`PROTOTYPE_MAX_TRACES`; [] below one block."""
    ids = list(dict.fromkeys(e.trace_id for e in examples if e.trace_id in vectored))
    end = len(ids) // PROTOTYPE_STEP * PROTOTYPE_STEP
    chosen = ids[max(0, end - PROTOTYPE_MAX_TRACES // PROTOTYPE_STEP * PROTOTYPE_STEP):end]
    return sorted(chosen) if len(chosen) >= PROTOTYPE_MIN_TRACES else []


def vectored(store: "RecordStore", model: str, examples: Mapping[str, Sequence["Example"]]) -> set[str]:
    """The example trace ids of ``examples`` that have a task vector of ``model``."""
    ids = [e.trace_id for found in examples.values() for e in found]
    return store.task_vector_ids(model_key(model), ids) if ids else set()


def save(store: "RecordStore", model: str, vectors: dict[str, bytes]) -> None:
    """Store task vectors of ``model`` (trace id -> packed vector; existing ones kept)."""
    store.save_task_vectors(model_key(model), vectors)


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
    stored = store.load_task_vectors(model_key(model), wanted)
    out = []
    for entry in entries:
        if is_prototype(entry) and entry.vector is None:
            vectors = [unpack(stored[t]) for t in entry.traces if t in stored]
            entry = dataclasses.replace(entry, vector=tuple(mean(vectors)))
        out.append(entry)
    return out


def task_vectors(embedder: "Embedder", traces: Sequence["Trace"]) -> dict[str, bytes]:
    """Trace id -> the packed vector of its task in fetch's query form (one batch)."""
    from skill_library import shapes

    if not traces:
        return {}
    vectors = embedder.embed([shapes.query_text(t.task) for t in traces])
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
    save(store, embedder.model_name, added)
    return len(added)
